"""Whole sweeps on a tiny space (screening model only, no FPGA tools): the cache resumes a
killed sweep to the same results, Dask gives the same as local processes, outputs are whole."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from designspace.cache import Cache
from designspace.runners import DaskRunner, LocalRunner
from designspace.space import load_space
from designspace.sweep import run_sweep

TINY_SPACE = """
base = "small"
[vars]
DEPTH = [7, 8]
[params]
LOG_INP_BUFF_SIZE = "LOG_BATCH + LOG_BLOCK_IN + DEPTH"
MEM_LATENCY = [4, 16]
[targets]
devices = ["LFE5U-25F", "LFE5U-85F"]
[workloads]
names = ["resnet18.layer3.proj"]
spatial_div = 14
[synthesis]
fmax = "none"
"""
TASKS = 4    # 4 points x 1 workload


@pytest.fixture
def space_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SPACE)
    return path


def _sweep(space_file, out, cache, *extra, wait=True):
    cmd = [sys.executable, "-m", "vta", "sweep", "--space", str(space_file), "--out", str(out),
           "--cache", str(cache), "--synthesis", "model", "--jobs", "1", "--no-progress",
           "--no-plots", *extra]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def _results(cache: Path) -> int:
    return len(list(cache.glob("*/*.json")))


def test_killed_sweep_resumes_to_the_same_results(space_file, tmp_path):
    whole = tmp_path / "whole"
    _sweep(space_file, whole, tmp_path / "cache-whole")

    cache = tmp_path / "cache-killed"
    proc = _sweep(space_file, tmp_path / "killed", cache, wait=False)
    deadline = time.monotonic() + 240
    try:
        while _results(cache) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)        # no chance to clean up: like a power cut
        proc.communicate(timeout=60)
    done = _results(cache)
    assert 2 <= done < TASKS, "the sweep was not killed half-way"
    assert not (tmp_path / "killed").exists()       # no partial output

    resumed = _sweep(space_file, tmp_path / "killed", cache)
    assert (tmp_path / "killed" / "points.csv").read_text() == (whole / "points.csv").read_text()
    assert (tmp_path / "killed" / "frontier.csv").read_text() == \
        (whole / "frontier.csv").read_text()
    report = (tmp_path / "killed" / "report.md").read_text()
    assert f"cycles: {TASKS - done} run, {done} cached" in report, report[-300:]
    assert _results(cache) == TASKS
    _sweep(space_file, tmp_path / "again", cache)
    assert f"cycles: 0 run, {TASKS} cached" in (tmp_path / "again" / "report.md").read_text()
    assert (tmp_path / "again" / "points.csv").read_text() == (whole / "points.csv").read_text()
    assert "4 points" in resumed.stdout


def test_points_csv_columns(space_file, tmp_path):
    _sweep(space_file, tmp_path / "out", tmp_path / "cache")
    with open(tmp_path / "out" / "points.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4
    for key in ("LOG_BATCH", "LOG_BLOCK_IN", "LOG_BLOCK_OUT", "LOG_INP_BUFF_SIZE",
                "MEM_LATENCY", "LUT4", "FF", "DP16KD", "MULT18X18D", "fmax_mhz",
                "cycles_resnet18.layer3.proj", "latency_us_resnet18.layer3.proj",
                "throughput_gmacs", "fits_LFE5U-25F", "resources_from"):
        assert key in rows[0]
    assert all(r["resources_from"] == "model" for r in rows)
    # A longer memory latency makes every program slower.
    by = {(r["LOG_INP_BUFF_SIZE"], r["MEM_LATENCY"]): r for r in rows}
    for (inp, lat), r in by.items():
        if lat == "4":
            slow = by[(inp, "16")]
            w = "resnet18.layer3.proj"
            assert int(slow[f"cycles_{w}"]) > int(r[f"cycles_{w}"])


def test_dask_local_cluster_gives_the_local_results(space_file, tmp_path):
    space = load_space(space_file)
    local = run_sweep(space, cache=Cache(None), runner=LocalRunner(1), synthesis="model",
                      progress=False, log=lambda m: None)
    with DaskRunner(None, jobs=2) as runner:
        dask = run_sweep(space, cache=Cache(tmp_path / "c"), runner=runner, synthesis="model",
                         progress=False, log=lambda m: None)
    assert dask.rows == local.rows
    assert dask.frontier == local.frontier
    assert dask.counts["cycles"] == {"cached": 0, "run": TASKS}


def test_nsga2_search_visits_valid_grid_points(space_file, tmp_path):
    text = space_file.read_text() + '[search]\nmethod = "nsga2"\ntrials = 3\nseed = 1\n'
    space_file.write_text(text)
    space = load_space(space_file)
    logs = []
    result = run_sweep(space, cache=Cache(tmp_path / "c"), runner=LocalRunner(1),
                       synthesis="model", progress=False, log=logs.append)
    grid = {(r["LOG_INP_BUFF_SIZE"], r["MEM_LATENCY"]) for r in result.rows}
    assert 1 <= len(result.rows) <= 3
    assert grid <= {(0 + 2 + d, lat) for d in (7, 8) for lat in (4, 16)}
    assert all(r["cycles_resnet18.layer3.proj"] > 0 for r in result.rows)
    assert any("NSGA-II: 3 trials" in m for m in logs)


def test_a_failed_cache_write_leaves_nothing(tmp_path):
    cache = Cache(tmp_path / "c")
    desc = {"kind": "cycles", "point": {"LOG_BATCH": 0}}
    with pytest.raises(TypeError):
        cache.put(desc, {"cycles": object()})      # not JSON: fails half-way through the dump
    assert [p for p in (tmp_path / "c").rglob("*") if p.is_file()] == []
    assert cache.get(desc) is None
    cache.put(desc, {"cycles": 12})
    assert cache.get(desc) == {"cycles": 12}
    assert cache.entries("cycles") == [(desc, {"cycles": 12})]
