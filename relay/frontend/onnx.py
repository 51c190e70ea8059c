"""The ONNX frontend: an ONNX model (opset 9 and later) to a typed Relay module and its weights.

``from_onnx(model)`` checks every node against the table of supported operators and attributes
first (an unsupported one is an ``UnsupportedOperator`` naming the operator, the node and the
model, before any conversion), then converts node by node.  Initializers and everything computed
only from them are folded at import time; the weights the program uses become parameters of
``@main`` after the model's inputs, returned as ``params`` keyed by parameter name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..op.registry import get_op
from ..typecheck import RelayTypeError, check_module
from .common import Const, FrontendError, GraphBuilder, MissingPackage, UnsupportedOperator

__all__ = ["from_onnx", "load_onnx", "SUPPORTED_OPS", "MIN_OPSET"]

MIN_OPSET = 9
_F32_MAX = float(np.finfo(np.float32).max)


def _onnx():
    try:
        import onnx
    except ImportError:
        raise MissingPackage("the onnx package is needed to import ONNX models (.onnx): install "
                             "the optional extra with pip install -e '.[onnx]' in the vta-py "
                             "checkout") from None
    return onnx


# ---------------------------------------------------------------- the operator table


@dataclass(frozen=True)
class _Spec:
    """A converter ``fn(ctx, node)`` -> outputs, the attributes it understands (each with an
    optional check returning an error message), and the Relay operators it needs."""

    fn: Callable
    attrs: dict = field(default_factory=dict)
    needs: tuple = ()


_TABLE: dict = {}


def _op(*names, attrs=None, needs=()):
    def deco(fn):
        for n in names:
            _TABLE[n] = _Spec(fn, dict(attrs or {}), tuple(needs))
        return fn
    return deco


def _one_of(*values):
    def check(v):
        return None if v in values else f"{v!r} is not supported (supported: {', '.join(map(repr, values))})"
    return check


def _equals(value, why=""):
    def check(v):
        return None if v == value else f"{v!r} is not supported{why} (only {value!r})"
    return check


_AUTO_PAD = _one_of("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


class _Ctx:
    """One conversion: the builder, the values by ONNX name and the opset."""

    def __init__(self, g, opset, model_name):
        self.g, self.opset, self.model_name = g, opset, model_name
        self.values = {}
        self.consumed = set()

    def used(self, name):
        """Whether a node or the graph's outputs read the tensor ``name``."""
        return bool(name) and name in self.consumed

    def inputs(self, node):
        out = []
        for name in node.input:
            if name == "":
                out.append(None)
            elif name not in self.values:
                raise FrontendError(f"tensor {name!r} is used before it is produced")
            else:
                out.append(self.values[name])
        return out

    def static(self, value, what):
        if value is None:
            return None
        if not isinstance(value, Const):
            raise _NodeError(f"{what} must be known at import time (a constant or an initializer)")
        return value.array

    def shape(self, x):
        shape = self.g.typeof(x).shape
        if not all(isinstance(d, int) for d in shape):
            raise _NodeError(f"needs a static input shape, got {shape}")
        return shape


class _NodeError(Exception):
    """A node uses a feature the frontend does not support (an ``UnsupportedOperator`` once
    ``from_onnx`` adds the node and the model)."""


class _Malformed(Exception):
    """A node that is not valid ONNX (a ``FrontendError`` once the node and model are added)."""


