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
