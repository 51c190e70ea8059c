"""The micro-op loop sequencer shared by the GEMM core and the tensor ALU (reference §3.4)."""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

__all__ = ["UopLoop", "OFFSET_BITS"]

#: Width of the loop offsets: iter (14 bits) × factor (≤ 16 bits), summed over two loops.
OFFSET_BITS = 32


class UopLoop(wiring.Component):
    """Walks ``for i_out: for i_in: for u in [uop_bgn, uop_end)`` one step per cycle.

    ``start`` in cycle *c* (fields valid in *c*; loops non-empty) → steps in cycles
    *c* + 1 … *c* + N, N = iter_out · iter_in · (uop_end − uop_bgn); each step presents ``valid``,
    the micro-op index ``uop_idx`` and the accumulated loop offsets ``i_out·f_out + i_in·f_in``
    for dst, src and wgt; ``last`` marks step N. ``stop`` (an error) ends the walk at once.
    Throughput one step per cycle, no bubbles.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        ub = cfg.log_uop_depth + 1
        super().__init__({
            "start": In(1), "stop": In(1),
            "uop_bgn": In(ub), "uop_end": In(ub), "iter_out": In(14), "iter_in": In(14),
            "dst_factor_out": In(16), "dst_factor_in": In(16),
            "src_factor_out": In(16), "src_factor_in": In(16),
            "wgt_factor_out": In(16), "wgt_factor_in": In(16),
            "valid": Out(1), "last": Out(1), "uop_idx": Out(ub),
            "dst_off": Out(OFFSET_BITS), "src_off": Out(OFFSET_BITS), "wgt_off": Out(OFFSET_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        ub = self._cfg.log_uop_depth + 1
        names = ("dst", "src", "wgt")
        f_out = {n: Signal(16, name=f"{n}_f_out") for n in names}
        f_in = {n: Signal(16, name=f"{n}_f_in") for n in names}
        base = {n: Signal(OFFSET_BITS, name=f"{n}_base") for n in names}  # i_out * f_out
        bgn = Signal(ub)
        end = Signal(ub)
        n_out = Signal(14)
        n_in = Signal(14)
        u = Signal(ub)
        i_in = Signal(14)
        i_out = Signal(14)
        active = Signal()
        last_u = Signal()
        last_in = Signal()
        m.d.comb += [
            self.valid.eq(active), self.uop_idx.eq(u),
            last_u.eq(u == end - 1), last_in.eq(i_in == n_in - 1),
            self.last.eq(active & last_u & last_in & (i_out == n_out - 1)),
        ]
        cur = {n: Signal(OFFSET_BITS, name=f"{n}_cur") for n in names}  # base + i_in * f_in
        for n in names:
            m.d.comb += getattr(self, f"{n}_off").eq(cur[n])

        with m.If(self.start):
            m.d.sync += [active.eq(1), bgn.eq(self.uop_bgn), end.eq(self.uop_end), u.eq(self.uop_bgn),
                         n_out.eq(self.iter_out), n_in.eq(self.iter_in), i_in.eq(0), i_out.eq(0)]
            for n in names:
                m.d.sync += [f_out[n].eq(getattr(self, f"{n}_factor_out")),
                             f_in[n].eq(getattr(self, f"{n}_factor_in")),
                             base[n].eq(0), cur[n].eq(0)]
        with m.Elif(active):
            with m.If(self.stop | self.last):
                m.d.sync += active.eq(0)
            with m.Elif(~last_u):
                m.d.sync += u.eq(u + 1)
            with m.Elif(~last_in):
                m.d.sync += [u.eq(bgn), i_in.eq(i_in + 1)]
                for n in names:
                    m.d.sync += cur[n].eq(cur[n] + f_in[n])
            with m.Else():
                m.d.sync += [u.eq(bgn), i_in.eq(0), i_out.eq(i_out + 1)]
                for n in names:
                    m.d.sync += [base[n].eq(base[n] + f_out[n]), cur[n].eq(base[n] + f_out[n])]
        return m
