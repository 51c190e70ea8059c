"""The tensor ALU: MIN, MAX, ADD, SHR, MUL on accumulator tiles (reference §3.5, SPEC §4.4)."""

from __future__ import annotations

from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.arch import ALU_LATENCY  # issue to ACC write (hw contract)
from isa.config import VTAConfig
from isa.encoding import AluOp

from .fields import alu_insn, uop
from .dsp import RegisteredProduct
from .uop_loop import UopLoop, offset_widths

__all__ = ["AluLane", "TensorAlu", "mul_operands", "ALU_LATENCY", "OP_FLAGS", "PICKS", "FORWARDS",
           "mul_join", "lane_picked", "lane_combine", "lane_result", "op_flags",
           "one_hot"]

def one_hot(width: int, choices):
    """The OR of the ``width``-bit values whose select is high (``choices``: (select, value)
    pairs; at most one select high, each a register): a balanced tree, two LUT levels for four
    choices, where a chain of priority multiplexers takes a level per choice."""
    terms = [sel.replicate(width) & val for sel, val in choices]
    while len(terms) > 1:
        terms = [terms[i] | terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]


def mul_join(p_lo, p_hl, p_lh, width: int):
    """The low ``width`` bits of a product from :class:`AluLane`'s partial products:
    ``p_lo + ((p_hl + p_lh) << h)`` (h = width // 2) — a three-input ``width - h``-bit add on
    the upper half, as a carry-save layer (one LUT per bit: the sum bits and the majority
    carries) and one carry chain, not two carry chains in series (Fmax: the join feeds the
    result register and S4's two-ahead forward, docs/hardware.md §12 step 31)."""
    h = width // 2
    n = width - h
    x, y, z = p_lo[h:][:n], p_hl[:n], p_lh[:n]
    sums = x ^ y ^ z
    carries = Cat(C(0, 1), ((x & y) | (x & z) | (y & z))[:n - 1])
    return Cat(p_lo[:h], (sums + carries)[:n])


#: The decoded opcode a lane takes (:func:`op_flags`), one bit each, in this order.
OP_FLAGS = ("add", "shr", "mul", "minmax", "max")
#: A lane's second-stage choices (one-hot, registered): ``a``, ``b`` (MIN/MAX), ``sum``
#: (ADD), ``sh`` (SHR below the width), ``sign`` (SHR right by the width or more); none for a
#: far left SHR (0) or MUL (the join, chosen by the instruction's MUL flag).
PICKS = ("a", "b", "sum", "sh", "sign")
#: S4's forwards, newest first: the micro-op two stages ahead (S6's pick), three (S7's
#: result), four (the result register, being written), five to seven (the last three writes;
#: a write lands in the block RAM a cycle after it is presented, ``hw.compute.acc_buffer``).
FORWARDS = ("s6", "s7", "r8", "last", "last2", "last3")


def op_flags(op):
    """The decode of an ALU opcode as :data:`OP_FLAGS` bits (the tensor ALU registers them
    with the instruction, so no opcode compare sits in a lane's paths)."""
    return Cat(op == AluOp.ADD, op == AluOp.SHR, op == AluOp.MUL,
               (op == AluOp.MIN) | (op == AluOp.MAX), op == AluOp.MAX)


def mul_operands(a, b, width: int) -> dict:
    """MUL's three partial products, by name: (x, y, bits) for ``p_lo`` = a_lo · b_lo (2h
    bits), ``p_hl`` = a_hi · b_lo and ``p_lh`` = a_lo · b_hi (their low width − h bits), with
    halves of h = width // 2 bits of the operands as unsigned values."""
    h = width // 2
    ua, ub = a.as_unsigned(), b.as_unsigned()
    return {"p_lo": (ua[:h], ub[:h], 2 * h), "p_hl": (ua[h:], ub[:h], width - h),
            "p_lh": (ua[:h], ub[h:], width - h)}


