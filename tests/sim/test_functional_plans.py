"""The functional simulator's cached GEMM/ALU plans (wide, tall and batched float32 products,
hazard-free ALU segments) against its simple path (index arrays chunk by chunk, integer
einsum), on seeded random instructions: convolution rows with ragged edges, output-channel
blocks sharing inputs, blocked products, random micro-ops, sums past float32's exact range.
Each instruction runs twice, the second time from other SRAM contents through the cached
plan, so a plan never carries data from one run to the next."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from isa.config import load_config
from isa.encoding import Alu, AluOp, Gemm, Uop, encode_uops
from sim.functional import FunctionalSimulator, alu_op

CFG = load_config("default")


def _conv_row(draw):
    """A row of output pixels, a micro-op per (pixel, tap); the edge pixels skip taps (the
    groups are ragged) and ``taps`` may pass float32's exact range (64 blocks)."""
    pixels, taps = draw(st.integers(1, 8)), draw(st.sampled_from([1, 3, 9, 70]))
    skip = draw(st.integers(0, min(2, taps - 1)))
    uops = [Uop(p, p + t, t) for p in range(pixels) for t in range(taps)
            if not ((p == 0 and t < skip) or (p == pixels - 1 and t >= taps - skip))]
    return uops, dict(dst_factor_out=pixels, src_factor_out=pixels + taps, wgt_factor_in=taps)


def _channel_blocks(draw):
    """Output-channel blocks reading the same inputs (one wide product)."""
    blocks, taps = draw(st.integers(1, 5)), draw(st.integers(1, 12))
    uops = [Uop(c, t, c * taps + t) for c in range(blocks) for t in range(taps)]
    return uops, dict(dst_factor_out=blocks, src_factor_out=taps, dst_factor_in=0)


