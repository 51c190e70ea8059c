"""The GEMM pipeline on its own in Amaranth's simulator: sequential semantics at full rate
(every read-after-write distance the forwarding covers, checked against numpy), and the
latency contract (``GEMM_LATENCY``)."""

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Value

from hw.compute import acc_buffer, uop_buffer
from hw.fields import uop
from hw.gemm import GemmCore, operand_buffer
from isa.arch import GEMM_LATENCY
from isa.config import load_config

from .pipeline_bench import assert_back_to_back, simulate

CFG = load_config("tiny")
NB, BI, BO = CFG.batch, CFG.block_in, CFG.block_out
AW = CFG.acc_width


async def _start(ctx, g, n_uops, iters, factors, reset):
    """Present one GEMM instruction (micro-ops 0 … n_uops − 1) and pulse ``start`` for a cycle."""
    (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi) = iters, factors
    for f, v in dict(uop_bgn=0, uop_end=n_uops, iter_out=io, iter_in=ii, reset=reset,
                     dst_factor_out=dfo, dst_factor_in=dfi, src_factor_out=sfo,
                     src_factor_in=sfi, wgt_factor_out=wfo, wgt_factor_in=wfi).items():
        ctx.set(getattr(g.insn, f), v)
    await ctx.tick()        # the instruction is there a cycle before its start (UopLoop)
    ctx.set(g.start, 1)
    await ctx.tick()
    ctx.set(g.start, 0)


def _pack(values, width):
    mask = (1 << width) - 1
    return sum((int(v) & mask) << (i * width) for i, v in enumerate(np.ravel(values)))


def _unpack(word, n, width):
    vals = [(word >> (i * width)) & ((1 << width) - 1) for i in range(n)]
    return [v - (1 << width) if v >> (width - 1) else v for v in vals]


class _Bench(Elaboratable):
    """The GEMM core with its micro-op, INP, WGT and ACC buffers, wired as in hw.compute."""

    def __init__(self, uops, inp, wgt, acc):
        self.gemm = GemmCore(CFG)
        self.init = (uops, inp, wgt, acc)

    def elaborate(self, platform):
        m = Module()
        m.submodules.gemm = g = self.gemm
        uops, inp, wgt, acc = self.init
        _, ur = uop_buffer(m, CFG, init=uops)
        _, ir = operand_buffer(m, "ibuf", CFG.inp_elem_bits, CFG.inp_depth, init=inp)
        _, wr = operand_buffer(m, "wbuf", CFG.wgt_elem_bits, CFG.wgt_depth, init=wgt)
        aw, (ar, _) = acc_buffer(m, CFG, init=acc)
        self.abuf = m.submodules.acc_buf
        m.d.comb += [ur.addr.eq(g.uop_raddr), g.uop_rdata.eq(ur.data),
                     ir.addr.eq(g.inp_raddr), g.inp_rdata.eq(ir.data),
                     wr.addr.eq(g.wgt_raddr), g.wgt_rdata.eq(wr.data),
                     ar.addr.eq(g.acc_raddr), g.acc_rdata.eq(ar.data),
                     aw.addr.eq(g.acc_waddr), aw.data.eq(g.acc_wdata), aw.en.eq(g.acc_wen)]
        return m


def _reference(acc, inp, wgt, uops, reset, it):
    """Sequential semantics (SPEC §4.3) in numpy, wrapping to the accumulator width."""
    acc = acc.copy()
    (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi) = it
    for i in range(io):
        for j in range(ii):
            for d, s, w in uops:
                dst = d + i * dfo + j * dfi
                if reset:
                    acc[dst] = 0
                    continue
                x = inp[s + i * sfo + j * sfi]            # (batch, block_in)
                y = wgt[w + i * wfo + j * wfi]            # (block_out, block_in)
                v = acc[dst] + (x @ y.T).ravel()
                acc[dst] = (v + (1 << (AW - 1))) % (1 << AW) - (1 << (AW - 1))
    return acc


