"""The ``vta`` command: asm/disasm/config round trips, the demo, errors without tracebacks."""

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert main(["asm", str(src), "-o", str(tmp_path / "x.bin")]) == 2
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


def test_model_demo_matches_the_interpreter_on_a_small_config():
    """`make sim`: the bundled digits CNN imported, quantised, compiled for `small` and run;
    the demo itself compares every output with the Relay interpreter bit for bit."""
    pytest.importorskip("onnx")
    pytest.importorskip("sklearn")
    from vta.demo_model import run_model_demo

    out = io.StringIO()
    assert run_model_demo("functional", "small", images=4, out=out) == 0
    text = out.getvalue()
    assert "VTA == Relay interpreter (int8 program) on 4/4" in text
    assert "100.0 % of MACs on VTA" in text and "all checks passed" in text


def test_model_demo_on_the_cycle_simulator_and_the_rtl():
    """`SIM=cycle make sim` and `SIM=rtl make sim`: the same checks, and the per-layer table
    with cycles and GEMM utilisation; the RTL's cycles are the cycle simulator's."""
    pytest.importorskip("onnx")
    pytest.importorskip("sklearn")
    from driver.backends import BackendUnavailable, get_backend
    from vta.demo_model import run_model_demo

    tables = {}
    for backend in ("cycle", "rtl"):
        if backend == "rtl":
            try:
                get_backend("rtl")
            except BackendUnavailable as exc:
                pytest.skip(f"rtl backend unavailable: {exc}")
        out = io.StringIO()
        assert run_model_demo(backend, "small", images=2, out=out) == 0
        text = out.getvalue()
        assert f"2 held-out images on {backend}: VTA == Relay interpreter (int8 program) on 2/2" in text
        assert "all checks passed" in text
        rows = re.findall(r"^  (vta\d+) +vta +[\d,]+ +([\d,]+) +([\d.]+) %", text, re.M)
        assert len(rows) == 4 and all(int(c.replace(",", "")) > 0 for _, c, _ in rows)
        total = int(re.search(r"total VTA cycles ([\d,]+)", text).group(1).replace(",", ""))
        assert total == sum(int(c.replace(",", "")) for _, c, _ in rows)
        tables[backend] = rows
    assert tables["rtl"] == tables["cycle"]


def test_console_entry_point_help():
    proc = subprocess.run([sys.executable, "-m", "vta", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0
    for command in ("sim", "asm", "disasm", "config"):
        assert command in proc.stdout


SMALL_IMAGE = ROOT / "tests" / "data" / "conformance" / "small-pub-sram-edges.in.npz"


def test_run_cycle_with_trace(tmp_path, capsys):
    import json

    trace = tmp_path / "t.json"
    assert main(["run", str(SMALL_IMAGE), "--backend", "cycle", "--trace", str(trace),
                 "--out", str(tmp_path / "r.npz")]) == 0
    out = capsys.readouterr().out
    assert "gemm_busy_fraction" in out and "token_wait_cycles" in out
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("ph") == "X" and e["name"].startswith("GEMM") for e in events)


def test_run_option_for_another_backend_is_refused(capsys):
    assert main(["run", str(SMALL_IMAGE), "--backend", "functional", "--trace", "x.json"]) == 2
    assert "--trace applies to the cycle backend only" in capsys.readouterr().err


def test_rtl_waveform_and_crosscheck(tmp_path, capsys):
    import numpy as np

    wave = tmp_path / "run.vcd"
    assert main(["run", str(SMALL_IMAGE), "--backend", "rtl", "--waveform", str(wave),
                 "--out", str(tmp_path / "r.npz")]) == 0
    assert wave.read_text(errors="replace").startswith("$") and wave.stat().st_size > 10_000
    expect = np.load(str(SMALL_IMAGE).replace(".in.npz", ".expect.npz"))["dram"]
    assert np.array_equal(np.load(tmp_path / "r.npz")["dram"], expect)
    assert main(["crosscheck", str(SMALL_IMAGE)]) == 0
    assert "identical" in capsys.readouterr().out


def test_trace_plot_draws_a_png(tmp_path, capsys):
    trace, png = tmp_path / "t.json", tmp_path / "t.png"
    assert main(["run", str(SMALL_IMAGE), "--backend", "cycle", "--trace", str(trace)]) == 0
    assert main(["trace-plot", str(trace), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    (tmp_path / "bad.json").write_text("{}")
    capsys.readouterr()
    assert main(["trace-plot", str(tmp_path / "bad.json"), "-o", str(png)]) == 2
    assert "holds no timeline events" in capsys.readouterr().err
