"""Every operator: its type relation (success and failure) and its numpy kernel against an
independent formula."""
import itertools
import math

import numpy as np
import pytest

import relay
from relay import ANY, TensorType as T, TupleType
from relay.ir import Attrs, Call, Op, Tuple, Var
from relay.op import OpPattern, get_op, list_ops
from relay.typecheck import RelayTypeError, infer_expr

RNG = np.random.default_rng(42)


def rand(shape, dtype="float32", lo=-2, hi=2):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(lo, hi + 1, size=shape).astype(dtype)
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def run_op(name, args, **attrs):
    """Type-check and evaluate ``name(args, attrs)``; return (checked type, value)."""
    vs = []
    for i, a in enumerate(args):
        if isinstance(a, tuple):
            vs.append(Tuple([Var(f"t{i}_{j}", T(x.shape, str(x.dtype))) for j, x in enumerate(a)]))
        else:
            vs.append(Var(f"a{i}", T(a.shape, str(a.dtype))))
    call = Call(Op(name), vs, Attrs(attrs))
    params = [f for v in vs for f in (v.fields if isinstance(v, Tuple) else [v])]
    values = [x for a in args for x in (a if isinstance(a, tuple) else [a])]
    mod = relay.IRModule({"main": relay.Function(params, call)})
    t = relay.check_module(mod).global_types["main"].ret_type
    out = relay.run(mod, *values)
    return t, out


def _close(out, expected):
    """Integers exactly; floats to 1e-5 of the result's scale. A float32 reduction rounds in an
    order that BLAS picks at run time (threads), so a small entry of a result whose other
    entries are large carries an absolute error of about eps x terms x scale, not of itself."""
    expected = np.asarray(expected)
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(out, expected)
        return
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5 * scale)


def check(name, args, expected, **attrs):
    t, out = run_op(name, args, **attrs)
    if isinstance(expected, tuple):
        assert isinstance(t, TupleType)
        for tt, o, e in zip(t.fields, out, expected):
            assert tt == T(e.shape, str(e.dtype)) and o.shape == e.shape
            _close(o, e)
    else:
        expected = np.asarray(expected)
        assert t == T(expected.shape, str(expected.dtype)), (t, expected.shape, expected.dtype)
        assert out.dtype == expected.dtype and out.shape == expected.shape
        _close(out, expected)


COVERED = set()


def covers(*names):
    COVERED.update(names)


# ------------------------------------------------------------------ element-wise

UNARY = {
    "exp": np.exp, "log": lambda x: np.log(np.abs(x) + 1), "sqrt": lambda x: np.sqrt(np.abs(x)),
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "negative": np.negative, "abs": np.abs,
    "floor": np.floor, "ceil": np.ceil, "copy": lambda x: x, "sign": np.sign,
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + 1), "nn.relu": lambda x: np.maximum(x, 0),
    "zeros_like": np.zeros_like, "ones_like": np.ones_like,
}
covers(*UNARY, "round", "logical_not", "clip", "cast", "nn.leaky_relu")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    x = rand((2, 3))
    if name == "log":
        x = np.abs(x) + 1
    if name in ("sqrt",):
        x = np.abs(x)
    if name == "rsqrt":
        x = np.abs(x) + 1
    ref = {"log": np.log, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a)}.get(name, UNARY[name])
    check(name, [x], ref(x).astype("float32"))
    assert get_op(name).pattern == OpPattern.ELEMWISE


def test_round_is_half_away_from_zero():
    check("round", [np.array([0.5, 1.5, -0.5, -2.5, 0.2], "float32")],
          np.array([1, 2, -1, -3, 0], "float32"))


def test_logical_not_clip_leaky_relu():
    b = np.array([True, False])
    check("logical_not", [b], ~b)
    x = rand((4, 5))
    check("clip", [x], np.clip(x, -1, 0.5), a_min=-1.0, a_max=0.5)
    check("nn.leaky_relu", [x], np.where(x > 0, x, 0.1 * x).astype("float32"), alpha=0.1)


def test_cast_relation_and_truncation():
    x = np.array([1.7, -1.7, 3.2], "float32")
    check("cast", [x], np.array([1, -1, 3], "int8"), dtype="int8")
    with pytest.raises(RelayTypeError, match="relation Cast failed: unknown dtype 'int3'"):
        run_op("cast", [x], dtype="int3")


# ------------------------------------------------------------------ broadcasting

BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "power": np.power}
COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
           "greater": np.greater, "greater_equal": np.greater_equal}
covers(*BINARY, *COMPARE, "right_shift", "left_shift", "logical_and", "logical_or", "where")


