"""The fast path of the cycle simulator against stepping every cycle, on random programs.

``simulate(image)`` skips frozen stretches, repeated periods (:mod:`sim.timing.period`) and
the beats of streaming bursts (:mod:`sim.timing.stream`); ``simulate(image, fast=False)``
steps every cycle. On random programs (the conformance generator's and the streaming ones of
``test_cycle_periods``) over random memory systems, both must end in the same state: cycles,
every counter, the error, the DRAM and every register; and every single skip is checked on the
spot against a copy of the core stepped to the same cycle (the ``verify_jumps`` fixture).
Whether either path equals the RTL is ``test_cycle.py``'s and ``test_memory_system.py``'s job.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from driver import Device, MemType
from isa.config import load_config
from isa.conformance import random_program
from sim.cycle import simulate
from sim.timing.period import PeriodSkipper, _stable

from .test_cycle import _padded
from .test_cycle_periods import streaming_program, verify_jumps  # noqa: F401 (autouse)

FULL = bool(os.environ.get("VTA_FULL"))

MEMORY = st.fixed_dictionaries({
    "mem_latency": st.sampled_from([1, 4, 13, 32]),
    "mem_outstanding": st.sampled_from([1, 2, 8]),
    "mem_beat_interval": st.sampled_from([1, 1, 1, 2]),
})


def _state(core) -> tuple:
    look = PeriodSkipper(core)
    return (core.t, core.error, core.error_index, look.exact(_stable), look.counting(),
            core.mem.slot, core.mem.write_turn)


@settings(max_examples=150 if FULL else 20, deadline=None, derandomize=True)
@given(config=st.sampled_from(["tiny", "small", "default"]), memory=MEMORY,
       seed=st.integers(0, 1 << 16), streaming=st.booleans())
def test_fast_path_equals_stepping(config, memory, seed, streaming):
    cfg = load_config(config).replace(**memory)
    image = _padded(streaming_program(cfg, seed)) if streaming else random_program(cfg, seed)
    fast, slow = simulate(image), simulate(image, fast=False)
    assert _state(fast) == _state(slow)
    assert np.array_equal(fast.dram, slow.dram)


def test_beats_and_ramps_are_skipped():
    """The benchmark's kind of transfer (whole-buffer loads and stores) does skip beats, and
    ramps (queue heads' ages, padding zeros: ``Core.ramp``) are skipped too, each skip checked
    against stepping (``verify_jumps``), on a wide and on a narrow configuration, at both
    latencies of the benchmark."""
    for config in ("default", "small"):
        for latency in (4, 32):
            cfg = load_config(config).replace(mem_latency=latency)
            image = _padded(streaming_program(cfg, 3))
            fast, slow = simulate(image), simulate(image, fast=False)
            assert _state(fast) == _state(slow)
            assert fast.beats.skips > 0 and fast.beats.skipped_cycles > 0
            assert fast.ramped > 0


def _store_drain(cfg, rows: int, x: int, gap: int, race: bool):
    """One STORE of ``rows`` × ``x`` OUT elements at a pitch of ``x + gap`` (optionally racing
    an INP load): its bursts drain while their ``wr_ack``s come back."""
    dev = Device(cfg, dram_bytes=1 << 20)
    c = dev.config
    x = max(1, min(x, c.acc_depth // rows, c.inp_depth // rows))
    out = dev.empty((rows * (x + gap), c.batch, c.block_out), np.int8)
    s = dev.stream()
    if race:
        inp = dev.array(np.ones((rows * x, c.batch, c.block_in), np.int8))
        s.load_2d(MemType.INP, 0, inp, x_size=x, y_size=rows)
    s.store_2d(0, out, 0, x_size=x, y_size=rows, x_stride=x + gap)
    return _padded(s.build_image())


@settings(max_examples=60 if FULL else 12, deadline=None, derandomize=True)
@given(config=st.sampled_from(["tiny", "small", "default"]),
       latency=st.sampled_from([1, 2, 4, 13, 32]), outstanding=st.sampled_from([1, 2, 3, 8]),
       rows=st.integers(1, 3), x=st.integers(1, 300), gap=st.integers(0, 5),
       race=st.booleans())
def test_write_drains_equal_stepping(config, latency, outstanding, rows, x, gap, race):
    """The acks folded into beat skips (a store's drain) give every register stepping gives;
    every skip is also checked on the spot (``verify_jumps``)."""
    cfg = load_config(config).replace(mem_latency=latency, mem_outstanding=outstanding)
    image = _store_drain(cfg, rows, x, gap, race)
    fast, slow = simulate(image), simulate(image, fast=False)
    assert _state(fast) == _state(slow)
    assert np.array_equal(fast.dram, slow.dram)


def test_write_drain_acks_are_folded():
    """The benchmark's kind of store (a whole buffer, latency 4: each ack comes back inside
    the next burst) folds acks."""
    cfg = load_config("default").replace(mem_latency=4)
    image = _store_drain(cfg, 1, 1024, 0, False)
    fast, slow = simulate(image), simulate(image, fast=False)
    assert _state(fast) == _state(slow)
    assert fast.beats.acks_folded > 0


def test_beat_skip_waits_for_a_new_grant():
    """A beat skip compares two cycles' states; they must differ when only the arbiter's grant
    changed (a command appearing in the first: it fires in the next cycle). The benchmark's
    convolution-like program on ``small`` at latency 32 (80 tiles: fetch refills its buffer
    while an INP row streams) met that at cycle 1772; every skip up to cycle 3000 is checked
    against stepping (``verify_jumps``)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_cycle import conv_like
    from sim.cycle import _as_image, _copy_dram
    from sim.timing.core import Core
    image = _as_image(conv_like(load_config("small").replace(mem_latency=32), 80))
    core = Core(image.config, _copy_dram(image.dram), image.insn_addr, image.insn_count)
    with pytest.raises(TimeoutError):
        core.run(3000)
    assert core.beats.skips > 10
