"""CI builds the small ECP5 configuration's bitstream with the real tools and checks its report
against the device and against the synthesis pass. Minutes, not seconds: deselect locally with
``-m 'not bitstream'``."""

import json

import pytest

from bitstreams.boards import get_board
from bitstreams.build import NAME, build_bitstream
from bitstreams.estimate import config_estimate
from bitstreams.report import CORE_CLOCK
from hw.board.ulx3s import DEFAULT_MEM_BYTES
from isa.config import load_config

pytestmark = pytest.mark.bitstream


def test_small_configuration_bitstream_and_report(tmp_path):
    from bitstreams.errors import ToolError
    from bitstreams.tools import tool_env
    try:
        tool_env()
    except ToolError as exc:
        pytest.skip(f"no FPGA tools: {exc}")
    board, cfg = get_board("ulx3s-85f"), load_config("ecp5-small")
    report = build_bitstream(board, cfg, out=tmp_path, seed=1)
    bit = (tmp_path / f"{NAME}.bit").read_bytes()
    assert b"\xff\xff\xbd\xb3" in bit[:4096]           # the ECP5 preamble
    assert json.loads((tmp_path / "report.json").read_text()) == report
    assert (tmp_path / "report.txt").read_text().startswith("VTA on ulx3s-85f")

    assert (report["board"], report["device"]) == ("ulx3s-85f", "LFE5U-85F")
    assert report["config"]["name"] == "ecp5-small"
    res = report["resources"]
    assert set(res) == {"LUT4", "FF", "DP16KD", "MULT18X18D"}
    for name, (used, total) in res.items():
        assert 0 < used <= total == board.total(name), name
    # place and route keeps what synthesis made; the configuration's bounds hold
    synth = report["synthesis_estimate"]
    assert res["DP16KD"][0] == synth["DP16KD"] and res["MULT18X18D"][0] == synth["MULT18X18D"]
    lower = config_estimate(cfg, [(DEFAULT_MEM_BYTES * 8 // cfg.bus_width, cfg.bus_width)])
    assert res["MULT18X18D"][0] >= lower["MULT18X18D"]
    assert res["DP16KD"][0] >= lower["DP16KD"]
    clock = report["clocks"][CORE_CLOCK]
    assert clock["target_mhz"] == pytest.approx(cfg.target_mhz)
    assert clock["fmax_mhz"] > 0
    assert report["seed"] == 1 and "Yosys" in report["tools"]["yosys"]


@pytest.mark.parametrize("marked", [False, True])
def test_undefined_collisions_leave_a_bare_block_ram(tmp_path, marked):
    """A core block RAM (hw.sram) synthesised alone: with the build's commands, one DP16KD and
    nothing else (its output register is the read port's); without them, Yosys's read-first
    emulation in fabric (a delayed write, a bypass multiplexer)."""
    import subprocess

    from amaranth.back import rtlil
    from amaranth.hdl import Module, Signal

    from bitstreams.errors import ToolError
    from bitstreams.tools import ready_tool
    from bitstreams.yosys import UNDEFINED_COLLISIONS
    from hw.sram import block_ram
    try:
        yosys = ready_tool("YOSYS")
    except ToolError as exc:
        pytest.skip(f"no FPGA tools: {exc}")
    m = Module()
    w, (r,) = block_ram(m, "ram", shape=36, depth=512)
    waddr, raddr, wdata, rdata, we = (Signal(9), Signal(9), Signal(36), Signal(36), Signal())
    m.d.comb += [w.addr.eq(waddr), w.data.eq(wdata), w.en.eq(we), r.addr.eq(raddr),
                 rdata.eq(r.data)]
    (tmp_path / "t.il").write_text(rtlil.convert(m, ports=[waddr, raddr, wdata, rdata, we]))
    script = ("read_rtlil t.il\n" + (UNDEFINED_COLLISIONS if marked else "")
              + "synth_ecp5 -top top\ntee -q -o stat.json stat -json\n")
    (tmp_path / "t.ys").write_text(script)
    subprocess.run([yosys, "-q", "t.ys"], cwd=tmp_path, check=True, timeout=600,
                   capture_output=True)
    cells = json.loads((tmp_path / "stat.json").read_text())["design"]["num_cells_by_type"]
    assert cells.get("DP16KD") == 1
    if marked:
        assert set(cells) == {"DP16KD"}, cells
    else:
        assert cells.get("LUT4", 0) > 0 and cells.get("TRELLIS_FF", 0) > 36, cells
