"""Skipping periodic stretches (:mod:`sim.timing.period`): programs dominated by long DMA
transfers — single long rows, many strided and padded rows, loads racing stores, transfers
under a running GEMM — give the same cycles and counters with skipping as stepping every cycle,
and as the RTL; and the skipping does happen."""

from __future__ import annotations

import os

import numpy as np
import pytest

from driver import Device, Loop, MemType, Uop, gemm_kernel
from isa.config import load_config
from sim.cycle import simulate
from sim.timing.period import PeriodSkipper
from sim.timing.stream import BeatSkipper

from .test_cycle import RTL, _padded, check_exact

FULL = bool(os.environ.get("VTA_FULL"))


@pytest.fixture(autouse=True)
def verify_jumps(monkeypatch):
    """Every jump is checked against a copy of the core stepped cycle by cycle: the whole
    state (every register, not only cycles and counters) must agree."""
    for cls in (PeriodSkipper, BeatSkipper):
        real = cls.__init__

        def init(self, core, real=real):
            real(self, core)
            self.verify = True
        monkeypatch.setattr(cls, "__init__", init)


def streaming_program(cfg, seed: int):
    """Rounds of: LOAD INP, LOAD WGT (random rows, strides, padding), LOAD ACC, a GEMM over
    them, STORE of random rows; the next round's loads race this round's store."""
    rng = np.random.default_rng(seed)
    dev = Device(cfg, dram_bytes=4 << 20)
    c = dev.config
    rounds = int(rng.integers(2, 4))

    def shape2d(depth):
        y = int(rng.integers(1, 5))
        pads = (int(rng.integers(0, 2)), int(rng.integers(0, 2))) if rng.random() < .5 \
            else (0, 0)
        xpads = (int(rng.integers(0, 3)), int(rng.integers(0, 3))) if rng.random() < .5 \
            else (0, 0)
        rows = y + sum(pads)
        x = max(1, min(int(rng.integers(1, 200)), depth // rows - sum(xpads)))
        stride = x + (int(rng.integers(0, 9)) if rng.random() < .6 else 0)
        return x, y, stride, pads, xpads

    inp_n, wgt_n, acc_n = 4096, 1024, 2048
    inp = dev.array(rng.integers(-4, 4, (inp_n, c.batch, c.block_in), dtype=np.int8))
    wgt = dev.array(rng.integers(-4, 4, (wgt_n, c.block_out, c.block_in), dtype=np.int8))
    acc = dev.array(rng.integers(-9, 9, (acc_n, c.batch, c.block_out), dtype=np.int32))
    out = dev.empty((4096, c.batch, c.block_out), np.int8)
    s = dev.stream()
    for r in range(rounds):
        if r:
            s.dep_pop("compute", "load")
        for mt, depth, buf, n in ((MemType.INP, c.inp_depth, inp, inp_n),
                                  (MemType.WGT, c.wgt_depth, wgt, wgt_n)):
            x, y, stride, pads, xpads = shape2d(depth)
            off = int(rng.integers(0, n - (y - 1) * stride - x + 1))
            s.load_2d(mt, 0, buf, off, x_size=x, y_size=y, x_stride=stride, y_pad=pads,
                      x_pad=xpads)
        s.dep_push("load", "compute")
        s.dep_pop("load", "compute")
        if r:
            s.dep_pop("store", "compute")
        x, y, stride, pads, xpads = shape2d(c.acc_depth)
        s.load_2d(MemType.ACC, 0, acc, int(rng.integers(0, 64)), x_size=x, y_size=y,
                  x_stride=stride)
        n = int(rng.integers(1, min(c.acc_depth, c.inp_depth) // 2))
        s.gemm(gemm_kernel([Uop(0, 0, 0), Uop(0, 1, 1)], [Loop(n, 1, 1, 0)]))
        s.dep_push("compute", "load")
        s.dep_push("compute", "store")
        s.dep_pop("compute", "store")
        x, y, stride, _, _ = shape2d(c.acc_depth)
        s.store_2d(0, out, int(rng.integers(0, 64)), x_size=x, y_size=y, x_stride=stride)
        s.dep_push("store", "compute")
    s.dep_pop("store", "compute")
    s.dep_pop("compute", "load")
    return s.build_image()


CONFIGS = [("tiny", {}), ("small", {}), ("default", {})]
if FULL:
    CONFIGS += [("small", {"log_bus_width": 9}), ("small", {"log_bus_width": 3, "mem_latency": 7}),
                ("tiny", {"cmd_queue_depth": 2, "token_queue_depth": 1, "mem_latency": 1,
                          "max_burst_beats": 2})]


@pytest.mark.parametrize("base,changes", CONFIGS, ids=lambda v: str(v))
def test_streaming_programs_skip_exactly(base, changes):
    cfg = load_config(base).replace(**changes) if changes else load_config(base)
    jumps = 0
    for seed in range(12 if FULL else 4):
        image = _padded(streaming_program(cfg, seed))
        a, b = simulate(image), simulate(image, fast=False)
        assert (a.t, a.counters, a.mem.bursts, a.mem.read_beats, a.mem.write_beats) == \
            (b.t, b.counters, b.mem.bursts, b.mem.read_beats, b.mem.write_beats), seed
        assert np.array_equal(a.dram, b.dram)
        jumps += a.periods.jumps
        if RTL is not None and (FULL or seed < 2):
            check_exact(image, f"{base} {changes} streaming {seed}")
    assert jumps > 0


def test_benchmark_programs_small():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_cycle import blocked_gemm, conv_like
    for image in (blocked_gemm("default", 2), conv_like("default", 2)):
        a, b = simulate(image), simulate(image, fast=False)
        assert (a.t, a.counters) == (b.t, b.counters)
        assert a.periods.jumps > 0
        if RTL is not None:
            check_exact(image, "benchmark")


@pytest.mark.parametrize("config", ["tiny", "small", "default"])
def test_random_programs_jump_like_stepping(config):
    from isa.conformance import random_program
    for seed in range(100 if FULL else 20):
        image = random_program(config, 7000 + seed)
        a, b = simulate(image), simulate(image, fast=False)
        assert (a.t, a.counters, a.error, a.error_index) == \
            (b.t, b.counters, b.error, b.error_index), seed
