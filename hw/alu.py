"""The tensor ALU: MIN, MAX, ADD, SHR, MUL on accumulator tiles (reference §3.5, SPEC §4.4)."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.arch import ALU_LATENCY  # cycles from a micro-op's issue to its ACC write
from isa.config import VTAConfig
from isa.encoding import AluOp

from .fields import alu_insn, uop
from .uop_loop import UopLoop, offset_widths

__all__ = ["AluLane", "TensorAlu", "ALU_LATENCY", "mul_join"]


def mul_join(p_lo, p_mid, width: int):
    """The low ``width`` bits of a product from :class:`AluLane`'s partial products:
    ``p_lo + (p_mid << h)`` (h = width // 2) — one ``width - h``-bit add on the upper half."""
    h = width // 2
    return Cat(p_lo[:h], (p_lo[h:] + p_mid)[:width - h])


class AluLane(wiring.Component):
    """One lane: ``r = op(a, b)`` on ``width``-bit two's complement values. Combinational.

    SHR: b ≥ 0 is an arithmetic right shift (b ≥ width gives the sign fill), b < 0 a left shift
    by −b (−b ≥ width gives 0). ADD keeps the low ``width`` bits. MUL is split for a second
    stage (``r`` is 0): with halves of h = width // 2 bits, ``p_lo`` = a_lo · b_lo and ``p_mid``
    = the low width − h bits of a_hi · b_lo + a_lo · b_hi; :func:`mul_join` of the two is the
    product's low ``width`` bits (equal for signed and unsigned operands).
    """

    def __init__(self, width: int):
        self._w = width
        h = width // 2
        super().__init__({"op": In(3), "a": In(signed(width)), "b": In(signed(width)),
                          "r": Out(signed(width)), "p_lo": Out(2 * h), "p_mid": Out(width - h)})

    def elaborate(self, platform):
        m = Module()
        w = self._w
        h = w // 2
        a, b = self.a, self.b
        ua, ub = a.as_unsigned(), b.as_unsigned()
        m.d.comb += [self.p_lo.eq(ua[:h] * ub[:h]),
                     self.p_mid.eq((ua[h:] * ub[:h] + ua[:h] * ub[h:])[:w - h])]
        nb = Signal(signed(w + 1))
        m.d.comb += nb.eq(-b)
        lw = (w - 1).bit_length()
        with m.Switch(self.op):
            with m.Case(AluOp.MIN):
                m.d.comb += self.r.eq(Mux(a < b, a, b))
            with m.Case(AluOp.MAX):
                m.d.comb += self.r.eq(Mux(a < b, b, a))
            with m.Case(AluOp.ADD):
                m.d.comb += self.r.eq((a + b)[:w])
            with m.Case(AluOp.SHR):
                with m.If(b >= 0):
                    with m.If(b >= w):
                        m.d.comb += self.r.eq(a >> (w - 1))
                    with m.Else():
                        m.d.comb += self.r.eq(a >> b.as_unsigned()[:lw])
                with m.Else():
                    with m.If(nb >= w):
                        m.d.comb += self.r.eq(0)
                    with m.Else():
                        m.d.comb += self.r.eq((a << nb.as_unsigned()[:lw])[:w])
        return m


class TensorAlu(wiring.Component):
    """Pipelined tensor ALU: one micro-op per cycle, with an immediate and in vector mode.

    ``start`` in cycle *c* → micro-op *j* issued in *c* + 1 + *j*, writes ACC[dst] in
    *c* + 1 + *j* + ``ALU_LATENCY`` (6); ``busy`` lasts N + 6 cycles for N micro-ops. Pipeline:
    S0 micro-op read; S1 indices; S2 range check and ACC reads of dst (port A) and src (port B);
    S3 operands registered (SRAM data or forwarded, the immediate folded in); S4 BATCH ×
    BLOCK_OUT lanes compute MIN/MAX/ADD/SHR, and MUL's partial products of 16-bit halves, into
    registers; S5 MUL's halves joined (one 16-bit add), every op's result into a register; S6
    write. No 32-bit multiply sits in one cycle (the FPGA's critical path before), and neither
    the SRAM read nor the ACC write shares a cycle with an op. Vector mode runs at the same
    rate because the ACC buffer has a second read port for src (on an FPGA: a copy of the ACC
    buffer, the price of never stalling).
    The S2 read misses the writes of the four micro-ops ahead: the one writing in the same cycle
    and the one writing in S3's cycle are forwarded into the S3 registers (from the last-write
    register and the result register); at the lanes' inputs in S4, by flags S3 registered, the
    one two ahead from the result register and the one just ahead from S5's join (its
    16-bit add then precedes the lanes' multipliers: the price of full rate on a dependent
    chain). Every micro-op sees all earlier results. An index past the ACC depth (src only
    in vector mode) raises ``err`` in S2.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            "start": In(1), "insn": In(alu_insn(cfg)), "busy": Out(1), "err": Out(1),
            "uop_raddr": Out(cfg.log_uop_depth), "uop_rdata": In(32),
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
        op = Signal(3)
        use_imm = Signal()
        imm = Signal(signed(cfg.acc_width))
        with m.If(self.start):
            m.d.sync += [op.eq(insn.alu_opcode), use_imm.eq(insn.use_imm), imm.eq(insn.imm)]
        v3, d3, s3 = self._front(m, loop, use_imm)
        v6, d6, r6, v4, v5 = self._back(m, v3, d3, s3, op, use_imm, imm)
        m.d.comb += [self.acc_waddr.eq(d6), self.acc_wdata.eq(r6), self.acc_wen.eq(v6),
                     self.uop_done.eq(v6)]
        m.d.comb += self.busy.eq(loop.valid | self._v1 | self._v2 | v3 | v4 | v5 | v6)
        return m

    def _front(self, m, loop, use_imm):
        """S0 micro-op read → S1 indices → S2 range check and ACC reads; returns S3's
        valid, dst and src (the reads' data arrive in S3)."""
        cfg = self._cfg
        m.d.comb += self.uop_raddr.eq(loop.uop_next)   # read a cycle ahead: data in S0
        wd, ws = self._widths["dst"], self._widths["src"]
        v1 = self._v1 = Signal()
        d1, s1, dover1, sover1 = Signal(wd), Signal(ws), Signal(), Signal()
        m.d.sync += [v1.eq(loop.valid & ~self.err), d1.eq(loop.dst_off), s1.eq(loop.src_off),
                     dover1.eq(loop.dst_over), sover1.eq(loop.src_over)]
        u = Signal(uop(cfg))                # registered in S0: no adder after the block RAM
        m.d.sync += u.eq(self.uop_rdata)
        v2 = self._v2 = Signal()
        d2, s2, dover2, sover2 = Signal(wd + 1), Signal(ws + 1), Signal(), Signal()
        m.d.sync += [v2.eq(v1 & ~self.err), d2.eq(u.dst + d1), s2.eq(u.src + s1),
                     dover2.eq(dover1), sover2.eq(sover1)]
        bad = Signal()
        m.d.comb += [
            # index ≥ depth (a power of two): the offset's flag or any bit above the address
            bad.eq(dover2 | d2[cfg.log_acc_depth:].any()
                   | (~use_imm & (sover2 | s2[cfg.log_acc_depth:].any()))),
            self.err.eq(v2 & bad),
            self.acc_raddr.eq(d2), self.src_raddr.eq(s2),
        ]
        v3 = Signal()
        d3, s3 = Signal(cfg.log_acc_depth), Signal(cfg.log_acc_depth)
        m.d.sync += [v3.eq(v2 & ~bad), d3.eq(d2), s3.eq(s2)]
        return v3, d3, s3

    def _back(self, m, v3, d3, s3, op, use_imm, imm):
        """S3 operands → S4 lanes → S5 join → S6 write; returns S6's valid, dst and result, and
        the valids of S4 and S5. Forwarding (newest wins): S3 takes the S6 result (micro-op three
        ahead) over the last write (four ahead) over the SRAM data; S4's lanes take, when S3
        flagged the address match, S5's result (one ahead, the join's output) over the S6
        result (two ahead)."""
        cfg = self._cfg
        lanes = cfg.batch * cfg.block_out
        v4, v5, v6, last_valid = Signal(), Signal(), Signal(), Signal()
        d4, d5, d6, last_addr = (Signal(cfg.log_acc_depth, name=n)
                                 for n in ("d4", "d5", "d6", "last_addr"))
        r6, last_data = Signal(cfg.acc_elem_bits), Signal(cfg.acc_elem_bits)

        def operand(addr, sram):
            return Mux(v6 & (d6 == addr), r6,
                       Mux(last_valid & (last_addr == addr), last_data, sram))

        # S3: operands registered; the flags say the micro-op now in S4 (one) or S5 (two
        # ahead) writes them.
        a4, b4 = Signal(cfg.acc_elem_bits), Signal(cfg.acc_elem_bits)
        hit1_a, hit1_b, hit2_a, hit2_b = (Signal(name=n)
                                          for n in ("hit1_a", "hit1_b", "hit2_a", "hit2_b"))
        m.d.sync += [v4.eq(v3), d4.eq(d3),
                     a4.eq(operand(d3, self.acc_rdata)),
                     b4.eq(Mux(use_imm, imm.as_unsigned().replicate(lanes),
                               operand(s3, self.src_rdata))),
                     hit1_a.eq(v4 & (d4 == d3)), hit1_b.eq(~use_imm & v4 & (d4 == s3)),
                     hit2_a.eq(v5 & (d5 == d3)), hit2_b.eq(~use_imm & v5 & (d5 == s3))]
        r5 = self._lanes(m, op, a4, b4, hit1_a, hit1_b, hit2_a, hit2_b, r6)
        m.d.sync += [v5.eq(v4), d5.eq(d4), v6.eq(v5), d6.eq(d5), r6.eq(r5)]
        # S6 writes r6; the last write is kept for the S3 of four micro-ops behind.
        m.d.sync += [last_valid.eq(v6), last_addr.eq(d6), last_data.eq(r6)]
        return v6, d6, r6, v4, v5

    def _lanes(self, m, op, a4, b4, hit1_a, hit1_b, hit2_a, hit2_b, r6):
        """S4: BATCH × BLOCK_OUT lanes on the registered (or forwarded) operands, their
        results and MUL's partial products registered; S5: MUL's join. Returns S5's result
        (combinational: the write register's input and the one-ahead forward), so the
        multiply's two halves sit in two cycles and every op takes both."""
        aw = self._cfg.acc_width
        h = aw // 2
        fwd = Signal(len(a4))        # S5's result, forwarded to the micro-op one behind
        x5 = Signal(len(a4))
        mul5 = Signal()
        parts = []
        for i in range(len(a4) // aw):
            lane = AluLane(aw)
            m.submodules[f"lane{i}"] = lane
            sl = slice(i * aw, (i + 1) * aw)
            m.d.comb += [lane.op.eq(op),
                         lane.a.eq(Mux(hit1_a, fwd[sl], Mux(hit2_a, r6[sl], a4[sl]))),
                         lane.b.eq(Mux(hit1_b, fwd[sl], Mux(hit2_b, r6[sl], b4[sl])))]
            p_lo, p_mid = Signal(2 * h, name=f"p_lo{i}"), Signal(aw - h, name=f"p_mid{i}")
            m.d.sync += [x5[sl].eq(lane.r), p_lo.eq(lane.p_lo), p_mid.eq(lane.p_mid)]
            parts.append(mul_join(p_lo, p_mid, aw))
        m.d.sync += mul5.eq(op == AluOp.MUL)
        m.d.comb += fwd.eq(Mux(mul5, Cat(*parts), x5))
        return fwd