def lane_picked(a, b, total, shifted, pick, width: int):
    """The one-hot ``pick`` (:data:`PICKS`) of ``a``, ``b``, ``total`` (ADD), ``shifted``
    (SHR) and ``a``'s sign, 0 when none (as for MUL): an AND-OR of registers."""
    picks = dict(zip(PICKS, pick))
    return one_hot(width, [(picks["a"], a), (picks["b"], b), (picks["sum"], total),
                           (picks["sh"], shifted),
                           (picks["sign"], a[width - 1].replicate(width))])


def lane_result(is_mul, a, b, total, shifted, pick, p_lo, p_hl, p_lh, width: int):
    """The second stage of a lane (from its registered outputs and operands): MUL's
    :func:`mul_join` when ``is_mul``, else :func:`lane_picked` — an AND-OR of registers
    beside the join's add; the compare's carry chain and the shift tests are a cycle
    before. (The join, after its carry chain, is ORed in last.)"""
    return lane_combine(is_mul, lane_picked(a, b, total, shifted, pick, width),
                        mul_join(p_lo, p_hl, p_lh, width))


def lane_combine(is_mul, picked, joined):
    """A lane's (or a row of lanes') result from its two parts: MUL's join when ``is_mul``,
    else the picked result (0 in a MUL), the join ORed in last."""
    return picked | (is_mul.replicate(len(picked)) & joined)


class AluLane(wiring.Component):
    """One lane's first stage on ``width``-bit two's complement values. Combinational.

    ``ops``: :func:`op_flags` of the opcode. ``total`` = a + b (the low ``width`` bits),
    ``shifted`` = SHR's result for an amount below ``width`` (b ≥ 0 an arithmetic right
    shift, b < 0 a left shift by −b). ``pick`` (:data:`PICKS`, one-hot or none) tells
    :func:`lane_result` what the result is: MIN/MAX's ``a`` or ``b`` by the compare a < b,
    ADD's ``total``, SHR's ``shifted``, or for SHR by ``width`` or more the sign fill
    (b ≥ width) or 0 (−b ≥ width) — the shift tests beside the shifter, not before its
    output. MUL gives,
    with halves of h = width // 2 bits, ``p_lo`` = a_lo · b_lo and ``p_hl``, ``p_lh`` = the low
    width − h bits of a_hi · b_lo and a_lo · b_hi (each a multiplier's output alone, so on an
    FPGA a DSP's output goes straight into a register); :func:`mul_join` of the three is the
    product's low ``width`` bits (equal for signed and unsigned operands). :func:`lane_result`
    is the second stage.
    """

    def __init__(self, width: int):
        self._w = width
        h = width // 2
        super().__init__({"ops": In(len(OP_FLAGS)), "a": In(signed(width)),
                          "b": In(signed(width)), "total": Out(width), "shifted": Out(width),
                          "pick": Out(len(PICKS)),
                          "p_lo": Out(2 * h), "p_hl": Out(width - h), "p_lh": Out(width - h)})

    def elaborate(self, platform):
        m = Module()
        w = self._w
        a, b = self.a, self.b
        f = dict(zip(OP_FLAGS, self.ops))
        for name, (x, y, bits) in mul_operands(a, b, w).items():
            m.d.comb += getattr(self, name).eq((x * y)[:bits])
        lw = (w - 1).bit_length()
        near, fill, near_shift = self._shift_decode(a, b, w, lw)
        m.d.comb += [self.total.eq(a + b), self.shifted.eq(near_shift)]
        take_a = f["max"] ^ (a < b)
        m.d.comb += self.pick.eq(Cat(f["minmax"] & take_a, f["minmax"] & ~take_a, f["add"],
                                     f["shr"] & near, f["shr"] & fill))
        return m

    @staticmethod
    def _shift_decode(a, b, w, lw):
        """SHR's amount tests — ``near`` (|b| < w: the shifter's result), ``fill`` (b ≥ w: the
        sign) — and its result for |b| < w. Where ``width`` is a power of two (every shipped
        configuration) the tests are two wide reductions of b's high bits, side by side (no
        carry chain, and no test on top of another: Fmax): near is "high bits (the sign's
        among them) all zeros, or all ones with low bits non-zero" (0 ≤ b < w, or
        −w < b < 0), fill is "non-negative and not near"; both shifts are one funnel shift
        right by b's low bits — of (sign, a) for b ≥ 0, of (a, 0) for b < 0 (by w + b: a left
        shift by −b), no negation and one multiplexer tree."""
        if w != 1 << lw:
            nb = -b
            return ((b < w) & (nb < w), b >= w,
                    Mux(b[-1], (a << nb.as_unsigned()[:lw])[:w], a >> b.as_unsigned()[:lw]))
        ub = b.as_unsigned()
        neg = b[-1]
        hi_zero = ~ub[lw:].any()
        near = hi_zero | (ub[lw:].all() & ub[:lw].any())
        funnel = Cat(Mux(neg, 0, a), Mux(neg, a, a[-1].replicate(w)))
        return near, ~neg & ~hi_zero, (funnel >> ub[:lw])[:w]


