"""The space file: parsing, expansion, VTAConfig's validation, and clear errors."""

import json
import subprocess
import sys

import pytest

from designspace.space import (CONFIG_KEYS, SpaceError, expand, load_space, parse_space,
                               point_config)
from isa.config import ConfigError, load_config

SPACE = """
base = "tiny"
[vars]
DEPTH = [7, 8]
[params]
LOG_BLOCK_IN = {range = [1, 3, 2]}
LOG_BLOCK_OUT = "LOG_BLOCK_IN"
LOG_INP_BUFF_SIZE = "LOG_BATCH + LOG_BLOCK_IN + DEPTH"
MEM_LATENCY = [4, 8]
constraints = ["MEM_LATENCY == 4 or LOG_BLOCK_IN == 1"]
[targets]
devices = ["LFE5U-25F"]
[workloads]
names = ["mlp"]
spatial_div = 2
"""


def _space(tmp_path, text, suffix=".toml"):
    path = tmp_path / f"space{suffix}"
    path.write_text(text)
    return load_space(path)


def test_expansion_enumerates_derives_and_constrains(tmp_path):
    space = _space(tmp_path, SPACE)
    exp = expand(space)
    got = sorted((p["LOG_BLOCK_IN"], p["LOG_BLOCK_OUT"], p["LOG_INP_BUFF_SIZE"], p["MEM_LATENCY"])
                 for p in exp.points)
    # blocks {1, 3} x depth {7, 8} x latency {4, 8}, minus block 3 with latency 8.
    expected = sorted((b, b, b + d, lat) for b in (1, 3) for d in (7, 8) for lat in (4, 8)
                      if lat == 4 or b == 1)
    assert got == expected
    assert exp.excluded == 2 and not exp.rejected
    for p in exp.points:
        assert list(p) == list(CONFIG_KEYS)
        cfg = point_config(p)
        # Keys the space does not set come from the base configuration.
        assert cfg.log_uop_buff_size == 8 and cfg.log_acc_buff_size == 10
        assert cfg.inp_depth == 1 << (p["LOG_INP_BUFF_SIZE"] - cfg.log_block_in - cfg.log_batch)


def test_json_space_equals_toml(tmp_path):
    import tomllib
    data = tomllib.loads(SPACE)
    a = expand(_space(tmp_path, SPACE))
    b = expand(_space(tmp_path, json.dumps(data), ".json"))
    assert a.points == b.points


def test_invalid_points_are_listed_with_vtaconfigs_message(tmp_path):
    space = _space(tmp_path, 'base = "tiny"\n[params]\nLOG_UOP_BUFF_SIZE = [8, 19]\n'
                             'LOG_BLOCK_IN = [1, 7]\n')
    exp = expand(space)
    assert len(exp.points) == 1 and exp.points[0]["LOG_UOP_BUFF_SIZE"] == 8
    assert len(exp.rejected) == 3
    for point, message in exp.rejected:
        with pytest.raises(ConfigError) as info:
            point_config(point)
        assert str(info.value) == message          # VTAConfig's own words, not ours
    assert any("LOG_BLOCK_IN = 7 is out of range" in m for _, m in exp.rejected)


@pytest.mark.parametrize("text, words", [
    ("[params]\nLOG_BLOK = 3\n", "unknown entry LOG_BLOK"),
    ("[params]\nLOG_BATCH = \"__import__('os').system('true')\"\n", "do not allow"),
    ("[params]\nLOG_BATCH = \"LOG_BLOCK_IN.real\"\n", "do not allow"),
    ("[params]\nLOG_BATCH = \"LOG_BLOCK_IN\"\nLOG_BLOCK_IN = \"LOG_BATCH\"\n", "cycle"),
    ("[params]\nLOG_BATCH = {range = [3, 1]}\n", "is empty"),
    ("[params]\nLOG_BATCH = []\n", "empty list"),
    ("[params]\nLOG_BATCH = 1.5\n", "not an integer"),
    ("[params]\nLOG_BATCH = \"NOPE + 1\"\n", "NOPE"),
    ("[targets]\ndevices = [\"XC7A35T\"]\n", "unknown device 'XC7A35T'"),
    ("[workloads]\nnames = [\"bert\"]\n", "unknown workload 'bert'"),
    ("[synthesis]\nfmax = \"sometimes\"\n", "synthesis.fmax"),
    ("[search]\nmethod = \"random\"\n", "search.method"),
    ("base = \"nonexistent\"\n", "no configuration named"),
    ("[vars]\nLOG_BATCH = [1]\n", "is a configuration key"),
    ("[extra]\n", "unknown entry extra"),
    ("this is = not toml =\n", "not valid TOML"),
])
def test_bad_space_files_name_the_problem(tmp_path, text, words):
    with pytest.raises(SpaceError) as info:
        _space(tmp_path, text)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_cli_rejects_a_bad_space_with_status_2_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[params]\nLOG_BLOK = 1\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "vta", "sweep", "--space", str(bad), "--out",
                           str(out), "--cache", str(tmp_path / "c")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "LOG_BLOK" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_shipped_small_space_expands():
    from pathlib import Path
    space = load_space(Path(__file__).resolve().parents[2] / "designspace" / "spaces"
                       / "small.toml")
    exp = expand(space)
    # 4 shapes × 2 latencies, and ecp5-small; ecp5-large (TARGET_MHZ 100 since session 22,
    # the base's) is the grid's 1x8x8 point at latency 4, counted once
    assert len(exp.points) == 9 and not exp.rejected
    assert {p["LOG_BLOCK_IN"] for p in exp.points} == {1, 2, 3, 4}
    # The included configurations are there as they are, with their own target clocks.
    assert dict(space.include)["ecp5-small"] in exp.points
    large = dict(space.include)["ecp5-large"]
    assert large in exp.points and exp.points.count(large) == 1
    assert large["TARGET_MHZ"] == 100 and large["LOG_BLOCK_IN"] == 3


def test_include_adds_whole_configurations_once(tmp_path):
    space = _space(tmp_path, 'base = "tiny"\ninclude = ["small", "tiny"]\n'
                             '[params]\nLOG_BLOCK_IN = [1, 2]\nLOG_BLOCK_OUT = "LOG_BLOCK_IN"\n')
    exp = expand(space)
    assert len(exp.points) == 3             # tiny is already the grid's first point
    assert point_config(exp.points[-1]).key == load_config("small").key
    with pytest.raises(SpaceError, match="include: no configuration named 'nope'"):
        _space(tmp_path, 'include = ["nope"]\n')


def test_parse_space_rejects_non_tables():
    with pytest.raises(SpaceError, match="must be a table"):
        parse_space({"params": [1, 2]})


def test_cli_refuses_to_replace_a_file(tmp_path):
    space = tmp_path / "s.toml"
    space.write_text('base = "tiny"\n')
    out = tmp_path / "results.csv"
    out.write_text("keep me")
    proc = subprocess.run([sys.executable, "-m", "vta", "sweep", "--space", str(space), "--out",
                           str(out), "--synthesis", "model"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "is a file" in proc.stderr
    assert out.read_text() == "keep me"
