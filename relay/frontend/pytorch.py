"""The PyTorch frontend: a ``torch.export`` ``ExportedProgram`` (in memory, or a ``.pt2`` saved
with ``torch.export.save``) to a typed Relay module and its weights.

The program is first decomposed to core ATen (``run_decompositions``), so every model reaches the
same small set of operators.  Every operator is checked against the table before conversion (an
``UnsupportedOperator`` names it, its node and the model).  Parameters, buffers and constant
tensors become parameters of ``@main`` named after their state-dict keys (``layer1.0.conv1.weight``
-> ``%layer1_0_conv1_weight``), after the user inputs.
"""
from __future__ import annotations

import contextlib
import math
import operator
from pathlib import Path

import numpy as np

from ..op.registry import get_op
from ..typecheck import RelayTypeError, check_module
from .common import Const, FrontendError, GraphBuilder, MissingPackage, UnsupportedOperator

__all__ = ["from_pytorch", "load_pytorch", "SUPPORTED_OPS"]


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingPackage("torch is needed to import PyTorch programs (.pt2): install the "
                             "optional extra with pip install -e '.[torch]' in the vta-py "
                             "checkout (the CPU build torch==2.13.0)") from None
    return torch


class _NodeError(Exception):
    """A node uses a feature the frontend does not support (an ``UnsupportedOperator``)."""


# Argument checks made before any conversion: (argument position, name, default, allowed values).
_ARG_CHECKS = {
    "aten.avg_pool2d.default": [(6, "divisor_override", None, (None,))],
    "aten.adaptive_avg_pool2d.default": [(1, "output_size", None, ([1, 1], (1, 1)))],
    "aten._adaptive_avg_pool2d.default": [(1, "output_size", None, ([1, 1], (1, 1)))],
}


_TABLE = {}
_NEEDS = {"aten.convolution.default": ()}


def _op(*names):
    def deco(fn):
        for n in names:
            _TABLE[n] = fn
        return fn
    return deco


def _dtype(torch_dtype):
    return str(torch_dtype).replace("torch.", "")


class _Ctx:
    def __init__(self, g, name):
        self.g, self.name = g, name

    def shape(self, x):
        return self.g.typeof(x).shape

    def scalar(self, v, like):
        """A Python number as a constant of ``like``'s dtype."""
        return self.g.const(v, self.g.typeof(like).dtype)


# ---------------------------------------------------------------- element-wise


_UNARY = {"aten.relu.default": "nn.relu", "aten.tanh.default": "tanh", "aten.sigmoid.default": "sigmoid",
          "aten.exp.default": "exp", "aten.neg.default": "negative", "aten.sqrt.default": "sqrt",
          "aten.rsqrt.default": "rsqrt", "aten.abs.default": "abs"}


@_op(*_UNARY)
def _unary(ctx, target, x):
    return ctx.g.call(_UNARY[target], x)


@_op("aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.contiguous.default",
     "aten.dropout.default", "aten.lift_fresh_copy.default")
def _identity(ctx, target, x, *rest, **kw):
    return x


_BINARY = {"aten.add.Tensor": "add", "aten.sub.Tensor": "subtract", "aten.mul.Tensor": "multiply",
           "aten.div.Tensor": "divide", "aten.maximum.default": "maximum", "aten.minimum.default": "minimum",
           "aten.add.Scalar": "add", "aten.mul.Scalar": "multiply", "aten.sub.Scalar": "subtract",
           "aten.div.Scalar": "divide"}


@_op(*_BINARY)
def _binary(ctx, target, a, b, alpha=1):
    if not isinstance(a, (int, float)) and isinstance(b, (int, float)):
        b = ctx.scalar(b, a)
    elif isinstance(a, (int, float)):
        a = ctx.scalar(a, b)
    if alpha != 1:
        b = ctx.g.call("multiply", b, ctx.scalar(alpha, b))
    return ctx.g.call(_BINARY[target], a, b)


@_op("aten.hardtanh.default", "aten.clamp.default")
def _clamp(ctx, target, x, lo=None, hi=None):
    if target == "aten.hardtanh.default":
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    big = float(np.finfo(np.float32).max)
    return ctx.g.call("clip", x, a_min=float(-big if lo is None else lo), a_max=float(big if hi is None else hi))


@_op("aten.leaky_relu.default")
def _leaky_relu(ctx, target, x, slope=0.01):
    return ctx.g.call("nn.leaky_relu", x, alpha=float(slope))


