"""The grouped GEMM products of sim.functional against a per-micro-op numpy loop: uniform and
ragged groups of columns (a convolution's edge rows), float32 and float64 accumulation."""

import numpy as np
import pytest

from isa.config import load_config
from isa.encoding import Gemm, Uop, encode_uops
from sim.functional import FunctionalSimulator


def _reference(sim, insn, uops):
    acc = sim.acc.astype(np.int64)
    for o in range(insn.iter_out):
        for i in range(insn.iter_in):
            for u in uops:
                d = u.dst + o * insn.dst_factor_out + i * insn.dst_factor_in
                s = u.src + o * insn.src_factor_out + i * insn.src_factor_in
                w = u.wgt + o * insn.wgt_factor_out + i * insn.wgt_factor_in
                acc[d] += sim.inp[s].astype(np.int64) @ sim.wgt[w].astype(np.int64).T
    return ((acc + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


@pytest.mark.parametrize("taps,ragged", [(3, False), (3, True), (70, True), (70, False)])
def test_grouped_gemm_matches_a_loop(taps, ragged):
    cfg = load_config("default")
    rng = np.random.default_rng(taps + ragged)
    sim = FunctionalSimulator(cfg, np.zeros(1 << 12, np.uint8))
    if taps > 64:   # large odd products of one sign: sums past 2^24 that float32 would round
        sim.inp[:] = rng.choice([125, 127], sim.inp.shape)
        sim.wgt[:] = rng.choice([125, 127], sim.wgt.shape)
    else:
        sim.inp[:] = rng.integers(-128, 128, sim.inp.shape)
        sim.wgt[:] = rng.integers(-128, 128, sim.wgt.shape)
    sim.acc[:] = rng.integers(-(1 << 31), 1 << 31, sim.acc.shape)
    # Destinations 0..5, each with `taps` micro-ops (fewer on the ragged edge rows);
    # 70 taps of 16 MACs exceed float32's exact range (forces float64).
    uops = [Uop(d, (d * 7 + t) % 64, (t * 3 + d) % 64) for d in range(6)
            for t in range(taps - (ragged and d in (0, 5)) * (1 + d % 2))]
    words = np.frombuffer(encode_uops(uops, cfg), "<u4")
    sim.uop[:words.size] = words
    insn = Gemm(uop_bgn=0, uop_end=len(uops), iter_out=3, iter_in=2, dst_factor_out=6,
                dst_factor_in=24, src_factor_out=64, src_factor_in=192)
    expected = _reference(sim, insn, uops)
    sim.execute(insn)
    np.testing.assert_array_equal(sim.acc, expected)
    assert sim.counters["gemm_counter"] == 6 * len(uops)
