"""`vta compile MODEL.onnx --calibrate DATA.npz`: import, quantise and compile in one step; the
binary takes and returns float tensors and equals the Relay interpreter's int8 program."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from relay.interpreter import Interpreter  # noqa: E402
from relay.quantize.cli import quantize_file  # noqa: E402
from vta.cli import main  # noqa: E402

MODEL = Path(__file__).resolve().parents[2] / "examples" / "digits_cnn.onnx"


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("cal") / "calibration.npz"
    np.savez(path, image=rng.random((16, 1, 1, 8, 8), dtype=np.float32))
    return path


def test_onnx_compiles_in_one_step_and_runs_like_the_interpreter(tmp_path, calibration, capsys):
    out = tmp_path / "digits.vtab"
    assert main(["compile", str(MODEL), "--calibrate", str(calibration), "-o", str(out),
                 "--config", "small"]) == 0
    assert "agreement with float" in capsys.readouterr().out
    x = np.random.default_rng(1).random((1, 1, 8, 8), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    result = tmp_path / "result.npz"
    assert main(["run", str(out), "--input", f"image={tmp_path / 'x.npy'}", "--out", str(result),
                 "--backend", "functional"]) == 0
    got = np.load(result)["output_0"]
    expected = Interpreter(quantize_file(MODEL, calibration).mod).run_main(x)
    assert got.dtype == np.float32 and np.array_equal(got, expected)


@pytest.mark.parametrize("extra", [[], ["--per-channel"]])
def test_float_model_options_need_calibration(tmp_path, extra, capsys):
    model = str(MODEL) if not extra else str(tmp_path / "m.rly")
    if extra:
        (tmp_path / "m.rly").write_text('#[version = "0.0.5"]\ndef @main(%x: int8) { %x }\n')
    assert main(["compile", model, "-o", str(tmp_path / "m.vtab")] + extra) == 2
    assert "--calibrate" in capsys.readouterr().err
    assert not (tmp_path / "m.vtab").exists()


def test_imported_rly_without_params_or_calibration_is_told_what_to_add(tmp_path, calibration, capsys):
    """The `vta import` output (.rly + weights .npz): a missing --params is named, and a float
    program compiled without --calibrate says why nothing runs on VTA."""
    rly, weights = tmp_path / "d.rly", tmp_path / "d.npz"
    assert main(["import", str(MODEL), "-o", str(rly), "--params-out", str(weights)]) == 0
    capsys.readouterr()
    for command in (["quantize", str(rly), "--calibrate", str(calibration), "-o", str(tmp_path / "q.rly")],
                    ["compile", str(rly), "--calibrate", str(calibration), "-o", str(tmp_path / "q.vtab")]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "are weights (a .rly from `vta import`), give them with --params" in err
    assert not (tmp_path / "q.rly").exists() and not (tmp_path / "q.vtab").exists()
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 8, 8), np.float32))
    assert main(["relay", "run", str(rly), "--input", f"image={tmp_path / 'x.npy'}", "--out",
                 str(tmp_path / "r.npz")]) == 2
    assert "go in with --params PARAMS.npz" in capsys.readouterr().err
    assert main(["compile", str(rly), "--params", str(weights), "-o", str(tmp_path / "f.vtab")]) == 0
    out = capsys.readouterr().out
    assert "0.0% of the MACs on VTA" in out and "unless --calibrate DATA.npz quantises it" in out
    assert main(["compile", str(rly), "--params", str(weights), "--calibrate", str(calibration),
                 "-o", str(tmp_path / "q.vtab")]) == 0
    assert "100.0% of the MACs on VTA" in capsys.readouterr().out


def test_long_steps_show_their_progress(tmp_path, calibration, capsys):
    """`vta compile --calibrate` reports each long step (calibration, agreement, the VTA
    operators) as it ends; on a terminal the line advances sample by sample."""
    import io

    from compiler.compile import compile_module
    from compiler.model_cli import Progress
    assert main(["compile", str(MODEL), "--calibrate", str(calibration), "-o", str(tmp_path / "d.vtab")]) == 0
    out = capsys.readouterr().out
    for line in ("  calibration samples run in float: 16/16 (", "  samples compared, int8 against float: 16/16 (",
                 "  VTA operators compiled: 4/4 ("):
        assert line in out
    calls = []
    q = quantize_file(MODEL, calibration, progress=lambda *a: calls.append(a))
    assert calls == [("calibrate", i, 16) for i in range(1, 17)] + [("agreement", i, 16) for i in range(1, 17)]
    calls.clear()
    compile_module(q.mod, None, "default", progress=lambda *a: calls.append(a))
    assert calls == [("compile", i, 4) for i in range(1, 5)]

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    term = Terminal()
    show = Progress(term)
    for i in (1, 2, 3):
        show("calibrate", i, 3)
    text = term.getvalue()
    assert text.startswith("\r  calibration samples run in float: 1/3\r  calibration samples run in float: 2/3\r")
    assert text.endswith(" s)\n") and text.count("\n") == 1


def test_onnx_models_need_no_torch(tmp_path, calibration, capsys, monkeypatch):
    """torch is an optional extra: without it an ONNX model compiles and runs; a .pt2 is refused
    with exit 5 (what the command needs is not installed) and says how to install it."""
    import sys
    monkeypatch.setitem(sys.modules, "torch", None)       # import torch raises ImportError
    out = tmp_path / "d.vtab"
    assert main(["compile", str(MODEL), "--calibrate", str(calibration), "-o", str(out)]) == 0
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 8, 8), np.float32))
    assert main(["run", str(out), "--input", f"image={tmp_path / 'x.npy'}", "--out", str(tmp_path / "r.npz")]) == 0
    capsys.readouterr()
    (tmp_path / "m.pt2").write_bytes(b"PK\x05\x06" + bytes(18))
    for command in (["import", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "m.rly"), "--params-out",
                     str(tmp_path / "m.npz")],
                    ["compile", str(tmp_path / "m.pt2"), "--calibrate", str(calibration), "-o", str(tmp_path / "m.vtab")]):
        assert main(command) == 5
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "torch is needed to import PyTorch programs (.pt2)" in err
        assert "pip install -e '.[torch]'" in err
    assert not any((tmp_path / f"m.{x}").exists() for x in ("rly", "npz", "vtab"))


def test_unsupported_operator_in_one_step_compile(tmp_path, capsys):
    """`vta compile MODEL.onnx --calibrate`: an operator the frontend does not know is named with
    its node and the model before any calibration runs (exit 1, one line, no binary)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                               helper.make_node("Hardmax", ["r"], ["y"], name="hm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph), tmp_path / "net.onnx")
    np.savez(tmp_path / "cal.npz", x=np.zeros((2, 1, 4), np.float32))
    assert main(["compile", str(tmp_path / "net.onnx"), "--calibrate", str(tmp_path / "cal.npz"),
                 "-o", str(tmp_path / "net.vtab")]) == 1
    captured = capsys.readouterr()
    assert captured.err == ("vta compile: error: operator Hardmax (node 1 'hm' (Hardmax) of model 'net') "
                            "is not supported\n")
    assert "calibration samples" not in captured.out and not (tmp_path / "net.vtab").exists()
