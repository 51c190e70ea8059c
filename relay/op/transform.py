"""Shape-changing operators: reshape, transpose, concatenate, squeeze, expand_dims, layout_transform."""
from __future__ import annotations

import math

import numpy as np

from ..ty import ANY, IncompleteType, TensorType, TupleType
from ._common import (as_tensor, dim_str, known, layout_array_transform, layout_shape_transform,
                      norm_axis, norm_axes)
from .registry import REQUIRED, NotReady, OpPattern, RelationError, register_op, relation


def _shape_str(s):
    return "(" + ", ".join(map(dim_str, s)) + ")"


def _prod(a, b):
    return a * b if known(a) and known(b) else ANY


def reshape_shape(shape, newshape):
    """TVM ``newshape`` semantics: 0 copies a dimension, -1 is inferred, -2 copies the rest,
    -3 merges the next two dimensions, -4 splits the next dimension in the two values after it
    (one of which may be -1)."""
    newshape = list(newshape)
    out, i, infer, j = [], 0, None, 0

    def take_dim(what):
        nonlocal i
        if i >= len(shape):
            raise RelationError(f"newshape {newshape}: {what} at position {j} has no input dimension left")
        i += 1
        return shape[i - 1]
    while j < len(newshape):
        d = newshape[j]
        if d > 0:
            out.append(d)
            i += 1
        elif d == 0:
            out.append(take_dim("0"))
        elif d == -1:
            if infer is not None:
                raise RelationError(f"newshape {newshape} has more than one -1")
            infer = len(out)
            out.append(None)
            i += 1
        elif d == -2:
            out.extend(shape[i:])
            i = len(shape)
        elif d == -3:
            a = take_dim("-3")
            out.append(_prod(a, take_dim("-3")))
        elif d == -4:
            if j + 2 >= len(newshape):
                raise RelationError(f"newshape {newshape}: -4 at position {j} needs two values after it")
            whole = take_dim("-4")
            d1, d2 = newshape[j + 1], newshape[j + 2]
            if d1 == -1 and d2 == -1 or min(d1, d2) < -1 or 0 in (d1, d2):
                raise RelationError(f"newshape {newshape}: -4 must be followed by two sizes, at most one -1")
            if known(whole):
                if d1 == -1:
                    d1 = whole // d2 if whole % d2 == 0 else None
                elif d2 == -1:
                    d2 = whole // d1 if whole % d1 == 0 else None
                if d1 is None or d2 is None or d1 * d2 != whole:
                    raise RelationError(f"newshape {newshape}: -4 cannot split dimension {whole} "
                                        f"into {newshape[j + 1]} x {newshape[j + 2]}")
            out += [ANY if d1 == -1 else d1, ANY if d2 == -1 else d2]
            j += 2
        else:
            raise RelationError(f"newshape {newshape}: unsupported value {d}")
        j += 1
    if all(known(d) for d in shape):
        total = math.prod(shape)
        rest = math.prod(d for d in out if d is not None and known(d))
        if infer is not None:
            if rest == 0 or total % rest:
                raise RelationError(f"cannot reshape {_shape_str(shape)} to {newshape}")
            out[infer] = total // rest
        elif total != rest:
            raise RelationError(f"cannot reshape {_shape_str(shape)} ({total} elements) to "
                                f"{_shape_str(out)} ({rest} elements)")
    elif infer is not None:
        out[infer] = ANY
    return tuple(out)


@relation("Reshape")
def reshape_rel(args, attrs):
    """The element count is preserved; see ``reshape_shape`` for the special values."""
    t = as_tensor(args[0], "data")
    return TensorType(reshape_shape(t.shape, attrs["newshape"]), t.dtype)


@register_op("reshape", num_inputs=1, relation="Reshape", pattern=OpPattern.INJECTIVE,
             attrs={"newshape": REQUIRED, "allowzero": 0})
