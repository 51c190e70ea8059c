"""Local response normalisation (``nn.lrn``), as in AlexNet and GoogLeNet."""
from __future__ import annotations

import numpy as np

from ._common import as_tensor, norm_axis
from .registry import OpPattern, RelationError, register_op, relation


@relation("LRN")
def lrn_rel(args, attrs):
    """Identity; ``size`` must be odd and positive, ``axis`` in range."""
    t = as_tensor(args[0], "data")
    norm_axis(attrs["axis"], t.ndim)
    if attrs["size"] < 1:
        raise RelationError(f"lrn size must be positive, got {attrs['size']}")
    return t


@register_op("nn.lrn", num_inputs=1, relation="LRN", pattern=OpPattern.OPAQUE,
             attrs={"size": 5, "axis": 1, "alpha": 1e-4, "beta": 0.75, "bias": 1.0})
def _lrn(args, attrs):
    """x / (bias + alpha / size * sum of x^2 over a window of ``size`` channels) ^ beta.

    The window spans ``floor((size - 1) / 2)`` channels below and ``ceil((size - 1) / 2)`` above
    (ONNX's definition; the same as Caffe's and TVM's for odd sizes)."""
    x = args[0]
    axis, size = attrs["axis"] % x.ndim, attrs["size"]
    lo, hi = (size - 1) // 2, size // 2
    sq = np.moveaxis(x.astype(np.float64) ** 2, axis, 0)
    pad = np.pad(sq, [(lo, hi)] + [(0, 0)] * (x.ndim - 1))
    csum = np.concatenate([np.zeros((1,) + pad.shape[1:]), np.cumsum(pad, axis=0)])
    win = csum[size:] - csum[:-size]
    div = (attrs["bias"] + attrs["alpha"] / size * np.moveaxis(win, 0, axis)) ** attrs["beta"]
    return (x / div).astype(x.dtype)
