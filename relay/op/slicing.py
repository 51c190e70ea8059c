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
