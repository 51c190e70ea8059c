"""bitstreams.probe without the FPGA tools: every block converts to Verilog behind registered
ports, and the critical-path parser reads nextpnr's report."""

import pytest
from amaranth.back import verilog

from bitstreams.probe import BLOCKS, RegisteredIO, critical_path, main
from isa.config import load_config


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_every_block_converts_with_a_register_on_each_port(block):
    cfg = load_config("tiny")
    inner = BLOCKS[block](cfg)
    top = RegisteredIO(inner)
    text = verilog.convert(top, name="probe", ports=top.ports, emit_src=False)
    members = list(inner.signature.flatten(inner))
    assert len(top.ports) == len(members) > 0
    for pin in top.ports:
        assert f"r_{pin.name}" in text        # the register between the pin and the block


def test_critical_path_is_the_first_report():
    log = ("Info: Max frequency for clock 'clk': 99.00 MHz\n"
           "Info: Critical path report for clock 'clk' (posedge -> posedge):\n"
           "Info:   clk-to-q  0.52  0.52 Source a.Q\n"
           "Info:      setup  0.00  9.90 Source b.D\n"
           "Info: Max frequency for clock 'clk': 101.01 MHz\n")
    assert critical_path(log) == ["   clk-to-q  0.52  0.52 Source a.Q",
                                  "      setup  0.00  9.90 Source b.D"]
    assert critical_path("Info: nothing\n") == []


def test_unknown_configuration_is_a_usage_error(capsys):
    assert main(["--config", "no-such-config"]) == 2
    assert "no configuration" in capsys.readouterr().err


def test_compute_stand_in_answers_one_cycle_later_from_every_input():
    """memside's stand-in: its outputs are registers (an input change shows only after the
    clock edge), and every input reaches them (nothing is optimised away)."""
    from amaranth.hdl import Cat, Value
    from amaranth.lib import wiring
    from amaranth.sim import Simulator

    from bitstreams.probe import ComputeStandIn

    cfg = load_config("tiny")
    seen = []
    k, n_in = 0, 1
    while k < n_in:
        dut = ComputeStandIn(cfg)        # a fresh one: all state 0, stays 0 while inputs are
        ins, outs = [], []
        for _path, member, value in dut.signature.flatten(dut):
            (ins if member.flow == wiring.In else outs).append(Value.cast(value))
        n_in = len(ins)
        out = Cat(*outs)

        async def bench(ctx, value=ins[k], out=out):
            await ctx.tick()
            assert ctx.get(out) == 0
            ctx.set(value, 1)
            assert ctx.get(out) == 0               # no path through the stand-in
            await ctx.tick()
            seen.append(ctx.get(out) != 0)         # the input got in

        sim = Simulator(dut)
        sim.add_clock(1e-6)
        sim.add_testbench(bench)
        sim.run()
        k += 1
    assert len(seen) == n_in > 10 and all(seen)
