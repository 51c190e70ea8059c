"""The failures the fuzz rows of ``vta sweep`` and ``vta bitstream`` found, one test each, and
their cheap stops (``--dry-run``, ``--check``) against what a real run would do."""

from __future__ import annotations

import json

import pytest

from isa.errors import EXIT_OK, EXIT_REJECTED, EXIT_USAGE

from .builds import no_tools
from .inputs import ROOT
from .harness import check, run_vta

SPACE = """
base = "small"
[vars]
DEPTH = [7, 9]
[params]
LOG_BLOCK_IN = [1, 2, 3]
LOG_BLOCK_OUT = "LOG_BLOCK_IN"
LOG_INP_BUFF_SIZE = "LOG_BATCH + LOG_BLOCK_IN + DEPTH"
MEM_LATENCY = {range = [4, 32, 28]}
constraints = ["LOG_BLOCK_IN < 3 or DEPTH == 9"]
[workloads]
names = ["mlp", "resnet18.fc"]
"""


def _sweep(tmp_path, text, *extra, name="space.toml", out="results"):
    space = tmp_path / name
    space.write_text(text)
    argv = ["sweep", "--space", space, "--out", tmp_path / out, "--cache", tmp_path / "cache",
            "--no-progress", *extra]
    outputs = [tmp_path / "cache"] + ([] if (tmp_path / out).exists() else [tmp_path / out])
    return run_vta(argv, outputs=outputs)


def test_sweep_dry_run_counts_against_expand(tmp_path):
    """--dry-run prints what the sweep would measure (counted here by hand: 3 shapes x 2
    depths x 2 latencies, one shape x depth pair excluded) and writes nothing."""
    result = _sweep(tmp_path, SPACE, "--dry-run")
    check(result, {EXIT_OK}, name="sweep dry-run")
    # 12 combinations, 2 (LOG_BLOCK_IN 3, DEPTH 7) excluded; VTAConfig takes all 10 others
    assert result.out.startswith("10 points (0 rejected by VTAConfig, 2 excluded by "
                                 "constraints), search grid, 2 workloads: mlp, resnet18.fc")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.toml"]


@pytest.mark.parametrize("out", ["file", "no/results"])
def test_sweep_refuses_an_impossible_out_before_any_work(tmp_path, out):
    (tmp_path / "file").write_text("keep")
    for extra in ((), ("--dry-run",)):
        result = _sweep(tmp_path, SPACE, *extra, out=out)
        check(result, {EXIT_USAGE}, name="sweep")
        assert "--out" in result.err
    assert (tmp_path / "file").read_text() == "keep"
    assert not (tmp_path / "cache").exists() and not (tmp_path / "no").exists()


@pytest.mark.parametrize("entry, message", [
    ('LOG_BATCH = {range = [0, 1000000000000]}', "at most 100000 combinations"),   # MemoryError
    ('LOG_BATCH = "9 ** 9 ** 9 ** 9"', "too large"),                              # hung
    ('LOG_BATCH = "2 ** -1"', "negative exponent"),
    ('LOG_BATCH = "' + "+".join(["1"] * 2000) + '"', "characters"),               # RecursionError
    ('LOG_BATCH = "min(1)"', "do not allow"),                                     # TypeError
    ('LOG_BATCH = [0, 1]\nconstraints = ["1 // (LOG_BATCH - LOG_BATCH)"]', "by zero"),
    ("\n".join(f"{k} = {list(range(10))}" for k in ("LOG_BATCH", "LOG_BLOCK_IN", "LOG_BLOCK_OUT",
                                                    "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE",
                                                    "LOG_ACC_BUFF_SIZE")),
     "1000000 combinations"),                                                      # hung
])
def test_space_entries_found_by_the_fuzzer_are_refused(tmp_path, entry, message):
    for extra in (("--dry-run",), ()):       # the real run is refused before any work too
        result = _sweep(tmp_path, f"[params]\n{entry}\n", *extra)
        check(result, {EXIT_USAGE}, name="sweep")
        assert message in result.err, result.err
        assert not (tmp_path / "results").exists() and not (tmp_path / "cache").exists()


def test_space_base_of_the_wrong_type_is_refused(tmp_path):
    """``base = 5`` reached load_config(5): a TypeError (exit 3) before."""
    result = _sweep(tmp_path, json.dumps({"base": 5}), "--dry-run", name="space.json")
    check(result, {EXIT_USAGE}, name="sweep")
    assert "base: 5 is not a configuration name" in result.err


def _bitstream(tmp_path, *extra, config="ecp5-small", out="bits"):
    argv = ["bitstream", "--config", config, "--out", tmp_path / out, "--quiet", *extra]
    return run_vta(argv, outputs=[tmp_path / out], env=no_tools(tmp_path))


def test_bitstream_check_fits_without_tools(tmp_path):
    """--check answers from the configuration alone (the tools do not even exist here); the
    shipped ecp5-small fits the 85F, `default` (its 16x16 GEMM) does not."""
    result = _bitstream(tmp_path, "--check")
    check(result, {EXIT_OK}, name="bitstream")
    assert "fits" in result.out and "DP16KD" in result.out
    result = _bitstream(tmp_path, "--check", config="default")
    check(result, {EXIT_REJECTED}, name="bitstream")
    assert "does not fit the LFE5U-85F" in result.err
    assert list(tmp_path.iterdir()) == []


def test_bitstream_without_check_reaches_the_tools(tmp_path):
    """The guard of the fuzz rows: a valid build gets past the checks and stops at the missing
    tool (exit 3), so a fuzzed build that started would fail its test."""
    result = _bitstream(tmp_path)
    assert result.code == 3 and "no-such-tool" in result.err, result.err


@pytest.mark.parametrize("mhz, message", [
    (1000, "PLL cannot make 1000 MHz"),                  # PllError from the board design
    (25, "cannot make 3000000 baud")])                   # ValueError from uart_divisor
def test_bitstream_clock_the_board_cannot_make_is_a_usage_error(tmp_path, mhz, message):
    """Both were internal errors (exit 3) before."""
    cfg = json.loads((ROOT / "isa" / "configs" / "ecp5-small.json").read_text())
    (tmp_path / "cfg.json").write_text(json.dumps(cfg | {"TARGET_MHZ": mhz}))
    for extra in (("--check",), ()):
        result = _bitstream(tmp_path, *extra, config=tmp_path / "cfg.json")
        check(result, {EXIT_USAGE}, name="bitstream")
        assert message in result.err, result.err


@pytest.mark.parametrize("extra, message", [
    (("--seed", "-1"), "--seed -1"), (("--seed", str(1 << 31)), "--seed"),
    (("--dram-kib", "48"), "power of two"), (("--out", "FILE"), "is a file"),
    (("--out", "no/bits"), "does not exist")])
def test_bitstream_refuses_bad_options_before_the_build(tmp_path, extra, message):
    (tmp_path / "FILE").write_text("keep")
    extra = tuple(str(tmp_path / e) if e in ("FILE", "no/bits") else e for e in extra)
    result = _bitstream(tmp_path, *extra)
    check(result, {EXIT_USAGE}, name="bitstream")
    assert message in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]
