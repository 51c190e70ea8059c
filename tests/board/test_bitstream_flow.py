"""The bitstream flow without the tools: estimates, the fit check, the report, the CLI's
refusals. The real build is tests/board/test_bitstream_build.py (marker ``bitstream``)."""

import json

import pytest

from bitstreams.boards import get_board
from bitstreams.errors import FitError, UsageError
from bitstreams.estimate import check_fit, config_estimate, dp16kd_blocks, synthesis_estimate
from bitstreams.report import make_report, markdown_table, slowest_endpoints, summary_text
from hw.board.ulx3s import Ulx3sTop
from isa.config import load_config
from vta.cli import main

BOARD = get_board("ulx3s-85f")


def test_dp16kd_blocks_pick_the_best_aspect_ratio():
    assert dp16kd_blocks(1024, 18) == 1 and dp16kd_blocks(512, 36) == 1
    assert dp16kd_blocks(2048, 64) == 8          # 512 × 36: 2 wide, 4 deep
    assert dp16kd_blocks(16384, 1) == 1 and dp16kd_blocks(16385, 1) == 2


def test_the_original_default_is_refused_before_synthesis():
    est = config_estimate(load_config("default"))
    assert est["MULT18X18D"] == 256 + 3 * 16                # int8 products + ALU multiplies
    with pytest.raises(FitError) as info:
        check_fit(est, BOARD, "estimate from the configuration")
    text = str(info.value)
    assert "MULT18X18D 304 of 156 (148 over" in text and "DP16KD" in text
    assert "estimate from the configuration" in text


def test_synthesis_estimate_counts_carries_and_lut_ram():
    stat = {"design": {"num_cells_by_type": {"LUT4": 100, "CCU2C": 10, "TRELLIS_DPR16X4": 2,
                                             "TRELLIS_FF": 50, "DP16KD": 3, "MULT18X18D": 4}}}
    assert synthesis_estimate(stat) == {"LUT4": 132, "FF": 50, "DP16KD": 3, "MULT18X18D": 4}
    check_fit(synthesis_estimate(stat), BOARD, "synthesis")


def test_report_from_nextpnr_and_its_summary():
    cfg = load_config("ecp5-small")
    pnr = {"utilization": {"TRELLIS_COMB": {"used": 1000, "available": 83640},
                           "TRELLIS_FF": {"used": 500, "available": 83640},
                           "DP16KD": {"used": 20, "available": 208},
                           "MULT18X18D": {"used": 30, "available": 156}},
           "fmax": {"$glbnet$clk": {"achieved": 71.5, "constraint": 60.0}},
           "critical_paths": [{"from": "posedge $glbnet$clk", "to": "posedge $glbnet$clk",
                               "path": [{"type": "clk-to-q", "delay": 0.5,
                                         "from": {"cell": "a_ff"}, "to": {"cell": "a_ff"}},
                                        {"type": "routing", "delay": 1.0,
                                         "from": {"cell": "a_ff"}, "to": {"cell": "lut1"}},
                                        {"type": "logic", "delay": 0.25,
                                         "from": {"cell": "lut1"}, "to": {"cell": "lut1"}},
                                        {"type": "setup", "delay": 0.1,
                                         "from": {"cell": "lut1"}, "to": {"cell": "b_ff"}}]}]}
    r = make_report(BOARD, cfg, pnr, {"LUT4": 900}, Ulx3sTop(cfg), seed=3,
                    versions={"yosys": "Yosys 0.70"}, seconds=12.0)
    assert r["resources"]["LUT4"] == [1000, 83640] and r["resources"]["MULT18X18D"] == [30, 156]
    assert r["clocks"] == {"sync": {"fmax_mhz": 71.5, "target_mhz": 60.0, "net": "$glbnet$clk"}}
    assert r["timing_met"] and r["config"]["TARGET_MHZ"] == cfg.target_mhz
    (cp,) = r["critical_paths"]
    assert (cp["start"], cp["end"], cp["logic_levels"]) == ("a_ff", "b_ff", 1)
    assert cp["delay_ns"] == 1.85 and cp["cells"] == ["a_ff", "lut1", "b_ff"]
    # 3 Mbaud from the core clock: the nearest divisor (exact where TARGET_MHZ is a multiple of 3)
    assert r["design"]["baud"] == 3_000_000 and r["design"]["uart_divisor"] == round(cfg.target_mhz / 3)
    json.dumps(r)
    text = summary_text(r)
    assert "LUT4" in text and "71.50" in text and "seed 3" in text
    row = markdown_table([r]).splitlines()[-1]
    assert row == ("| `ecp5-small` | 1 × 4 × 4 | 1000 / 83640 | 500 / 83640 | 20 / 208 | "
                   "30 / 156 | 71.5 (60) | met |")


