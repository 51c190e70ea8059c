"""Element-wise, broadcasting, cast, reduction and tensor-creation operators."""
from __future__ import annotations

import numpy as np

from ..ty import ANY, TensorType, check_dtype
from ._common import as_tensor, dim_str, known, norm_axes
from .registry import REQUIRED, NotReady, OpPattern, RelationError, backward, register_op, relation

# ---------------------------------------------------------------- relations


@relation("Identity")
def identity_rel(args, attrs):
    """The output has the type of the (first) input."""
    return as_tensor(args[0], "data")


@backward("Identity")
def identity_backward(args, out, attrs):
    """The input's type from the output's (TVM's relations assign both ways)."""
    if not isinstance(out, TensorType):
        raise NotReady("output")
    return {0: out}


def broadcast_shape(a, b):
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if known(da) and known(db):
            if da == db or db == 1:
                out.append(da)
            elif da == 1:
                out.append(db)
            else:
                raise RelationError(
                    f"shapes ({', '.join(map(dim_str, a))}) and ({', '.join(map(dim_str, b))}) "
                    f"are not broadcast-compatible: dimension {-i} is {da} in one and {db} in the other")
        elif known(da) and da != 1:
            out.append(da)
        elif known(db) and db != 1:
            out.append(db)
        else:
            out.append(ANY)
    return tuple(reversed(out))


def _same_dtype(ts):
    dts = {t.dtype for t in ts}
    if len(dts) > 1:
        raise RelationError(f"operand dtypes differ: {', '.join(t.dtype for t in ts)}")
    return ts[0].dtype


@relation("Broadcast")
def broadcast_rel(args, attrs):
    """numpy broadcasting of the two input shapes; the dtypes must agree."""
    a, b = as_tensor(args[0], "lhs"), as_tensor(args[1], "rhs")
    return TensorType(broadcast_shape(a.shape, b.shape), _same_dtype([a, b]))


@relation("BroadcastComp")
def broadcast_comp_rel(args, attrs):
    """Broadcasting comparison: like Broadcast, with a bool result."""
    t = broadcast_rel(args, attrs)
    return TensorType(t.shape, "bool")


@relation("Where")
def where_rel(args, attrs):
    """``where(cond, x, y)``: cond is bool; the three shapes broadcast together."""
    c, x, y = (as_tensor(t, w) for t, w in zip(args, ("condition", "x", "y")))
    if c.dtype != "bool":
        raise RelationError(f"condition must be bool, not {c.dtype}")
    shape = broadcast_shape(broadcast_shape(c.shape, x.shape), y.shape)
    return TensorType(shape, _same_dtype([x, y]))


@relation("Cast")
def cast_rel(args, attrs):
    """Same shape, element type ``attrs.dtype``."""
    t = as_tensor(args[0], "data")
    try:
        return TensorType(t.shape, check_dtype(attrs["dtype"]))
    except ValueError as e:
        raise RelationError(str(e)) from None


@relation("Reduce")
def reduce_rel(args, attrs):
    """Removes (or keeps as 1 with ``keepdims``) the reduced axes."""
    t = as_tensor(args[0], "data")
    axes = norm_axes(attrs["axis"], t.ndim)
    if attrs["exclude"]:
        axes = [i for i in range(t.ndim) if i not in axes]
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    else:
        shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return TensorType(shape, t.dtype)


@relation("ArgReduce")
def arg_reduce_rel(args, attrs):
    """Like Reduce, with int32 indices as the result (TVM's ArgReduceRel)."""
    t = reduce_rel(args, attrs)
    return TensorType(t.shape, "int32")


@relation("BroadcastTo")
def broadcast_to_rel(args, attrs):
    """The output has shape ``attrs.shape``, to which the input must broadcast."""
    t = as_tensor(args[0], "data")
    shape = tuple(attrs["shape"])
    if broadcast_shape(t.shape, shape) != shape:
        raise RelationError(f"shape ({', '.join(map(dim_str, t.shape))}) does not broadcast to {list(shape)}")
    return TensorType(shape, t.dtype)


@relation("Full")
def full_rel(args, attrs):
    """A tensor of shape ``attrs.shape`` and type ``attrs.dtype``."""
    try:
        return TensorType(tuple(attrs["shape"]), check_dtype(attrs["dtype"]))
    except (ValueError, TypeError) as e:
        raise RelationError(str(e)) from None


@relation("Like")
def like_rel(args, attrs):
    """The output has the type of the second input (``collapse_sum_like``, ``broadcast_to_like``)."""
    data, like = as_tensor(args[0], "data"), as_tensor(args[1], "like")
    if data.dtype != like.dtype:
        raise RelationError(f"dtypes differ: {data.dtype} and {like.dtype}")
    broadcast_shape(data.shape, like.shape)
    return like


# ---------------------------------------------------------------- kernels


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _divide(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
        return (np.sign(a) * np.sign(b) * q).astype(a.dtype)   # C-style truncation, as TVM
    return np.divide(a, b).astype(a.dtype)


def _sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


_UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "sigmoid": _sigmoid,
    "negative": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
    "round": _round_half_away, "copy": np.copy, "sign": np.sign,
    "rsqrt": lambda x: 1 / np.sqrt(x), "nn.relu": lambda x: np.maximum(x, 0),
    "zeros_like": np.zeros_like, "ones_like": np.ones_like, "logical_not": np.logical_not,
}

for _name, _fn in _UNARY.items():
    def _make(fn, name):
        def compute(args, attrs):
            return np.asarray(fn(args[0])).astype(args[0].dtype)
        compute.__doc__ = f"Element-wise {name}."
        return compute
    register_op(_name, num_inputs=1, relation="Identity", pattern=OpPattern.ELEMWISE)(_make(_fn, _name))


