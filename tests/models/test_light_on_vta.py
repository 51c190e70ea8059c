"""The nine light models of the onnx package (seeded random weights) on VTA: quantised, compiled
for the default configuration and run on the functional simulator. The int8 result is the Relay
interpreter's run of the integer program bit for bit; the float model matches onnxruntime; the
int8 result agrees with float.

CI runs a part of each on a small image: the convolutional part (every conv, LRN and pool layer)
of AlexNet, ZFNet-512 and VGG-19; the trunk before the final pool of ResNet-50, SqueezeNet,
ShuffleNet (at 224x224: its channel shuffles reshape to fixed sizes) and Inception v1 and v2;
DenseNet-121's first layers in tests/models/test_densenet_on_vta.py. The whole models at 224x224
run with ``VTA_FULL_MODELS=1`` (marker ``models``, minutes each)."""
import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("compiler.compile")

import onnx  # noqa: E402

import relay  # noqa: E402
from compiler.compile import compile_module  # noqa: E402
from compiler.runtime import execute  # noqa: E402
from relay.frontend import from_onnx  # noqa: E402
from relay.frontend.common import relay_name  # noqa: E402
from relay.frontend.onnx_zoo import (LIGHT_MODELS, data_input, features, light_path, ort_session, randomize,  # noqa: E402
                                     subgraph, with_logits)
from relay.quantize import quantize  # noqa: E402

FULL = bool(os.environ.get("VTA_FULL_MODELS"))


def _cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _on_vta(model, samples=2):
    """Import, check against onnxruntime, quantise on ``samples`` seeded inputs, compile and run
    the first on the functional simulator: (VTA outputs, interpreter int8 outputs, onnxruntime
    float outputs, compiled model)."""
    mod, params = from_onnx(model)
    inp = mod["main"].params[0]
    shape = tuple(inp.type_annotation.shape)
    x = np.random.default_rng(3).standard_normal((samples,) + shape).astype("float32")
    sess = ort_session(model)
    want = sess.run(None, {sess.get_inputs()[0].name: x[0]})
    got = relay.run(mod, x[0], *[params[p.name_hint] for p in mod["main"].params[1:]])
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        assert np.max(np.abs(g - w)) <= 1e-4 * np.max(np.abs(w))
    q = quantize(mod, params, {inp.name_hint: x})
    compiled = compile_module(q.mod, None, "default")
    outs, _, _ = execute(compiled, {inp.name_hint: x[0]}, "functional")
    ref = relay.run(q.mod, x[0])
    return outs, (ref if isinstance(ref, tuple) else (ref,)), want, compiled, q


@pytest.mark.parametrize("name,side", [("bvlc_alexnet", 99), ("zfnet512", 99), ("vgg19", 32)])
def test_convolutional_part_on_vta(name, side):
    model = randomize(features(onnx.load(light_path(name)), side), seed=1)
    outs, ref, want, compiled, q = _on_vta(model)
    np.testing.assert_array_equal(outs[0], ref[0])
    assert compiled.vta_macs == compiled.macs > 0
    # Only LRN stays on the CPU (docs/models.md says why); every pool runs on VTA.
    assert set(q.report.float_ops) <= {"nn.lrn"}
    assert ("nn.lrn" in q.report.float_ops) == (name != "vgg19")
    assert _cosine(outs[0], want[0]) > 0.99


@pytest.mark.parametrize("name,side", [("resnet50", 64), ("squeezenet", 64), ("shufflenet", 224),
                                       ("inception_v1", 64), ("inception_v2", 64)])
def test_trunk_on_vta(name, side):
    """Everything before the final pool: all the convolutions, the residual adds, the
    concatenations, the inner pools."""
    full = onnx.load(light_path(name))
    last_pool = [n for n in full.graph.node if n.op_type in ("AveragePool", "GlobalAveragePool")][-1]
    model = randomize(subgraph(full, {data_input(full): (1, 3, side, side)}, last_pool.input[0]), seed=1)
    outs, ref, want, compiled, q = _on_vta(model)
    np.testing.assert_array_equal(outs[0], ref[0])
    assert compiled.vta_macs == compiled.macs > 0
    assert set(q.report.float_ops) == ({"nn.lrn"} if name == "inception_v1" else set())
    assert _cosine(outs[0], want[0]) > 0.99


@pytest.mark.models
@pytest.mark.skipif(not FULL, reason="whole 224x224 models take minutes: VTA_FULL_MODELS=1")
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_whole_model_on_vta(name):
    model = with_logits(randomize(onnx.load(light_path(name)), seed=1))
    outs, ref, want, compiled, q = _on_vta(model)
    # The logits (the last output) are dequantised int8: exactly the interpreter's. A softmax
    # after them (not in DenseNet-121's file) is float on the CPU (LLVM's exp against numpy's):
    # equal within float rounding.
    np.testing.assert_array_equal(outs[-1], ref[-1])
    if len(outs) == 2:
        np.testing.assert_allclose(outs[0], ref[0], rtol=1e-5, atol=1e-7)
    assert compiled.vta_macs == compiled.macs
    assert _cosine(outs[-1], want[-1]) > 0.99
    assert int(np.argmax(want[-1])) in np.argsort(-outs[-1].ravel())[:5]