def test_report_lists_the_slowest_endpoints_of_the_core_clock():
    """From nextpnr's detailed net timings: the core clock's endpoints by arrival, and how many
    arrive after the target's period (other clocks' endpoints are left out)."""
    cfg = load_config("ecp5-small")
    ev = "posedge $glbnet$clk"

    def ep(cell, t, event=ev):
        return {"cell": cell, "port": "DI", "event": event, "delay": [t - 1.0, t]}

    pnr = {"fmax": {"$glbnet$clk": {"achieved": 95.0, "constraint": 100.0},
                    "clk25_0__io": {"achieved": 300.0, "constraint": 25.0}},
           "detailed_net_timings": [
               {"net": "x", "event": ev, "endpoints": [ep("a", 10.5), ep("b", 7.0)]},
               {"net": "y", "event": ev, "endpoints": [ep("c", 10.1), ep("d", 2.0, "<async>")]},
               {"net": "z", "event": "posedge clk25_0__io", "endpoints": [ep("e", 39.0)]}]}
    slow = slowest_endpoints(pnr, n=2)
    assert slow == {"period_ns": 10.0, "over_period": 2, "endpoints": 3,
                    "slowest": [[10.5, "a", "DI"], [10.1, "c", "DI"]],
                    "groups": [[10.5, 1, "a"], [10.1, 1, "c"]]}
    r = make_report(BOARD, cfg, pnr, {"LUT4": 900}, Ulx3sTop(cfg), seed=1, versions={},
                    seconds=1.0)
    assert r["slowest_endpoints"]["over_period"] == 2
    assert "arriving after the target's 10.0 ns: 2 of 3" in summary_text(r)
    assert "by register" in summary_text(r)
    assert slowest_endpoints({"fmax": pnr["fmax"]}) == {}      # no detailed timings: nothing
    pnr.pop("detailed_net_timings")
    assert "slowest_endpoints" not in make_report(BOARD, cfg, pnr, {}, Ulx3sTop(cfg), seed=1,
                                                  versions={}, seconds=1.0)


def test_cli_refusals(capsys, tmp_path):
    assert main(["bitstream", "--config", "default", "-q", "-o", str(tmp_path)]) == 1
    assert "does not fit the LFE5U-85F" in capsys.readouterr().err
    assert main(["bitstream", "--config", "no-such-config", "-q"]) == 2
    assert main(["bitstream", "--dram-kib", "48", "-q", "-o", str(tmp_path)]) == 2
    assert main(["bitstream", "--memory", "sdram", "--dram-kib", "65536", "-q", "-o",
                 str(tmp_path)]) == 2
    assert "SDRAM has 32768 KiB" in capsys.readouterr().err
    assert main(["program", "--config", "ecp5-small", str(tmp_path / "none.bit")]) == 2
    assert "no bitstream at" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []                   # nothing partial written
    with pytest.raises(UsageError, match="unknown board"):
        get_board("de10-nano")


