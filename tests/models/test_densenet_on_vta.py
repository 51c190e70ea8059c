"""DenseNet's batch norm after a concatenation (no convolution before it to fold into) runs on
VTA: the quantiser turns a per-channel affine step on int8 data into a depthwise 1x1 convolution
(int8 scales with one exponent per channel, the shift as its bias) whose accumulator takes the
ReLU and a per-channel rounding shift."""
import warnings

import numpy as np
import pytest

import relay
from relay.analysis import post_order
from relay.ir import Call, Constant, Op, Tuple, op_call
from relay.quantize import quantize

torch = pytest.importorskip("torch")
pytest.importorskip("compiler.compile")

from compiler.compile import compile_module  # noqa: E402
from compiler.runtime import execute  # noqa: E402
from relay.frontend import from_pytorch, torch_models  # noqa: E402


def _calls(mod, name):
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)
            and n.op.name == name]


def _affine_program(scale, shift, shape=(1, 32, 4, 4)):
    """relu(concatenate(conv(a), conv(b)) * scale + shift) in float, scale and shift per channel
    (1x1 convolutions make the concatenated tensors int8, as in a network); and a numpy function
    computing the concatenation."""
    c = shape[1] // 2
    half = (shape[0], c) + shape[2:]
    rng = np.random.default_rng(1)
    a, b = (relay.Var(n, relay.TensorType(half, "float32")) for n in "ab")
    ws = [rng.standard_normal((c, c, 1, 1)).astype("float32") / 4 for _ in "ab"]
    y = op_call("concatenate", Tuple(tuple(op_call("nn.conv2d", v, Constant(w)) for v, w in zip((a, b), ws))), axis=1)
    y = op_call("multiply", y, Constant(scale.reshape(-1, 1, 1).astype("float32")))
    y = op_call("nn.relu", op_call("add", y, Constant(shift.reshape(-1, 1, 1).astype("float32"))))

    def concat(xa, xb):
        return np.concatenate([np.einsum("oi,nihw->nohw", w[:, :, 0, 0], v) for w, v in zip(ws, (xa, xb))], axis=1)
    return relay.IRModule({"main": relay.Function([a, b], y)}), concat


def test_affine_after_concatenate_becomes_a_depthwise_convolution():
    rng = np.random.default_rng(0)
    scale = np.exp2(rng.uniform(-6, 3, 32)) * rng.choice([-1, 1], 32)   # 9 octaves apart
    shift = rng.standard_normal(32)
    mod, concat = _affine_program(scale, shift)
    cal = {k: rng.standard_normal((8, 1, 16, 4, 4)).astype("float32") for k in ("a", "b")}
    q = quantize(mod, None, cal)
    assert q.report.float_ops == ()
    (conv,) = [c for c in _calls(q.mod, "nn.conv2d") if c.attrs.get("groups", 1) > 1]
    assert conv.attrs["groups"] == 32 and conv.args[0].checked_type.dtype == "int8"
    assert conv.args[1].data.dtype == np.int8 and conv.args[1].data.shape == (32, 1, 1, 1)
    # One exponent per channel: every scale keeps its 7 bits however small it is.
    assert np.all(np.abs(conv.args[1].data) >= 64)
    # Error bound per channel, from the power-of-two grids of the concatenation and of the output
    # (largest magnitudes on the calibration data): the concatenation's rounding times the
    # channel's scale, the scale's own rounding (2^-7 relative), the output's rounding.
    cats = [concat(cal["a"][i], cal["b"][i]) for i in range(8)]
    outs = [np.maximum(c * scale.reshape(-1, 1, 1) + shift.reshape(-1, 1, 1), 0) for c in cats]
    step_cat = 2.0 ** np.ceil(np.log2(max(np.abs(c).max() for c in cats) / 127))
    step_out = 2.0 ** np.ceil(np.log2(max(o.max() for o in outs) / 127))
    bound = 0.5 * step_cat * np.abs(scale) + 127 * step_cat * np.abs(scale) / 128 + step_out
    for i in range(8):
        got = relay.run(q.mod, cal["a"][i], cal["b"][i])
        assert np.all(np.abs(got - outs[i]) <= bound.reshape(1, -1, 1, 1))


