"""Image operators: ``image.resize2d`` (nearest neighbour), what ONNX Resize and Upsample become."""
from __future__ import annotations

import numpy as np

from ..ty import TensorType
from ._common import as_tensor, pair
from .registry import REQUIRED, OpPattern, RelationError, register_op, relation

COORDINATE_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn")
ROUNDING_METHODS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@relation("Resize2D")
def resize2d_rel(args, attrs):
    """NCHW data; H and W become ``size``."""
    t = as_tensor(args[0], "data")
    if t.ndim != 4 or attrs["layout"] != "NCHW":
        raise RelationError(f"resize2d takes 4-D NCHW data, got rank {t.ndim} layout {attrs['layout']}")
    if attrs["method"] != "nearest_neighbor":
        raise RelationError(f"resize2d method {attrs['method']!r} is not supported (nearest_neighbor only)")
    if attrs["coordinate_transformation_mode"] not in COORDINATE_MODES:
        raise RelationError(f"unknown coordinate_transformation_mode {attrs['coordinate_transformation_mode']!r}")
    if attrs["rounding_method"] not in ROUNDING_METHODS:
        raise RelationError(f"unknown rounding_method {attrs['rounding_method']!r}")
    oh, ow = pair(attrs["size"], "size")
    return TensorType(t.shape[:2] + (oh, ow), t.dtype)


def nearest_index(in_size, out_size, mode, rounding, scale=None):
    """For each output coordinate, the input index it copies (ONNX Resize semantics)."""
    scale = out_size / in_size if scale is None else scale
    i = np.arange(out_size, dtype=np.float64)
    if mode == "asymmetric":
        x = i / scale
    elif mode == "align_corners":
        x = i * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros_like(i)
    elif mode == "pytorch_half_pixel":
        x = (i + 0.5) / scale - 0.5 if out_size > 1 else np.zeros_like(i)
    elif mode == "tf_half_pixel_for_nn":
        x = (i + 0.5) / scale
    else:  # half_pixel
        x = (i + 0.5) / scale - 0.5
    if rounding == "floor":
        j = np.floor(x)
    elif rounding == "ceil":
        j = np.ceil(x)
    elif rounding == "round_prefer_ceil":
        j = np.floor(x + 0.5)
    else:
        j = np.ceil(x - 0.5)
    return np.clip(j, 0, in_size - 1).astype(np.int64)


@register_op("image.resize2d", num_inputs=1, relation="Resize2D", pattern=OpPattern.INJECTIVE,
             attrs={"size": REQUIRED, "layout": "NCHW", "method": "nearest_neighbor",
                    "coordinate_transformation_mode": "half_pixel", "rounding_method": "round_prefer_floor",
                    "scale": None})
def _resize2d(args, attrs):
    """Nearest-neighbour resize of H and W to ``size`` (``scale``: ONNX's (h, w) scales if given)."""
    x = args[0]
    oh, ow = pair(attrs["size"], "size")
    sh, sw = attrs["scale"] if attrs["scale"] is not None else (None, None)
    mode, rnd = attrs["coordinate_transformation_mode"], attrs["rounding_method"]
    rows = nearest_index(x.shape[2], oh, mode, rnd, sh)
    cols = nearest_index(x.shape[3], ow, mode, rnd, sw)
    return np.ascontiguousarray(x[:, :, rows][:, :, :, cols])
