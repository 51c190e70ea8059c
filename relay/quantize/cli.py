"""The file-level steps of ``vta quantize`` (and of ``vta compile`` on a float model): pure
functions that raise Relay's own errors.

The command itself (options, exit codes, the output checked before the work and written
atomically) is ``compiler/model_cli.py``: Relay stands alone (SPEC §1).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["load_float_model", "quantize_file"]


def load_float_model(path, params=None, shapes=None):
    """``(IRModule, params)`` of an .onnx, .pt2 or .rly model; ``params`` (for .rly): the
    weights .npz from `vta import`, or its arrays."""
    from ..frontend import FrontendError, load_model
    path = Path(path)
    if path.suffix.lower() != ".rly":
        if params is not None:
            raise FrontendError("--params is for .rly models; .onnx and .pt2 carry their weights")
        return load_model(path, shapes=shapes)
    from ..frontend.cli import read_params
    from ..parser import parse
    try:
        text = path.read_text()
    except OSError as e:
        raise FrontendError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise FrontendError(f"cannot read {path}: it is not UTF-8 text ({e.reason} at byte "
                            f"{e.start})") from None
    if params is None:
        weights = {}
    else:
        weights = dict(params) if isinstance(params, Mapping) else read_params(params)
    return parse(text, source=str(path)), weights


def quantize_file(model, calibrate, params=None, config=None, shapes=None, progress=None):
    """Import ``model`` (.onnx, .pt2, or .rly with the ``params`` .npz) and quantise it with the
    calibration data ``calibrate`` (an .npz, or its arrays): the one step `vta quantize` (and
    `vta compile`) take. ``progress``: as for :func:`relay.quantize.quantize`."""
    from . import QConfig, load_calibration, quantize
    mod, weights = load_float_model(model, params, shapes)
    samples = dict(calibrate) if isinstance(calibrate, Mapping) else load_calibration(calibrate)
    return quantize(mod, weights, samples, config or QConfig(), progress)
