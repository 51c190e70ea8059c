"""A multiplier with one register on its path: on an ECP5, a MULT18X18D's own input or output
registers, or a fabric flip-flop after it."""

from __future__ import annotations

from amaranth.hdl import C, ClockSignal, Instance, Module, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisteredProduct", "DSP_WIDTH"]

#: Operand width of the ECP5's MULT18X18D.
DSP_WIDTH = 18


class RegisteredProduct(wiring.Component):
    """``p`` = the low ``p_width`` bits of ``a × b`` of ``latency`` cycles before (1, or 2 with
    ``register="both"``; loaded in every cycle, no reset: its value matters only where a
    valid bit says so).

    On an ECP5 platform (operands of at most 18 bits) ``p`` is the output register of a
    MULT18X18D instantiated here: Yosys maps a multiply to the block's combinational mode and
    a register after it to the fabric, so the product's 36 outputs would cross the routing
    to flip-flops placed elsewhere (3 ns and more on the 85F, §12 step 29); inside the block
    the register costs no routing, and its setup from the operands (3.49 ns, speed grade 6)
    is below the combinational delay (3.93 ns). The connection is Yosys's own (``$__MUL18X18``
    in ``share/lattice/dsp_map_18x18.v``: operands extended to 18 bits, SIGNEDA/SIGNEDB) with
    ``REG_OUTPUT_CLK = "CLK0"``. Elsewhere (simulation, Verilog for Verilator) a multiply and
    a flip-flop, the same values in the same cycles.

    ``register`` says where the one register sits (the same values in the same cycles
    whichever it is): ``"output"`` (the default) as above; ``"fabric"`` a flip-flop after the
    block's combinational mode, for a product that feeds a carry chain at once (the route
    from a fixed DSP row to that adder would lie on the path into the next register: 4.3 ns,
    §12 step 30); ``"inputs"`` the block's input registers (``REG_INPUTA_CLK``/
    ``REG_INPUTB_CLK``), so ``p`` is the block's combinational output from operands it holds
    itself (3.86 ns clock to output, speed grade 6): the driver of ``a``/``b`` routes only into
    a register and the product into whatever the user registers it in, so neither route
    shares a cycle with the multiply's other side (§12 step 31: the ALU's MUL, whose operand
    register → block → fabric register spanned the die on both seeds); ``"both"`` the input
    and the output registers (latency 2): the multiply sits between the block's own
    registers and each route to and from the fixed DSP row has a cycle of its own (§12
    session 17: the GEMM's weight register → the block's multiply → its output register).
    """

    REGISTERS = ("output", "fabric", "inputs", "both")

    def __init__(self, a_width: int, b_width: int, p_width: int, *, is_signed: bool,
                 register: str = "output"):
        if register not in self.REGISTERS:
            raise ValueError(f"register must be one of {self.REGISTERS}, not {register!r}")
        self._signed = is_signed
        self._register = register
        #: cycles from the operands to ``p``
        self.latency = 2 if register == "both" else 1
        shape = signed if is_signed else unsigned
        super().__init__({"a": In(shape(a_width)), "b": In(shape(b_width)),
                          "p": Out(p_width)})

    def _fits_dsp(self):
        return max(len(self.a), len(self.b)) <= DSP_WIDTH and len(self.p) <= 2 * DSP_WIDTH

    def elaborate(self, platform):
        m = Module()
        reg = self._register
        if reg != "fabric" and getattr(platform, "family", None) == "ecp5" and self._fits_dsp():
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
            regs = {}
            ins, out_reg = reg in ("inputs", "both"), reg in ("output", "both")
            for name, on in (("INPUTA", ins), ("INPUTB", ins), ("OUTPUT", out_reg)):
                regs[f"p_REG_{name}_CLK"] = "CLK0" if on else "NONE"
                if on:
                    regs.update({f"p_REG_{name}_CE": "CE0", f"p_REG_{name}_RST": "RST0"})
            m.submodules.mult = Instance(
                "MULT18X18D", p_REG_INPUTC_CLK="NONE", p_REG_PIPELINE_CLK="NONE",
                p_RESETMODE="SYNC", **regs, **ports)
        else:
            # the same registers in the fabric: the operands' (inputs, both), the product's
            # (output, fabric, both)
            a, b = self.a, self.b
            if reg in ("inputs", "both"):
                a = Signal.like(self.a, name="a", reset_less=True)
                b = Signal.like(self.b, name="b", reset_less=True)
                m.d.sync += [a.eq(self.a), b.eq(self.b)]
            if reg == "inputs":
                m.d.comb += self.p.eq(a * b)
            else:
                p = Signal(len(self.p), reset_less=True)
                m.d.sync += p.eq(a * b)
                m.d.comb += self.p.eq(p)
        return m