def _attrs(onnx, node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _to_array(onnx, tensor, what):
    """The array of a TensorProto whose data may not match its declared shape or type."""
    try:
        return onnx.numpy_helper.to_array(tensor)
    except Exception as e:  # noqa: BLE001 - onnx raises ValueError, TypeError, KeyError, ...
        raise _Malformed(f"{what} {tensor.name!r} holds data that does not match its shape "
                         f"{list(tensor.dims)} and type {tensor.data_type}: {e}") from None


def _decode(v):
    return v.decode() if isinstance(v, bytes) else v


# ---------------------------------------------------------------- element-wise


_UNARY = {"Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
          "Sqrt": "sqrt", "Neg": "negative", "Abs": "abs", "Floor": "floor", "Ceil": "ceil"}
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power"}


@_op(*_UNARY)
def _unary(ctx, node, attrs, x):
    return [ctx.g.call(_UNARY[node.op_type], x)]


@_op("Identity")
def _identity(ctx, node, attrs, x):
    return [x]


@_op(*_BINARY)
def _binary(ctx, node, attrs, a, b):
    ta, tb = ctx.g.typeof(a), ctx.g.typeof(b)
    if ta.dtype != tb.dtype:
        if node.op_type != "Pow" or not isinstance(b, Const):
            raise _Malformed(f"operand types differ ({ta.dtype} and {tb.dtype})")
        b = Const(b.array.astype(ta.dtype), b.name)
    return [ctx.g.call(_BINARY[node.op_type], a, b)]


@_op("Sum", "Mean", "Max", "Min")
def _variadic(ctx, node, attrs, *xs):
    op = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum"}[node.op_type]
    y = xs[0]
    for x in xs[1:]:
        y = ctx.g.call(op, y, x)
    if node.op_type == "Mean":
        y = ctx.g.call("divide", y, ctx.g.const(len(xs), ctx.g.typeof(y).dtype))
    return [y]


@_op("Reciprocal")
def _reciprocal(ctx, node, attrs, x):
    return [ctx.g.call("divide", ctx.g.const(1, ctx.g.typeof(x).dtype), x)]


@_op("LeakyRelu", attrs={"alpha": None})
def _leaky_relu(ctx, node, attrs, x):
    return [ctx.g.call("nn.leaky_relu", x, alpha=float(attrs.get("alpha", 0.01)))]


@_op("Clip", attrs={"min": None, "max": None})
def _clip(ctx, node, attrs, x, lo=None, hi=None):
    if ctx.opset < 11:
        lo, hi = attrs.get("min", -_F32_MAX), attrs.get("max", _F32_MAX)
    else:
        lo = ctx.static(lo, "min")
        hi = ctx.static(hi, "max")
        lo = -_F32_MAX if lo is None else lo.item()
        hi = _F32_MAX if hi is None else hi.item()
    return [ctx.g.call("clip", x, a_min=float(lo), a_max=float(hi))]


_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


@_op("Cast", attrs={"to": lambda v: None if v in _DTYPES else f"element type {v} is not supported",
                    "saturate": None})
def _cast(ctx, node, attrs, x):
    return [ctx.g.call("cast", x, dtype=_DTYPES[attrs["to"]])]


# ---------------------------------------------------------------- convolution, dense


def _same_pads(in_hw, kernel, strides, dilations, mode):
    pads_begin, pads_end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        pads_begin.append(small if mode == "SAME_UPPER" else big)
        pads_end.append(big if mode == "SAME_UPPER" else small)
    return pads_begin + pads_end


def _window_attrs(ctx, attrs, in_hw, kernel):
    """(strides, padding4, dilation) of a 2-D window from ONNX attributes."""
    if len(kernel) != 2:
        raise _NodeError(f"only 2-D windows are supported, got kernel_shape {list(kernel)}")
    strides = list(attrs.get("strides", [1, 1]))
    dil = list(attrs.get("dilations", [1, 1]))
    mode = _decode(attrs.get("auto_pad", "NOTSET"))
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(in_hw, kernel, strides, dil, mode)
    elif mode == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
    # ONNX requires these; a stride of 0 divided by zero in shape inference (found by fuzzing)
    if len(strides) != 2 or len(dil) != 2 or len(pads) != 4 or min(strides + dil) < 1 \
            or min(pads) < 0:
        raise _Malformed(f"strides {strides} and dilations {dil} must be 2 positive integers, "
                         f"pads {pads} 4 non-negative ones")
    return tuple(strides), (pads[0], pads[1], pads[2], pads[3]), tuple(dil)


_CONV_ATTRS = {"auto_pad": _AUTO_PAD, "dilations": None, "group": None, "kernel_shape": None, "pads": None,
               "strides": None}


@_op("Conv", attrs=_CONV_ATTRS)
def _conv(ctx, node, attrs, x, w, b=None):
    ws = ctx.shape(w)
    if len(ws) != 4:
        raise _NodeError(f"only 2-D convolution is supported, got a weight of shape {ws}")
    kernel = tuple(attrs.get("kernel_shape", ws[2:]))
    strides, pads, dil = _window_attrs(ctx, attrs, ctx.shape(x)[2:], kernel)
    y = ctx.g.call("nn.conv2d", x, w, strides=strides, padding=pads, dilation=dil,
                   groups=int(attrs.get("group", 1)), channels=ws[0], kernel_size=kernel)
    if b is not None:
        y = ctx.g.call("nn.bias_add", y, b, axis=1)
    return [y]


@_op("ConvTranspose", attrs=dict(_CONV_ATTRS, output_padding=None, output_shape=None),
     needs=("nn.conv2d_transpose",))
def _conv_transpose(ctx, node, attrs, x, w, b=None):
    ws = ctx.shape(w)
    if len(ws) != 4:
        raise _NodeError(f"only 2-D transposed convolution is supported, got a weight of shape {ws}")
    groups = int(attrs.get("group", 1))
    kernel = tuple(attrs.get("kernel_shape", ws[2:]))
    strides = tuple(attrs.get("strides", [1, 1]))
    dil = tuple(attrs.get("dilations", [1, 1]))
    out_pad = list(attrs.get("output_padding", [0, 0]))
    in_hw = ctx.shape(x)[2:]
    mode = _decode(attrs.get("auto_pad", "NOTSET"))
    if "output_shape" in attrs or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = list(attrs["output_shape"])[-2:] if "output_shape" in attrs else [h * s for h, s in zip(in_hw, strides)]
        pads = []
        for i in range(2):
            total = strides[i] * (in_hw[i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - target[i]
            if total < 0:
                out_pad[i] -= total
                total = 0
            pads.append((total // 2, total - total // 2) if mode != "SAME_LOWER" else (total - total // 2, total // 2))
        pads = (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
    elif mode == "VALID":
        pads = (0, 0, 0, 0)
    else:
        p = list(attrs.get("pads", [0, 0, 0, 0]))
        pads = (p[0], p[1], p[2], p[3])
    y = ctx.g.call("nn.conv2d_transpose", x, w, strides=strides, padding=pads, output_padding=tuple(out_pad),
                   dilation=dil, groups=groups, channels=ws[1] * groups, kernel_size=kernel)
    if b is not None:
        y = ctx.g.call("nn.bias_add", y, b, axis=1)
    return [y]


@_op("Gemm", attrs={"alpha": None, "beta": None, "transA": None, "transB": None})
def _gemm(ctx, node, attrs, a, b, c=None):
    g = ctx.g
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    if attrs.get("transA", 0):
        a = g.call("transpose", a, axes=(1, 0))
    if not attrs.get("transB", 0):
        b = g.call("transpose", b, axes=(1, 0))
    dtype = g.typeof(a).dtype
    if alpha != 1.0:
        b = g.call("multiply", b, g.const(alpha, dtype))
    y = g.call("nn.dense", a, b, units=g.typeof(b).shape[0])
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = g.call("multiply", c, g.const(beta, dtype))
        ct = g.typeof(c)
        y = g.call("nn.bias_add", y, c, axis=1) if ct.ndim == 1 else g.call("add", y, c)
    return [y]


@_op("MatMul")
def _matmul(ctx, node, attrs, a, b):
    g = ctx.g
    if isinstance(b, Const) and b.array.ndim == 2:
        wt = g.call("transpose", b, axes=(1, 0))
        return [g.call("nn.dense", a, wt, units=b.array.shape[1])]
    return [g.call("nn.matmul", a, b)]


@_op("BatchNormalization", attrs={"epsilon": None, "momentum": None,
                                  "spatial": _equals(1, " (per-activation batch norm)"),
                                  "training_mode": _equals(0, " (training)")})
def _batch_norm(ctx, node, attrs, x, scale, bias, mean, var):
    if any(ctx.used(o) for o in node.output[1:]):
        raise _NodeError("the running-statistics outputs (training mode) are not supported")
    y = ctx.g.call("nn.batch_norm", x, scale, bias, mean, var, axis=1, epsilon=float(attrs.get("epsilon", 1e-5)))
    return [y if isinstance(y, Const) else ctx.g.item(y, 0)]


@_op("LRN", attrs={"alpha": None, "beta": None, "bias": None, "size": None})
def _lrn(ctx, node, attrs, x):
    return [ctx.g.call("nn.lrn", x, size=int(attrs["size"]), axis=1, alpha=float(attrs.get("alpha", 1e-4)),
                       beta=float(attrs.get("beta", 0.75)), bias=float(attrs.get("bias", 1.0)))]


@_op("Dropout", attrs={"ratio": None, "seed": None, "is_test": None})
def _dropout(ctx, node, attrs, x, ratio=None, training=None):
    if training is not None and (not isinstance(training, Const) or bool(training.array)):
        raise _NodeError("training_mode must be a constant false")
    mask_dtype = "bool" if ctx.opset >= 10 else ctx.g.typeof(x).dtype
    return [x, Const(np.ones(ctx.shape(x), mask_dtype))]    # inference keeps every element


# ---------------------------------------------------------------- pooling


_POOL_ATTRS = {"auto_pad": _AUTO_PAD, "ceil_mode": None, "dilations": None, "kernel_shape": None, "pads": None,
               "strides": None}


@_op("MaxPool", attrs=dict(_POOL_ATTRS, storage_order=_equals(0, " (column-major indices)")))
def _max_pool(ctx, node, attrs, x):
    if any(ctx.used(o) for o in node.output[1:]):
        raise _NodeError("the Indices output is not supported")
    kernel = tuple(attrs["kernel_shape"])
    strides, pads, dil = _window_attrs(ctx, attrs, ctx.shape(x)[2:], kernel)
    return [ctx.g.call("nn.max_pool2d", x, pool_size=kernel, strides=strides, padding=pads, dilation=dil,
                       ceil_mode=bool(attrs.get("ceil_mode", 0)))]


@_op("AveragePool", attrs=dict(_POOL_ATTRS, count_include_pad=None))
def _avg_pool(ctx, node, attrs, x):
    kernel = tuple(attrs["kernel_shape"])
    strides, pads, dil = _window_attrs(ctx, attrs, ctx.shape(x)[2:], kernel)
    return [ctx.g.call("nn.avg_pool2d", x, pool_size=kernel, strides=strides, padding=pads, dilation=dil,
                       ceil_mode=bool(attrs.get("ceil_mode", 0)),
                       count_include_pad=bool(attrs.get("count_include_pad", 0)))]


@_op("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx, node, attrs, x):
    if len(ctx.shape(x)) != 4:
        raise _NodeError("only 4-D (NCHW) data is supported")
    op = "nn.global_avg_pool2d" if node.op_type == "GlobalAveragePool" else "nn.global_max_pool2d"
    return [ctx.g.call(op, x)]


# ---------------------------------------------------------------- softmax, reductions


@_op("Softmax", "LogSoftmax", attrs={"axis": None})
def _softmax(ctx, node, attrs, x):
    g = ctx.g
    op = "nn.softmax" if node.op_type == "Softmax" else "nn.log_softmax"
    shape = ctx.shape(x)
    if ctx.opset >= 13:
        return [g.call(op, x, axis=int(attrs.get("axis", -1)))]
    # Before opset 13 the input is coerced to 2-D at ``axis`` and normalised over the second part.
    axis = int(attrs.get("axis", 1)) % max(len(shape), 1)
    if axis == len(shape) - 1:
        return [g.call(op, x, axis=-1)]
    flat = g.call("reshape", x, newshape=(math.prod(shape[:axis]), math.prod(shape[axis:])))
    return [g.call("reshape", g.call(op, flat, axis=-1), newshape=tuple(shape))]


_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}
# The opset from which ``axes`` is an input rather than an attribute.
_AXES_INPUT_FROM = {"ReduceMean": 18, "ReduceSum": 13, "ReduceMax": 18, "ReduceMin": 18}


@_op(*_REDUCE, attrs={"axes": None, "keepdims": None, "noop_with_empty_axes": None})
def _reduce(ctx, node, attrs, x, axes=None):
    if ctx.opset >= _AXES_INPUT_FROM[node.op_type]:
        axes = ctx.static(axes, "axes")
        axes = None if axes is None else [int(a) for a in axes]
    else:
        axes = attrs.get("axes")
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return [x]
        axes = None
    return [ctx.g.call(_REDUCE[node.op_type], x, axis=None if axes is None else tuple(axes),
                       keepdims=bool(attrs.get("keepdims", 1)))]


# ---------------------------------------------------------------- shapes


@_op("Reshape", attrs={"allowzero": None})
def _reshape(ctx, node, attrs, x, shape):
    target = [int(d) for d in ctx.static(shape, "the target shape")]
    src = ctx.shape(x)
    if not attrs.get("allowzero", 0):
        target = [src[i] if d == 0 else d for i, d in enumerate(target)]
    if target.count(-1) > 1:
        raise _Malformed(f"target shape {target} has more than one -1")
    if -1 in target:
        rest = math.prod(d for d in target if d != -1)
        target[target.index(-1)] = math.prod(src) // rest if rest else 0
    if math.prod(target) != math.prod(src):
        raise _Malformed(f"cannot reshape {list(src)} to {target}")
    return [ctx.g.call("reshape", x, newshape=tuple(target))]


@_op("Flatten", attrs={"axis": None})
def _flatten(ctx, node, attrs, x):
    shape = ctx.shape(x)
    axis = int(attrs.get("axis", 1)) % (len(shape) + 1) if shape else 0
    if axis == 1 and len(shape) >= 2:
        return [ctx.g.call("nn.batch_flatten", x)]
    return [ctx.g.call("reshape", x, newshape=(math.prod(shape[:axis]), math.prod(shape[axis:])))]


@_op("Transpose", attrs={"perm": None})
def _transpose(ctx, node, attrs, x):
    perm = attrs.get("perm")
    return [ctx.g.call("transpose", x, axes=tuple(perm) if perm is not None else None)]


def _axes_arg(ctx, attrs, axes, since):
    if ctx.opset >= since:
        a = ctx.static(axes, "axes")
        return None if a is None else [int(v) for v in a]
    return attrs.get("axes")


@_op("Unsqueeze", attrs={"axes": None})
def _unsqueeze(ctx, node, attrs, x, axes=None):
    axes = _axes_arg(ctx, attrs, axes, 13)
    shape = list(ctx.shape(x))
    rank = len(shape) + len(axes)
    for a in sorted(a % rank for a in axes):
        shape.insert(a, 1)
    return [ctx.g.call("reshape", x, newshape=tuple(shape))]


@_op("Squeeze", attrs={"axes": None})
def _squeeze(ctx, node, attrs, x, axes=None):
    axes = _axes_arg(ctx, attrs, axes, 13)
    return [ctx.g.call("squeeze", x, axis=None if axes is None else tuple(axes))]


@_op("Concat", attrs={"axis": None})
def _concat(ctx, node, attrs, *xs):
    return [ctx.g.call("concatenate", list(xs), axis=int(attrs["axis"]))]


@_op("Split", attrs={"axis": None, "split": None, "num_outputs": None})
def _split(ctx, node, attrs, x, split=None):
    shape = ctx.shape(x)
    axis = int(attrs.get("axis", 0)) % len(shape)
    sizes = list(ctx.static(split, "split")) if split is not None else attrs.get("split")
    n = len(node.output)
    if sizes is None:
        step = -(-shape[axis] // n)
        sizes = [min(step, shape[axis] - i * step) for i in range(n)]
    outs, start = [], 0
    for s in sizes:
        outs.append(ctx.g.call("strided_slice", x, begin=(start,), end=(start + int(s),), axes=(axis,)))
        start += int(s)
    return outs


@_op("Slice", attrs={"starts": None, "ends": None, "axes": None})
def _slice(ctx, node, attrs, x, starts=None, ends=None, axes=None, steps=None):
    if ctx.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends = ctx.static(starts, "starts"), ctx.static(ends, "ends")
        axes, steps = ctx.static(axes, "axes"), ctx.static(steps, "steps")
    starts = [int(v) for v in starts]
    axes = list(range(len(starts))) if axes is None else [int(v) for v in axes]
    steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
    return [ctx.g.call("strided_slice", x, begin=tuple(starts), end=tuple(int(v) for v in ends),
                       strides=tuple(steps), axes=tuple(axes))]


@_op("Pad", attrs={"mode": _one_of("constant", "edge", "reflect"),
                   "pads": None, "value": None})
def _pad(ctx, node, attrs, x, pads=None, value=None, axes=None):
    rank = len(ctx.shape(x))
    if ctx.opset < 11:
        pads, value = list(attrs["pads"]), float(attrs.get("value", 0.0))
    else:
        pads = [int(v) for v in ctx.static(pads, "pads")]
        value = ctx.static(value, "constant_value")
        value = 0.0 if value is None or value.size == 0 else value.item()
        axes = ctx.static(axes, "axes")
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
    width = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[i + len(axes)]]
    return [ctx.g.call("nn.pad", x, pad_width=tuple(map(tuple, width)), pad_value=float(value),
                       pad_mode=_decode(attrs.get("mode", "constant")))]


@_op("Shape", attrs={"start": None, "end": None})
def _shape(ctx, node, attrs, x):
    shape = ctx.shape(x)
    lo, hi = attrs.get("start", 0), attrs.get("end", len(shape))
    return [Const(np.array(shape[lo:hi], np.int64))]


@_op("Gather", attrs={"axis": None})
def _gather(ctx, node, attrs, x, idx):
    if not isinstance(idx, Const):
        raise _NodeError("indices must be known at import time")
    axis = int(attrs.get("axis", 0))
    dim = ctx.shape(x)[axis]
    arr = idx.array.astype(np.int64)
    if arr.size and (arr.min() < -dim or arr.max() >= dim):
        raise _NodeError(f"an index is out of range for axis {axis} of size {dim}")
    # ONNX counts negative indices from the end; Relay's take (as TVM's) clips them.
    return [ctx.g.call("take", x, Const(arr % dim, idx.name), axis=axis)]


@_op("ConstantOfShape", attrs={"value": None})
def _constant_of_shape(ctx, node, attrs, shape):
    onnx = _onnx()
    fill = _to_array(onnx, attrs["value"], "value") if "value" in attrs else np.zeros(1, np.float32)
    shape = [int(d) for d in ctx.static(shape, "the shape")]
    return [Const(np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype))]


@_op("Constant", attrs={"value": None, "value_float": None, "value_floats": None, "value_int": None,
                        "value_ints": None})
def _constant(ctx, node, attrs):
    onnx = _onnx()
    if "value" in attrs:
        return [Const(_to_array(onnx, attrs["value"], "value"))]
    if "value_float" in attrs:
        return [Const(np.array(attrs["value_float"], np.float32))]
    if "value_floats" in attrs:
        return [Const(np.array(attrs["value_floats"], np.float32))]
    if "value_int" in attrs:
        return [Const(np.array(attrs["value_int"], np.int64))]
    if "value_ints" in attrs:
        return [Const(np.array(attrs["value_ints"], np.int64))]
    raise _Malformed("has no value")


# ---------------------------------------------------------------- resize


def _resize_common(ctx, x, scales, sizes, coord, rounding):
    shape = ctx.shape(x)
    if len(shape) != 4:
        raise _NodeError("only 4-D (NCHW) data is supported")
    if sizes is not None and sizes.size:
        out = [int(v) for v in sizes]
        scale = None
    else:
        if scales is None or scales.size != 4:
            raise _Malformed("needs 4 scales or 4 sizes")
        scale = [float(s) for s in scales]
        out = [int(math.floor(d * s)) for d, s in zip(shape, scale)]
        scale = (scale[2], scale[3])
    if out[:2] != list(shape[:2]):
        raise _NodeError(f"resizing the batch or channel axis is not supported (output {out}, input {list(shape)})")
    return [ctx.g.call("image.resize2d", x, size=tuple(out[2:]), coordinate_transformation_mode=coord,
                       rounding_method=rounding, scale=scale)]


_NEAREST = _one_of("nearest")


@_op("Upsample", attrs={"mode": _NEAREST, "scales": None})
def _upsample(ctx, node, attrs, x, scales=None):
    scales = np.asarray(attrs["scales"]) if scales is None else ctx.static(scales, "scales")
    return _resize_common(ctx, x, scales, None, "asymmetric", "floor")


@_op("Resize", attrs={"mode": _NEAREST,
                      "coordinate_transformation_mode": _one_of(
                          "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"),
                      "nearest_mode": None, "cubic_coeff_a": None, "exclude_outside": _equals(0),
                      "extrapolation_value": None, "antialias": _equals(0),
                      "keep_aspect_ratio_policy": _one_of("stretch")})
def _resize(ctx, node, attrs, x, roi=None, scales=None, sizes=None):
    if ctx.opset == 10:
        scales = ctx.static(roi, "scales")   # Resize-10 takes (X, scales) and behaves like Upsample.
        return _resize_common(ctx, x, scales, None, "asymmetric", "floor")
    coord = _decode(attrs.get("coordinate_transformation_mode", "half_pixel"))
    rounding = _decode(attrs.get("nearest_mode", "round_prefer_floor"))
    return _resize_common(ctx, x, ctx.static(scales, "scales"), ctx.static(sizes, "sizes"), coord, rounding)


# ---------------------------------------------------------------- quantisation


@_op("QuantizeLinear", attrs={"axis": None, "saturate": None, "block_size": _equals(0, " (blocked)"),
                              "output_dtype": None})
def _quantize(ctx, node, attrs, x, scale, zp=None):
    g = ctx.g
    if zp is None:
        dtype = _DTYPES.get(int(attrs.get("output_dtype", 0)) or 2)   # uint8 unless stated
        if dtype not in ("int8", "uint8", "int16", "uint16"):
            raise _NodeError(f"output type {dtype} is not supported")
        zp = Const(np.zeros((), dtype))
    dtype = g.typeof(zp).dtype
    return [g.call("qnn.quantize", x, scale, zp, axis=int(attrs.get("axis", 1)), out_dtype=dtype)]


@_op("DequantizeLinear", attrs={"axis": None, "block_size": _equals(0, " (blocked)")})
def _dequantize(ctx, node, attrs, x, scale, zp=None):
    g = ctx.g
    zp = zp if zp is not None else Const(np.zeros((), g.typeof(x).dtype))
    return [g.call("qnn.dequantize", x, scale, zp, axis=int(attrs.get("axis", 1)))]


# ---------------------------------------------------------------- the driver


def _node_label(i, node):
    return f"node {i} {node.name!r} ({node.op_type})" if node.name else \
        f"node {i} ({node.op_type}, output {node.output[0]!r})"


def _validate(onnx, model, opset, model_name):
    """Every operator and attribute is supported, or an ``UnsupportedOperator`` names the first
    one that is not."""
    for i, node in enumerate(model.graph.node):
        where = f"{_node_label(i, node)} of model {model_name!r}"
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedOperator(f"operator {node.domain}.{node.op_type} ({where}) is not supported: "
                                      "only the default ONNX domain is")
        spec = _TABLE.get(node.op_type)
        if spec is None:
            raise UnsupportedOperator(f"operator {node.op_type} ({where}) is not supported")
        for name in spec.needs:
            try:
                get_op(name)
            except KeyError:
                raise UnsupportedOperator(f"operator {node.op_type} ({where}) needs the Relay operator "
                                          f"{name}, which this build does not have") from None
        for a in node.attribute:
            if a.name not in spec.attrs:
                raise UnsupportedOperator(f"attribute {a.name!r} of operator {node.op_type} ({where}) "
                                          "is not supported")
            check = spec.attrs[a.name]
            if check is not None:
                msg = check(_decode(onnx.helper.get_attribute_value(a)))
                if msg:
                    raise UnsupportedOperator(f"attribute {a.name} of operator {node.op_type} ({where}): {msg}")


def _input_shape(vi, shapes):
    t = vi.type.tensor_type
    if vi.name in shapes:
        return tuple(int(d) for d in shapes[vi.name])
    dims = []
    for d in t.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(d.dim_value)
        else:
            sym = d.dim_param or "?"
            raise FrontendError(f"input {vi.name!r} has a symbolic dimension {sym!r}; give its shape "
                                f"(shapes={{'{vi.name}': (...)}} or --shape {vi.name}=1,3,224,224)")
    return tuple(dims)


def from_onnx(model, shapes=None, name=None):
    """Convert an ``onnx.ModelProto`` into ``(IRModule, params)``.

    ``shapes`` gives the shape of inputs whose dimensions are symbolic.  ``@main`` takes the
    model's inputs (initializers excluded) and then one parameter per weight it uses.
    """
    onnx = _onnx()
    shapes = dict(shapes or {})
    model_name = name or model.graph.name or "model"
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise FrontendError(f"model {model_name!r} does not import the default ONNX operator set")
    if opset < MIN_OPSET:
        raise UnsupportedOperator(f"model {model_name!r} uses opset {opset}; opset {MIN_OPSET} or later is "
                                  "supported (upgrade it with onnx.version_converter)")
    _validate(onnx, model, opset, model_name)

    g = GraphBuilder()
    ctx = _Ctx(g, opset, model_name)
    ctx.consumed = {n for node in model.graph.node for n in node.input} | {o.name for o in model.graph.output}
    for init in model.graph.initializer:
        try:
            ctx.values[init.name] = Const(_to_array(onnx, init, "initializer"), init.name)
        except _Malformed as e:
            raise FrontendError(f"model {model_name!r}: {e}") from None
    unknown = set(shapes) - {vi.name for vi in model.graph.input}
    if unknown:
        raise FrontendError(f"model {model_name!r} has no input(s) {', '.join(sorted(unknown))}")
    for vi in model.graph.input:
        if vi.name in ctx.values:
            continue
        elem = vi.type.tensor_type.elem_type
        if elem not in _DTYPES:
            raise FrontendError(f"input {vi.name!r} has an unsupported element type {elem}")
        ctx.values[vi.name] = g.add_input(vi.name, _input_shape(vi, shapes), _DTYPES[elem])

    for i, node in enumerate(model.graph.node):
        spec = _TABLE[node.op_type]
        try:
            outs = spec.fn(ctx, node, _attrs(onnx, node), *ctx.inputs(node))
        except (_NodeError, _Malformed, FrontendError, TypeError) as e:
            msg = str(e)
            if isinstance(e, TypeError):
                msg = f"has {len(node.input)} inputs, which this operator does not take ({e})"
            cls = type(e) if isinstance(e, FrontendError) else \
                UnsupportedOperator if isinstance(e, _NodeError) else FrontendError
            raise cls(f"{_node_label(i, node)} of model {model_name!r}: {msg}") from None
        for oname, value in zip(node.output, outs):
            if oname:
                ctx.values[oname] = value.renamed(oname) if isinstance(value, Const) else value
    outputs = []
    for vi in model.graph.output:
        if vi.name not in ctx.values:
            raise FrontendError(f"model {model_name!r}: output {vi.name!r} is never produced")
        outputs.append(ctx.values[vi.name])
    mod, params = g.module(outputs)
    try:
        check_module(mod)
    except RelayTypeError as e:
        raise FrontendError(f"model {model_name!r} converted to an ill-typed program (a frontend bug): {e}") from None
    return mod, params


def load_onnx(path, shapes=None):
    """Read an ``.onnx`` file and convert it (``FrontendError`` if it cannot be read)."""
    onnx = _onnx()
    path = Path(path)
    try:
        model = onnx.load(str(path))
    except FileNotFoundError:
        raise FrontendError(f"cannot read {path}: no such file") from None
    except Exception as e:  # protobuf raises its own DecodeError, and others for truncated files
        raise FrontendError(f"cannot read {path} as an ONNX model: {e}") from None
    return from_onnx(model, shapes=shapes, name=path.stem)


SUPPORTED_OPS = tuple(sorted(_TABLE))   # the ONNX operator types from_onnx converts
