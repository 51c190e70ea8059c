"""python -m designspace.calibrate: the real syntheses of a cache of each point's current
Verilog, with the nextpnr Fmax of that same Verilog, become the shipped calibration (written
atomically; nothing written from an empty cache); runs of other Verilog are left out and
listed."""

import json
import os

from designspace import calibrate, sweep
from designspace.cache import Cache
from designspace.space import CONFIG_KEYS
from isa.config import load_config

CELLS = {"LUT4": 9000, "CCU2C": 100, "TRELLIS_FF": 4000, "DP16KD": 20, "MULT18X18D": 17}
OLD_CELLS = {"LUT4": 7000, "CCU2C": 10, "TRELLIS_FF": 3000, "DP16KD": 20, "MULT18X18D": 17}
NOW, OLD, TINY = "ab" * 32, "ef" * 32, "cd" * 32


def _point(name):
    d = load_config(name).to_dict()
    d["LOG_BLOCK_IN"] = d["LOG_BLOCK_OUT"] = d.pop("LOG_BLOCK")
    return {k: d[k] for k in CONFIG_KEYS}


def _pnr(point, verilog, fmax):
    return ({**sweep._synth_desc(point, verilog), "kind": "pnr", "device": "LFE5U-25F",
             "target_mhz": 100}, {"fmax_mhz": fmax, "seconds": 50.0})


def _cache(tmp_path, monkeypatch):
    """A cache whose stale runs come AFTER the current ones (entries are read oldest first):
    a collect that let the last run of a point win would take them."""
    monkeypatch.setattr(sweep, "_synth_desc", lambda p, v: {
        "kind": "synth", "point": sweep._hw_point(p), "verilog": v, "tools": {"yosys": "t"},
        "script": "s"})
    cache = Cache(tmp_path / "c")
    small, tiny = _point("small"), _point("tiny")
    entries = [
        (sweep._verilog_desc(small), {"sha256": NOW}),        # small's Verilog of today
        (sweep._synth_desc(small, NOW), {"cells": CELLS, "seconds": 100.0}),
        _pnr(small, NOW, 31.5),
        (sweep._synth_desc(small, OLD), {"cells": OLD_CELLS, "seconds": 90.0}),
        _pnr(small, OLD, 77.7),
        # tiny: synthesised, but today's sources never made its Verilog
        (sweep._synth_desc(tiny, TINY), {"cells": CELLS, "seconds": 1.0}),
    ]
    schema = sweep._synth_desc(tiny, TINY)
    schema["point"] = {k: v for k, v in schema["point"].items() if k != "LOG_BUS_WIDTH"}
    entries.append((schema, {"cells": CELLS, "seconds": 1.0}))   # an older schema
    for age, (desc, result) in enumerate(entries):
        cache.put(desc, result)
        path = cache._path(sweep.task_key(desc))
        os.utime(path, (1e9 + age, 1e9 + age))
    return cache, small


def test_calibration_takes_only_the_current_verilog(tmp_path, monkeypatch):
    cache, small = _cache(tmp_path, monkeypatch)
    got = calibrate.collect(cache)
    assert len(got.runs) == 1
    run = got.runs[0]
    assert run["point"] == sweep._hw_point(small)
    assert run["resources"] == {"LUT4": 9200, "FF": 4000, "DP16KD": 20, "MULT18X18D": 17}
    # the Fmax joined by (point, Verilog): the later P&R of the old Verilog is not taken
    assert (run["fmax_mhz"], run["device"], run["verilog_sha256"]) == (31.5, "LFE5U-25F", NOW)
    left = sorted((s["kind"], s["verilog_sha256"]) for s in got.left_out)
    assert left == sorted([("pnr", OLD), ("synth", OLD), ("synth", TINY), ("synth", TINY)])
    whys = {s["verilog_sha256"] + s["kind"]: s["why"] for s in got.left_out}
    assert "another Verilog" in whys[OLD + "synth"] and NOW[:12] in whys[OLD + "synth"]
    assert any("older schema" in s["why"] for s in got.left_out)
    assert any("run the sweep" in s["why"] for s in got.left_out)


def test_calibration_file_says_what_was_used(tmp_path, monkeypatch, capsys):
    cache, _ = _cache(tmp_path, monkeypatch)
    got = calibrate.collect(cache)
    out = tmp_path / "calibration.json"
    assert calibrate.main(["--cache", str(tmp_path / "c"), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["runs"] == json.loads(json.dumps(got.runs))
    assert written["used"] == {"syntheses": 1, "placed": 1}
    assert written["left_out"] == json.loads(json.dumps(got.left_out))
    assert sweep.load_calibration(out) == json.loads(json.dumps(got.runs))
    err = capsys.readouterr().err
    assert "1 syntheses of the current Verilog used (1 with a nextpnr Fmax)" in err
    assert "4 runs left out as stale" in err
    assert f"left out: pnr of 1x4x4 (Verilog {OLD[:12]})" in err


def test_nothing_written_without_a_current_synthesis(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "none.json"
    assert calibrate.main(["--cache", str(tmp_path / "empty"), "--out", str(empty)]) == 1
    assert not empty.exists()
    # a cache of stale runs only: nothing written either, and the stale runs are named
    cache, small = _cache(tmp_path, monkeypatch)
    cache.put(sweep._verilog_desc(small), {"sha256": "01" * 32})   # the RTL changed again
    out = tmp_path / "stale.json"
    capsys.readouterr()
    assert calibrate.main(["--cache", str(tmp_path / "c"), "--out", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "0 syntheses of the current Verilog used" in err and "left as it is" in err


def test_the_sweeps_model_samples_follow_the_same_rule(tmp_path, monkeypatch):
    """The screening model's samples (sweep._samples): the cache's run of the current Verilog
    with its own Fmax, never the later run of the old Verilog nor its place and route."""
    cache, small = _cache(tmp_path, monkeypatch)
    monkeypatch.setattr(sweep, "load_calibration", lambda: [])
    samples = sweep._samples(cache)
    assert len(samples) == 1
    assert samples[0].resources["LUT4"] == 9200 and samples[0].fmax_mhz == 31.5
