"""Each ONNX operator the frontend converts, on small random graphs, against onnxruntime."""
import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import relay  # noqa: E402
from relay.frontend import FrontendError, UnsupportedOperator, from_onnx  # noqa: E402
from relay.frontend.onnx import SUPPORTED_OPS  # noqa: E402
from relay.frontend.onnx_zoo import ort_session  # noqa: E402

_ELEM = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int64"): TensorProto.INT64,
         np.dtype("int8"): TensorProto.INT8, np.dtype("uint8"): TensorProto.UINT8,
         np.dtype("int32"): TensorProto.INT32}


def make_model(nodes, inputs, inits=None, outputs=("y",), opset=17):
    inits = inits or {}
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, _ELEM[v.dtype], v.shape) for k, v in inputs.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(nodes, inputs, inits=None, outputs=("y",), opset=17, rtol=1e-5):
    """Import, run in the interpreter, compare with onnxruntime; returns the module."""
    model = make_model(nodes, inputs, inits, outputs, opset)
    mod, params = from_onnx(model, name="t")
    args = [inputs[p.name_hint] if p.name_hint in inputs else params[p.name_hint] for p in mod["main"].params]
    got = relay.run(mod, *args)
    got = got if isinstance(got, tuple) else (got,)
    # What `vta import` writes reads back as the same program.
    again = relay.run(relay.parse(mod.astext()), *args)
    for g, a in zip(got, again if isinstance(again, tuple) else (again,)):
        np.testing.assert_array_equal(g, a)
    want = ort_session(model).run(None, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, float(np.abs(w).max())))
        else:
            np.testing.assert_array_equal(g, w)
    return mod


RNG = np.random.default_rng(0)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype("float32")


X = {"x": rand(2, 4, 9, 9)}


@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 2, 1]),
    dict(kernel_shape=[3, 3], dilations=[2, 2]),
    dict(kernel_shape=[3, 3], group=2),
    dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(kernel_shape=[2, 2], auto_pad="SAME_LOWER"),
    dict(kernel_shape=[3, 3], auto_pad="VALID"),
])
def test_conv(attrs):
    k = attrs["kernel_shape"]
    w = rand(6, 4 // attrs.get("group", 1), *k)
    check([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], X, {"w": w, "b": rand(6)})


def test_conv_transpose():
    pytest.importorskip("relay.op.nn")
    from relay.op import list_ops
    if "nn.conv2d_transpose" not in list_ops():
        pytest.skip("nn.conv2d_transpose is added by the compiler branch")
    for attrs in (dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), dict(group=2)):
        check([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], **attrs)], X,
              {"w": rand(4, 3, 3, 3), "b": rand(3 * attrs.get("group", 1))})


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 3], dilations=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[2, 2], auto_pad="SAME_UPPER")),
    ("GlobalAveragePool", {}), ("GlobalMaxPool", {}),
])
def test_pool(op, attrs):
    check([helper.make_node(op, ["x"], ["y"], **attrs)], X)


@pytest.mark.parametrize("op,attrs", [
    ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("Exp", {}), ("Neg", {}), ("Abs", {}), ("Floor", {}),
    ("Ceil", {}), ("Identity", {}), ("LeakyRelu", dict(alpha=0.2)), ("LeakyRelu", {}),
    ("Softmax", dict(axis=1)), ("LogSoftmax", {}), ("Flatten", {}), ("Flatten", dict(axis=2)),
    ("Transpose", dict(perm=[0, 2, 3, 1])), ("Transpose", {}),
    ("LRN", dict(size=3, alpha=1e-3, beta=0.75, bias=2.0)), ("LRN", dict(size=5)),
    ("ReduceMean", dict(axes=[2, 3])), ("ReduceMean", dict(axes=[1], keepdims=0)),
    ("ReduceMax", dict(axes=[-1])), ("Dropout", {}),
])
def test_unary(op, attrs):
    check([helper.make_node(op, ["x"], ["y"], **attrs)], X)


