"""The micro-op loop sequencer shared by the GEMM core and the tensor ALU (reference §3.4)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from .fields import uop

__all__ = ["UopLoop", "NAMES", "offset_widths"]

#: The loop offsets: the three index fields of a micro-op.
NAMES = ("dst", "src", "wgt")
#: Width of a loop factor (instruction field).
FACTOR_BITS = 16


def offset_widths(cfg: VTAConfig, log_depths: dict) -> dict:
    """The offset width per index for buffers of 2^log_depths[n] entries: wide enough for the
    micro-op's field too, so field + offset (one bit wider) decides "past the buffer"."""
    fields = uop(cfg)
    return {n: max(fields[n].shape.width, log_depths.get(n, 0)) for n in NAMES}


class UopLoop(wiring.Component):
    """Walks ``for i_out: for i_in: for u in [uop_bgn, uop_end)`` one step per cycle.

    ``start`` in cycle *c* (fields valid in *c* − 1 and *c*; loops non-empty) → steps in cycles
    *c* + 1 … *c* + N, N = iter_out · iter_in · (uop_end − uop_bgn); each step presents ``valid``,
    the micro-op index ``uop_idx`` (``uop_next`` is the next cycle's, ``uop_bgn`` while idle:
    the micro-op buffer is read a cycle ahead, so its data arrive with the step) and, for dst,
    src and wgt, the loop offset ``i_out·f_out + i_in·f_in`` as ``<n>_off`` (its low ``widths[n]`` bits) and ``<n>_over``
    (the offset is ≥ 2^widths[n]): an index past a buffer of 2^w entries needs no more, and the
    offset adders stay ``w`` + 1 bits wide instead of 32. ``last`` marks step N. ``stop`` (an
    error) ends the walk at once; ``hold`` (the tensor ALU's stall) keeps the step for one more
    cycle (and re-reads its micro-op). Throughput one step per cycle when never held. The
    loop-end tests are registers computed a step ahead, so no compare sits before the updates'
    selects. The fields are read through this loop's own copies (``p1_*``, loaded in every
    idle cycle), a cycle late: the instruction comes from a queue head across the die, whose
    wire then ends in a flip-flop instead of feeding the bound arithmetic (Fmax, §12); the
    head sits there ``HEAD_SETTLE`` ≥ 2 cycles before a start, so the copy equals the field.
    """

    def __init__(self, cfg: VTAConfig, widths: dict):
        self._cfg = cfg
        self._widths = dict(widths)
        ub = cfg.log_uop_depth + 1
        super().__init__({
            "start": In(1), "stop": In(1), "hold": In(1),
            "uop_bgn": In(ub), "uop_end": In(ub), "iter_out": In(14), "iter_in": In(14),
            **{f"{n}_factor_{k}": In(FACTOR_BITS) for n in NAMES for k in ("out", "in")},
            "valid": Out(1), "last": Out(1), "uop_idx": Out(ub), "uop_next": Out(ub),
            **{f"{n}_off": Out(self._widths[n]) for n in NAMES},
            **{f"{n}_over": Out(1) for n in NAMES},
        })

    def elaborate(self, platform):
        m = Module()
        ub = self._cfg.log_uop_depth + 1
        # Each loop counts the steps left after the current one (``u_left``, ``in_left``,
        # ``out_left``) down to 0: its end test is "left == 1" of one register, a narrow
        # compare with a constant (Fmax, §12), where an up-counter's is an equality of two
        # registers; ``u_span1``, ``n_in1`` = the inner loops' counts minus 1 (their reloads).
        bgn, u, u_left, u_span1 = Signal(ub), Signal(ub), Signal(ub), Signal(ub)
        in_left, out_left, n_in1 = Signal(14), Signal(14), Signal(14)
        active = Signal()
        # registered loop-end tests: u is the last micro-op, the inner / outer iteration the
        # last; one_u / one_in: the inner loops have one step (the value after a wrap)
        u_last, in_last, out_last, one_u, one_in = (
            Signal(name=n) for n in ("u_last", "in_last", "out_last", "one_u", "one_in"))
        m.d.comb += [self.valid.eq(active), self.uop_idx.eq(u),
                     self.last.eq(active & u_last & in_last & out_last)]
        # the fields' copies, enabled by this loop's ``~active``: not identical to another
        # loop's copies of the same head bits, so synthesis keeps one per loop (near it)
        p1 = {}
        for name in ("uop_bgn", "uop_end", "iter_out", "iter_in",
                     *(f"{n}_factor_{k}" for n in NAMES for k in ("out", "in"))):
            field = getattr(self, name)
            p1[name] = Signal(len(field), name=f"p1_{name}")
            with m.If(~active):
                m.d.sync += p1[name].eq(field)
        m.d.comb += self.uop_next.eq(Mux(active, Mux(self.hold, u, Mux(u_last, bgn, u + 1)),
                                         p1["uop_bgn"]))
        offsets = [self._offset(m, n, p1) for n in NAMES]

        with m.If(~active):
            # taken in every idle cycle, not only with ``start``: the start condition then
            # drives ``active`` alone, not these registers' enables (Fmax)
            # one subtraction; its compare with 1 (no second carry chain before it)
            span = Signal(ub)
            m.d.comb += span.eq(p1["uop_end"] - p1["uop_bgn"])
            single_u = span == 1
            m.d.sync += [active.eq(self.start), bgn.eq(p1["uop_bgn"]), u.eq(p1["uop_bgn"]),
                         u_left.eq(span - 1), u_span1.eq(span - 1),
                         n_in1.eq(p1["iter_in"] - 1), in_left.eq(p1["iter_in"] - 1),
                         out_left.eq(p1["iter_out"] - 1),
                         u_last.eq(single_u), one_u.eq(single_u),
                         in_last.eq(p1["iter_in"] == 1), one_in.eq(p1["iter_in"] == 1),
                         out_last.eq(p1["iter_out"] == 1)]
            for start, _, _ in offsets:
                m.d.sync += start
        with m.Else():
            with m.If(self.stop | (self.last & ~self.hold)):
                m.d.sync += active.eq(0)
            # the step's updates are enabled by registers alone (not by ``stop``, nor by
            # ``last``): after the last step or a stop they change nothing that matters,
            # the loop is inactive and every idle cycle loads the registers again
            with m.If(active & ~self.hold):
                with m.If(~u_last):
                    m.d.sync += [u.eq(u + 1), u_left.eq(u_left - 1), u_last.eq(u_left == 1)]
                with m.Elif(~in_last):
                    m.d.sync += [u.eq(bgn), u_left.eq(u_span1), u_last.eq(one_u),
                                 in_left.eq(in_left - 1), in_last.eq(in_left == 1)]
                    for _, step_in, _ in offsets:
                        m.d.sync += step_in
                with m.Else():
                    m.d.sync += [u.eq(bgn), u_left.eq(u_span1), u_last.eq(one_u),
                                 in_left.eq(n_in1), in_last.eq(one_in),
                                 out_left.eq(out_left - 1), out_last.eq(out_left == 1)]
                    for _, _, step_out in offsets:
                        m.d.sync += step_out
        return m

    def _offset(self, m, n, p1):
        """The registers of one offset: ``base`` = i_out·f_out and ``cur`` = base + i_in·f_in,
        each as its low w bits and a sticky flag "≥ 2^w" (the offsets only grow); returns the
        statements of a start, an i_in step and an i_out step."""
        w = self._widths[n]
        f_out, f_in = Signal(w, name=f"{n}_f_out"), Signal(w, name=f"{n}_f_in")
        big_out, big_in = Signal(name=f"{n}_big_out"), Signal(name=f"{n}_big_in")  # f ≥ 2^w
        base, cur = Signal(w, name=f"{n}_base"), Signal(w, name=f"{n}_cur")
        base_over, cur_over = Signal(name=f"{n}_base_over"), Signal(name=f"{n}_cur_over")
        m.d.comb += [getattr(self, f"{n}_off").eq(cur), getattr(self, f"{n}_over").eq(cur_over)]
        sum_in = Signal(w + 1, name=f"{n}_sum_in")
        sum_out = Signal(w + 1, name=f"{n}_sum_out")
        m.d.comb += [sum_in.eq(cur + f_in), sum_out.eq(base + f_out)]
        over_in = cur_over | big_in | sum_in[w]
        over_out = base_over | big_out | sum_out[w]

        def high(v):
            return v[w:].any() if w < FACTOR_BITS else 0

        fo, fi = p1[f"{n}_factor_out"], p1[f"{n}_factor_in"]
        start = [f_out.eq(fo), f_in.eq(fi), big_out.eq(high(fo)), big_in.eq(high(fi)),
                 base.eq(0), cur.eq(0), base_over.eq(0), cur_over.eq(0)]
        step_in = [cur.eq(sum_in), cur_over.eq(over_in)]
        step_out = [base.eq(sum_out), base_over.eq(over_out), cur.eq(sum_out),
                    cur_over.eq(over_out)]
        return start, step_in, step_out
