"""``sim.timing.compute.UopRun`` (the GEMM/ALU timeline kept as runs of waits) against a
plain listing of every micro-op's write cycle, and ``alu_stall_runs`` (the runs from an ALU's
micro-op indices, chunk by chunk) against ``isa.arch.alu_stalls`` on the whole loop."""

import numpy as np
import pytest

from isa.arch import ALU_LATENCY, AluOp, alu_stalls
from sim.timing.compute import CHECK_STAGE, UopRun, alu_stall_runs, stall_runs, wait_runs


def _listing(c, n, bad, counts, waits):
    """Write cycles per micro-op, err cycle and last busy cycle, one micro-op at a time
    (``waits``: {position: cycles})."""
    done = n if bad is None else bad
    writes, s = [], 0
    for j in range(done):
        s += waits.get(j, 0)
        writes.append(c + 1 + j + s + ALU_LATENCY)
    before_bad = sum(w for p, w in waits.items() if p < done)
    pulses = writes if counts else []          # a GEMM with reset counts no micro-op
    if bad is None:
        return pulses, -1, writes[-1]
    err = c + 1 + bad + CHECK_STAGE + before_bad
    return pulses, err, max([err, *writes])


@pytest.mark.parametrize("seed", range(90))
def test_uop_run_equals_the_listing(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    c = int(rng.integers(0, 5))
    density = rng.choice([0.0, 0.2, 0.6, 1.0])
    top = (1, 2, 2)[seed % 3]                  # waits of 1 only, or of 1 and 2
    waits = {p: int(rng.integers(1, top + 1)) for p in range(1, n) if rng.random() < density}
    bad = None if rng.random() < 0.6 else int(rng.integers(0, n))
    counts = rng.random() < 0.9
    writes, err, busy_end = _listing(c, n, bad, counts, waits)
    runs = wait_runs(waits)
    assert all(b > a and w >= 1 for a, b, w in runs)
    assert {p: w for a, b, w in runs for p in range(a, b)} == waits
    if top == 1:
        assert stall_runs(sorted(waits)) == runs
    run = UopRun(c, n, ALU_LATENCY, bad, counts, False, runs)
    assert (run.err_at, run.busy_end) == (err, busy_end)
    horizon = busy_end + 4
    pulse = [t in writes for t in range(horizon + 1)]
    assert [t for t in range(horizon) if run.done(t)] == writes
    for t0 in range(horizon):
        for t1 in range(t0, horizon, 3):
            assert run.done_pulses(t0, t1) == sum(pulse[t0:t1])
        change = next((t for t in range(max(t0, 1), horizon) if pulse[t] != pulse[t - 1]), -1)
        assert run.events(t0) == (err, busy_end + 1, change), t0


def test_wait_runs_takes_the_alu_stalls_layout():
    waits = np.array([0, 2, 2, 1, 0, 1])       # positions 1 ... 6
    assert wait_runs(waits) == [(2, 4, 2), (4, 5, 1), (6, 7, 1)]
    assert wait_runs({2: 2, 3: 2, 4: 1, 6: 1, 5: 0}) == wait_runs(waits)
    assert wait_runs([]) == [] and wait_runs({}) == []
    # pairs (a, b) are runs of waits of one cycle
    assert UopRun(0, 9, ALU_LATENCY, None, True, False, [(2, 5)]).busy_end == \
        UopRun(0, 9, ALU_LATENCY, None, True, False, [(2, 5, 1)]).busy_end == 9 + ALU_LATENCY + 3


@pytest.mark.parametrize("w", [1, 2])
def test_a_huge_waiting_loop_is_a_few_numbers(w):
    """Two billion micro-ops on one ACC entry, every one after the first waiting ``w`` cycles
    (w = 2: a MUL): one group of lone pulses, not one entry per wait."""
    n = 1 << 31
    run = UopRun(0, n, ALU_LATENCY, None, True, False, [(1, n, w)])
    assert len(run.lo) == 2
    first = 1 + ALU_LATENCY
    assert run.busy_end == n + ALU_LATENCY + w * (n - 1)
    assert run.done(first) and not run.done(first + 1) and run.done(first + 1 + w)
    assert not run.done(first + 2 + w)
    assert run.done(run.busy_end) and not run.done(run.busy_end - 1)
    assert run.done_pulses(0, run.busy_end + 1) == n
    assert run.done_pulses(first, first + 10 * (w + 1)) == 10
    t = first + 10 * (w + 1)                   # a lone pulse: changes in it and the next cycle
    assert run.events(t) == (-1, run.busy_end + 1, t)
    assert run.events(t + 1) == (-1, run.busy_end + 1, t + 1)
    assert run.events(t + 2) == (-1, run.busy_end + 1, t + 2 if w == 1 else t + 3)


class _Insn:
    def __init__(self, op, use_imm):
        self.alu_opcode, self.use_imm = op, use_imm


class _Semantics:
    """The two methods ``alu_stall_runs`` uses, with chunks of the given sizes."""

    def __init__(self, dst, src, sizes):
        self.dst, self.src, self.sizes = dst, src, sizes
        self.executing = ()

    def _uop_bases(self, insn):
        return None

    def _uop_chunks(self, insn, bases, used):
        at = 0
        for k in self.sizes:
            yield (self.dst[at:at + k], None if not used[1] else self.src[at:at + k], None)
            at += k


@pytest.mark.parametrize("seed", range(60))
def test_alu_stall_runs_equal_the_whole_loops_waits(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    span = int(rng.integers(1, 5))
    dst, src = rng.integers(0, span, n), rng.integers(0, span, n)
    sizes = []
    while sum(sizes) < n:                       # chunks of 1, 2, ... micro-ops
        sizes.append(min(int(rng.choice([1, 1, 2, 3, 7, 40])), n - sum(sizes)))
    op = AluOp(int(rng.integers(0, 5)))
    imm = bool(rng.random() < 0.5)
    limit = None if rng.random() < 0.5 else int(rng.integers(0, n + 1))
    sem = _Semantics(dst, src, sizes)
    got = alu_stall_runs(sem, _Insn(op, imm), limit)
    assert sem.executing is None
    waits = alu_stalls(dst, None if imm else src, op == AluOp.MUL)
    if limit is not None:
        waits = waits[:max(limit - 1, 0)]
    assert got == wait_runs(waits)


def test_alu_stall_runs_of_a_mul_on_one_entry():
    """Every micro-op of a MUL on one ACC entry waits two cycles, across chunks: one run."""
    n = 1000
    sem = _Semantics(np.zeros(n, np.int64), np.zeros(n, np.int64), [1, 1, 3, 995])
    assert alu_stall_runs(sem, _Insn(AluOp.MUL, True), None) == [(1, n, 2)]
    assert alu_stall_runs(sem, _Insn(AluOp.ADD, True), None) == [(1, n, 1)]
