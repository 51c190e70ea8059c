"""Slicing and gathering: ``strided_slice`` and ``take`` (what ONNX Slice and Gather become)."""
from __future__ import annotations

import numpy as np

from ..ty import ANY, TensorType
from ._common import as_tensor, known, norm_axis
from .registry import REQUIRED, OpPattern, RelationError, register_op, relation


def _slices(shape, attrs):
    """One ``slice`` per axis from (begin, end, strides, axes), numpy/ONNX clamping rules."""
    begin, end = list(attrs["begin"]), list(attrs["end"])
    strides = list(attrs["strides"]) if attrs["strides"] else [1] * len(begin)
    axes = list(attrs["axes"]) if attrs["axes"] is not None else list(range(len(begin)))
    if not len(begin) == len(end) == len(strides) == len(axes):
        raise RelationError(f"begin {begin}, end {end}, strides {strides} and axes {axes} differ in length")
    out = [slice(None)] * len(shape)
    for b, e, s, a in zip(begin, end, strides, axes):
        a = norm_axis(a, len(shape))
        if s == 0:
            raise RelationError(f"stride 0 on axis {a}")
        out[a] = slice(b, e, s)
    return out


@relation("StridedSlice")
def strided_slice_rel(args, attrs):
    """Each sliced axis keeps ``len(range(begin, end, stride))`` elements after clamping."""
    t = as_tensor(args[0], "data")
    sl = _slices(t.shape, attrs)
    shape = tuple(len(range(*s.indices(d))) if known(d) else ANY for s, d in zip(sl, t.shape))
    return TensorType(shape, t.dtype)


@register_op("strided_slice", num_inputs=1, relation="StridedSlice", pattern=OpPattern.INJECTIVE,
             attrs={"begin": REQUIRED, "end": REQUIRED, "strides": None, "axes": None})
def _strided_slice(args, attrs):
    """x[begin:end:stride] on the listed axes (out-of-range bounds clamp, as in numpy)."""
    x = args[0]
    return np.ascontiguousarray(x[tuple(_slices(x.shape, attrs))])


@relation("Take")
def take_rel(args, attrs):
    """``take(data, indices, axis)``: the indexed axis is replaced by the indices' shape."""
    data, idx = as_tensor(args[0], "data"), as_tensor(args[1], "indices")
    if not idx.dtype.startswith(("int", "uint")):
        raise RelationError(f"indices must be integers, not {idx.dtype}")
    a = norm_axis(attrs["axis"], data.ndim)
    return TensorType(data.shape[:a] + idx.shape + data.shape[a + 1:], data.dtype)


@register_op("take", num_inputs=2, relation="Take", pattern=OpPattern.INJECTIVE, attrs={"axis": 0})
def _take(args, attrs):
    """Gather along ``axis``; negative indices count from the end; out of range is an error."""
    x, idx = args
    a = attrs["axis"] % x.ndim
    if idx.size and (idx.min() < -x.shape[a] or idx.max() >= x.shape[a]):
        raise IndexError(f"take: an index is out of range for axis {a} of size {x.shape[a]}")
    return np.take(x, idx.astype(np.int64), axis=a)