@pytest.mark.parametrize("name", sorted(BINARY))
def test_broadcast_binary(name):
    a, b = rand((2, 1, 4)), rand((3, 1))
    if name in ("divide", "power"):
        a, b = np.abs(a) + 0.5, np.abs(b) + 0.5
    check(name, [a, b], BINARY[name](a, b).astype("float32"))
    assert get_op(name).pattern == OpPattern.BROADCAST


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_broadcast_compare(name):
    a, b = rand((3, 4), "int32"), rand((4,), "int32")
    check(name, [a, b], COMPARE[name](a, b))


def test_integer_divide_truncates_and_shifts():
    a = np.array([7, -7, 7, -7], "int32")
    b = np.array([2, 2, -2, -2], "int32")
    check("divide", [a, b], np.array([3, -3, -3, 3], "int32"))
    x = np.array([-9, 9, 100], "int32")
    s = np.array([2], "int32")
    check("right_shift", [x, s], np.array([-3, 2, 25], "int32"))
    check("left_shift", [x, s], np.array([-36, 36, 400], "int32"))


def test_logical_and_or_where():
    a, b = rand((3,), "bool"), rand((2, 3), "bool")
    check("logical_and", [a, b], a & b)
    check("logical_or", [a, b], a | b)
    x, y = rand((2, 3)), rand((3,))
    check("where", [b, x, y], np.where(b, x, y))
    with pytest.raises(RelayTypeError, match="condition must be bool"):
        run_op("where", [x, x, y])


def test_broadcast_relation_errors():
    with pytest.raises(RelayTypeError, match=r"relation Broadcast failed: shapes \(2, 3\) and \(4\) are not "
                                             r"broadcast-compatible: dimension -1 is 3 in one and 4 in the other"):
        run_op("add", [rand((2, 3)), rand((4,))])
    with pytest.raises(RelayTypeError, match="operand dtypes differ: float32, int32"):
        run_op("multiply", [rand((2,)), rand((2,), "int32")])


def test_broadcast_with_unknown_dims():
    x = Var("x", T((ANY, 1, 3)))
    y = Var("y", T((4, 1)))
    assert infer_expr(relay.op_call("add", x, y)) == T((ANY, 4, 3))


# ------------------------------------------------------------------ reductions and creation

covers("sum", "mean", "max", "min", "prod", "zeros", "ones", "collapse_sum_like", "broadcast_to_like")


@pytest.mark.parametrize("name,fn", [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min),
                                     ("prod", np.prod)])
def test_reduce(name, fn):
    x = rand((2, 3, 4))
    check(name, [x], fn(x, axis=(1,)), axis=[1])
    check(name, [x], fn(x, axis=(0, 2), keepdims=True), axis=[0, -1], keepdims=True)
    check(name, [x], fn(x, axis=(0, 2)), axis=[1], exclude=True)
    check(name, [x], np.asarray(fn(x), "float32"))
    assert get_op(name).pattern == OpPattern.COMM_REDUCE


def test_reduce_relation_error():
    with pytest.raises(RelayTypeError, match="relation Reduce failed: axis 3 is out of range for a tensor of rank 3"):
        run_op("sum", [rand((2, 3, 4))], axis=[3])


def test_zeros_ones():
    check("zeros", [], np.zeros((2, 3), "int8"), shape=[2, 3], dtype="int8")
    check("ones", [], np.ones((4,), "float32"), shape=[4])


def test_collapse_and_broadcast_like():
    g, like = rand((2, 3, 4)), rand((3, 1))
    check("collapse_sum_like", [g, like], g.sum(axis=0).sum(axis=1, keepdims=True))
    check("broadcast_to_like", [like, g], np.broadcast_to(like, g.shape))


# ------------------------------------------------------------------ nn

covers("nn.conv2d", "nn.dense", "nn.bias_add", "nn.batch_norm", "nn.max_pool2d", "nn.avg_pool2d",
       "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.softmax", "nn.log_softmax", "nn.pad",
       "nn.dropout", "nn.batch_flatten")