@register_op("nn.leaky_relu", num_inputs=1, relation="Identity", pattern=OpPattern.ELEMWISE,
             attrs={"alpha": 0.25})
def _leaky_relu(args, attrs):
    """x if x > 0 else alpha * x."""
    x = args[0]
    return np.where(x > 0, x, x * attrs["alpha"]).astype(x.dtype)


@register_op("clip", num_inputs=1, relation="Identity", pattern=OpPattern.ELEMWISE,
             attrs={"a_min": REQUIRED, "a_max": REQUIRED})
def _clip(args, attrs):
    """Clamp every element to [a_min, a_max]."""
    return np.clip(args[0], attrs["a_min"], attrs["a_max"]).astype(args[0].dtype)


@register_op("cast", num_inputs=1, relation="Cast", pattern=OpPattern.ELEMWISE, attrs={"dtype": REQUIRED})
def _cast(args, attrs):
    """Convert the element type (float to int truncates towards zero, as C does)."""
    return args[0].astype(attrs["dtype"])


_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "right_shift": np.right_shift, "left_shift": np.left_shift,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}
_COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}

for _name, _fn in _BINARY.items():
    def _make(fn, name):
        def compute(args, attrs):
            a, b = args
            return np.asarray(fn(a, b)).astype(a.dtype)
        compute.__doc__ = f"Broadcasting {name}."
        return compute
    register_op(_name, num_inputs=2, relation="Broadcast", pattern=OpPattern.BROADCAST)(_make(_fn, _name))

for _name, _fn in _COMPARE.items():
    def _make(fn, name):
        def compute(args, attrs):
            return np.asarray(fn(args[0], args[1]))
        compute.__doc__ = f"Broadcasting comparison {name}."
        return compute
    register_op(_name, num_inputs=2, relation="BroadcastComp", pattern=OpPattern.BROADCAST)(_make(_fn, _name))


@register_op("where", num_inputs=3, relation="Where", pattern=OpPattern.BROADCAST)
def _where(args, attrs):
    """Select from x where cond holds, else from y."""
    return np.where(*args).astype(args[1].dtype)


_REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
_REDUCE_ATTRS = {"axis": None, "keepdims": False, "exclude": False}

for _name, _fn in _REDUCE.items():
    def _make(fn, name):
        def compute(args, attrs):
            x = args[0]
            axes = norm_axes(attrs["axis"], x.ndim)
            if attrs["exclude"]:
                axes = [i for i in range(x.ndim) if i not in axes]
            return np.asarray(fn(x, axis=tuple(axes), keepdims=bool(attrs["keepdims"]))).astype(x.dtype)
        compute.__doc__ = f"Reduce with {name} over ``axis``."
        return compute
    register_op(_name, num_inputs=1, relation="Reduce", pattern=OpPattern.COMM_REDUCE,
                attrs=_REDUCE_ATTRS)(_make(_fn, _name))


def _arg_reduce(fn):
    def compute(args, attrs):
        x = args[0]
        axes = norm_axes(attrs["axis"], x.ndim)
        if attrs["exclude"]:
            axes = [i for i in range(x.ndim) if i not in axes]
        keep = [i for i in range(x.ndim) if i not in axes]
        # move the reduced axes last and flatten them: the index is into their row-major order
        y = x.transpose(keep + axes).reshape([x.shape[i] for i in keep] + [-1])
        if attrs["select_last_index"]:
            idx = y.shape[-1] - 1 - fn(y[..., ::-1], axis=-1)
        else:
            idx = fn(y, axis=-1)
        if attrs["keepdims"]:
            idx = idx.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        return np.asarray(idx, dtype="int32")
    compute.__doc__ = f"Index of the {fn.__name__[3:]} over ``axis``."
    return compute


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register_op(_name, num_inputs=1, relation="ArgReduce", pattern=OpPattern.COMM_REDUCE,
                attrs=dict(_REDUCE_ATTRS, select_last_index=False))(_arg_reduce(_fn))


@register_op("broadcast_to", num_inputs=1, relation="BroadcastTo", pattern=OpPattern.BROADCAST,
             attrs={"shape": REQUIRED})
def _broadcast_to(args, attrs):
    """Broadcast the input to ``shape``."""
    return np.broadcast_to(args[0], tuple(attrs["shape"])).copy()


@register_op("zeros", num_inputs=0, relation="Full", pattern=OpPattern.ELEMWISE,
             attrs={"shape": REQUIRED, "dtype": "float32"})
def _zeros(args, attrs):
    """A tensor of zeros."""
    return np.zeros(attrs["shape"], attrs["dtype"])


@register_op("ones", num_inputs=0, relation="Full", pattern=OpPattern.ELEMWISE,
             attrs={"shape": REQUIRED, "dtype": "float32"})
def _ones(args, attrs):
    """A tensor of ones."""
    return np.ones(attrs["shape"], attrs["dtype"])


def collapse_sum(x, shape):
    """Sum ``x`` down to ``shape`` (the inverse of broadcasting ``shape`` to ``x.shape``)."""
    lead = x.ndim - len(shape)
    x = x.sum(axis=tuple(range(lead))) if lead else x
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True) if axes else x


@register_op("collapse_sum_like", num_inputs=2, relation="Like", pattern=OpPattern.COMM_REDUCE)
def _collapse_sum_like(args, attrs):
    """Sum the first input down to the shape of the second."""
    return np.asarray(collapse_sum(args[0], args[1].shape)).astype(args[1].dtype)


@register_op("broadcast_to_like", num_inputs=2, relation="Like", pattern=OpPattern.BROADCAST)
def _broadcast_to_like(args, attrs):
    """Broadcast the first input to the shape of the second."""
    return np.broadcast_to(args[0], args[1].shape).copy()
