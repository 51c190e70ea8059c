"""``vta relay check|print|run`` and ``python -m relay``."""
import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relay import cli

PROGRAMS = Path(__file__).parent / "programs"
ROOT = Path(__file__).resolve().parents[2]


def vta_relay(*argv):
    """Run through ``register`` as the project's ``vta`` command does."""
    parser = argparse.ArgumentParser(prog="vta")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["relay", *argv])
    return args.func(args)


def test_check_prints_global_types(capsys):
    assert vta_relay("check", str(PROGRAMS / "rnn.rly")) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["@cell", "@generate", "@main"]
    assert out[1].endswith("-> List[Tensor[(1, 4), float32]]")
    assert out[0] == ("@cell: fn (Tensor[(1, 4), float32], Tensor[(1, 8), float32], Tensor[(8, 4), float32], "
                      "Tensor[(8, 8), float32], Tensor[(8), float32], Tensor[(4, 8), float32]) -> "
                      "(Tensor[(1, 4), float32], Tensor[(1, 8), float32])")


def test_check_reports_type_errors_with_position(tmp_path, capsys):
    bad = tmp_path / "bad.rly"
    bad.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 3), float32]) {\n  add(%x, ones(shape=[4]))\n}\n')
    assert vta_relay("check", str(bad)) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3:3: in `add(%x, ones(...))`: relation Broadcast failed" in err
    bad.write_text("def @main() {\n  (1, \n")
    assert vta_relay("check", str(bad)) == 2     # a syntax error: an invalid input file
    assert f"{bad}:3:1:" in capsys.readouterr().err


def test_print_round_trips(tmp_path, capsys):
    assert vta_relay("print", str(PROGRAMS / "rnn.rly")) == 0
    first = capsys.readouterr().out
    assert first.startswith('#[version = "0.0.5"]\ndef @cell(') and "def @map" not in first
    again = tmp_path / "again.rly"
    assert vta_relay("print", str(PROGRAMS / "rnn.rly"), "-o", str(again)) == 0
    assert vta_relay("print", str(again)) == 0
    assert capsys.readouterr().out == first


def test_run_saves_outputs(tmp_path, capsys):
    prog = tmp_path / "p.rly"
    prog.write_text("""#[version = "0.0.5"]
def @main(%x: Tensor[(2, 2), float32], %n: int32) {
  (add(%x, 1f), (multiply(%x, %x), %n * 2), Cons(sum(%x), Nil))
}
""")
    x = np.arange(4, dtype="float32").reshape(2, 2)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "n.npy", np.int32(5))
    out = tmp_path / "out.npz"
    assert vta_relay("run", str(prog), "--input", f"x={tmp_path / 'x.npy'}", "--input",
                     f"n={tmp_path / 'n.npy'}", "--out", str(out)) == 0
    res = np.load(out)
    assert sorted(res.files) == ["output_0", "output_1", "output_2", "output_3"]
    np.testing.assert_array_equal(res["output_0"], x + 1)
    np.testing.assert_array_equal(res["output_1"], x * x)
    assert res["output_2"] == 10 and res["output_3"] == 6


def test_run_input_errors(tmp_path, capsys):
    prog = tmp_path / "p.rly"
    prog.write_text("def @main(%x: Tensor[(2), float32]) { %x }")
    np.save(tmp_path / "x.npy", np.ones(3, "float32"))
    out = str(tmp_path / "o.npz")
    assert vta_relay("run", str(prog), "-o", out) == 2
    assert "missing --input for parameter(s) x" in capsys.readouterr().err
    assert vta_relay("run", str(prog), "-i", f"y={tmp_path / 'x.npy'}", "-o", out) == 2
    assert "@main has no parameter(s) y" in capsys.readouterr().err
    assert vta_relay("run", str(prog), "-i", f"x={tmp_path / 'x.npy'}", "-o", out) == 2
    assert "input x has shape (3,) but @main expects Tensor[(2), float32]" in capsys.readouterr().err


def test_help_texts(capsys):
    for cmd in ("check", "print", "run"):
        with pytest.raises(SystemExit):
            vta_relay(cmd, "--help")
        assert "Relay text file" in capsys.readouterr().out
    assert vta_relay() == 2
    assert "check" in capsys.readouterr().out


def test_python_dash_m(tmp_path):
    r = subprocess.run([sys.executable, "-m", "relay", "check", str(PROGRAMS / "rnn.rly")], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("@cell: fn (")
