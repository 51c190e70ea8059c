"""python -m designspace.calibrate: the real syntheses of a cache, with their nextpnr Fmax,
become the shipped calibration (written atomically; nothing written from an empty cache)."""

import json

from designspace import calibrate, sweep
from designspace.cache import Cache
from designspace.space import CONFIG_KEYS
from isa.config import load_config


def _point(name):
    d = load_config(name).to_dict()
    d["LOG_BLOCK_IN"] = d["LOG_BLOCK_OUT"] = d.pop("LOG_BLOCK")
    return {k: d[k] for k in CONFIG_KEYS}


def test_calibration_from_a_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "_synth_desc", lambda p, v: {
        "kind": "synth", "point": sweep._hw_point(p), "verilog": v, "tools": {"yosys": "t"},
        "script": "s"})
    cache = Cache(tmp_path / "c")
    small, tiny = _point("small"), _point("tiny")
    cells = {"LUT4": 9000, "CCU2C": 100, "TRELLIS_FF": 4000, "DP16KD": 20, "MULT18X18D": 17}
    cache.put(sweep._synth_desc(small, "ab" * 32), {"cells": cells, "seconds": 100.0})
    cache.put({**sweep._synth_desc(small, "ab" * 32), "kind": "pnr", "device": "LFE5U-25F",
               "target_mhz": 100}, {"fmax_mhz": 31.5, "seconds": 50.0})
    stale = sweep._synth_desc(tiny, "cd" * 32)
    stale["point"] = {k: v for k, v in stale["point"].items() if k != "LOG_BUS_WIDTH"}
    cache.put(stale, {"cells": cells, "seconds": 1.0})     # an older schema: an older RTL
    runs = calibrate.collect(cache)
    assert len(runs) == 1
    run = runs[0]
    assert run["point"] == sweep._hw_point(small)
    assert run["resources"] == {"LUT4": 9200, "FF": 4000, "DP16KD": 20, "MULT18X18D": 17}
    assert (run["fmax_mhz"], run["device"], run["verilog_sha256"]) == (31.5, "LFE5U-25F",
                                                                      "ab" * 32)
    out = tmp_path / "calibration.json"
    assert calibrate.main(["--cache", str(tmp_path / "c"), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["runs"] == json.loads(json.dumps(runs))
    assert sweep.load_calibration(out) == json.loads(json.dumps(runs))

    empty = tmp_path / "none.json"
    assert calibrate.main(["--cache", str(tmp_path / "empty"), "--out", str(empty)]) == 1
    assert not empty.exists()
