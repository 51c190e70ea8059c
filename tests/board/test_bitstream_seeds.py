"""Several nextpnr seeds per build: the runner, the choice of the fastest, the report and the
CLI's refusals, with a stand-in nextpnr (a script writing the report a seed would give)."""

import json
import os
import stat
import sys
import time
from types import SimpleNamespace

import pytest

from bitstreams.build import NAME, _Job, _place_and_route, _run_all
from bitstreams.boards import get_board
from bitstreams.errors import ToolError
from bitstreams.progress import Progress
from bitstreams.report import core_fmax, make_report, summary_text
from hw.board.ulx3s import Ulx3sTop
from isa.config import load_config
from vta.cli import main

FAKE_NEXTPNR = f"""#!{sys.executable}
import json, sys
a = sys.argv
seed = int(a[a.index("--seed") + 1])
fmax = {{1: 70.0, 2: 75.5, 3: 75.5, 4: 61.0}}[seed]
open(a[a.index("--log") + 1], "w").write("Info: Running placer\\nInfo: Router2\\n")
open(a[a.index("--textcfg") + 1], "w").write(f"config of seed {{seed}}\\n")
json.dump({{"fmax": {{"$glbnet$clk": {{"achieved": fmax, "constraint": 75.0}},
                      "$glbnet$clk25_0__io": {{"achieved": 400.0, "constraint": 25.0}}}}}},
          open(a[a.index("--report") + 1], "w"))
"""

PLATFORM = SimpleNamespace(device="LFE5U-85F", package="BG381", speed="6",
                           _nextpnr_device_options={"LFE5U-85F": "--85k"},
                           _nextpnr_package_options={"BG381": "cabga381"})


def _fake_nextpnr(tmp_path):
    tool = tmp_path / "nextpnr-fake"
    tool.write_text(FAKE_NEXTPNR)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "NEXTPNR_ECP5": str(tool)}


def test_the_fastest_seed_is_kept_and_the_lowest_on_a_tie(tmp_path):
    env = _fake_nextpnr(tmp_path)
    best, pnr, fmax = _place_and_route(PLATFORM, tmp_path, range(1, 5), env,
                                       Progress(enabled=False), timeout=60)
    assert fmax == {1: 70.0, 2: 75.5, 3: 75.5, 4: 61.0} and best == 2
    assert core_fmax(pnr) == 75.5                    # the clk25 input clock is not the core's
    for s in range(1, 5):                           # each seed's own files, none overwritten
        assert (tmp_path / f"{NAME}.s{s}.config").read_text() == f"config of seed {s}\n"


def test_report_lists_every_seed_tried():
    cfg = load_config("ecp5-small")
    pnr = {"fmax": {"$glbnet$clk": {"achieved": 75.5, "constraint": 75.0}}}
    r = make_report(get_board("ulx3s-85f"), cfg, pnr, {}, Ulx3sTop(cfg), seed=2,
                    versions={}, seconds=1.0, seeds_fmax={1: 70.0, 2: 75.5, 3: 75.5})
    assert r["seed"] == 2 and r["seeds"] == {"1": 70.0, "2": 75.5, "3": 75.5}
    assert json.loads(json.dumps(r))["seeds"]["2"] == 75.5
    assert "seed 2 (the fastest of seeds 1, 2, 3: 70.00, 75.50, 75.50 MHz)" in summary_text(r)
    one = make_report(get_board("ulx3s-85f"), cfg, pnr, {}, Ulx3sTop(cfg), seed=7,
                      versions={}, seconds=1.0)
    assert one["seeds"] == {"7": 75.5} and "fastest" not in summary_text(one)
    assert "lut_levels" not in one and "LUT4 levels" not in summary_text(one)


def test_report_carries_the_netlists_lut_levels():
    cfg = load_config("ecp5-small")
    pnr = {"fmax": {"$glbnet$clk": {"achieved": 75.5, "constraint": 75.0}}}
    levels = {"max": 3, "histogram": {1: 10, 3: 2}, "worst": [(3, "a.DI"), (3, "b.CE")]}
    r = make_report(get_board("ulx3s-85f"), cfg, pnr, {}, Ulx3sTop(cfg), seed=1,
                    versions={}, seconds=1.0, levels=levels)
    assert json.loads(json.dumps(r))["lut_levels"] == {
        "max": 3, "histogram": {"1": 10, "3": 2}, "worst": [[3, "a.DI"], [3, "b.CE"]]}
    text = summary_text(r)
    assert "LUT4 levels between registers: at most 3; inputs per level 1: 10, 3: 2" in text
    assert "3 levels into b.CE" in text


