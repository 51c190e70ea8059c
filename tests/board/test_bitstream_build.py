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