def _random_uops(draw):
    n = draw(st.integers(1, 12))
    uops = [Uop(draw(st.integers(0, 40)), draw(st.integers(0, 40)), draw(st.integers(0, 40)))
            for _ in range(n)]
    factors = {f: draw(st.integers(0, 6)) for f in
               ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in")}
    return uops, factors


@st.composite
def gemms(draw):
    uops, factors = draw(st.sampled_from([_conv_row, _channel_blocks, _random_uops]).map(
        lambda make: make(draw)))
    factors.setdefault("wgt_factor_out", draw(st.sampled_from([0, 0, 3])))
    factors.setdefault("wgt_factor_in", draw(st.sampled_from([0, 0, 2])))
    insn = Gemm(reset=draw(st.booleans()) and draw(st.booleans()), uop_bgn=0,
                uop_end=len(uops), iter_out=draw(st.integers(1, 4)),
                iter_in=draw(st.integers(1, 3)), **factors)
    return insn, uops


@st.composite
def alus(draw):
    n = draw(st.integers(1, 10))
    uops = [Uop(draw(st.integers(0, 30)), draw(st.integers(0, 30)), 0) for _ in range(n)]
    op = draw(st.sampled_from(list(AluOp)))
    imm = draw(st.integers(-40, 40) if op == AluOp.SHR else st.integers(-(1 << 15), (1 << 15) - 1))
    factors = {f: draw(st.integers(0, 5)) for f in
               ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in")}
    insn = Alu(uop_bgn=0, uop_end=n, iter_out=draw(st.integers(1, 4)),
               iter_in=draw(st.integers(1, 4)), alu_opcode=op, use_imm=draw(st.booleans()),
               imm=imm, **factors)
    return insn, uops


def _sims(uops, seed, extreme):
    """A planned and a simple simulator with the same random SRAM contents."""
    rng = np.random.default_rng(seed)
    planned = FunctionalSimulator(CFG, np.zeros(16, np.uint8))
    simple = FunctionalSimulator(CFG, np.zeros(16, np.uint8))
    simple.use_plans = False
    words = np.frombuffer(encode_uops(uops, CFG), "<u4")
    if extreme:     # large odd products of one sign: sums past 2^24, where float32 rounds
        inp = rng.choice(np.array([125, 127], np.int8), planned.inp.shape)
        wgt = rng.choice(np.array([125, 127], np.int8), planned.wgt.shape)
    else:
        inp = rng.integers(-128, 128, planned.inp.shape, dtype=np.int8)
        wgt = rng.integers(-128, 128, planned.wgt.shape, dtype=np.int8)
    acc = rng.integers(-(1 << 31), 1 << 31, planned.acc.shape, dtype=np.int64).astype(np.int32)
    for sim in (planned, simple):
        sim.uop[:words.size] = words
        sim.inp[:], sim.wgt[:], sim.acc[:] = inp, wgt, acc
    return planned, simple


def _agree(insn, uops, seed, extreme=False):
    for run in range(2):            # the second run takes the plan cached by the first
        planned, simple = _sims(uops, seed + run, extreme)
        planned.execute(insn)
        simple.execute(insn)
        np.testing.assert_array_equal(planned.acc, simple.acc)
        assert planned.counters == simple.counters


@settings(max_examples=120, derandomize=True, deadline=None, database=None)
@given(case=gemms(), seed=st.integers(0, 1 << 30), extreme=st.booleans())
def test_gemm_plans_match_the_simple_path(case, seed, extreme):
    insn, uops = case
    _agree(insn, uops, seed, extreme)


@settings(max_examples=120, derandomize=True, deadline=None, database=None)
@given(case=alus(), seed=st.integers(0, 1 << 30))
def test_alu_plans_match_the_simple_path(case, seed):
    insn, uops = case
    _agree(insn, uops, seed)


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(shift=st.integers(-40, 40), seed=st.integers(0, 1 << 30))
def test_shift_by_a_scalar_matches_the_elementwise_rule(shift, seed):
    a = np.random.default_rng(seed).integers(-(1 << 31), 1 << 31, 64, dtype=np.int64)
    np.testing.assert_array_equal(alu_op(AluOp.SHR, a, np.int64(shift)),
                                  alu_op(AluOp.SHR, a, np.full(a.shape, shift, np.int64)))


def test_each_way_of_running_a_gemm_is_exercised():
    """The examples above reach all three product layouts and the split of long sums."""
    seen, classes = set(), 0
    cases = [([Uop(p, p + t, t) for p in range(4) for t in range(3) if not (p == 0 and t == 0)],
              dict(dst_factor_out=4, src_factor_out=7)),
             # Two classes of pixels (two kernel rows' taps), ragged at both ends.
             ([Uop(p, p + t, t + 9 * (p % 2)) for p in range(6) for t in range(3)
               if not (p < 2 and t == 0) and not (p > 3 and t == 2)],
              dict(dst_factor_out=6, src_factor_out=9)),
             ([Uop(c, t, c * 3 + t) for c in range(3) for t in range(3)],
              dict(dst_factor_out=3, src_factor_out=3)),
             ([Uop(0, 0, 0), Uop(0, 1, 0), Uop(1, 2, 5), Uop(1, 3, 6)], dict(dst_factor_out=2)),
             ([Uop(0, t, t) for t in range(70)], dict(dst_factor_out=1))]
    for uops, factors in cases:
        insn = Gemm(uop_bgn=0, uop_end=len(uops), iter_out=2, **factors)
        _agree(insn, uops, 7, extreme=True)
        planned, _ = _sims(uops, 7, False)
        plan = planned._cached_plan(insn, planned._gemm_plan)
        x_rows = plan.x_rows if plan.mode == "weights" else [plan.x_rows]
        seen.add((plan.mode, max(x.shape[-1] for x in x_rows) * CFG.block_in > 1024))
        classes = max(classes, len(x_rows))
    assert {mode for mode, _ in seen} == {"inputs", "weights", "batched"}
    assert classes == 2
    assert (True in {split for _, split in seen})


def test_plan_cache_forgets_past_its_budget(monkeypatch):
    """Past ``_PLAN_BUDGET`` index entries the cache starts afresh (memory stays bounded) and
    the results stay those of the simple path."""
    from sim import functional
    monkeypatch.setattr(functional, "_PLAN_BUDGET", 64)
    monkeypatch.setitem(functional._PLANS, CFG, functional._Plans())
    uops = [Uop(p, p + t, t) for p in range(4) for t in range(3)]
    sizes = []
    for iters in (1, 2, 3, 4):
        insn = Gemm(uop_bgn=0, uop_end=len(uops), iter_out=iters, dst_factor_out=4,
                    src_factor_out=7)
        _agree(insn, uops, iters)
        sizes.append(functional._PLANS[CFG].entries)
    # Each plan is 19 to 67 entries: the cache was emptied (it never holds two past 64).
    assert sizes != sorted(sizes) and len(functional._PLANS[CFG]) < 4