def test_a_failing_run_stops_the_others_and_names_its_log(tmp_path):
    sleeper = _Job([sys.executable, "-c", "import time; time.sleep(60)"],
                   tmp_path / "a.log", tmp_path / "a.tim", "seed 1")
    broken = _Job([sys.executable, "-c", "print('placement failed'); raise SystemExit(3)"],
                  tmp_path / "b.log", tmp_path / "b.tim", "seed 2")
    t0 = time.monotonic()
    with pytest.raises(ToolError, match=r"(?s)exit 3.*b\.log.*placement failed"):
        _run_all("nextpnr", [sleeper, broken], tmp_path, dict(os.environ),
                 Progress(enabled=False), timeout=60, parallel=2)
    assert time.monotonic() - t0 < 30                # the sleeper was killed, not waited for


def test_a_run_past_its_bound_is_stopped(tmp_path):
    sleeper = _Job([sys.executable, "-c", "import time; time.sleep(60)"],
                   tmp_path / "a.log", tmp_path / "a.tim")
    with pytest.raises(ToolError, match="ran longer than 1 s"):
        _run_all("nextpnr", [sleeper], tmp_path, dict(os.environ), Progress(enabled=False),
                 timeout=1)


@pytest.mark.parametrize("args", [["--seeds", "0"], ["--seeds", "65"],
                                  ["--seed", str((1 << 31) - 1), "--seeds", "2"]])
def test_cli_refuses_impossible_seed_counts(args, capsys, tmp_path):
    assert main(["bitstream", *args, "-q", "-o", str(tmp_path)]) == 2
    assert "--seeds" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_a_laggard_seed_is_stopped_once_another_has_finished(tmp_path):
    """A seed still running LAGGARD_FACTOR times as long as the first finished one is stopped,
    without an error; the build keeps the finished seeds and reports the stopped one."""
    env = _fake_nextpnr(tmp_path)
    fake = tmp_path / "nextpnr-fake"
    # seed 2 never finishes (a router that does not converge); seed 1 takes about 1 s
    fake.write_text(FAKE_NEXTPNR.replace("seed = int(a[a.index(\"--seed\") + 1])\n",
                                         "seed = int(a[a.index(\"--seed\") + 1])\n"
                                         "import time; time.sleep(600 if seed == 2 else 1)\n"))
    t0 = time.monotonic()
    best, pnr, fmax = _place_and_route(PLATFORM, tmp_path, range(1, 3), env,
                                       Progress(enabled=False), timeout=300)
    assert time.monotonic() - t0 < 60                # stopped after ~2 s, not at the bound
    assert best == 1 and fmax == {1: 70.0, 2: None} and core_fmax(pnr) == 70.0
    cfg = load_config("ecp5-small")
    r = make_report(get_board("ulx3s-85f"), cfg, pnr, {}, Ulx3sTop(cfg), seed=best,
                    versions={}, seconds=1.0, seeds_fmax=fmax)
    assert json.loads(json.dumps(r))["seeds"] == {"1": 70.0, "2": None}
    assert "seed 1 (the fastest of seeds 1, 2: 70.00, stopped MHz)" in summary_text(r)


def test_without_laggards_every_run_is_waited_for(tmp_path):
    quick = _Job([sys.executable, "-c", "import time; time.sleep(0.2)"],
                 tmp_path / "a.log", tmp_path / "a.tim", "seed 1")
    slow = _Job([sys.executable, "-c", "import time; time.sleep(2); print('done')"],
                tmp_path / "b.log", tmp_path / "b.tim", "seed 2")
    stopped = _run_all("nextpnr", [quick, slow], tmp_path, dict(os.environ),
                       Progress(enabled=False), timeout=60, parallel=2)
    assert stopped == [] and (tmp_path / "b.log").read_text() == "done\n"
    sleeper = _Job([sys.executable, "-c", "import time; time.sleep(60)"],
                   tmp_path / "c.log", tmp_path / "c.tim", "seed 3")
    t0 = time.monotonic()
    stopped = _run_all("nextpnr", [quick, sleeper], tmp_path, dict(os.environ),
                       Progress(enabled=False), timeout=60, parallel=2, laggards=2.0)
    assert stopped == [sleeper] and time.monotonic() - t0 < 30
