"""Model importers: ONNX (``from_onnx``) and PyTorch through ``torch.export`` (``from_pytorch``).

Each returns ``(IRModule, params)``: ``@main`` takes the model's inputs and then one parameter
per weight; ``params`` maps those parameter names to numpy arrays.  ``onnx`` and ``torch`` are
optional packages, imported only when a model of theirs is converted.
"""
from .common import FrontendError, MissingPackage, UnsupportedOperator

__all__ = ["FrontendError", "UnsupportedOperator", "MissingPackage", "from_onnx", "load_onnx", "from_pytorch", "load_pytorch",
           "load_model"]


def from_onnx(model, shapes=None, name=None):
    from .onnx import from_onnx as f
    return f(model, shapes=shapes, name=name)


def load_onnx(path, shapes=None):
    from .onnx import load_onnx as f
    return f(path, shapes=shapes)


def from_pytorch(program, name=None):
    from .pytorch import from_pytorch as f
    return f(program, name=name)


def load_pytorch(path):
    from .pytorch import load_pytorch as f
    return f(path)


def load_model(path, shapes=None):
    """Import an ``.onnx`` or ``.pt2`` file by its suffix."""
    from pathlib import Path
    suffix = Path(path).suffix.lower()
    if suffix == ".onnx":
        return load_onnx(path, shapes=shapes)
    if suffix == ".pt2":
        return load_pytorch(path)
    raise FrontendError(f"{path}: unknown model format {suffix or '(no suffix)'!r}; expected .onnx or .pt2")