@pytest.mark.parametrize("op", ["Sqrt", "Log", "Reciprocal"])
def test_positive_unary(op):
    check([helper.make_node(op, ["x"], ["y"])], {"x": np.abs(rand(3, 5)) + 0.5})


@pytest.mark.parametrize("opset", [9, 13])
def test_softmax_opset_semantics(opset):
    """Before opset 13, Softmax normalises over all axes from ``axis`` on."""
    check([helper.make_node("Softmax", ["x"], ["y"], axis=1)], X, opset=opset)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow"])
def test_binary_broadcast(op):
    inputs = {"x": np.abs(rand(2, 4, 3, 3)) + 0.5, "z": rand(4, 1, 1)}
    check([helper.make_node(op, ["x", "z"], ["y"])], inputs)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic(op):
    check([helper.make_node(op, ["a", "b", "c"], ["y"])], {"a": rand(2, 3), "b": rand(2, 3), "c": rand(3)})


@pytest.mark.parametrize("opset", [9, 13])
def test_clip(opset):
    if opset < 11:
        node = helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.7)
        check([node], X, opset=opset)
    else:
        check([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], X,
              {"lo": np.array(-0.5, "float32"), "hi": np.array(0.7, "float32")}, opset=opset)
        check([helper.make_node("Clip", ["x", "", "hi"], ["y"])], X, {"hi": np.array(0.7, "float32")}, opset=opset)


@pytest.mark.parametrize("attrs", [{}, dict(transA=1), dict(transB=1, alpha=0.5, beta=2.0)])
def test_gemm(attrs):
    a = rand(5, 3) if attrs.get("transA") else rand(3, 5)
    b = rand(4, 5) if attrs.get("transB") else rand(5, 4)
    check([helper.make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)], {"a": a}, {"b": b, "c": rand(4)})


def test_gemm_runtime_operands_and_matrix_bias():
    check([helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1)],
          {"a": rand(3, 5), "b": rand(4, 5)}, {"c": rand(3, 4)})


def test_matmul():
    check([helper.make_node("MatMul", ["a", "w"], ["y"])], {"a": rand(2, 3, 5)}, {"w": rand(5, 4)})
    check([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": rand(2, 3, 5), "b": rand(5, 4)})
    check([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": rand(2, 1, 3, 5), "b": rand(4, 5, 2)})


def test_batch_norm():
    inits = {"s": rand(4), "b": rand(4), "m": rand(4), "v": np.abs(rand(4)) + 0.5}
    check([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)], X, inits)


@pytest.mark.parametrize("shape,allowzero", [([0, -1], 0), ([2, 4, 81], 0), ([-1], 0), ([2, 0, 9, 9], 0)])
def test_reshape(shape, allowzero):
    check([helper.make_node("Reshape", ["x", "s"], ["y"])], X, {"s": np.array(shape, "int64")})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    x = {"x": rand(2, 1, 3)}
    if opset < 13:
        nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, -1]),
                 helper.make_node("Squeeze", ["u"], ["y"], axes=[0, 2])]
        check(nodes, x, opset=opset)
    else:
        nodes = [helper.make_node("Unsqueeze", ["x", "a"], ["u"]), helper.make_node("Squeeze", ["u", "c"], ["y"])]
        check(nodes, x, {"a": np.array([0, -1], "int64"), "c": np.array([0, 2], "int64")}, opset=opset)
    check([helper.make_node("Squeeze", ["x"], ["y"])], x, opset=opset)


def test_concat_and_split():
    nodes = [helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
             helper.make_node("Split", ["c", "s"], ["y", "z"], axis=1)]
    check(nodes, {"a": rand(2, 3, 4), "b": rand(2, 5, 4)}, {"s": np.array([6, 2], "int64")}, outputs=("y", "z"))


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], [1], [1]), ([0, 2], [-1, 100], [2, 3], [2, 3]), ([-1], [-100], [3], [-2]), ([1], [9], None, None)])
def test_slice(starts, ends, axes, steps):
    inits = {"st": np.array(starts, "int64"), "en": np.array(ends, "int64")}
    names = ["x", "st", "en"]
    if axes is not None:
        inits["ax"], inits["sp"] = np.array(axes, "int64"), np.array(steps, "int64")
        names += ["ax", "sp"]
    check([helper.make_node("Slice", names, ["y"])], X, inits)


