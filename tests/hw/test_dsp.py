"""hw.dsp.RegisteredProduct: the product a cycle later, as a multiply and a flip-flop in
simulation and as a MULT18X18D with its output or input registers on an ECP5."""

import re

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator

from hw.dsp import RegisteredProduct
from hw.gemm import GemmCore
from isa.config import load_config


class _Ecp5:
    """What RegisteredProduct reads of an amaranth-boards ECP5 platform."""
    family = "ecp5"


@pytest.mark.parametrize("register", RegisteredProduct.REGISTERS)
@pytest.mark.parametrize("aw,bw,pw,is_signed", [(8, 8, 16, True), (16, 16, 32, False),
                                                (16, 16, 16, False), (3, 5, 8, True)])
def test_product_is_registered_latency_cycles_later(aw, bw, pw, is_signed, register):
    dut = RegisteredProduct(aw, bw, pw, is_signed=is_signed, register=register)
    assert dut.latency == (2 if register == "both" else 1)
    rng = np.random.default_rng(aw * 100 + bw)
    lo, hi = (-(1 << (aw - 1)), 1 << (aw - 1)) if is_signed else (0, 1 << aw)
    lob, hib = (-(1 << (bw - 1)), 1 << (bw - 1)) if is_signed else (0, 1 << bw)
    pairs = [(lo, lob), (hi - 1, hib - 1), (lo, hib - 1), (0, 0)]
    pairs += [(int(rng.integers(lo, hi)), int(rng.integers(lob, hib))) for _ in range(200)]

    async def bench(ctx):
        wants = []                      # the products of the last ``latency`` operands
        for a, b in pairs:
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            if len(wants) == dut.latency:   # the new operands do not reach p before the edge
                assert ctx.get(dut.p) == wants[0]
            await ctx.tick()
            wants = (wants + [(a * b) & ((1 << pw) - 1)])[-dut.latency:]
            if len(wants) == dut.latency:
                assert ctx.get(dut.p) == wants[0], (a, b)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def _cells(text, kind):
    return re.findall(rf"cell \\{kind} .*?\n  end\n", text, flags=re.S)


@pytest.mark.parametrize("is_signed", [True, False])
def test_on_an_ecp5_the_product_register_is_the_multipliers_own(is_signed):
    text = rtlil.convert(RegisteredProduct(8, 8, 16, is_signed=is_signed), platform=_Ecp5())
    (cell,) = _cells(text, "MULT18X18D")
    assert 'parameter \\REG_OUTPUT_CLK "CLK0"' in cell
    for reg in ("INPUTA", "INPUTB", "PIPELINE"):
        assert f'parameter \\REG_{reg}_CLK "NONE"' in cell
    sign = "1'1" if is_signed else "1'0"
    assert f"connect \\SIGNEDA {sign}" in cell and f"connect \\SIGNEDB {sign}" in cell
    assert "connect \\CE0 1'1" in cell and "connect \\RST0 1'0" in cell
    # no fabric flip-flop holds the product
    assert not re.search(r"cell \$(a)?dff", text)
    # without an ECP5 (simulation, Verilator) no primitive
    assert not _cells(rtlil.convert(RegisteredProduct(8, 8, 16, is_signed=is_signed)),
                      "MULT18X18D")


def test_operands_wider_than_the_block_fall_back_to_the_fabric():
    text = rtlil.convert(RegisteredProduct(20, 8, 28, is_signed=True), platform=_Ecp5())
    assert not _cells(text, "MULT18X18D")


def test_the_gemm_core_has_one_multiplier_per_product():
    cfg = load_config("ecp5-small")
    text = rtlil.convert(GemmCore(cfg), platform=_Ecp5())
    assert len(_cells(text, "MULT18X18D")) == cfg.batch * cfg.block_in * cfg.block_out


def test_fabric_keeps_the_register_in_the_fabric_on_an_ecp5():
    text = rtlil.convert(RegisteredProduct(16, 16, 32, is_signed=False, register="fabric"),
                         platform=_Ecp5())
    assert not _cells(text, "MULT18X18D")
    assert re.search(r"cell \$(a)?dff", text) or "process" in text


@pytest.mark.parametrize("is_signed", [True, False])
def test_inputs_registers_the_operands_inside_the_multiplier(is_signed):
    text = rtlil.convert(RegisteredProduct(16, 16, 32, is_signed=is_signed, register="inputs"),
                         platform=_Ecp5())
    (cell,) = _cells(text, "MULT18X18D")
    for reg in ("INPUTA", "INPUTB"):
        assert f'parameter \\REG_{reg}_CLK "CLK0"' in cell
        assert f'parameter \\REG_{reg}_CE "CE0"' in cell
    for reg in ("OUTPUT", "PIPELINE", "INPUTC"):
        assert f'parameter \\REG_{reg}_CLK "NONE"' in cell
    assert "connect \\CE0 1'1" in cell and "connect \\RST0 1'0" in cell
    assert not re.search(r"cell \$(a)?dff", text)


def test_both_registers_the_operands_and_the_product_inside_the_multiplier():
    text = rtlil.convert(RegisteredProduct(8, 8, 16, is_signed=True, register="both"),
                         platform=_Ecp5())
    (cell,) = _cells(text, "MULT18X18D")
    for reg in ("INPUTA", "INPUTB", "OUTPUT"):
        assert f'parameter \\REG_{reg}_CLK "CLK0"' in cell
    for reg in ("PIPELINE", "INPUTC"):
        assert f'parameter \\REG_{reg}_CLK "NONE"' in cell
    assert not re.search(r"cell \$(a)?dff", text)


def test_an_unknown_register_place_is_refused():
    with pytest.raises(ValueError, match="register must be one of"):
        RegisteredProduct(8, 8, 16, is_signed=True, register="middle")


def test_the_tensor_alus_multipliers_hold_their_operands():
    """The ALU's MUL: each partial product's multiplier registers the lane's operands in its
    input registers, and the product goes into a fabric register beside the join's adder
    (docs/hardware.md §12 step 31): three multipliers per lane, no output register."""
    from hw.alu import TensorAlu
    cfg = load_config("ecp5-small")
    text = rtlil.convert(TensorAlu(cfg), platform=_Ecp5())
    cells = _cells(text, "MULT18X18D")
    assert len(cells) == 3 * cfg.batch * cfg.block_out
    for cell in cells:
        assert 'parameter \\REG_INPUTA_CLK "CLK0"' in cell
        assert 'parameter \\REG_OUTPUT_CLK "NONE"' in cell
