"""A multiplier whose product is a register: on an ECP5, a MULT18X18D's own output register."""

from __future__ import annotations

from amaranth.hdl import C, ClockSignal, Instance, Module, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisteredProduct", "DSP_WIDTH"]

#: Operand width of the ECP5's MULT18X18D.
DSP_WIDTH = 18


class RegisteredProduct(wiring.Component):
    """``p`` = the low ``p_width`` bits of ``a × b`` of the cycle before (latency 1, loaded in
    every cycle, no reset: its value matters only where a valid bit says so).

    On an ECP5 platform (operands of at most 18 bits) ``p`` is the output register of a
    MULT18X18D instantiated here: Yosys maps a multiply to the block's combinational mode and
    a register after it to the fabric, so the product's 36 outputs would cross the routing
    to flip-flops placed elsewhere (3 ns and more on the 85F, §12 step 29); inside the block
    the register costs no routing, and its setup from the operands (3.49 ns, speed grade 6)
    is below the combinational delay (3.93 ns). The connection is Yosys's own (``$__MUL18X18``
    in ``share/lattice/dsp_map_18x18.v``: operands extended to 18 bits, SIGNEDA/SIGNEDB) with
    ``REG_OUTPUT_CLK = "CLK0"``. Elsewhere (simulation, Verilog for Verilator) a multiply and
    a flip-flop, the same values in the same cycles. ``in_block=False`` keeps the register in
    the fabric on an ECP5 too, for a product that feeds a carry chain at once (the tensor
    ALU's join): the block sits in a fixed DSP row, and the route from its output register
    to that adder then lies on the path into the next register (4.3 ns of routing, §12 step
    30), where a fabric flip-flop can be placed beside the adder.
    """

    def __init__(self, a_width: int, b_width: int, p_width: int, *, is_signed: bool,
                 in_block: bool = True):
        self._signed = is_signed
        self._in_block = in_block
        shape = signed if is_signed else unsigned
        super().__init__({"a": In(shape(a_width)), "b": In(shape(b_width)),
                          "p": Out(p_width)})

    def _fits_dsp(self):
        return max(len(self.a), len(self.b)) <= DSP_WIDTH and len(self.p) <= 2 * DSP_WIDTH

    def elaborate(self, platform):
        m = Module()
        if self._in_block and getattr(platform, "family", None) == "ecp5" and self._fits_dsp():
            out = Signal(2 * DSP_WIDTH)
            a18, b18 = Signal(DSP_WIDTH), Signal(DSP_WIDTH)
            # extended to the block's 18 bits as their shapes say (signed: the sign)
            m.d.comb += [a18.eq(self.a), b18.eq(self.b), self.p.eq(out[:len(self.p)])]
            sign = C(int(self._signed), 1)
            ports = {
                **{f"i_A{i}": a18[i] for i in range(DSP_WIDTH)},
                **{f"i_B{i}": b18[i] for i in range(DSP_WIDTH)},
                **{f"i_C{i}": C(0, 1) for i in range(DSP_WIDTH)},
                **{f"o_P{i}": out[i] for i in range(2 * DSP_WIDTH)},
                "i_SIGNEDA": sign, "i_SIGNEDB": sign, "i_SOURCEA": C(0, 1),
                "i_SOURCEB": C(0, 1),
                "i_CLK0": ClockSignal("sync"), "i_CE0": C(1, 1), "i_RST0": C(0, 1),
                **{f"i_{k}{n}": C(0, 1) for k in ("CLK", "CE", "RST") for n in (1, 2, 3)},
            }
            m.submodules.mult = Instance(
                "MULT18X18D",
                p_REG_INPUTA_CLK="NONE", p_REG_INPUTB_CLK="NONE", p_REG_INPUTC_CLK="NONE",
                p_REG_PIPELINE_CLK="NONE", p_REG_OUTPUT_CLK="CLK0", p_REG_OUTPUT_CE="CE0",
                p_REG_OUTPUT_RST="RST0", p_RESETMODE="SYNC", **ports)
        else:
            p = Signal(len(self.p), reset_less=True)
            m.d.sync += p.eq(self.a * self.b)
            m.d.comb += self.p.eq(p)
        return m