def conv_loops(x, w, stride, pad, dil, groups):
    """Direct 7-loop convolution (independent of the kernel under test)."""
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (x.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (x.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for b, oc, i, j in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // og
        acc = 0.0
        for ic, p, q in itertools.product(range(ig), range(kh), range(kw)):
            acc += x[b, g * ig + ic, i * stride[0] + p * dil[0], j * stride[1] + q * dil[1]] * w[oc, ic, p, q]
        out[b, oc, i, j] = acc
    return out


@pytest.mark.parametrize("stride,pad,dil,groups", [
    ((1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 1), (0, 1, 2, 0), (1, 1), 1),
    ((1, 1), (2, 2, 2, 2), (2, 2), 2),
    ((2, 2), (1, 1, 1, 1), (1, 1), 4),
])
def test_conv2d_nchw(stride, pad, dil, groups):
    x = rand((2, 4, 7, 6))
    w = rand((8, 4 // groups, 3, 3))
    ref = conv_loops(x, w, stride, pad, dil, groups).astype("float32")
    check("nn.conv2d", [x, w], ref, strides=stride, padding=pad, dilation=dil, groups=groups,
          channels=8, kernel_size=[3, 3])


def test_conv2d_int8_with_int32_output():
    x = rand((1, 3, 5, 5), "int8", -128, 127)
    w = rand((2, 3, 3, 3), "int8", -128, 127)
    ref = conv_loops(x.astype(np.int64), w.astype(np.int64), (1, 1), (1, 1, 1, 1), (1, 1), 1).astype("int32")
    check("nn.conv2d", [x, w], ref, padding=[1, 1], out_dtype="int32")


def pack(x, bn, bc):
    n, c, h, w = x.shape
    return x.reshape(n // bn, bn, c // bc, bc, h, w).transpose(0, 2, 4, 5, 1, 3)


def test_conv2d_packed_layout_matches_nchw():
    x = rand((2, 32, 6, 6))
    w = rand((16, 32, 3, 3))
    ref = conv_loops(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1).astype("float32")
    xp = pack(x, 2, 16)
    wp = w.reshape(1, 16, 2, 16, 3, 3).transpose(0, 2, 4, 5, 1, 3)   # OIHW16o16i
    check("nn.conv2d", [xp, wp], pack(ref, 2, 16), padding=[1, 1], data_layout="NCHW2n16c",
          kernel_layout="OIHW16o16i")


@pytest.mark.parametrize("dl,kl,ol", [("NHWC", "HWIO", ""), ("NHWC", "OHWI", ""), ("NCHW", "HWOI", "NHWC"),
                                      ("NCHW4c", "OIHW4i4o", ""), ("NHWC", "HWIO", "NCHW")])
def test_conv2d_other_layouts_match_nchw(dl, kl, ol):
    """Every layout TVM's Conv2D relation accepts computes the NCHW/OIHW convolution."""
    from relay.op._common import layout_array_transform
    x, w = rand((1, 8, 5, 6)), rand((4, 8, 3, 3))
    ref = conv_loops(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1).astype("float32")
    check("nn.conv2d", [layout_array_transform(x, "NCHW", dl), layout_array_transform(w, "OIHW", kl)],
          layout_array_transform(ref, "NCHW", ol or dl), padding=[1, 1], data_layout=dl, kernel_layout=kl,
          out_layout=ol)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW4c", "HWCN"])
def test_pools_in_other_layouts_match_nchw(layout):
    from relay.op._common import layout_array_transform
    x = rand((2, 8, 7, 6))
    xl = layout_array_transform(x, "NCHW", layout)
    for op, attrs in [("nn.max_pool2d", dict(pool_size=[3, 3], strides=[2, 2], padding=[1, 1])),
                      ("nn.avg_pool2d", dict(pool_size=[2, 2], ceil_mode=True)),
                      ("nn.global_avg_pool2d", {}), ("nn.global_max_pool2d", {})]:
        _, ref = run_op(op, [x], **attrs)
        check(op, [xl], layout_array_transform(ref, "NCHW", layout), layout=layout, **attrs)
    with pytest.raises(RelayTypeError, match="must have H and W axes, neither split"):
        run_op("nn.max_pool2d", [rand((1, 2, 3, 4, 2))], pool_size=[2, 2], layout="NCHW2h")


def test_take_argmax_broadcast_to_match_numpy():
    x = rand((3, 4))
    idx = np.array([[0, 3], [5, -1]], "int32")
    check("take", [x, idx], np.take(x, idx.astype(np.int64), axis=1, mode="clip"), axis=1)
    check("take", [x, idx], np.take(x.reshape(-1), idx.astype(np.int64), mode="wrap"), mode="wrap")
    check("argmax", [x], np.argmax(x, axis=1).astype("int32"), axis=[1])
    check("argmin", [x], np.argmin(x, axis=0).reshape(1, 4).astype("int32"), axis=[0], keepdims=True)
    check("argmax", [x], np.asarray(np.argmax(x), "int32"))
    ties = np.array([[1, 3, 3]], "float32")
    check("argmax", [ties], np.array([2], "int32"), axis=[1], select_last_index=True)
    b = rand((3, 1))
    check("broadcast_to", [b], np.broadcast_to(b, (2, 3, 5)), shape=[2, 3, 5])
    with pytest.raises(RelayTypeError, match="indices must be integers"):
        run_op("take", [x, rand((2,))])
    with pytest.raises(RelayTypeError, match="not broadcast-compatible"):
        run_op("broadcast_to", [b], shape=[2, 5])


covers("take", "argmax", "argmin", "broadcast_to")


@pytest.mark.parametrize("shape,newshape,out", [
    ((2, 3, 4), [-3, 4], (6, 4)), ((2, 3, 4, 5), [-3, -3], (6, 20)), ((2, 3, 4), [0, -3], (2, 12)),
    ((2, 3, 4), [-4, 1, 2, -2], (1, 2, 3, 4)), ((2, 3, 4), [2, -4, -1, 3, -2], (2, 1, 3, 4)),
    ((6, 4), [-4, 2, -1, 0], (2, 3, 4)), ((2, 3, 4), [-2, 1, 1], (2, 3, 4, 1, 1))])
def test_reshape_special_values(shape, newshape, out):
    x = rand(shape)
    check("reshape", [x], x.reshape(out), newshape=newshape)


def test_conv2d_transpose_relation_checks_its_attributes_like_conv2d():
    x, w = rand((1, 4, 5, 5)), rand((4, 3, 3, 3))       # IOHW: 3 output channels per group
    with pytest.raises(RelayTypeError, match=r"relation Conv2DTranspose failed: attribute "
                                             r"kernel_size=\[2, 2\] but weight kernel is \(3, 3\)"):
        run_op("nn.conv2d_transpose", [x, w], kernel_size=[2, 2])
    with pytest.raises(RelayTypeError, match="attribute channels=3 but weight gives 6 output "
                                             "channels"):
        run_op("nn.conv2d_transpose", [x, w], channels=3, groups=2)


def test_conv2d_relation_errors():
    x, w = rand((1, 3, 8, 8)), rand((4, 3, 3, 3))
    with pytest.raises(RelayTypeError, match=r"relation Conv2D failed: attribute kernel_size=\[5, 5\] but weight kernel is \(3, 3\)"):
        run_op("nn.conv2d", [x, w], kernel_size=[5, 5])
    with pytest.raises(RelayTypeError, match="attribute channels=8 but weight has 4 output channels"):
        run_op("nn.conv2d", [x, w], channels=8)
    with pytest.raises(RelayTypeError, match="data has 8 input channels but weight expects 3"):
        run_op("nn.conv2d", [x, w], data_layout="NHWC")
    with pytest.raises(RelayTypeError, match="conv2d supports kernel layouts convertible from OIHW; got 'OIHWX'"):
        run_op("nn.conv2d", [x, w], kernel_layout="OIHWX")
    with pytest.raises(RelayTypeError, match="window of extent 3 does not fit an input of size 2"):
        run_op("nn.conv2d", [rand((1, 3, 2, 2)), w])
    # as TVM's Conv2DRel: mixed dtypes are accepted, the output has the data's dtype
    assert run_op("nn.conv2d", [x.astype("int8"), w])[0] == T((1, 4, 6, 6), "int8")


def test_dense_and_bias_add():
    x, w, b = rand((2, 5, 3)), rand((4, 3)), rand((4,))
    check("nn.dense", [x, w], np.einsum("abk,uk->abu", x, w), units=4)
    xi, wi = rand((2, 3), "int8", -100, 100), rand((4, 3), "int8", -100, 100)
    check("nn.dense", [xi, wi], xi.astype("int32") @ wi.astype("int32").T, out_dtype="int32")
    with pytest.raises(RelayTypeError, match=r"relation Dense failed: data has 3 input features but weight \(4, 2\) expects 2"):
        run_op("nn.dense", [x, rand((4, 2))])
    y = rand((2, 4, 3, 3))
    check("nn.bias_add", [y, b], y + b[None, :, None, None])
    with pytest.raises(RelayTypeError, match=r"relation BiasAdd failed: bias must have shape \(4,\)"):
        run_op("nn.bias_add", [y, rand((3,))])


def test_bias_add_axis():
    x, b = rand((2, 5, 3)), rand((3,))
    check("nn.bias_add", [x, b], x + b, axis=-1)


def test_batch_norm():
    x = rand((2, 3, 4, 4))
    g, be, m, var = rand((3,)), rand((3,)), rand((3,)), np.abs(rand((3,))) + 0.5
    s = (slice(None),) + (None,) * 2
    ref = (x - m[s]) / np.sqrt(var[s] + 1e-3) * g[s] + be[s]
    check("nn.batch_norm", [x, g, be, m, var], (ref.astype("float32"), m, var), epsilon=1e-3)
    ref2 = (x - m[s]) / np.sqrt(var[s] + 1e-5)
    check("nn.batch_norm", [x, g, be, m, var], (ref2.astype("float32"), m, var), center=False, scale=False)
    with pytest.raises(RelayTypeError, match=r"relation BatchNorm failed: moving_var must have shape \(3,\)"):
        run_op("nn.batch_norm", [x, g, be, m, rand((4,))])


def pool_loops(x, k, s, p, kind, include_pad=False, ceil=False):
    n, c, h, w = x.shape

    def out(size, kk, ss, lo, hi):
        span = size + lo + hi - kk
        return (span + (ss - 1 if ceil else 0)) // ss + 1
    oh, ow = out(h, k[0], s[0], p[0], p[2]), out(w, k[1], s[1], p[1], p[3])
    res = np.zeros((n, c, oh, ow), np.float64)
    for i, j in itertools.product(range(oh), range(ow)):
        vals, count = [], 0
        for a, b in itertools.product(range(k[0]), range(k[1])):
            r, q = i * s[0] + a - p[0], j * s[1] + b - p[1]
            inside = 0 <= r < h and 0 <= q < w
            in_padded = r < h + p[2] and q < w + p[3]
            if inside:
                vals.append(x[:, :, r, q])
            if inside or (include_pad and in_padded):
                count += 1
        stack = np.stack(vals)
        res[:, :, i, j] = stack.max(0) if kind == "max" else stack.sum(0) / count
    return res.astype(x.dtype)


@pytest.mark.parametrize("k,s,p,ceil", [((3, 3), (2, 2), (1, 1, 1, 1), False), ((2, 2), (2, 2), (0, 0, 0, 0), True),
                                        ((3, 2), (1, 2), (0, 1, 1, 0), False)])
def test_pools(k, s, p, ceil):
    x = rand((1, 2, 7, 7))
    check("nn.max_pool2d", [x], pool_loops(x, k, s, p, "max", ceil=ceil), pool_size=k, strides=s, padding=p,
          ceil_mode=ceil)
    check("nn.avg_pool2d", [x], pool_loops(x, k, s, p, "avg", ceil=ceil), pool_size=k, strides=s, padding=p,
          ceil_mode=ceil)
    check("nn.avg_pool2d", [x], pool_loops(x, k, s, p, "avg", include_pad=True, ceil=ceil), pool_size=k,
          strides=s, padding=p, ceil_mode=ceil, count_include_pad=True)


def test_pool_packed_and_global():
    x = rand((2, 32, 6, 6))
    ref = pool_loops(x, (2, 2), (2, 2), (0, 0, 0, 0), "max")
    check("nn.max_pool2d", [pack(x, 1, 16)], pack(ref, 1, 16), pool_size=[2, 2], strides=[2, 2],
          layout="NCHW1n16c")
    check("nn.global_avg_pool2d", [x], x.mean(axis=(2, 3), keepdims=True))
    check("nn.global_max_pool2d", [x], x.max(axis=(2, 3), keepdims=True))
    check("nn.global_avg_pool2d", [pack(x, 1, 16)], pack(x.mean(axis=(2, 3), keepdims=True), 1, 16),
          layout="NCHW1n16c")
    with pytest.raises(RelayTypeError, match=r"relation Pool2D failed: data must be 4-D in layout NCHW"):
        run_op("nn.max_pool2d", [rand((2, 3, 4))], pool_size=[2, 2])
    with pytest.raises(RelayTypeError, match=r"relation GlobalPool2D failed"):
        run_op("nn.global_avg_pool2d", [rand((2, 3, 4))])


def test_softmax_log_softmax():
    x = rand((2, 5))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    check("nn.softmax", [x], sm)
    check("nn.log_softmax", [x], np.log(sm))
    check("nn.softmax", [x], np.exp(x) / np.exp(x).sum(axis=0), axis=0)
    with pytest.raises(RelayTypeError, match="relation Softmax failed: axis 2 is out of range"):
        run_op("nn.softmax", [x], axis=2)


def test_pad():
    x = rand((1, 2, 3, 3))
    pw = [[0, 0], [0, 0], [1, 2], [2, 1]]
    check("nn.pad", [x], np.pad(x, pw, constant_values=0.5), pad_width=pw, pad_value=0.5)
    check("nn.pad", [x, np.array(1.5, "float32")], np.pad(x, pw, constant_values=1.5), pad_width=pw)
    check("nn.pad", [x], np.pad(x, pw, mode="edge"), pad_width=pw, pad_mode="edge")
    check("nn.pad", [x], x[:, :1], pad_width=[[0, 0], [0, -1], [0, 0], [0, 0]])
    with pytest.raises(RelayTypeError, match=r"relation Pad failed: pad_width must have one \(before, after\) pair per axis \(4\)"):
        run_op("nn.pad", [x], pad_width=[[1, 1]])


def test_dropout_and_batch_flatten():
    x = rand((2, 3, 2))
    check("nn.dropout", [x], (x, np.ones_like(x)), rate=0.3)
    check("nn.batch_flatten", [x], x.reshape(2, 6))


# ------------------------------------------------------------------ transforms

covers("reshape", "transpose", "concatenate", "squeeze", "expand_dims", "layout_transform")


def test_reshape():
    x = rand((2, 3, 4))
    check("reshape", [x], x.reshape(6, 4), newshape=[-1, 4])
    check("reshape", [x], x.reshape(2, 12), newshape=[0, -1])
    check("reshape", [x], x.reshape(2, 3, 2, 2), newshape=[0, 0, 2, 2])
    check("reshape", [x], x.reshape(2, 3, 4), newshape=[2, -2])
    with pytest.raises(RelayTypeError, match=r"relation Reshape failed: cannot reshape \(2, 3, 4\) \(24 elements\) to \(5, 5\)"):
        run_op("reshape", [x], newshape=[5, 5])
    assert infer_expr(relay.op_call("reshape", Var("x", T((ANY, 3))), newshape=[-1])) == T((ANY,))


def test_transpose_concat_squeeze_expand():
    x = rand((2, 3, 4))
    check("transpose", [x], x.transpose(1, 2, 0), axes=[1, 2, 0])
    check("transpose", [x], x.T)
    with pytest.raises(RelayTypeError, match=r"relation Transpose failed: axes \[0, 1\] must list all 3 axes"):
        run_op("transpose", [x], axes=[0, 1])
    y = rand((2, 5, 4))
    check("concatenate", [(x, y)], np.concatenate([x, y], axis=1), axis=1)
    with pytest.raises(RelayTypeError, match="relation Concat failed: field 1 has dimension 5 on axis 1 but field 0 has 3"):
        run_op("concatenate", [(x, y)], axis=0)
    z = rand((1, 3, 1))
    check("squeeze", [z], z.reshape(3))
    check("squeeze", [z], z.reshape(3, 1), axis=[0])
    with pytest.raises(RelayTypeError, match="cannot squeeze axis 1 of size 3"):
        run_op("squeeze", [z], axis=[1])
    check("expand_dims", [x], x[:, None, None], axis=1, num_newaxis=2)
    check("expand_dims", [x], x[..., None], axis=-1)
    with pytest.raises(RelayTypeError, match="relation ExpandDims failed: axis 5 is out of range"):
        run_op("expand_dims", [x], axis=5)


def test_layout_transform_round_trip():
    x = rand((2, 32, 3, 3))
    packed = pack(x, 2, 16)
    check("layout_transform", [x], packed, src_layout="NCHW", dst_layout="NCHW2n16c")
    check("layout_transform", [packed], x, src_layout="NCHW2n16c", dst_layout="NCHW")
    w = rand((32, 16, 3, 3))
    wp = w.reshape(2, 16, 1, 16, 3, 3).transpose(0, 2, 4, 5, 1, 3)
    check("layout_transform", [w], wp, src_layout="OIHW", dst_layout="OIHW16o16i")
    with pytest.raises(RelayTypeError, match="axis C of size 32 is not divisible by 5"):
        run_op("layout_transform", [x], src_layout="NCHW", dst_layout="NCHW5c")


# ------------------------------------------------------------------ frontend operators
covers("strided_slice", "take", "image.resize2d", "nn.lrn", "nn.matmul", "qnn.quantize", "qnn.dequantize")


def test_strided_slice():
    x = rand((4, 5, 6))
    check("strided_slice", [x], x[1:3, :, ::2], begin=(1, 0), end=(3, 100), strides=(1, 2), axes=(0, 2))
    check("strided_slice", [x], x[:, ::-2], begin=(-1,), end=(-100,), strides=(-2,), axes=(1,))
    check("strided_slice", [x], x[:2], begin=(0,), end=(2,))
    with pytest.raises(RelayTypeError, match="stride 0 on axis 0"):
        run_op("strided_slice", [x], begin=(0,), end=(2,), strides=(0,))


def test_take():
    x = rand((3, 4))
    idx = np.array([[2, 0], [-1, 1]], "int64")
    expected = np.stack([np.stack([x[:, j % 4] for j in row], axis=-1) for row in idx], axis=1)
    check("take", [x, idx], expected, axis=1, mode="wrap")
    with pytest.raises(RelayTypeError, match="indices must be"):
        run_op("take", [x, rand((2,))])


def test_resize2d_nearest_asymmetric_is_repetition():
    x = rand((1, 2, 3, 2))
    check("image.resize2d", [x], x.repeat(2, axis=2).repeat(3, axis=3), size=(6, 6),
          coordinate_transformation_mode="asymmetric", rounding_method="floor")
    with pytest.raises(RelayTypeError, match="nearest_neighbor only"):
        run_op("image.resize2d", [x], size=(6, 6), method="linear")


def test_lrn_against_the_formula():
    x = rand((1, 7, 2, 2))
    size, alpha, beta, bias = 5, 1e-2, 0.75, 2.0
    ref = np.empty_like(x)
    for c in range(7):
        lo, hi = max(0, c - 2), min(6, c + 2)
        s = (x[:, lo:hi + 1] ** 2).sum(axis=1)
        ref[:, c] = x[:, c] / (bias + alpha / size * s) ** beta
    check("nn.lrn", [x], ref, size=size, alpha=alpha, beta=beta, bias=bias)


def test_matmul_broadcast_and_integers():
    a, b = rand((2, 1, 3, 4)), rand((5, 4, 2))
    ref = np.empty((2, 5, 3, 2), "float32")
    for i in range(2):
        for j in range(5):
            ref[i, j] = a[i, 0] @ b[j]
    check("nn.matmul", [a, b], ref)
    ai, bi = rand((3, 4), "int8", -128, 127), rand((4, 2), "int8", -128, 127)
    check("nn.matmul", [ai, bi], ai.astype(np.int32) @ bi.astype(np.int32), out_dtype="int32")
    with pytest.raises(RelayTypeError, match="matmul inner dimensions differ: 4 and 3"):
        run_op("nn.matmul", [a, rand((3, 2))])


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.25, 0.75, -0.25, 10.0, -10.0, 0.5], "float32")
    check("qnn.quantize", [x, np.array(0.5, "float32"), np.array(1, "int8")],
          np.array([1, 3, 1, 21, -19, 2], "int8"), out_dtype="int8")
    q = np.array([[0, 255], [10, 20]], "uint8")
    scale, zp = np.array([0.5, 2.0], "float32"), np.array([128, 0], "uint8")
    check("qnn.dequantize", [q, scale, zp], np.array([[-64, 63.5], [20, 40]], "float32"), axis=0)
    with pytest.raises(RelayTypeError, match="scale has 2 values but axis 1 has 3"):
        run_op("qnn.dequantize", [rand((2, 3), "uint8", 0, 9), scale, zp], axis=1)


# ------------------------------------------------------------------ registry


def test_every_operator_is_tested():
    builtin = {n for n in list_ops() if (get_op(n).compute.__module__ or "").startswith("relay.op.")}
    assert len(builtin) >= 60
    assert builtin - COVERED == set()


def test_registry_extension():
    from relay.op import register_op, register_op_attr, get_op_attr

    @register_op("test.double", num_inputs=1, relation="Identity", pattern=OpPattern.ELEMWISE)
    def _double(args, attrs):
        return args[0] * 2

    check("test.double", [np.ones(2, "float32")], np.full(2, 2, "float32"))
    register_op_attr("test.double", "FTestRule", "rule")
    assert get_op_attr("test.double", "FTestRule") == "rule"
    with pytest.raises(ValueError, match="already registered"):
        register_op("test.double", num_inputs=1, relation="Identity", pattern=0)(_double)
    with pytest.raises(ValueError, match="unknown type relation 'Nope'"):
        register_op("test.bad", num_inputs=1, relation="Nope", pattern=0)(_double)


def test_every_relation_is_used_by_an_operator():
    from relay.op.registry import _RELATIONS
    used = {get_op(n).relation for n in list_ops()}
    assert set(_RELATIONS) == used


# ------------------------------------------------------------------ properties

from hypothesis import given, settings, strategies as st   # noqa: E402

dims = st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=4)


@settings(max_examples=60, deadline=None)
@given(dims, dims)
def test_broadcast_relation_agrees_with_numpy(a, b):
    try:
        expected = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        expected = None
    x, y = Var("x", T(tuple(a))), Var("y", T(tuple(b)))
    if expected is None:
        with pytest.raises(RelayTypeError, match="not broadcast-compatible"):
            infer_expr(relay.op_call("add", x, y))
    else:
        assert infer_expr(relay.op_call("add", x, y)) == T(expected)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=4), st.data())
