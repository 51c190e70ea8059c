"""The tensor ALU pipeline on its own in Amaranth's simulator: sequential semantics at every
read-after-write distance (the stalled one just ahead and those the forwarding covers), and the
timing contract: one micro-op per cycle but a wait for one reading a micro-op fewer than two
issue slots ahead (three in a MUL); the stall's difference registers equal their definitions
in every cycle (``TensorAlu.invariants``)."""

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Value

from hw.alu import TensorAlu
from hw.compute import acc_buffer, uop_buffer
from hw.fields import uop
from isa.arch import ALU_LATENCY
from isa.config import load_config
from isa.encoding import AluOp
from sim.functional import alu_op

from .pipeline_bench import simulate

CFG = load_config("tiny")
LANES = CFG.batch * CFG.block_out
AW = CFG.acc_width
MASK = (1 << AW) - 1


class _Bench(Elaboratable):
    """The ALU with its micro-op buffer and an ACC buffer of two read ports, as in hw.compute."""

    def __init__(self, uops, acc):
        self.alu = TensorAlu(CFG)
        self.uops = uops
        self.acc = acc

    def elaborate(self, platform):
        m = Module()
        m.submodules.alu = alu = self.alu
        _, ur = uop_buffer(m, CFG, init=self.uops)
        w, (ra, rb) = acc_buffer(m, CFG, init=self.acc)
        self.abuf = m.submodules.acc_buf
        m.d.comb += [ur.addr.eq(alu.uop_raddr), alu.uop_rdata.eq(ur.data),
                     ur.out_en.eq(~alu.uop_hold),
                     ra.addr.eq(alu.acc_raddr), alu.acc_rdata.eq(ra.data),
                     rb.addr.eq(alu.src_raddr), alu.src_rdata.eq(rb.data),
                     w.addr.eq(alu.acc_waddr), w.data.eq(alu.acc_wdata), w.en.eq(alu.acc_wen)]
        return m


def _pack(row):
    return sum((int(v) & MASK) << (i * AW) for i, v in enumerate(row))


def _unpack(word):
    vals = [(word >> (i * AW)) & MASK for i in range(LANES)]
    return [v - (1 << AW) if v >> (AW - 1) else v for v in vals]


def _executions(uops, it):
    """(dst, src) of every micro-op execution, in loop order."""
    (io, ii), (dfo, dfi, sfo, sfi) = it
    return [(d + i * dfo + j * dfi, s + i * sfo + j * sfi)
            for i in range(io) for j in range(ii) for d, s in uops]


def _reference(acc, uops, op, use_imm, imm, it):
    """Sequential semantics (SPEC §4.4): every micro-op sees all earlier results."""
    acc = acc.copy()
    for dst, src in _executions(uops, it):
        b = np.int64(imm) if use_imm else acc[src].copy()
        acc[dst] = alu_op(op, acc[dst], b)
    return acc


def _waits(ex, use_imm, mul):
    """Cycles each execution waits (written out here, not with isa.arch.alu_stalls, as the
    hardware's contract in docs/hardware.md §5): it issues two or more cycles after every
    micro-op whose dst it reads (its dst, or in vector mode its src), three in a MUL."""
    need = 3 if mul else 2
    issue, waits = [], []
    for j, (d, s) in enumerate(ex):
        t = issue[-1] + 1 if issue else 0
        for k in range(max(0, j - 2), j):
            if d == ex[k][0] or (not use_imm and s == ex[k][0]):
                t = max(t, issue[k] + need)
        waits.append(t - (issue[-1] + 1) if issue else 0)
        issue.append(t)
    return waits


def _expected_writes(uops, it, use_imm, op):
    """Write cycles of a start in cycle 0: one per cycle from 1 + ALU_LATENCY, later by the
    waits (:func:`_waits`) of each micro-op and those before it."""
    t, writes = 1 + ALU_LATENCY, []
    for w in _waits(_executions(uops, it), use_imm, op == AluOp.MUL):
        t += w
        writes.append(t)
        t += 1
    return writes


