"""The nine real-architecture ONNX models the onnx package ships: each imports, type-checks and
runs in the Relay interpreter, matching onnxruntime within 1e-4 relative (seeded weights and
inputs; the logits before the final softmax are compared too)."""
import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx  # noqa: E402

import relay  # noqa: E402
from relay.frontend import from_onnx  # noqa: E402
from relay.frontend.common import relay_name  # noqa: E402
from relay.frontend.onnx_zoo import LIGHT_MODELS, light_path, ort_session, randomized, with_logits  # noqa: E402


def _max_rel(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_onnxruntime(name):
    model = with_logits(randomized(name, seed=1))
    mod, params = from_onnx(model, name=name)
    main = mod["main"]
    rng = np.random.default_rng(7)
    inputs = {p.name_hint: rng.standard_normal(tuple(p.type_annotation.shape)).astype("float32")
              for p in main.params if p.name_hint not in params}
    assert len(inputs) == 1
    outs = relay.run(mod, *[inputs[p.name_hint] if p.name_hint in inputs else params[p.name_hint]
                            for p in main.params])
    sess = ort_session(model)
    refs = sess.run(None, {i.name: inputs[relay_name(i.name)] for i in sess.get_inputs()})
    outs = outs if isinstance(outs, tuple) else (outs,)
    assert len(outs) == len(refs)
    for got, want in zip(outs, refs):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert _max_rel(got, want) < 1e-4
    assert np.argmax(outs[-1]) == np.argmax(refs[-1])


@pytest.mark.parametrize("name", ("bvlc_alexnet", "resnet50"))
def test_shipped_weights_become_parameters(name):
    """As shipped, most weights are ConstantOfShape outputs: they are folded at import time and
    become parameters of @main named after the ONNX tensors; the shape tensors disappear."""
    model = onnx.load(light_path(name))
    mod, params = from_onnx(model, name=name)
    produced = {relay_name(n.output[0]) for n in model.graph.node if n.op_type == "ConstantOfShape"}
    produced |= {relay_name(i.name) for i in model.graph.initializer}
    assert set(params) <= produced
    assert not any(k.endswith("__SHAPE") for k in params)
    names = [p.name_hint for p in mod["main"].params]
    assert names[0] in ("data_0", "gpu_0_data_0") and names[1:] == list(params)
    if name == "bvlc_alexnet":
        assert params["conv1_w_0"].shape == (96, 3, 11, 11) and np.all(params["conv1_w_0"] == np.float32(0.02))


@pytest.mark.parametrize("name,opset", [("mobilenet_v2", 13), ("resnet18", 17)])
def test_models_exported_by_torch_onnx(tmp_path, name, opset):
    """What torch's ONNX exporter writes (Clip with constant inputs, Flatten, Gemm, Constant and
    shape arithmetic) imports and matches onnxruntime."""
    torch = pytest.importorskip("torch")
    import warnings
    from relay.frontend import load_onnx, torch_models
    model = getattr(torch_models, name)(num_classes=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 3, 32, 32),), str(tmp_path / "m.onnx"), input_names=["image"],
                          opset_version=opset, dynamo=False)
    mod, params = load_onnx(tmp_path / "m.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    got = relay.run(mod, x, *[params[p.name_hint] for p in mod["main"].params[1:]])
    want = ort_session(onnx.load(str(tmp_path / "m.onnx"))).run(None, {"image": x})[0]
    assert _max_rel(got, want) < 1e-4