def _reshape(args, attrs):
    """Reshape (row-major order is kept)."""
    return args[0].reshape(reshape_shape(args[0].shape, attrs["newshape"]))


def _axes(axes, ndim):
    if axes is None or len(axes) == 0:
        return list(reversed(range(ndim)))
    if len(axes) != ndim:
        raise RelationError(f"axes {list(axes)} must list all {ndim} axes")
    out = norm_axes(axes, ndim)
    return out


@relation("Transpose")
def transpose_rel(args, attrs):
    """Permutes the dimensions (``axes=None`` reverses them)."""
    t = as_tensor(args[0], "data")
    return TensorType(tuple(t.shape[a] for a in _axes(attrs["axes"], t.ndim)), t.dtype)


@register_op("transpose", num_inputs=1, relation="Transpose", pattern=OpPattern.INJECTIVE, attrs={"axes": None})
def _transpose(args, attrs):
    """Permute dimensions."""
    return np.ascontiguousarray(args[0].transpose(_axes(attrs["axes"], args[0].ndim)))


@relation("Concat")
def concat_rel(args, attrs):
    """Sums the concatenated axis and checks that the other dimensions and the dtypes agree."""
    tup = args[0]
    if isinstance(tup, IncompleteType):
        raise NotReady("data")
    if not isinstance(tup, TupleType) or not tup.fields:
        raise RelationError(f"concatenate takes a non-empty tuple of tensors, got {tup}")
    ts = [as_tensor(f, f"field {i}") for i, f in enumerate(tup.fields)]
    ndim = ts[0].ndim
    axis = norm_axis(attrs["axis"], ndim)
    shape = list(ts[0].shape)
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != ndim:
            raise RelationError(f"field {i} has rank {t.ndim} but field 0 has rank {ndim}")
        if t.dtype != ts[0].dtype:
            raise RelationError(f"field {i} is {t.dtype} but field 0 is {ts[0].dtype}")
        for a in range(ndim):
            if a == axis:
                shape[a] = shape[a] + t.shape[a] if known(shape[a]) and known(t.shape[a]) else ANY
            elif known(shape[a]) and known(t.shape[a]) and shape[a] != t.shape[a]:
                raise RelationError(f"field {i} has dimension {t.shape[a]} on axis {a} but field 0 has {shape[a]}")
    return TensorType(tuple(shape), ts[0].dtype)


@register_op("concatenate", num_inputs=1, relation="Concat", pattern=OpPattern.INJECTIVE, attrs={"axis": 0})
def _concatenate(args, attrs):
    """Join a tuple of tensors along ``axis``."""
    return np.concatenate(list(args[0]), axis=attrs["axis"])


@relation("Squeeze")
def squeeze_rel(args, attrs):
    """Removes the listed size-1 axes (all size-1 axes when ``axis`` is None)."""
    t = as_tensor(args[0], "data")
    if attrs["axis"] is None:
        if not t.concrete:
            raise RelationError("squeeze without axis needs a fully known shape")
        return TensorType(tuple(d for d in t.shape if d != 1), t.dtype)
    axes = norm_axes(attrs["axis"], t.ndim)
    for a in axes:
        if known(t.shape[a]) and t.shape[a] != 1:
            raise RelationError(f"cannot squeeze axis {a} of size {t.shape[a]}")
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in axes), t.dtype)


@register_op("squeeze", num_inputs=1, relation="Squeeze", pattern=OpPattern.INJECTIVE, attrs={"axis": None})
def _squeeze(args, attrs):
    """Remove size-1 axes."""
    x = args[0]
    axes = tuple(norm_axes(attrs["axis"], x.ndim)) if attrs["axis"] is not None else None
    if axes is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    return x.reshape([d for i, d in enumerate(x.shape) if i not in axes])