def _run(acc, uops, op, use_imm, imm, it, scramble=None):
    words = [uop(CFG).const({"dst": d, "src": s, "wgt": 0}).as_value().value for d, s in uops]
    dut = _Bench(words, [_pack(r) for r in acc])
    alu = dut.alu
    (io, ii), (dfo, dfi, sfo, sfi) = it
    n = io * ii * len(uops)
    log = {}

    async def bench(ctx):
        for f, v in dict(uop_bgn=0, uop_end=len(uops), iter_out=io, iter_in=ii,
                         dst_factor_out=dfo, dst_factor_in=dfi, src_factor_out=sfo,
                         src_factor_in=sfi, alu_opcode=op, use_imm=use_imm, imm=imm).items():
            ctx.set(getattr(alu.insn, f), v)
        await ctx.tick()        # the instruction is there a cycle before its start (UopLoop)
        ctx.set(alu.start, 1)
        await ctx.tick()
        ctx.set(alu.start, 0)
        writes, busy = [], 0
        for t in range(1, 3 * n + ALU_LATENCY + 4):     # (a MUL waits up to 2 per micro-op)
            if scramble is not None:      # the instruction is held only until its start
                ctx.set(Value.cast(alu.insn), int(scramble.integers(0, 1 << 62)))
            assert not ctx.get(alu.err)
            for name, flag, value in alu.invariants:    # registers equal to what they stand for
                assert ctx.get(flag) == ctx.get(value), (t, name)
            busy += ctx.get(alu.busy)
            if ctx.get(alu.acc_wen):
                writes.append(t)
            await ctx.tick()
        log["writes"], log["busy"] = writes, busy
        log["acc"] = [ctx.get(dut.abuf.data[i]) for i in range(CFG.acc_depth)]

    simulate(dut, bench)
    want = _expected_writes(uops, it, use_imm, op)
    assert log["writes"] == want
    assert log["busy"] == want[-1]       # busy from the first issue (cycle 1) to the last write
    return np.array([_unpack(w) for w in log["acc"]], np.int64)


NO_LOOP = ((1, 1), (0, 0, 0, 0))