class TensorAlu(wiring.Component):
    """Pipelined tensor ALU: one micro-op per cycle, with an immediate and in vector mode, but
    a micro-op waits in S2 until it is two stages behind the micro-op it reads (three in a
    MUL): a cycle when it reads what the one just ahead writes, in a MUL two, or one when it
    reads what the one two ahead writes (:func:`isa.arch.alu_stalls`).

    ``start`` in cycle *c* (instruction on ``insn`` in *c* − 1 and *c*) → micro-op *j* issued
    in *c* + 1 + *j* + *s*(*j*), writes ACC[dst] in *c* + 1 + *j* + *s*(*j*) +
    ``ALU_LATENCY`` (8), where *s*(*j*) is the sum of the waits of micro-ops 1 … *j*;
    ``busy`` lasts N + 8 + *s*(N − 1) cycles. Pipeline: S0
    micro-op read; S1 indices and their range check, and the stall of the next cycle (S1's
    index against S2's), into registers; S2 ACC reads of dst (port A) and src (port B),
    ``err``, the forward compares (against S4–S9) into registers; S3 the block RAMs' data
    into their output registers, the operand selects registered (which micro-op ahead, now in
    S5–S8 or the last two writes, writes the entry); S4 operands registered (data or forwarded, the immediate folded
    in); S5 BATCH × BLOCK_OUT lanes compute a + b, SHR's shift, MIN/MAX's compare and SHR's
    far tests (as a one-hot pick of the result) into registers, and MUL's multipliers load
    the operands into their input registers; S6 the pick, and MUL's partial products of
    16-bit halves, into registers; S7 MUL's halves joined, every op's result into a
    register; S8 write. ``busy``, ``err`` and the stall
    (``UopLoop.hold``) are registers loaded with their next values. A stalled micro-op stays
    in S2 a cycle more (S0 and S1 hold, its reads repeat) and a bubble enters S3, so a
    producer is always two or more stages ahead of its reader: S4 forwards (:data:`FORWARDS`)
    from S6's pick (two ahead; never a MUL, three or more behind), S7's result (three), the
    result register (four) and the last three writes (five to seven: a write lands in the
    block RAM a cycle after S8, ``hw.compute.acc_buffer``); the S2 read sees everything
    older; its data is in the block RAM's output register in S4. No op shares a cycle with a forward of its own result, no block-RAM output feeds
    logic before a register, and the operand select ends in fabric registers (the DSPs load
    from them a cycle later). Vector mode runs at the same rate because the ACC buffer has a second
    read port for src (on an FPGA: a copy of the ACC buffer). An index past the ACC depth
    (src only in vector mode) raises ``err`` in S2 (in the micro-op's first S2 cycle).
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            "start": In(1), "insn": In(alu_insn(cfg)), "busy": Out(1), "err": Out(1),
            "uop_raddr": Out(cfg.log_uop_depth), "uop_rdata": In(32),
            "uop_hold": Out(1),     # the UOP block RAM's output register holds (S0 stalls)
            "acc_raddr": Out(cfg.log_acc_depth), "acc_rdata": In(cfg.acc_elem_bits),
            "src_raddr": Out(cfg.log_acc_depth), "src_rdata": In(cfg.acc_elem_bits),
            "acc_waddr": Out(cfg.log_acc_depth), "acc_wdata": Out(cfg.acc_elem_bits),
            "acc_wen": Out(1),
            "uop_done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        self._widths = offset_widths(cfg, {"dst": cfg.log_acc_depth, "src": cfg.log_acc_depth})
        m.submodules.loop = loop = UopLoop(cfg, self._widths)
        insn = self.insn
        m.d.comb += [loop.start.eq(self.start), loop.stop.eq(self.err)]
        for f in ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                  "src_factor_out", "src_factor_in"):
            m.d.comb += getattr(loop, f).eq(getattr(insn, f))
        ops = Signal(len(OP_FLAGS))
        use_imm = Signal()
        imm = Signal(signed(cfg.acc_width))
        with m.If(~self.busy):     # every idle cycle: the start cycle's value stays (Fmax)
            m.d.sync += [ops.eq(op_flags(insn.alu_opcode)), use_imm.eq(insn.use_imm),
                         imm.eq(insn.imm)]
        L = cfg.log_acc_depth
        # (one stage past the write: the micro-op whose write lands in the block RAM)
        self._v = {k: Signal(name=f"v{k}") for k in range(1, ALU_LATENCY + 2)}
        self._d = {k: Signal(L, name=f"d{k}") for k in range(3, ALU_LATENCY + 2)}
        is_mul = ops[OP_FLAGS.index("mul")]
        self._d2, self._s2, bad = self._front(m, loop, use_imm, is_mul)
        sel = self._selects(m, use_imm)
        r8 = self._back(m, sel, ops, use_imm, imm)
        v, d, w = self._v, self._d, ALU_LATENCY
        m.d.comb += [self.acc_waddr.eq(d[w]), self.acc_wdata.eq(r8), self.acc_wen.eq(v[w]),
                     self.uop_done.eq(v[w])]
        # busy (loop.valid or any stage valid) as a register loaded with its next value: the
        # loop runs after a start, each stage's valid is the one before it (or, stalled, its
        # own) unless an error clears S0–S2
        m.d.sync += self.busy.eq(self.start | ((loop.valid | v[1] | v[2]) & ~self.err)
                                 | Cat(*(v[k] for k in range(3, w))).any())
        return m

    def _front(self, m, loop, use_imm, is_mul):
        """S0 micro-op read → S1 indices → S2 range check, ACC reads and the stall (S0–S2
        hold, a bubble into S3); returns S2's dst and src (low address bits) and ``bad``."""
        cfg = self._cfg
        v, d = self._v, self._d
        L = cfg.log_acc_depth
        m.d.comb += self.uop_raddr.eq(loop.uop_next)   # read a cycle ahead: data in S0
        wd, ws = self._widths["dst"], self._widths["src"]
        stall = Signal()        # a register: computed a cycle ahead (below)
        # ``UopLoop.hold`` from a copy of it (the same recurrence from the same reset; the
        # copy's next value reads the copy itself, so Yosys keeps both flip-flops, as the
        # arbiter's ``owner_<i>``): the copy sits among the loop registers it enables,
        # ``stall`` by the compares that set it and S0–S2 (Fmax: the one flip-flop was placed
        # among its loads, 2.55 ns from its compare, ecp5-large's worst path at 100 MHz;
        # §12 session 21)
        loop_hold = Signal(name="loop_hold", attrs={"keep": 1})
        m.d.comb += [loop.hold.eq(loop_hold), self.uop_hold.eq(loop_hold)]
        d1, s1, dover1, sover1 = Signal(wd), Signal(ws), Signal(), Signal()
        # S0's micro-op: the UOP block RAM's output register, held with S0 (``uop_hold``;
        # ``hw.compute.uop_buffer``), so no adder follows the block RAM's latch
        u = Signal(uop(cfg))
        m.d.comb += u.eq(self.uop_rdata)
        d2, s2, bad = Signal(L), Signal(L), Signal()
        m.d.sync += [v[1].eq(Mux(stall, v[1], loop.valid) & ~self.err),
                     v[2].eq(Mux(stall, v[2], v[1]) & ~self.err)]
        # S1: the indices (micro-op field + loop offset) and their range check, registered
        # into S2 together, so S2's ``err`` is one AND of registers
        sum_d, sum_s = Signal(wd + 1), Signal(ws + 1)
        m.d.comb += [sum_d.eq(u.dst + d1), sum_s.eq(u.src + s1)]
        # index ≥ depth (a power of two): the offset's flag or a bit above the address
        bad1 = Signal()
        m.d.comb += bad1.eq(dover1 | sum_d[L:].any() | (~use_imm & (sover1 | sum_s[L:].any())))
        with m.If(~stall):
            m.d.sync += [d1.eq(loop.dst_off), s1.eq(loop.src_off),
                         dover1.eq(loop.dst_over), sover1.eq(loop.src_over),
                         d2.eq(sum_d), s2.eq(sum_s),
                         bad.eq(bad1)]
        # S2's err = v2 & bad, a register too (loaded with the next v2 & bad)
        err = Signal()
        m.d.sync += err.eq(~err & Mux(stall, v[2] & bad, v[1] & bad1))
        m.d.comb += [self.err.eq(err), self.acc_raddr.eq(d2), self.src_raddr.eq(s2)]
        # The stall (the micro-op in S2 reads what the one in S3, just ahead, writes) as a
        # register: in the cycle before, the reader is in S1 (its index is S1's sum) and the
        # writer in S2; the writer moves on to S3 (valid, in range, not stalled itself) and
        # the reader to S2 exactly when this cycle does not stall, so the register equals the
        # test of S2's indices against S3's dst and ``UopLoop.hold`` comes from a flip-flop.
        # In a MUL (``is_mul``, constant through an instruction) a reader must also be three
        # stages behind its writer (``ALU_MUL_FORWARD_DISTANCE``): S1's sums against S3's dst
        # (S3 moves on to S4 as S1 moves to S2), and in a stalled cycle S2's held indices
        # against S3's dst — the writer just ahead moves on to S4 while the reader stays, so
        # it waits a second cycle; the bubble behind it ends that.
        # The compares of S1's sums skip S1's adders: (field + offset)[:L] == x exactly when
        # field[:L] == (x − offset)[:L], and the differences come from registers beside the
        # ALU while the micro-op word ``u`` crosses from the UOP buffer, so ``u`` meets only
        # an equality (Fmax: ``u`` → the index adder's carry chain → the compares → the stall
        # register was ecp5-large's worst path at a 100 MHz target, 11.2 ns; §12 session 16).
        # The differences are registers themselves, loaded with their next values (``d[3]``
        # takes ``d2`` in every cycle; ``d2`` takes S1's sums and S1 the loop's offsets unless
        # stalled): ``u`` meets the equality alone, with no subtraction from S3's dst between
        # two registers (Fmax: ``d3`` → its difference's carry chain → the compares → the
        # stall register was ecp5-large's worst path at 100 MHz, 10.02 ns; §12 session 21).
        u_dst, u_src = Signal(L), Signal(L)
        m.d.comb += [u_dst.eq(u.dst), u_src.eq(u.src)]

        def reads(dst_hit, src_hit):
            # a micro-op reads an entry: its dst, or in vector mode its src, is that entry
            return dst_hit | (~use_imm & src_hit)

        def less(tag):
            return Signal(L, name=f"{tag}_less_d1"), Signal(L, name=f"{tag}_less_s1")

        d2_less_d1, d2_less_s1 = less("d2")
        d3_less_d1, d3_less_s1 = less("d3")
        m.d.sync += [d3_less_d1.eq(d2 - Mux(stall, d1, loop.dst_off)),
                     d3_less_s1.eq(d2 - Mux(stall, s1, loop.src_off))]
        with m.If(~stall):
            m.d.sync += [d2_less_d1.eq(sum_d - loop.dst_off),
                         d2_less_s1.eq(sum_d - loop.src_off)]
        #: for the tests: each difference register equals its definition in every cycle
        self.invariants = [("d2_less_d1", d2_less_d1, (d2 - d1)[:L]),
                           ("d2_less_s1", d2_less_s1, (d2 - s1)[:L]),
                           ("d3_less_d1", d3_less_d1, (self._d[3] - d1)[:L]),
                           ("d3_less_s1", d3_less_s1, (self._d[3] - s1)[:L])]
        reads_ahead = reads(u_dst == d2_less_d1, u_src == d2_less_s1)
        reads_ahead2 = reads(u_dst == d3_less_d1, u_src == d3_less_s1)
        held_reads_ahead = reads(d2 == self._d[3], s2 == self._d[3])
        stays = is_mul & v[3] & held_reads_ahead
        starts = v[1] & ((v[2] & ~bad & reads_ahead) | (is_mul & v[3] & reads_ahead2))
        m.d.sync += [stall.eq(Mux(stall, stays, starts)),
                     loop_hold.eq(Mux(loop_hold, stays, starts))]
        self.invariants.append(("loop_hold", loop_hold, stall))
        self._s3 = Signal(L)
        m.d.sync += [v[3].eq(v[2] & ~bad & ~stall), d[3].eq(d2), self._s3.eq(s2)]
        return d2, s2, bad

    def _selects(self, m, use_imm):
        """S3: where S4's operands come from, as one-hot registers per side (a: dst, b: src):
        the newest of the micro-ops now in S6, S7, S8 and the last two writes (in S4's cycle
        two to seven stages ahead: S6's pick, S7's result, the result register, the last
        three writes) that writes the entry, else the block RAM's data (``ram``); b is
        the immediate (``imm``) in immediate mode. The one just ahead never writes it (the
        stall; in a MUL neither does the one two ahead, whose product is not yet made, so
        ``s6`` never selects a MUL)."""
        v, d = self._v, self._d
        L = self._cfg.log_acc_depth
        # The index compares two cycles ahead, registered twice: S2's indices against S4–S9,
        # whose micro-ops are two stages further on when the reader reaches S4 (the stages
        # from S3 on never hold; a stalled reader repeats its compares).
        before = [(v[k], d[k]) for k in range(4, 4 + len(FORWARDS))]
        names = FORWARDS + ("ram",)
        sel = {side: {n: Signal(name=f"sel4_{side}_{n}") for n in names + ("imm",)}
               for side in "ab"}
        for side, idx, off in (("a", self._d2, C(0, 1)), ("b", self._s2, use_imm)):
            older = off
            for n, (vk, dk) in zip(names, before):
                hit = Signal(name=f"hit3_{side}_{n}")
                m.d.sync += hit.eq(vk & (dk == idx))
                m.d.sync += sel[side][n].eq(~older & hit)
                older = older | hit
            m.d.sync += [sel[side]["ram"].eq(~older), sel[side]["imm"].eq(off)]
        return sel

    def _back(self, m, sel, ops, use_imm, imm):
        """S3 ACC data into the block RAMs' output registers → S4 operands → S5 lanes → S6 MUL's products and the pick →
        S7 join → S8 write; returns S8's result register. S4's operands: by S3's selects, the
        data or a forward (S6's pick, S7's result, the result register, the last two writes)
        or the immediate."""
        cfg = self._cfg
        v, d = self._v, self._d
        lanes = cfg.batch * cfg.block_out
        bits = cfg.acc_elem_bits
        r8, last_data, last2_data, last3_data = (
            Signal(bits, name=n) for n in ("r8", "last_data", "last2_data", "last3_data"))
        # S4's data: the block RAMs' output registers (``hw.compute.acc_buffer``)
        ram_a, ram_b = self.acc_rdata, self.src_rdata
        a5, b5 = Signal(bits, name="a5"), Signal(bits, name="b5")
        s6_pick, s7 = self._lanes(m, ops, a5, b5)

        def operand(side, ram, extra=()):
            # S6's pick is the deep choice (the lanes' second stage, 0 for MUL, whose reader
            # is never two behind: the stall), S7's result (MUL's join after its carry chain)
            # the next; the operands go into fabric registers only (the multipliers load
            # theirs from a5/b5 a cycle later, Fmax: docs/hardware.md §12 session 17)
            s = sel[side]
            return one_hot(bits, [(s["r8"], r8), (s["last"], last_data),
                                  (s["last2"], last2_data), (s["last3"], last3_data),
                                  (s["ram"], ram), *extra, (s["s7"], s7), (s["s6"], s6_pick)])

        m.d.sync += [a5.eq(operand("a", ram_a)),
                     b5.eq(operand("b", ram_b, [(sel["b"]["imm"],
                                                 imm.as_unsigned().replicate(lanes))]))]
        for k in range(4, ALU_LATENCY + 2):
            m.d.sync += [v[k].eq(v[k - 1]), d[k].eq(d[k - 1])]
        # S8 writes r8; the last three writes are kept for the S4 of five to seven behind.
        m.d.sync += [r8.eq(s7), last_data.eq(r8), last2_data.eq(last_data),
                     last3_data.eq(last2_data)]
        return r8

    def _lanes(self, m, ops, a5, b5):
        """S5: BATCH × BLOCK_OUT lanes on the operand registers; their outputs (a + b, SHR's
        shift, the one-hot pick) and the operands registered, and MUL's multipliers load the
        operands into their input registers; S6: :func:`lane_picked` into a register, MUL's
        three partial products (each a multiplier's output) into registers; S7:
        :func:`lane_combine` of the two (the join after its carry chain).
        Returns S6's pick (combinational, for S4's two-ahead forward; 0 for MUL, never
        forwarded) and S7's result (combinational: the result register's input, and S4's
        three-ahead forward), so the multiply's halves, the compare and its select, and the
        join each sit in a cycle of their own and every op takes all of them. ``ops``
        (:func:`op_flags`) is constant through an instruction."""
        aw = self._cfg.acc_width
        a6, b6 = Signal(len(a5)), Signal(len(a5))
        m.d.sync += [a6.eq(a5), b6.eq(b5)]
        picked, joined = [], []
        for i in range(len(a5) // aw):
            lane = AluLane(aw)
            m.submodules[f"lane{i}"] = lane
            sl = slice(i * aw, (i + 1) * aw)
            m.d.comb += [lane.ops.eq(ops), lane.a.eq(a5[sl]), lane.b.eq(b5[sl])]
            sum6, sh6 = Signal(aw, name=f"sum6_{i}"), Signal(aw, name=f"sh6_{i}")
            pick6 = Signal(len(PICKS), name=f"pick6_{i}")
            m.d.sync += [sum6.eq(lane.total), sh6.eq(lane.shifted), pick6.eq(lane.pick)]
            # MUL's partial products: each multiplier loads the lane's operand registers into
            # its own input registers (S6) and its product goes into a fabric register beside
            # the join's adder (S7). The operand select before a5/b5 ends in fabric registers,
            # the route to the fixed DSP row is a cycle of its own, and so is the route back
            # (Fmax: S3's data → the select → the DSP's input registers was ecp5-large's
            # largest group of slow paths at a 100 MHz target, §12 session 16)
            prods = {}
            for name, (x, y, bits) in mul_operands(a5[sl], b5[sl], aw).items():
                mul = RegisteredProduct(len(x), len(y), bits, is_signed=False,
                                        register="inputs")
                m.submodules[f"{name}{i}"] = mul
                prods[name] = Signal(bits, name=f"{name}{i}")
                m.d.comb += [mul.a.eq(x), mul.b.eq(y)]
                m.d.sync += prods[name].eq(mul.p)
            picked.append(lane_picked(a6[sl], b6[sl], sum6, sh6, pick6, aw))
            joined.append(mul_join(prods["p_lo"], prods["p_hl"], prods["p_lh"], aw))
        s6_pick, pick7, s7 = Signal(len(a5)), Signal(len(a5)), Signal(len(a5))
        is_mul = ops[OP_FLAGS.index("mul")]
        m.d.comb += [s6_pick.eq(Cat(*picked)),
                     s7.eq(lane_combine(is_mul, pick7, Cat(*joined)))]
        m.d.sync += pick7.eq(s6_pick)
        return s6_pick, s7