def test_slice_opset9_attributes():
    check([helper.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, -2], axes=[1, 3])], X, opset=9)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    inits = {"p": np.array([0, 0, 1, 2, 0, 1, 2, 0], "int64"), "v": np.array(1.5, "float32")}
    check([helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)], X, inits)
    check([helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 1, 2, 0], value=0.5)], X, opset=9)


@pytest.mark.parametrize("coord,nearest", [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"),
                                           ("align_corners", "round_prefer_ceil"),
                                           ("pytorch_half_pixel", "ceil")])
def test_resize_nearest(coord, nearest):
    inits = {"r": np.array([], "float32"), "s": np.array([1, 1, 2, 1.5], "float32")}
    check([helper.make_node("Resize", ["x", "r", "s"], ["y"], mode="nearest",
                            coordinate_transformation_mode=coord, nearest_mode=nearest)], X, inits)
    inits = {"r": np.array([], "float32"), "s": np.array([], "float32"), "z": np.array([2, 4, 5, 13], "int64")}
    check([helper.make_node("Resize", ["x", "r", "s", "z"], ["y"], mode="nearest",
                            coordinate_transformation_mode=coord, nearest_mode=nearest)], X, inits)


def test_upsample_opset9():
    check([helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")], X,
          {"s": np.array([1, 1, 2, 3], "float32")}, opset=9)


def test_shape_gather_constant_folding():
    """The flatten idiom of exported models: Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
    all folded at import time into one reshape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "a"], ["n1"]),
             helper.make_node("Concat", ["n1", "m"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    mod = check(nodes, X, {"i": np.array(0, "int64"), "a": np.array([0], "int64"), "m": np.array([-1], "int64")})
    text = mod.astext()
    assert text.count("reshape(") == 1 and "take" not in text and len(mod["main"].params) == 1


def test_gather_runtime_data():
    check([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], X, {"i": np.array([[3, 0], [1, -1]], "int64")})


def test_constants_and_cast():
    nodes = [helper.make_node("ConstantOfShape", ["sh"], ["c"], value=numpy_helper.from_array(np.array([0.5], "float32"))),
             helper.make_node("Constant", [], ["k"], value_float=2.0),
             helper.make_node("Mul", ["c", "k"], ["ck"]),
             helper.make_node("Add", ["x", "ck"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.INT32)]
    check(nodes, {"x": rand(9) * 4}, {"sh": np.array([9], "int64")})


@pytest.mark.parametrize("axis,dtype", [(None, "uint8"), (1, "int8")])
def test_quantize_dequantize(axis, dtype):
    per = axis is not None
    scale = (np.abs(rand(4)) * 0.05 + 0.01) if per else np.array(0.02, "float32")
    zp = (np.arange(4) - 2).astype(dtype) if per else np.array(128, dtype)
    kw = {} if axis is None else dict(axis=axis)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **kw),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **kw)]
    check(nodes, X, {"s": scale.astype("float32"), "z": zp}, outputs=("q", "y"))


@pytest.mark.parametrize("opset", sorted({9, 11, 13, 18, 21, 26, onnx.defs.onnx_opset_version()}))
def test_small_cnn_at_every_opset(opset):
    """The same network written at opsets from 9 to the newest the onnx package knows
    (``onnx_opset_version()``, 28 with onnx 1.23; onnxruntime runs it)."""
    inits = {"w": rand(6, 4, 3, 3, scale=0.3), "b": rand(6), "s": np.abs(rand(6)) + 0.5, "o": rand(6),
             "m": rand(6), "v": np.abs(rand(6)) + 0.5, "fw": rand(10, 6 * 4 * 4, scale=0.1), "fb": rand(10)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], transB=1),
             helper.make_node("Softmax", ["g"], ["y"], axis=1)]
    check(nodes, {"x": rand(2, 4, 8, 8)}, inits, opset=opset)


def test_quantize_linear_output_dtype_without_zero_point():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TensorProto.INT8)]
    check(nodes, X, {"s": np.array(0.05, "float32")}, opset=21)


# ---------------------------------------------------------------- errors, before any work


def test_unsupported_operator_is_named_with_node_and_model():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node("Hardmax", ["r"], ["y"], name="hm")]
    with pytest.raises(UnsupportedOperator) as e:
        from_onnx(make_model(nodes, X), name="mynet")
    assert str(e.value) == "operator Hardmax (node 1 'hm' (Hardmax) of model 'mynet') is not supported"


def test_unsupported_attribute_value_is_named():
    nodes = [helper.make_node("Resize", ["x", "r", "s"], ["y"], mode="linear")]
    with pytest.raises(UnsupportedOperator, match=r"attribute mode of operator Resize \(node 0 \(Resize, "
                                                  r"output 'y'\) of model 'm'\): 'linear' is not supported"):
        from_onnx(make_model(nodes, X), name="m")


def test_unknown_attribute_and_domain():
    with pytest.raises(UnsupportedOperator, match="attribute 'foo' of operator Relu"):
        from_onnx(make_model([helper.make_node("Relu", ["x"], ["y"], foo=1)], X), name="m")
    with pytest.raises(UnsupportedOperator, match="operator com.microsoft.Gelu"):
        from_onnx(make_model([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")], X), name="m")


def test_unsupported_checked_before_any_conversion(monkeypatch):
    """The error comes from the up-front check: no converter ran."""
    import relay.frontend.onnx as fo
    calls = []
    monkeypatch.setitem(fo._TABLE, "Relu", fo._Spec(lambda *a: calls.append(a) or [a[3]]))
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Hardmax", ["r"], ["y"])]
    with pytest.raises(UnsupportedOperator):
        from_onnx(make_model(nodes, X), name="m")
    assert calls == []


def test_old_opset_and_symbolic_input_shape():
    with pytest.raises(UnsupportedOperator, match="opset 8"):
        from_onnx(make_model([helper.make_node("Relu", ["x"], ["y"])], X, opset=8), name="m")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(FrontendError, match="symbolic dimension 'N'"):
        from_onnx(model)
    mod, _ = from_onnx(model, shapes={"x": (2, 3)})
    assert str(mod["main"].params[0].type_annotation) == "Tensor[(2, 3), float32]"


def test_runtime_shape_is_unsupported_and_named_with_the_node():
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="r")]
    with pytest.raises(UnsupportedOperator, match=r"node 0 'r' \(Reshape\) of model 'm': the target shape must "
                                                  "be known at import time"):
        from_onnx(make_model(nodes, {"x": rand(2, 3), "s": np.array([3, 2], "int64")}), name="m")


def test_invalid_model_is_not_called_unsupported():
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="r")]
    with pytest.raises(FrontendError, match=r"cannot reshape \[2, 3\] to \[4, 2\]") as e:
        from_onnx(make_model(nodes, {"x": rand(2, 3)}, {"s": np.array([4, 2], "int64")}), name="m")
    assert not isinstance(e.value, UnsupportedOperator)


def test_every_operator_of_the_issue_is_supported():
    issue = {"Conv", "BatchNormalization", "Relu", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "Sum",
             "Concat", "Reshape", "Transpose", "Unsqueeze", "LRN", "Dropout", "Softmax", "ConstantOfShape",
             "MatMul", "Add", "Mul", "Sub", "Div", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "Pad", "Flatten",
             "Squeeze", "Slice", "ConvTranspose", "Resize", "ReduceMean", "QuantizeLinear", "DequantizeLinear",
             "Identity"}
    assert issue <= set(SUPPORTED_OPS)