def _run(acc, inp, wgt, uops, reset, it, scramble=None):
    words = [uop(CFG).const({"dst": d, "src": s, "wgt": w}).as_value().value
             for d, s, w in uops]
    dut = _Bench(words, [_pack(r, CFG.inp_width) for r in inp],
                 [_pack(r, CFG.wgt_width) for r in wgt], [_pack(r, AW) for r in acc])
    g = dut.gemm
    (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi) = it
    n = io * ii * len(uops)
    log = {}

    async def bench(ctx):
        await _start(ctx, g, len(uops), (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi), reset)
        writes, busy, done = [], 0, 0
        for t in range(1, n + GEMM_LATENCY + 4):
            if scramble is not None:      # the instruction is held only until its start
                ctx.set(Value.cast(g.insn), int(scramble.integers(0, 1 << 62)))
            assert not ctx.get(g.err)
            busy += ctx.get(g.busy)
            done += ctx.get(g.uop_done)
            if ctx.get(g.acc_wen):
                writes.append(t)
            await ctx.tick()
        log.update(writes=writes, busy=busy, done=done)
        log["acc"] = [ctx.get(dut.abuf.data[i]) for i in range(CFG.acc_depth)]

    simulate(dut, bench)
    assert_back_to_back(log, n, GEMM_LATENCY)
    assert log["done"] == (0 if reset else n)
    return np.array([_unpack(w, NB * BO, AW) for w in log["acc"]], np.int64)


def _data(rng, big=False):
    hi = 1 << (AW - 2) if big else 1000
    acc = rng.integers(-hi, hi, (CFG.acc_depth, NB * BO), dtype=np.int64)
    inp = rng.integers(-128, 128, (CFG.inp_depth, NB, BI), dtype=np.int64)
    wgt = rng.integers(-128, 128, (CFG.wgt_depth, BO, BI), dtype=np.int64)
    return acc, inp, wgt


NO_LOOP = ((1, 1), (0, 0, 0, 0, 0, 0))


@pytest.mark.parametrize("distance", [1, 2, 3, 4, 5, 6])
def test_read_after_write_at_every_distance(distance):
    """Micro-op j accumulates into the ACC row micro-op j − distance wrote (the forwarding of
    the four writes the ACC read misses, and the plain SRAM reads just beyond them)."""
    rng = np.random.default_rng(distance)
    acc, inp, wgt = _data(rng)
    rows = [(5 * k + 1) % CFG.acc_depth for k in range(distance)]
    uops = [(rows[k % distance], int(rng.integers(0, CFG.inp_depth)),
             int(rng.integers(0, CFG.wgt_depth))) for k in range(14)]
    want = _reference(acc, inp, wgt, uops, 0, NO_LOOP)
    assert np.array_equal(_run(acc, inp, wgt, uops, 0, NO_LOOP), want)


def test_one_row_back_to_back_wraps_at_accumulator_width():
    """Every micro-op into one row, from values near the int32 limits: the forwarded sum wraps
    like the SRAM one."""
    rng = np.random.default_rng(7)
    acc, inp, wgt = _data(rng, big=True)
    inp[:] = 127
    wgt[:] = -128
    uops = [(3, k % 4, k % 3) for k in range(12)]
    want = _reference(acc, inp, wgt, uops, 0, ((4, 2), (0, 0, 1, 0, 0, 1)))
    assert np.array_equal(_run(acc, inp, wgt, uops, 0, ((4, 2), (0, 0, 1, 0, 0, 1))), want)


def test_reset_writes_zeros_on_time():
    rng = np.random.default_rng(11)
    acc, inp, wgt = _data(rng)
    uops = [(1, 0, 0), (4, 0, 0), (1, 0, 0)]
    it = ((2, 2), (5, 1, 0, 0, 0, 0))
    want = _reference(acc, inp, wgt, uops, 1, it)
    assert np.array_equal(_run(acc, inp, wgt, uops, 1, it), want)


