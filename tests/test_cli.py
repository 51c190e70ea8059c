"""The ``vta`` command: asm/disasm/config round trips, the demo, errors without tracebacks."""

import io
import subprocess
import sys
from pathlib import Path

from isa.config import load_config
from vta.cli import main
from vta.demo import run_demo

ROOT = Path(__file__).resolve().parents[1]


def test_asm_disasm_round_trip(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text("LOAD INP sram_base=0 dram_base=4 y_size=1 x_size=2 push_next ; data\n"
                   "GEMM reset uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 pop_prev\nFINISH\n")
    assert main(["asm", str(src), "-o", str(tmp_path / "p.bin"), "--config", "small"]) == 0
    assert (tmp_path / "p.bin").stat().st_size == 48
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "p.bin"), "--config", "small"]) == 0
    text = capsys.readouterr().out
    (tmp_path / "q.s").write_text(text)
    main(["asm", str(tmp_path / "q.s"), "-o", str(tmp_path / "q.bin"), "--config", "small"])
    assert (tmp_path / "q.bin").read_bytes() == (tmp_path / "p.bin").read_bytes()


def test_bad_assembly_is_one_line_error(tmp_path, capsys):
    src = tmp_path / "bad.s"
    src.write_text("FINISH\nLOAD FOO\n")
    assert main(["asm", str(src), "-o", str(tmp_path / "x.bin")]) == 1
    assert capsys.readouterr().err.strip() == (
        "vta asm: error: line 2: unknown memory type 'FOO'; expected one of UOP, WGT, INP, "
        "ACC, OUT, ACC_8BIT")


def test_config_command_lists_derived_sizes(capsys):
    assert main(["config", "small"]) == 0
    out = capsys.readouterr().out
    assert "INP  depth     256" in out and "uop     dst[6:0]" in out


def test_demo_checks_everything_on_a_small_config():
    out = io.StringIO()
    assert run_demo("functional", "small", out=out) == 0
    text = out.getvalue()
    assert "OK, equals numpy" in text and "all checks passed" in text
    assert "reference images of the original simulator for this configuration: 6/6" in text


def test_console_entry_point_help():
    proc = subprocess.run([sys.executable, "-m", "vta", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0
    for command in ("sim", "asm", "disasm", "config"):
        assert command in proc.stdout