@pytest.mark.parametrize("distance", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("use_imm", [0, 1])
@pytest.mark.parametrize("op", list(AluOp))
def test_read_after_write_at_every_distance(distance, op, use_imm):
    """Micro-op j reads (as dst, and in vector mode as src) what micro-op j − distance wrote:
    distance 1 waits a cycle (MUL two), 2 is forwarded (MUL waits a cycle), 3–5 are
    forwarded, 6 is read from the buffer."""
    rng = np.random.default_rng(distance * 10 + int(op) + 100 * use_imm)
    acc = rng.integers(-50, 50, (CFG.acc_depth, LANES), dtype=np.int64)
    # a chain: entry k+distance's dst and src are entry k's dst
    dsts = [(3 * k) % 16 for k in range(distance)]
    uops = []
    for k in range(12):
        d = dsts[k % distance] if k >= distance else dsts[k]
        s = d if k % 2 else (d + 1) % 16
        uops.append((d, s))
    imm = 3 if op == AluOp.SHR else -7
    want = _reference(acc, uops, op, use_imm, imm, NO_LOOP)
    assert np.array_equal(_run(acc, uops, op, use_imm, imm, NO_LOOP), want)


@pytest.mark.parametrize("op", [AluOp.ADD, AluOp.MUL, AluOp.SHR, AluOp.MIN])
def test_src_reading_the_dst_just_ahead_waits_in_vector_mode_only(op):
    """A chain through src alone (dst k + 1, src k): every micro-op waits in vector mode; with
    an immediate the src is not read, so none does (the write cycles are checked in _run)."""
    rng = np.random.default_rng(7 + int(op))
    acc = rng.integers(-20, 20, (CFG.acc_depth, LANES), dtype=np.int64)
    uops = [(k + 1, k) for k in range(10)]
    for use_imm in (0, 1):
        waits = _waits(_executions(uops, NO_LOOP), use_imm, op == AluOp.MUL)
        assert sum(waits) == (0 if use_imm else 9 * (2 if op == AluOp.MUL else 1))
        want = _reference(acc, uops, op, use_imm, 2, NO_LOOP)
        assert np.array_equal(_run(acc, uops, op, use_imm, 2, NO_LOOP), want)


@pytest.mark.parametrize("seed", range(6))
def test_random_loops_match_sequential_semantics(seed):
    rng = np.random.default_rng(seed)
    acc = rng.integers(-(1 << 20), 1 << 20, (CFG.acc_depth, LANES), dtype=np.int64)
    uops = [(int(rng.integers(0, 6)), int(rng.integers(0, 6))) for _ in range(4)]
    op = AluOp(int(rng.integers(0, 5)))
    use_imm = int(rng.integers(0, 2))
    imm = int(rng.integers(-8, 8)) if op == AluOp.SHR else int(rng.integers(-300, 300))
    it = ((2, 3), (int(rng.integers(0, 3)), int(rng.integers(0, 3)), int(rng.integers(0, 3)),
                   int(rng.integers(0, 3))))
    want = _reference(acc, uops, op, use_imm, imm, it)
    assert np.array_equal(_run(acc, uops, op, use_imm, imm, it), want)


@pytest.mark.parametrize("op", list(AluOp))
def test_fields_after_the_start_cycle_are_ignored(op):
    """Random bits on ``insn`` in every cycle after the start (the ALU keeps the opcode, the
    immediate and the loop in registers loaded while idle): same results, same cycles."""
    rng = np.random.default_rng(300 + int(op))
    acc = rng.integers(-(1 << 20), 1 << 20, (CFG.acc_depth, LANES), dtype=np.int64)
    uops = [(1, 2), (1, 1), (4, 1), (2, 4)]          # stalls in vector mode and with imm
    it = ((2, 2), (1, 2, 0, 1))
    for use_imm in (0, 1):
        want = _reference(acc, uops, op, use_imm, 3, it)
        got = _run(acc, uops, op, use_imm, 3, it, scramble=np.random.default_rng(int(op)))
        assert np.array_equal(got, want)


@pytest.mark.parametrize("distance", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("use_imm", [0, 1])
def test_mul_wraps_at_every_distance(distance, use_imm):
    """Full-range 32-bit operands: the product's low bits, split over two stages, at every
    read-after-write distance the forwarding covers (and one beyond)."""
    rng = np.random.default_rng(100 + distance * 2 + use_imm)
    acc = rng.integers(-(1 << 31), 1 << 31, (CFG.acc_depth, LANES), dtype=np.int64)
    dsts = [(5 * k + 2) % 16 for k in range(distance)]
    uops = [(dsts[k % distance], dsts[(k + 1) % distance]) for k in range(10)]
    imm = -30001 if use_imm else 0
    want = _reference(acc, uops, AluOp.MUL, use_imm, imm, NO_LOOP)
    assert np.array_equal(_run(acc, uops, AluOp.MUL, use_imm, imm, NO_LOOP), want)


@pytest.mark.parametrize("op", [AluOp.ADD, AluOp.MUL])
@pytest.mark.parametrize("last", [(27, 2), (0, 2)])
def test_error_after_stalls_matches_the_cycle_model(last, op):
    """A bad dst (the second outer iteration's, past the ACC depth) behind stalled micro-ops:
    ``err`` in the bad micro-op's first S2 cycle, the micro-ops before it all written, busy as
    :class:`sim.timing.compute.UopRun` says. With ``last`` = (0, 2) the bad index's low bits
    equal the dst just ahead, so the stall and the error meet in one cycle."""
    from sim.timing.compute import UopRun, wait_runs
    uops = [(3, 1), (3, 3), (5, 3), (5, 5), last]
    it = ((2, 1), (125, 0, 0, 0))
    ex = _executions(uops, it)
    bad = next(j for j, (d, _) in enumerate(ex) if d >= CFG.acc_depth)
    words = [uop(CFG).const({"dst": d, "src": s, "wgt": 0}).as_value().value for d, s in uops]
    dut = _Bench(words, [0] * CFG.acc_depth)
    alu = dut.alu
    log = {"writes": [], "err": [], "busy": 0}

    async def bench(ctx):
        for f, v in dict(uop_bgn=0, uop_end=len(uops), iter_out=2, iter_in=1,
                         dst_factor_out=125, alu_opcode=op, use_imm=0).items():
            ctx.set(getattr(alu.insn, f), v)
        await ctx.tick()        # the instruction is there a cycle before its start (UopLoop)
        ctx.set(alu.start, 1)
        await ctx.tick()
        ctx.set(alu.start, 0)
        for t in range(1, 40):
            log["busy"] += ctx.get(alu.busy)
            if ctx.get(alu.acc_wen):
                log["writes"].append(t)
            if ctx.get(alu.err):
                log["err"].append(t)
            await ctx.tick()

    simulate(dut, bench)
    waits = _waits(ex, False, op == AluOp.MUL)
    run = UopRun(0, len(ex), ALU_LATENCY, bad, True, False, wait_runs(dict(enumerate(waits))))
    assert log["err"] == [run.err_at]
    assert log["busy"] == run.busy_end
    assert log["writes"] == [t for t in range(40) if run.done(t)]
    assert len(log["writes"]) == bad