def test_reshape_and_transpose_relations_agree_with_numpy(shape, data):
    x = np.zeros(shape, "float32")
    perm = data.draw(st.permutations(range(len(shape))))
    t, out = run_op("transpose", [x], axes=list(perm))
    assert out.shape == x.transpose(perm).shape == t.shape
    k = data.draw(st.integers(0, len(shape) - 1))
    newshape = [-1] + list(shape[k + 1:])
    t, out = run_op("reshape", [x], newshape=newshape)
    assert out.shape == x.reshape(newshape).shape == t.shape


# ------------------------------------------------------------------ conv2d_transpose

covers("nn.conv2d_transpose")


def conv_transpose_loops(x, w, stride, pad, out_pad, dil, groups):
    """Direct definition: y[o, oy, ox] gathers every x[c, i, j] * w[c, o, p, q] with
    i * stride + p * dil - pad_top == oy (independent of the scatter kernel under test)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    oh = (h - 1) * stride[0] - pad[0] - pad[2] + dil[0] * (kh - 1) + 1 + out_pad[0]
    ow = (wd - 1) * stride[1] - pad[1] - pad[3] + dil[1] * (kw - 1) + 1 + out_pad[1]
    out = np.zeros((n, og * groups, oh, ow), np.float64)
    ig = c // groups
    for b, o, oy, ox in itertools.product(range(n), range(og * groups), range(oh), range(ow)):
        g = o // og
        acc = 0.0
        for ci, p, q in itertools.product(range(ig), range(kh), range(kw)):
            i, ri = divmod(oy + pad[0] - p * dil[0], stride[0])
            j, rj = divmod(ox + pad[1] - q * dil[1], stride[1])
            if ri == 0 and rj == 0 and 0 <= i < h and 0 <= j < wd:
                acc += x[b, g * ig + ci, i, j] * w[g * ig + ci, o % og, p, q]
        out[b, o, oy, ox] = acc
    return out


@pytest.mark.parametrize("stride,pad,out_pad,dil,groups", [
    ((2, 2), (1, 1, 1, 1), (0, 0), (1, 1), 1),      # DCGAN's 4x4 stride 2
    ((2, 1), (0, 1, 2, 0), (1, 0), (1, 1), 1),
    ((3, 2), (1, 0, 0, 1), (2, 1), (2, 1), 2),
])
def test_conv2d_transpose(stride, pad, out_pad, dil, groups):
    x = rand((2, 4, 5, 4))
    w = rand((4, 3, 4, 3))
    ref = conv_transpose_loops(x, w, stride, pad, out_pad, dil, groups).astype("float32")
    check("nn.conv2d_transpose", [x, w], ref, strides=stride, padding=pad, output_padding=out_pad,
          dilation=dil, groups=groups, channels=3 * groups, kernel_size=[4, 3])


def test_conv2d_transpose_int8_with_int32_output():
    x = rand((1, 3, 4, 4), "int8", -128, 127)
    w = rand((3, 2, 4, 4), "int8", -128, 127)
    ref = conv_transpose_loops(x.astype(np.int64), w.astype(np.int64), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), 1)
    check("nn.conv2d_transpose", [x, w], ref.astype("int32"), strides=[2, 2], padding=[1, 1], out_dtype="int32")


def test_conv2d_transpose_relation_errors():
    x, w = rand((1, 4, 5, 5)), rand((4, 2, 3, 3))
    with pytest.raises(RelayTypeError, match="weight .IOHW. has 3"):
        run_op("nn.conv2d_transpose", [x, rand((3, 2, 3, 3))])
    with pytest.raises(RelayTypeError, match="output_padding"):
        run_op("nn.conv2d_transpose", [x, w], strides=[2, 2], output_padding=[2, 0])
    with pytest.raises(RelayTypeError, match="kernel_layout IOHW"):
        run_op("nn.conv2d_transpose", [x, w], kernel_layout="OIHW")
    with pytest.raises(RelayTypeError, match="not divisible by groups"):
        run_op("nn.conv2d_transpose", [x, w], groups=3)


# ------------------------------------------------------------------ gradient kernels

covers("nn.conv2d_grad_data", "nn.conv2d_grad_weight", "nn.pool2d_grad")


def test_conv2d_grad_kernels_are_adjoints():
    x, w = rand((2, 4, 7, 6), "float64"), rand((6, 2, 3, 3), "float64")
    attrs = dict(strides=(2, 1), padding=(1, 2, 0, 1), dilation=(1, 2), groups=2)
    y = conv_loops(x, w, attrs["strides"], attrs["padding"], attrs["dilation"], 2)
    g = rand(y.shape, "float64")
    t, dx = run_op("nn.conv2d_grad_data", [g, w, x], **attrs)
    assert t == T(x.shape, "float64")
    # <conv(x, w), g> == <x, dL/dx> == <w, dL/dw> for the linear map
    np.testing.assert_allclose(np.sum(y * g), np.sum(x * dx), rtol=1e-10)
    _, dw = run_op("nn.conv2d_grad_weight", [g, x, w], **attrs)
    np.testing.assert_allclose(np.sum(y * g), np.sum(w * dw), rtol=1e-10)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_grad_kernel(kind):
    x = rand((1, 2, 5, 5), "float64")
    attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    _, y = run_op(f"nn.{kind}_pool2d", [x], **attrs)
    g = rand(y.shape, "float64")
    _, dx = run_op("nn.pool2d_grad", [g, y, x], pool_type=kind, **attrs)
    eps = 1e-6
    for idx in [(0, 0, 0, 0), (0, 1, 2, 3), (0, 0, 4, 4), (0, 1, 1, 2)]:
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num = (np.sum(run_op(f"nn.{kind}_pool2d", [xp], **attrs)[1] * g)
               - np.sum(run_op(f"nn.{kind}_pool2d", [xm], **attrs)[1] * g)) / (2 * eps)
        np.testing.assert_allclose(dx[idx], num, rtol=1e-5, atol=1e-8)
