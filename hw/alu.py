"""The tensor ALU: MIN, MAX, ADD, SHR, MUL on accumulator tiles (reference §3.5, SPEC §4.4)."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.arch import ALU_LATENCY  # cycles from a micro-op's issue to its ACC write
from isa.config import VTAConfig
from isa.encoding import AluOp

from .fields import alu_insn, uop
from .uop_loop import OFFSET_BITS, UopLoop

__all__ = ["AluLane", "TensorAlu", "ALU_LATENCY"]


class AluLane(wiring.Component):
    """One lane: ``r = op(a, b)`` on ``width``-bit two's complement values. Combinational.

    SHR: b ≥ 0 is an arithmetic right shift (b ≥ width gives the sign fill), b < 0 a left shift
    by −b (−b ≥ width gives 0). ADD and MUL keep the low ``width`` bits.
    """

    def __init__(self, width: int):
        self._w = width
        super().__init__({"op": In(3), "a": In(signed(width)), "b": In(signed(width)),
                          "r": Out(signed(width))})

    def elaborate(self, platform):
        m = Module()
        w = self._w
        a, b = self.a, self.b
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
            with m.Case(AluOp.MUL):
                m.d.comb += self.r.eq((a * b)[:w])
        return m


class TensorAlu(wiring.Component):
    """Pipelined tensor ALU: one micro-op per cycle, with an immediate and in vector mode.

    ``start`` in cycle *c* → micro-op *j* issued in *c* + 1 + *j*, writes ACC[dst] in
    *c* + 1 + *j* + ``ALU_LATENCY`` (4); ``busy`` lasts N + 4 cycles for N micro-ops. Pipeline:
    S0 micro-op read; S1 indices; S2 range check and ACC reads of dst (port A) and src (port B);
    S3 operands registered (SRAM data or forwarded); S4 BATCH × BLOCK_OUT lanes compute and
    write. S4 starts from registers, so the 32-bit multiply has a whole cycle after the SRAM
    read instead of sharing it (the FPGA's critical path). Vector mode runs at the same rate
    because the ACC buffer has a second read port for src (on an FPGA: a copy of the ACC
    buffer, the price of never stalling). The operands of S3 miss two writes — the one in the
    same cycle (S4, forwarded from the lanes' result) and the one in the cycle before
    (forwarded from a register) — so every micro-op sees all earlier results. An index past
    the ACC depth (src only in vector mode) raises ``err`` in S2.
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
        aw = cfg.acc_width
        lanes = cfg.batch * cfg.block_out
        m.submodules.loop = loop = UopLoop(cfg)
        insn = self.insn
        m.d.comb += [loop.start.eq(self.start), loop.stop.eq(self.err)]
        for f in ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                  "src_factor_out", "src_factor_in"):
            m.d.comb += getattr(loop, f).eq(getattr(insn, f))
        op = Signal(3)
        use_imm = Signal()
        imm = Signal(signed(aw))
        with m.If(self.start):
            m.d.sync += [op.eq(insn.alu_opcode), use_imm.eq(insn.use_imm), imm.eq(insn.imm)]

        m.d.comb += self.uop_raddr.eq(loop.uop_idx)
        v1 = Signal()
        d1, s1 = Signal(OFFSET_BITS), Signal(OFFSET_BITS)
        m.d.sync += [v1.eq(loop.valid & ~self.err), d1.eq(loop.dst_off), s1.eq(loop.src_off)]
        u = Signal(uop(cfg))
        m.d.comb += u.eq(self.uop_rdata)
        v2 = Signal()
        d2, s2 = Signal(OFFSET_BITS + 1), Signal(OFFSET_BITS + 1)
        m.d.sync += [v2.eq(v1 & ~self.err), d2.eq(u.dst + d1), s2.eq(u.src + s1)]
        bad = Signal()
        m.d.comb += [
            # index ≥ depth (a power of two): any bit above the address, no carry chain
            bad.eq(d2[cfg.log_acc_depth:].any() | (~use_imm & s2[cfg.log_acc_depth:].any())),
            self.err.eq(v2 & bad),
            self.acc_raddr.eq(d2), self.src_raddr.eq(s2),
        ]
        v3 = Signal()
        d3, s3 = Signal(cfg.log_acc_depth), Signal(cfg.log_acc_depth)
        m.d.sync += [v3.eq(v2 & ~bad), d3.eq(d2), s3.eq(s2)]

        # S3: operands, with the two writes the S2 read missed forwarded (the newest wins).
        v4 = Signal()
        d4 = Signal(cfg.log_acc_depth)
        wdata = Signal(cfg.acc_elem_bits)
        fwd_valid = Signal()
        fwd_addr = Signal(cfg.log_acc_depth)
        fwd_data = Signal(cfg.acc_elem_bits)

        def operand(addr, sram):
            return Mux(v4 & (d4 == addr), wdata,
                       Mux(fwd_valid & (fwd_addr == addr), fwd_data, sram))

        a_vec = Signal(cfg.acc_elem_bits)
        b_vec = Signal(cfg.acc_elem_bits)
        m.d.sync += [v4.eq(v3), d4.eq(d3), a_vec.eq(operand(d3, self.acc_rdata)),
                     b_vec.eq(operand(s3, self.src_rdata))]

        # S4: the lanes, from registers, and the write.
        results = []
        for i in range(lanes):
            lane = AluLane(aw)
            m.submodules[f"lane{i}"] = lane
            m.d.comb += [lane.op.eq(op), lane.a.eq(a_vec[i * aw:(i + 1) * aw]),
                         lane.b.eq(Mux(use_imm, imm, b_vec[i * aw:(i + 1) * aw]))]
            results.append(lane.r)
        m.d.comb += [
            wdata.eq(Cat(*results)),
            self.acc_waddr.eq(d4), self.acc_wdata.eq(wdata), self.acc_wen.eq(v4),
            self.uop_done.eq(v4),
        ]
        m.d.sync += [fwd_valid.eq(v4), fwd_addr.eq(d4), fwd_data.eq(wdata)]
        m.d.comb += self.busy.eq(loop.valid | v1 | v2 | v3 | v4)
        return m
