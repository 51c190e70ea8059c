"""``vta import`` writes Relay text and weights that ``vta relay run --params`` takes up."""
import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx  # noqa: E402
from onnx import helper  # noqa: E402

from relay.frontend.onnx_zoo import ort_session, randomized  # noqa: E402
from tests.frontend.test_onnx_ops import make_model, rand  # noqa: E402
from vta.cli import main as vta  # noqa: E402


def test_import_then_run_matches_onnxruntime(tmp_path, capsys):
    model = randomized("squeezenet", seed=3)
    onnx.save(model, tmp_path / "sq.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    assert vta(["import", str(tmp_path / "sq.onnx"), "-o", str(tmp_path / "sq.rly"),
                "--params-out", str(tmp_path / "sq.npz")]) == 0
    assert "52 weights" in capsys.readouterr().out
    with np.load(tmp_path / "sq.npz", allow_pickle=False) as z:
        assert "conv1_w_0" in z.files and z["conv1_w_0"].shape == (64, 3, 3, 3)
    assert vta(["relay", "run", str(tmp_path / "sq.rly"), "--params", str(tmp_path / "sq.npz"),
                "--input", f"data_0={tmp_path / 'x.npy'}", "--out", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")["output_0"]
    want = ort_session(model).run(None, {"data_0": x})[0]
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))


def test_unsupported_operator_exits_1_and_writes_nothing(tmp_path, capsys):
    model = make_model([helper.make_node("Hardmax", ["x"], ["y"], name="h")], {"x": rand(2, 3)})
    onnx.save(model, tmp_path / "m.onnx")
    rc = vta(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.rly"), "--params-out",
              str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err == "vta import: error: operator Hardmax (node 0 'h' (Hardmax) of model 'm') is not supported\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.parametrize("content,message", [(None, "no such file"), (b"garbage", "as an ONNX model")])
def test_unreadable_model_exits_2(tmp_path, capsys, content, message):
    path = tmp_path / "m.onnx"
    if content is not None:
        path.write_bytes(content)
    rc = vta(["import", str(path), "-o", str(tmp_path / "m.rly"), "--params-out", str(tmp_path / "m.npz")])
    assert rc == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m.rly").exists() and not (tmp_path / "m.npz").exists()


def test_symbolic_shape_given_on_the_command_line(tmp_path, capsys):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "s.onnx")
    args = ["import", str(tmp_path / "s.onnx"), "-o", str(tmp_path / "s.rly"), "--params-out", str(tmp_path / "s.npz")]
    assert vta(args) == 2 and "--shape x=" in capsys.readouterr().err
    assert vta(args + ["--shape", "x=4,3"]) == 0
    assert "Tensor[(4, 3), float32]" in (tmp_path / "s.rly").read_text()
    assert vta(args + ["--shape", "x=4,a"]) == 2
    assert "NAME=D0,D1" in capsys.readouterr().err


def test_relay_run_rejects_a_pickled_params_file(tmp_path, capsys):
    (tmp_path / "f.rly").write_text("def @main(%x: Tensor[(2), float32]) { %x }")
    np.save(tmp_path / "p.npy", np.array([object()], dtype=object), allow_pickle=True)
    (tmp_path / "p.npz").write_bytes((tmp_path / "p.npy").read_bytes())
    rc = vta(["relay", "run", str(tmp_path / "f.rly"), "--params", str(tmp_path / "p.npz"),
              "--out", str(tmp_path / "o.npz")])
    assert rc == 1 and "cannot load parameters" in capsys.readouterr().err
