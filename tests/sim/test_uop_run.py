"""``sim.timing.compute.UopRun`` (the GEMM/ALU timeline kept as runs of stalls) against a
plain listing of every micro-op's write cycle."""

import numpy as np
import pytest

from isa.arch import ALU_LATENCY
from sim.timing.compute import CHECK_STAGE, UopRun, stall_runs


def _listing(c, n, bad, counts, stalled):
    """Write cycles per micro-op, err cycle and last busy cycle, one micro-op at a time."""
    done = n if bad is None else bad
    writes, s = [], 0
    for j in range(done):
        s += j in stalled
        writes.append(c + 1 + j + s + ALU_LATENCY)
    before_bad = sum(1 for p in stalled if p < done)
    pulses = writes if counts else []          # a GEMM with reset counts no micro-op
    if bad is None:
        return pulses, -1, writes[-1]
    err = c + 1 + bad + CHECK_STAGE + before_bad
    return pulses, err, max([err, *writes])


@pytest.mark.parametrize("seed", range(60))
def test_uop_run_equals_the_listing(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    c = int(rng.integers(0, 5))
    density = rng.choice([0.0, 0.2, 0.6, 1.0])
    stalled = {p for p in range(1, n) if rng.random() < density}
    bad = None if rng.random() < 0.6 else int(rng.integers(0, n))
    counts = rng.random() < 0.9
    writes, err, busy_end = _listing(c, n, bad, counts, stalled)
    run = UopRun(c, n, ALU_LATENCY, bad, counts, False, stall_runs(sorted(stalled)))
    assert (run.err_at, run.busy_end) == (err, busy_end)
    horizon = busy_end + 4
    pulse = [t in writes for t in range(horizon + 1)]
    assert [t for t in range(horizon) if run.done(t)] == writes
    for t0 in range(horizon):
        for t1 in range(t0, horizon, 3):
            assert run.done_pulses(t0, t1) == sum(pulse[t0:t1])
        change = next((t for t in range(max(t0, 1), horizon) if pulse[t] != pulse[t - 1]), -1)
        assert run.events(t0) == (err, busy_end + 1, change), t0


def test_a_huge_stalling_loop_is_a_few_numbers():
    """Two billion micro-ops on one ACC entry, every one after the first stalled: one group
    of lone pulses, not one entry per stall."""
    n = 1 << 31
    run = UopRun(0, n, ALU_LATENCY, None, True, False, [(1, n)])
    assert len(run.lo) == 2
    first = 1 + ALU_LATENCY
    assert run.busy_end == n + ALU_LATENCY + n - 1
    assert run.done(first) and run.done(first + 2) and not run.done(first + 3)
    assert run.done_pulses(0, run.busy_end + 1) == n
    assert run.events(first + 10) == (-1, run.busy_end + 1, first + 10)