def test_small_densenet_runs_entirely_on_vta():
    model = torch_models.densenet(num_classes=10, growth=16, blocks=(2, 2), init_features=32)
    shape = (1, 3, 32, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, (torch.zeros(shape),))
    mod, params = from_pytorch(program, name="densenet")
    cal = {"x": np.random.default_rng(0).standard_normal((4,) + shape).astype("float32")}
    q = quantize(mod, params, cal)
    assert q.report.float_ops == () and q.report.cosine_min > 0.99
    compiled = compile_module(q.mod, None, "default")
    vta = [s.op.describe() for s in compiled.segments if s.target == "vta"]
    # Stem, 4 dense layers of 2 convolutions each, a transition, the classifier; 4 batch norms
    # after concatenations, the one of the transition and the final one; max, avg and global pool.
    assert sum("groups=" in d for d in vta) == 6
    assert sum(d.startswith("conv2d") or d.startswith("dense") for d in vta) == 1 + 8 + 1 + 1 + 6
    assert sum("pool" in d for d in vta) == 3
    assert compiled.vta_macs == compiled.macs
    cpu_ops = {n.op.name for s in compiled.segments if s.target == "cpu" and s.kind == "relay"
               for n in post_order(s.function.body) if isinstance(n, Call) and isinstance(n.op, Op)}
    assert not cpu_ops & {"nn.conv2d", "nn.dense", "nn.relu", "nn.avg_pool2d", "nn.max_pool2d",
                          "nn.global_avg_pool2d"}
    x = cal["x"][1]
    outputs, _, _ = execute(compiled, {"x": x}, "functional")
    np.testing.assert_array_equal(outputs[0], relay.run(q.mod, x))
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert float(np.dot(outputs[0].ravel(), want.ravel()) / np.linalg.norm(outputs[0]) / np.linalg.norm(want)) > 0.99


def test_per_channel_shift_tail_on_vta():
    """A convolution requantised by a per-channel rounding shift (``right_shift`` by a constant
    vector) is one VTA operator; its result is numpy's."""
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 32, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, (32, 32, 1, 1)).astype(np.int8)
    s = rng.integers(0, 12, 32).astype(np.int32)
    half = np.where(s > 0, 1 << np.maximum(s - 1, 0), 0).astype(np.int32)
    data = relay.Var("x", relay.TensorType(x.shape, "int8"))
    y = op_call("nn.conv2d", data, Constant(w), out_dtype="int32")
    y = op_call("right_shift", op_call("add", y, Constant(half.reshape(-1, 1, 1))), Constant(s.reshape(-1, 1, 1)))
    y = op_call("cast", op_call("clip", y, a_min=-128.0, a_max=127.0), dtype="int8")
    mod = relay.IRModule({"main": relay.Function([data], y)})
    compiled = compile_module(mod, None, "default")
    (seg,) = [g for g in compiled.segments if g.target == "vta"]
    assert "SHR const" in seg.op.describe()
    acc = np.einsum("oi,nihw->nohw", w[:, :, 0, 0].astype(np.int64), x.astype(np.int64))
    want = np.clip((acc + half.reshape(1, -1, 1, 1)) >> s.reshape(1, -1, 1, 1), -128, 127).astype(np.int8)
    outputs, _, _ = execute(compiled, {"x": x}, "functional")
    np.testing.assert_array_equal(outputs[0], want)