FAKE_YOSYS = """#!{python}
import json, sys
if "-V" in sys.argv:        # asked for its version (in the caller's folder): write nothing
    print("Yosys 0.0 (stand-in)")
    sys.exit(0)
# the netlist: FF a -> LUT l1 -> LUT l2 -> FF b.DI (two levels), and the stat Amaranth asks for
def cell(kind, ins, outs):
    return {{"type": kind, "connections": {{**{{p: [b] for p, b in ins.items()}},
                                           **{{p: [b] for p, b in outs.items()}}}},
            "port_directions": {{**{{p: "input" for p in ins}}, **{{p: "output" for p in outs}}}}}}
cells = {{"a": cell("TRELLIS_FF", {{"DI": 4}}, {{"Q": 2}}), "l1": cell("LUT4", {{"A": 2}}, {{"Z": 3}}),
         "l2": cell("LUT4", {{"A": 3}}, {{"Z": 4}}),
         "b_TRELLIS_FF_Q": cell("TRELLIS_FF", {{"DI": 4}}, {{"Q": 5}})}}
json.dump({{"modules": {{"vta_board": {{"attributes": {{"top": "1"}}, "cells": cells,
                                      "netnames": {{}}}}}}}}, open("vta_board.json", "w"))
json.dump({{"design": {{"num_cells_by_type": {{"LUT4": 2, "TRELLIS_FF": 2, "DP16KD": 62,
                                             "MULT18X18D": 35}}}}}}, open("vta_board.stat.json", "w"))
open(sys.argv[sys.argv.index("-l") + 1], "w").write("End of script.\\n")
"""


def test_cli_synth_only_prints_the_fit_and_the_lut_levels(capsys, tmp_path, monkeypatch):
    import sys
    yosys = tmp_path / "yosys-fake"
    yosys.write_text(FAKE_YOSYS.format(python=sys.executable))
    yosys.chmod(0o755)
    monkeypatch.setenv("YOSYS", str(yosys))
    for var in ("NEXTPNR_ECP5", "ECPPACK"):     # asked only for their versions
        monkeypatch.setenv(var, "true")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("{}")      # an earlier build's: a synthesis keeps it
    assert main(["bitstream", "--config", "ecp5-small", "--synth-only", "-q",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "synthesis fits (LUT4 2 of 83640, FF 2 of 83640, DP16KD 62 of 208" in text
    assert "LUT4 levels between registers: at most 2; inputs per level 2: 2" in text
    assert "2 levels into b_TRELLIS_FF_Q.DI" in text
    assert f"netlist: {out / 'build' / 'vta_board.json'}" in text
    # no bitstream and no new report; the earlier build's report is still there
    assert (out / "report.json").read_text() == "{}" and not (out / "vta_board.bit").exists()


def test_endpoints_after_the_period_are_grouped_by_register():
    """The bits of one register (nextpnr's packed cell names) count as one group; groups are
    ranked by their latest arrival; endpoints within the period are left out."""
    from bitstreams.report import endpoint_groups, register_group

    assert register_group("soc.core.core.fetch.r_entry_TRELLIS_FF_Q_130") == "fetch.r_entry"
    assert register_group("soc.core.core.compute.alu.p_lh6_TRELLIS_FF_Q_3") == "compute.alu.p_lh6"
    assert register_group("soc.core.core.load.area_mul.mult") == "load.area_mul"
    assert register_group("soc.core.core.fetch.buf.ring.0.32$DPRAM_COMB3") == "fetch.buf.ring.0"
    arrivals = [(10.9, "soc.core.core.fetch.r_entry_TRELLIS_FF_Q_1", "M"),
                (10.2, "soc.core.core.fetch.r_entry_TRELLIS_FF_Q_2", "DI"),
                (11.1, "soc.core.core.load.wgt.reader.left_TRELLIS_FF_Q_6", "CE"),
                (9.5, "soc.core.core.store.head$27.word_TRELLIS_FF_Q_12", "DI")]
    assert endpoint_groups(arrivals, 10.0) == [[11.1, 1, "load.wgt.reader.left"],
                                               [10.9, 2, "fetch.r_entry"]]
    assert endpoint_groups(arrivals, 10.0, n=1) == [[11.1, 1, "load.wgt.reader.left"]]
