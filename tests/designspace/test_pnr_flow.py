"""The order of a real sweep's FPGA tasks, with the tools replaced by stand-ins that count
their calls (the tools themselves are tested in test_synth.py): every point the model cannot
rule out is synthesised once, the frontier's candidates are placed and routed in the same batch
(their synthesis runs inside that task, not twice), at most ``max_pnr`` of them, and every row
says where its clock comes from."""

import hashlib
import json

import pytest

from designspace import sweep
from designspace.cache import Cache
from designspace.runners import LocalRunner
from designspace.space import load_space

SPACE = """
base = "small"
[params]
LOG_BLOCK_IN = [1, 2]
LOG_BLOCK_OUT = "LOG_BLOCK_IN"
MEM_LATENCY = [4, 16]
[targets]
devices = ["LFE5U-25F", "LFE5U-85F"]
[workloads]
names = ["resnet18.layer3.proj"]
spatial_div = 14
[synthesis]
fmax = "frontier"
max_pnr = 1
"""


class Tools:
    """Stand-ins for the Verilog, Yosys and nextpnr tasks: the resources grow with the GEMM
    array (so the larger shape is slower to build and faster to run), nextpnr's clock falls."""

    def __init__(self):
        self.calls = []

    def verilog(self, point):
        self.calls.append(("verilog", point["LOG_BLOCK_IN"]))
        hw = {k: v for k, v in point.items() if k not in sweep.HW_NEUTRAL_KEYS}
        return {"sha256": hashlib.sha256(json.dumps(hw, sort_keys=True).encode()).hexdigest()}

    @staticmethod
    def _cells(point):
        macs = 1 << (point["LOG_BLOCK_IN"] * 2)
        return {"LUT4": 12000 + 900 * macs, "TRELLIS_FF": 5000 + 300 * macs,
                "DP16KD": 20 + 3 * point["LOG_BLOCK_IN"], "MULT18X18D": 2 * macs + 3}

    def synth(self, point, workdir):
        self.calls.append(("synthesis", point["LOG_BLOCK_IN"]))
        return {"cells": self._cells(point), "seconds": 1.0}

    def pnr(self, point, workdir, device, target_mhz):
        self.calls.append(("place and route", point["LOG_BLOCK_IN"], device))
        return {"fmax_mhz": 40.0 - 5 * point["LOG_BLOCK_IN"], "used": {}, "seconds": 2.0,
                "device": device, "synth": self.synth(point, workdir)}


@pytest.fixture
def tools(monkeypatch):
    t = Tools()
    monkeypatch.setitem(sweep._TASKS, "verilog", t.verilog)
    monkeypatch.setitem(sweep._TASKS, "synthesis", t.synth)
    monkeypatch.setitem(sweep._TASKS, "place and route", t.pnr)
    return t


def _run(path, cache):
    return sweep.run_sweep(load_space(path), cache=cache, runner=LocalRunner(1),
                           synthesis="real", progress=False, log=lambda m: None)


def test_frontier_candidate_is_placed_in_the_synthesis_batch(tools, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SPACE)
    cache = Cache(tmp_path / "cache")
    result = _run(path, cache)
    # Two hardware points (the memory latency does not change the RTL): each synthesised
    # once. Both are on the frontier; the budget of one goes to the smaller (1x2x2), placed on
    # the smallest device the model says it fits with its margin (the 25F).
    synths = [c for c in tools.calls if c[0] == "synthesis"]
    assert sorted(synths) == [("synthesis", 1), ("synthesis", 2)]
    assert [c for c in tools.calls if c[0] == "place and route"] == \
        [("place and route", 1, "LFE5U-25F")]
    assert result.counts["place and route"] == {"run": 1, "cached": 0}
    assert result.counts["synthesis"] == {"run": 1, "cached": 0}   # the other one
    for row in result.rows:
        assert row["resources_from"] == "yosys"
        if row["LOG_BLOCK_IN"] == 1:
            assert (row["fmax_mhz"], row["fmax_from"]) == (35.0, "nextpnr")
            assert row["clock_mhz"] == 35.0
        else:
            assert row["fmax_from"] == "model"
    assert set(result.seconds) >= {"cycles", "verilog", "synthesis", "place and route"}

    # Everything is cached: a second run calls no tool and gives the same rows.
    tools.calls.clear()
    again = _run(path, cache)
    assert tools.calls == []
    assert again.rows == result.rows


def test_a_cached_synthesis_is_placed_without_a_second_one(tools, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SPACE.replace("max_pnr = 1", "max_pnr = 0"))
    cache = Cache(tmp_path / "cache")
    first = _run(path, cache)
    assert all(r["fmax_from"] != "nextpnr" for r in first.rows)
    tools.calls.clear()
    path.write_text(SPACE)
    second = _run(path, cache)
    # nextpnr runs on the cached synthesis' netlist: no Yosys call is asked for by the sweep
    # (the stand-in synthesises inside the task, as the real one does when the netlist is gone).
    assert [c[0] for c in tools.calls] == ["place and route", "synthesis"]
    assert second.counts["synthesis"] == {"run": 0, "cached": 2}
    assert second.counts["place and route"] == {"run": 1, "cached": 0}