@relation("ExpandDims")
def expand_dims_rel(args, attrs):
    """Inserts ``num_newaxis`` size-1 axes at ``axis``."""
    t = as_tensor(args[0], "data")
    axis = attrs["axis"]
    if not -t.ndim - 1 <= axis <= t.ndim:
        raise RelationError(f"axis {axis} is out of range for expand_dims of a rank-{t.ndim} tensor")
    axis = axis % (t.ndim + 1)
    n = attrs["num_newaxis"]
    return TensorType(t.shape[:axis] + (1,) * n + t.shape[axis:], t.dtype)


@register_op("expand_dims", num_inputs=1, relation="ExpandDims", pattern=OpPattern.BROADCAST,
             attrs={"axis": REQUIRED, "num_newaxis": 1})
def _expand_dims(args, attrs):
    """Insert size-1 axes."""
    x = args[0]
    axis = attrs["axis"] % (x.ndim + 1)
    return x.reshape(x.shape[:axis] + (1,) * attrs["num_newaxis"] + x.shape[axis:])


@relation("LayoutTransform")
def layout_transform_rel(args, attrs):
    """Regroups axes between layouts such as NCHW and NCHW1n16c (split axes must divide)."""
    t = as_tensor(args[0], "data")
    return TensorType(layout_shape_transform(t.shape, attrs["src_layout"], attrs["dst_layout"]), t.dtype)


@register_op("layout_transform", num_inputs=1, relation="LayoutTransform", pattern=OpPattern.INJECTIVE,
             attrs={"src_layout": REQUIRED, "dst_layout": REQUIRED})
def _layout_transform(args, attrs):
    """Convert between layouts, e.g. NCHW -> NCHW1n16c or OIHW -> OIHW16o16i."""
    return layout_array_transform(args[0], attrs["src_layout"], attrs["dst_layout"])


@relation("BatchFlatten")
def batch_flatten_rel(args, attrs):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...)."""
    t = as_tensor(args[0], "data")
    if t.ndim < 1:
        raise RelationError("batch_flatten needs a tensor of rank >= 1")
    rest = t.shape[1:]
    return TensorType((t.shape[0], math.prod(rest) if all(known(d) for d in rest) else ANY), t.dtype)


@register_op("nn.batch_flatten", num_inputs=1, relation="BatchFlatten", pattern=OpPattern.INJECTIVE)
def _batch_flatten(args, attrs):
    """Flatten every axis but the first."""
    return args[0].reshape(args[0].shape[0], -1)


@relation("Take")
def take_rel(args, attrs):
    """``indices``' shape replaces ``axis`` of the data (of the flattened data without one)."""
    data, idx = as_tensor(args[0], "data"), as_tensor(args[1], "indices")
    if not idx.dtype.startswith(("int", "uint")):
        raise RelationError(f"indices must be integers, not {idx.dtype}")
    if attrs["batch_dims"] != 0:
        raise RelationError(f"batch_dims={attrs['batch_dims']} is not supported (only 0)")
    if attrs["mode"] not in ("clip", "wrap", "fast"):
        raise RelationError(f"mode must be clip, wrap or fast, got {attrs['mode']!r}")
    if attrs["axis"] is None:
        return TensorType(idx.shape, data.dtype)
    axis = norm_axis(attrs["axis"], data.ndim)
    return TensorType(data.shape[:axis] + idx.shape + data.shape[axis + 1:], data.dtype)


@register_op("take", num_inputs=2, relation="Take", pattern=OpPattern.INJECTIVE,
             attrs={"axis": None, "batch_dims": 0, "mode": "clip"})
def _take(args, attrs):
    """Gather ``indices`` along ``axis``; out-of-range indices are clipped (or wrap)."""
    x, idx = args
    if attrs["axis"] is None:
        x, axis = x.reshape(-1), 0
    else:
        axis = attrs["axis"] % x.ndim
    mode = "wrap" if attrs["mode"] == "wrap" else "clip"
    return np.take(x, idx.astype(np.int64), axis=axis, mode=mode)
