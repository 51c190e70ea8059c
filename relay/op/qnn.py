"""Affine (de)quantisation: ``qnn.quantize`` and ``qnn.dequantize`` (ONNX QuantizeLinear and
DequantizeLinear), with a scale and zero point per tensor or per channel of ``axis``."""
from __future__ import annotations

import numpy as np

from ..ty import TensorType, check_dtype
from ._common import as_tensor, norm_axis
from .registry import OpPattern, RelationError, register_op, relation

_LIMITS = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
           "int32": (-2 ** 31, 2 ** 31 - 1)}


def _check_params(data, scale, zp, axis):
    for t, what in ((scale, "scale"), (zp, "zero_point")):
        if t.ndim > 1:
            raise RelationError(f"{what} must be a scalar or 1-D, got rank {t.ndim}")
        if t.ndim == 1:
            a = norm_axis(axis, data.ndim)
            if t.shape[0] != data.shape[a]:
                raise RelationError(f"{what} has {t.shape[0]} values but axis {a} has {data.shape[a]}")


@relation("Quantize")
def quantize_rel(args, attrs):
    """float data -> ``out_dtype`` of the same shape."""
    data, scale, zp = (as_tensor(t, w) for t, w in zip(args, ("data", "scale", "zero_point")))
    _check_params(data, scale, zp, attrs["axis"])
    if attrs["out_dtype"] not in _LIMITS:
        raise RelationError(f"quantize out_dtype must be one of {', '.join(_LIMITS)}, not {attrs['out_dtype']!r}")
    return TensorType(data.shape, check_dtype(attrs["out_dtype"]))


@relation("Dequantize")
def dequantize_rel(args, attrs):
    """integer data -> float32 of the same shape."""
    data, scale, zp = (as_tensor(t, w) for t, w in zip(args, ("data", "scale", "zero_point")))
    _check_params(data, scale, zp, attrs["axis"])
    return TensorType(data.shape, scale.dtype)


def _along(v, x, axis):
    if v.ndim == 0:
        return v
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return v.reshape(shape)


@register_op("qnn.quantize", num_inputs=3, relation="Quantize", pattern=OpPattern.ELEMWISE,
             attrs={"axis": 1, "out_dtype": "int8"})
def _quantize(args, attrs):
    """saturate(round_half_to_even(x / scale) + zero_point)."""
    x, scale, zp = args
    lo, hi = _LIMITS[attrs["out_dtype"]]
    q = np.rint(x.astype(np.float32) / _along(scale, x, attrs["axis"])) + _along(zp, x, attrs["axis"])
    return np.clip(q, lo, hi).astype(attrs["out_dtype"])


@register_op("qnn.dequantize", num_inputs=3, relation="Dequantize", pattern=OpPattern.ELEMWISE,
             attrs={"axis": 1})
def _dequantize(args, attrs):
    """(x - zero_point) * scale."""
    x, scale, zp = args
    d = x.astype(np.int64) - _along(zp, x, attrs["axis"]).astype(np.int64)
    return (d * _along(scale, x, attrs["axis"])).astype(scale.dtype)