@_op("aten._softmax.default", "aten.softmax.int", "aten._log_softmax.default", "aten.log_softmax.int")
def _softmax(ctx, target, x, dim, *rest):
    op = "nn.log_softmax" if "log" in target else "nn.softmax"
    return ctx.g.call(op, x, axis=int(dim))


# ---------------------------------------------------------------- convolution, dense, batch norm


@_op("aten.convolution.default")
def _convolution(ctx, target, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    ws = ctx.shape(w)
    if len(ws) != 4:
        raise _NodeError(f"only 2-D convolution is supported, got a weight of shape {ws}")
    pad = tuple(padding) * (2 // len(padding)) if len(padding) in (1, 2) else tuple(padding)
    if transposed:
        y = ctx.g.call("nn.conv2d_transpose", x, w, strides=tuple(stride), padding=pad,
                       output_padding=tuple(output_padding), dilation=tuple(dilation), groups=int(groups),
                       channels=ws[1] * groups, kernel_size=tuple(ws[2:]))
    else:
        y = ctx.g.call("nn.conv2d", x, w, strides=tuple(stride), padding=pad, dilation=tuple(dilation),
                       groups=int(groups), channels=ws[0], kernel_size=tuple(ws[2:]))
    return y if b is None else ctx.g.call("nn.bias_add", y, b, axis=1)


@_op("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(ctx, target, x, weight, bias, mean, var, momentum, eps):
    c = ctx.shape(x)[1]
    weight = weight if weight is not None else Const(np.ones(c, "float32"))
    bias = bias if bias is not None else Const(np.zeros(c, "float32"))
    y = ctx.g.call("nn.batch_norm", x, weight, bias, mean, var, axis=1, epsilon=float(eps))
    return (y if isinstance(y, Const) else ctx.g.item(y, 0), None, None)


def _weight_of(ctx, w_t):
    """The (units, in) weight of ``x @ w_t``: a constant is transposed at import time and keeps
    the name of the state-dict entry it came from."""
    if isinstance(w_t, Const):
        name = w_t.name[:-len("_transpose")] if w_t.name and w_t.name.endswith("_transpose") else w_t.name
        return Const(np.ascontiguousarray(w_t.array.T), name and (name if name != w_t.name else name + "_t"))
    return ctx.g.call("transpose", w_t, axes=(1, 0))


@_op("aten.addmm.default")
def _addmm(ctx, target, bias, x, w_t, beta=1, alpha=1):
    w = _weight_of(ctx, w_t)
    if alpha != 1:
        w = ctx.g.call("multiply", w, ctx.scalar(alpha, w))
    y = ctx.g.call("nn.dense", x, w, units=ctx.shape(w)[0])
    if beta != 1:
        bias = ctx.g.call("multiply", bias, ctx.scalar(beta, bias))
    bt = ctx.g.typeof(bias)
    return ctx.g.call("nn.bias_add", y, bias, axis=-1) if bt.ndim == 1 else ctx.g.call("add", y, bias)


@_op("aten.mm.default")
def _mm(ctx, target, x, w_t):
    w = _weight_of(ctx, w_t)
    return ctx.g.call("nn.dense", x, w, units=ctx.shape(w)[0])


@_op("aten.linear.default")
def _linear(ctx, target, x, w, b=None):
    y = ctx.g.call("nn.dense", x, w, units=ctx.shape(w)[0])
    return y if b is None else ctx.g.call("nn.bias_add", y, b, axis=-1)


@_op("aten.bmm.default", "aten.matmul.default")
def _matmul(ctx, target, a, b):
    return ctx.g.call("nn.matmul", a, b)


# ---------------------------------------------------------------- pooling


def _pair(v, default):
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return default
    v = tuple(v) if isinstance(v, (list, tuple)) else (v,)
    return v * 2 if len(v) == 1 else v


@_op("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool(ctx, target, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    k = _pair(kernel, None)
    p = _pair(padding, (0, 0))
    y = ctx.g.call("nn.max_pool2d", x, pool_size=k, strides=_pair(stride, k), padding=p,
                   dilation=_pair(dilation, (1, 1)), ceil_mode=bool(ceil_mode))
    return (y, None) if target.endswith("with_indices.default") else y


@_op("aten.avg_pool2d.default")
def _avg_pool(ctx, target, x, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    if divisor_override is not None:
        raise _NodeError("divisor_override is not supported")
    k = _pair(kernel, None)
    return ctx.g.call("nn.avg_pool2d", x, pool_size=k, strides=_pair(stride, k), padding=_pair(padding, (0, 0)),
                      ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad))


@_op("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool(ctx, target, x, size):
    if tuple(size) != (1, 1):
        raise _NodeError(f"adaptive average pooling to {list(size)} is not supported (only (1, 1))")
    return ctx.g.call("nn.global_avg_pool2d", x)


@_op("aten.mean.dim", "aten.sum.dim_IntList", "aten.amax.default")
def _reduce(ctx, target, x, dims=None, keepdim=False, dtype=None):
    rank = len(ctx.shape(x))
    axes = None if dims is None else sorted(int(d) % rank for d in dims)
    if target == "aten.mean.dim" and rank == 4 and axes == [2, 3] and keepdim:
        return ctx.g.call("nn.global_avg_pool2d", x)
    op = {"aten.mean.dim": "mean", "aten.sum.dim_IntList": "sum", "aten.amax.default": "max"}[target]
    return ctx.g.call(op, x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdim))


# ---------------------------------------------------------------- shapes


def _resolve_shape(src, shape):
    shape = [int(d) for d in shape]
    if -1 in shape:
        rest = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = math.prod(src) // rest
    return tuple(shape)


@_op("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default")
def _view(ctx, target, x, shape):
    return ctx.g.call("reshape", x, newshape=_resolve_shape(ctx.shape(x), shape))


@_op("aten.flatten.using_ints")
def _flatten(ctx, target, x, start=0, end=-1):
    s = ctx.shape(x)
    start, end = start % len(s), end % len(s)
    return ctx.g.call("reshape", x, newshape=tuple(s[:start]) + (math.prod(s[start:end + 1]),) + tuple(s[end + 1:]))


@_op("aten.permute.default")
def _permute(ctx, target, x, dims):
    return ctx.g.call("transpose", x, axes=tuple(int(d) for d in dims))


@_op("aten.t.default")
def _t(ctx, target, x):
    return ctx.g.call("transpose", x, axes=(1, 0))


@_op("aten.cat.default")
def _cat(ctx, target, xs, dim=0):
    return ctx.g.call("concatenate", list(xs), axis=int(dim))


@_op("aten.unsqueeze.default")
def _unsqueeze(ctx, target, x, dim):
    return ctx.g.call("expand_dims", x, axis=int(dim))


@_op("aten.squeeze.dims", "aten.squeeze.dim")
def _squeeze(ctx, target, x, dims):
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    s = ctx.shape(x)
    dims = tuple(d for d in dims if s[d] == 1)   # torch ignores non-unit axes
    return ctx.g.call("squeeze", x, axis=dims) if dims else x


@_op("aten.slice.Tensor")
def _slice(ctx, target, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else int(start)
    end = 2 ** 62 if end is None else int(end)
    return ctx.g.call("strided_slice", x, begin=(start,), end=(end,), strides=(int(step),), axes=(int(dim),))


@_op("aten.constant_pad_nd.default")
def _pad(ctx, target, x, pad, value=0.0):
    rank = len(ctx.shape(x))
    width = [[0, 0] for _ in range(rank)]
    for i in range(len(pad) // 2):          # torch lists (before, after) from the last axis backwards
        width[rank - 1 - i] = [int(pad[2 * i]), int(pad[2 * i + 1])]
    return ctx.g.call("nn.pad", x, pad_width=tuple(map(tuple, width)), pad_value=float(value))


@_op("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample(ctx, target, x, size=None, scales=None, *rest):
    s = ctx.shape(x)
    if size is None:
        scales = list(scales)
        size = [int(math.floor(s[2] * scales[0])), int(math.floor(s[3] * scales[1]))]
    return ctx.g.call("image.resize2d", x, size=tuple(int(v) for v in size),
                      coordinate_transformation_mode="asymmetric", rounding_method="floor")


SUPPORTED_OPS = tuple(sorted(_TABLE)) + ("getitem",)


# ---------------------------------------------------------------- the driver


def _target_name(node):
    if node.target is operator.getitem:
        return "getitem"
    return str(node.target)


def _validate(gm, name):
    for node in gm.graph.nodes:
        if node.op == "call_function":
            t = _target_name(node)
            if t != "getitem" and t not in _TABLE:
                raise UnsupportedOperator(f"operator {t} (node {node.name!r} of model {name!r}) is not supported")
            for pos, arg, default, allowed in _ARG_CHECKS.get(t, ()):
                v = node.args[pos] if len(node.args) > pos else node.kwargs.get(arg, default)
                if v not in allowed:
                    raise UnsupportedOperator(f"argument {arg}={v!r} of operator {t} (node {node.name!r} of model "
                                              f"{name!r}) is not supported")
            if t == "aten.convolution.default" and node.args[6]:
                try:
                    get_op("nn.conv2d_transpose")
                except KeyError:
                    raise UnsupportedOperator(f"transposed convolution (node {node.name!r} of model {name!r}) needs "
                                              "the Relay operator nn.conv2d_transpose, which this build does not "
                                              "have") from None
        elif node.op not in ("placeholder", "output", "get_attr"):
            raise UnsupportedOperator(f"graph node kind {node.op} (node {node.name!r} of model {name!r}) "
                                      "is not supported")


def from_pytorch(program, name=None):
    """Convert a ``torch.export.ExportedProgram`` into ``(IRModule, params)``."""
    torch = _torch()
    if not isinstance(program, torch.export.ExportedProgram):
        raise FrontendError(f"expected a torch.export.ExportedProgram, got {type(program).__name__}")
    name = name or "model"
    try:
        program = program.run_decompositions()
    except Exception as e:  # torch raises many kinds here; the message is what matters
        raise FrontendError(f"model {name!r}: torch could not decompose the program: {e}") from None
    gm, sig = program.graph_module, program.graph_signature
    _validate(gm, name)

    from torch.export.graph_signature import InputKind
    g = GraphBuilder()
    ctx = _Ctx(g, name)
    env = {}
    specs = {s.arg.name: s for s in sig.input_specs}
    state = dict(program.state_dict)
    state.update(program.constants)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            spec = specs[node.name]
            if spec.kind == InputKind.USER_INPUT:
                val = node.meta.get("val")
                if val is None or not hasattr(val, "shape"):
                    raise FrontendError(f"model {name!r}: input {node.name!r} is not a tensor")
                env[node.name] = g.add_input(node.name, tuple(int(d) for d in val.shape), _dtype(val.dtype))
            else:
                t = state[spec.target]
                env[node.name] = Const(t.detach().cpu().numpy().copy(), spec.target)
        elif node.op == "call_function":
            args = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n.name])
            t = _target_name(node)
            try:
                if t == "getitem":
                    src, i = args
                    out = src[i] if isinstance(src, (tuple, list)) else g.item(src, i)
                    if out is None:
                        raise _NodeError("uses an output this frontend does not compute (e.g. pooling indices)")
                else:
                    out = _TABLE[t](ctx, t, *args, **{k: v for k, v in kwargs.items() if k not in ("dtype", "layout",
                                                                                                   "device", "memory_format")})
            except (_NodeError, FrontendError) as e:
                cls = type(e) if isinstance(e, FrontendError) else UnsupportedOperator
                raise cls(f"node {node.name!r} ({t}) of model {name!r}: {e}") from None
            env[node.name] = out
        elif node.op == "output":
            outs = torch.fx.node.map_arg(node.args[0], lambda n: env[n.name])
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    mod, params = g.module(outs)
    try:
        check_module(mod)
    except RelayTypeError as e:
        raise FrontendError(f"model {name!r} converted to an ill-typed program (a frontend bug): {e}") from None
    return mod, params


@contextlib.contextmanager
def _weights_only(torch):
    """torch.export.load falls back to unpickling arbitrary objects when a weights-only load fails;
    an untrusted file must never be unpickled, so the fallback is closed while loading."""
    original = torch.load

    def load(*args, **kwargs):
        kwargs["weights_only"] = True
        return original(*args, **kwargs)
    torch.load = load
    try:
        yield
    finally:
        torch.load = original


def load_pytorch(path):
    """Read a ``.pt2`` written by ``torch.export.save`` and convert it."""
    torch = _torch()
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"cannot read {path}: no such file")
    try:
        with _weights_only(torch):
            program = torch.export.load(str(path))
    except Exception as e:  # zipfile, json and torch errors alike: the file is not a valid program
        raise FrontendError(f"cannot read {path} as a torch.export program: {e}") from None
    return from_pytorch(program, name=path.stem)