@pytest.mark.parametrize("seed", range(5))
def test_random_loops_match_sequential_semantics(seed):
    rng = np.random.default_rng(100 + seed)
    acc, inp, wgt = _data(rng)
    uops = [(int(rng.integers(0, 4)), int(rng.integers(0, 4)), int(rng.integers(0, 4)))
            for _ in range(int(rng.integers(1, 5)))]
    it = ((int(rng.integers(1, 4)), int(rng.integers(1, 4))),
          tuple(int(rng.integers(0, 3)) for _ in range(6)))
    want = _reference(acc, inp, wgt, uops, 0, it)
    assert np.array_equal(_run(acc, inp, wgt, uops, 0, it), want)


@pytest.mark.parametrize("seed", range(2))
def test_fields_after_the_start_cycle_are_ignored(seed):
    """Random bits on ``insn`` in every cycle after the start (the unit keeps what it needs
    of the instruction in registers loaded while idle): the same writes, cycles and sums."""
    rng = np.random.default_rng(200 + seed)
    acc, inp, wgt = _data(rng)
    uops = [(int(rng.integers(0, 4)), int(rng.integers(0, 4)), int(rng.integers(0, 4)))
            for _ in range(3)]
    it = ((2, 2), tuple(int(rng.integers(0, 3)) for _ in range(6)))
    for reset in (0, 1):
        want = _reference(acc, inp, wgt, uops, reset, it)
        got = _run(acc, inp, wgt, uops, reset, it, scramble=np.random.default_rng(seed))
        assert np.array_equal(got, want)


def _first_bad(uops, it):
    (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi) = it
    j = 0
    for i in range(io):
        for k in range(ii):
            for d, s, w in uops:
                if (d + i * dfo + k * dfi >= CFG.acc_depth or s + i * sfo + k * sfi >= CFG.inp_depth
                        or w + i * wfo + k * wfi >= CFG.wgt_depth):
                    return j
                j += 1
    raise AssertionError("no bad index")


@pytest.mark.parametrize("it", [
    ((3, 2), (0, 0, 0, 0, 40, 1)),              # wgt: 120 + 40 ≥ 128 after an i_out step
    ((2, 3), (0, 0, 1, 15, 0, 0)),              # src: 100 + 2·15 ≥ 128 after i_in steps
    ((2, 2), (0, 127, 0, 0, 0, 0)),             # dst: the widest factor, 1 + 127 ≥ 128
    ((4, 1), (50, 0, 0, 0, 0, 0)),              # dst: 5 + 3·50 ≥ 128
])
def test_index_past_a_buffer_stops_at_its_micro_op(it):
    """The range check on the narrowed offsets (low bits + a sticky "past 2^w" flag) raises
    ``err`` in S2 of exactly the first micro-op whose index is past its buffer."""
    uops = [(1, 2, 3), (5, 100, 120)]       # tiny: 128 entries in ACC, INP and WGT
    bad = _first_bad(uops, it)
    words = [uop(CFG).const({"dst": d, "src": s, "wgt": w}).as_value().value
             for d, s, w in uops]
    dut = _Bench(words, [0] * CFG.inp_depth, [0] * CFG.wgt_depth, [0] * CFG.acc_depth)
    g = dut.gemm
    (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi) = it
    log = {}

    async def bench(ctx):
        await _start(ctx, g, len(uops), (io, ii), (dfo, dfi, sfo, sfi, wfo, wfi), 0)
        errs, writes = [], 0
        for t in range(1, io * ii * len(uops) + GEMM_LATENCY + 4):
            if ctx.get(g.err):
                errs.append(t)
            writes += ctx.get(g.acc_wen)
            await ctx.tick()
        log.update(errs=errs, writes=writes)

    simulate(dut, bench)
    assert log["errs"] == [1 + bad + 2]         # issued in 1 + j, checked in S2
    assert log["writes"] == bad