def test_channel_scales_32_octaves_apart_quantise_and_run_on_vta():
    """DenseNet-121's merged batch norms (Mul, Add, Mul, Add in one scale) give channels scaled
    2^-32 below the largest. Their own exponents would need requantisation shifts beyond 31 bits
    (a QuantizeError; before that check, a rounding constant wrapped in int32 and the CPU's shift
    by 35 bits was LLVM's poison). They share a grid 2^-14 below the largest: the integer
    program stays within the error bound, and VTA + CPU give the interpreter's result."""
    rng = np.random.default_rng(5)
    scale = np.exp2(rng.uniform(-6, 3, 32)) * rng.choice([-1, 1], 32)
    scale[:6] = np.exp2([-26.0, -29.5, -31.0, -33.0, -35.0, -40.0])
    shift = rng.standard_normal(32)
    mod, concat = _affine_program(scale, shift)
    cal = {k: rng.standard_normal((4, 1, 16, 4, 4)).astype("float32") for k in ("a", "b")}
    q = quantize(mod, None, cal)
    (conv,) = [c for c in _calls(q.mod, "nn.conv2d") if c.attrs.get("groups", 1) > 1]
    assert np.all(np.abs(conv.args[1].data[6:]) >= 64)       # the others keep their 7 bits
    cats = [concat(cal["a"][i], cal["b"][i]) for i in range(4)]
    outs = [np.maximum(c * scale.reshape(-1, 1, 1) + shift.reshape(-1, 1, 1), 0) for c in cats]
    step_cat = 2.0 ** np.ceil(np.log2(max(np.abs(c).max() for c in cats) / 127))
    step_out = 2.0 ** np.ceil(np.log2(max(o.max() for o in outs) / 127))
    coarse = 2.0 ** (np.ceil(np.log2(np.abs(scale).max() / 127)) - 14)    # the shared grid
    bound = 0.5 * step_cat * np.abs(scale) + 127 * step_cat * np.maximum(np.abs(scale) / 128, coarse) + step_out
    compiled = compile_module(q.mod, None, "default")
    for i in range(2):
        got = relay.run(q.mod, cal["a"][i], cal["b"][i])
        assert np.all(np.abs(got - outs[i]) <= bound.reshape(1, -1, 1, 1))
        vta, _, _ = execute(compiled, {"a": cal["a"][i], "b": cal["b"][i]}, "functional")
        np.testing.assert_array_equal(vta[0], got)


def test_onnx_densenet121_first_layers_on_vta():
    """DenseNet-121 as the onnx package ships it (seeded random weights as in the whole-model
    run), from the image to the ReLU after the second concatenation's batch norm, on a 32x32
    image. Each batch norm there is a Mul, Add, Mul, Add chain, merged into one depthwise
    convolution; the first (64 channels after the max pool) has scales 2^-32 apart. VTA + CPU
    give the interpreter's int8 result; the result agrees with onnxruntime."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from relay.frontend import from_onnx
    from relay.frontend.onnx_zoo import light_path, ort_session, randomize, subgraph
    model = randomize(subgraph(onnx.load(light_path("densenet121")), {"data_0": (1, 3, 32, 32)}, "r43"),
                      seed=1)
    mod, params = from_onnx(model)
    x = np.random.default_rng(3).standard_normal((2, 1, 3, 32, 32)).astype("float32")
    q = quantize(mod, params, {"data_0": x})
    # Stem, 2 layers of 2 convolutions; the 6 batch norms after them fold into them, the 3 after
    # the max pool and the concatenations become one depthwise convolution each (two unmerged).
    assert len([c for c in _calls(q.mod, "nn.conv2d") if c.attrs.get("groups", 1) > 1]) == 3
    compiled = compile_module(q.mod, None, "default")
    assert compiled.vta_macs == compiled.macs
    outs, _, _ = execute(compiled, {"data_0": x[0]}, "functional")
    np.testing.assert_array_equal(outs[0], relay.run(q.mod, x[0]))
    sess = ort_session(model)
    (want,) = sess.run(None, {"data_0": x[0]})
    assert float(np.dot(outs[0].ravel(), want.ravel()) / np.linalg.norm(outs[0]) / np.linalg.norm(want)) > 0.99
