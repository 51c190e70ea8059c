"""The file-level steps of ``vta import``: pure functions that raise the frontend's own errors.

The command itself (options, exit codes, outputs checked before the work and written
atomically) is ``compiler/model_cli.py``: Relay stands alone and imports nothing of the layers
below it (SPEC §1), so the command glue lives in a layer that may import both.
"""
from __future__ import annotations


import numpy as np

from .common import FrontendError

__all__ = ["parse_shapes", "read_params", "import_model", "describe_import"]


def parse_shapes(items) -> dict:
    """``{name: shape}`` from ``--shape NAME=D0,D1,...`` values (``FrontendError`` if one is
    malformed)."""
    shapes = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = tuple(int(d) for d in dims.split(","))
            if any(d <= 0 for d in shapes[name]):
                raise ValueError
        except ValueError:
            raise FrontendError(f"--shape {item!r} must be NAME=D0,D1,... with positive "
                                f"integers") from None
    return shapes


def read_params(path):
    """The arrays of a weights .npz (as `vta import` writes), never unpickled."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if not hasattr(z, "files"):
                raise FrontendError(f"{path} is a single array; weights are an .npz keyed by "
                                    f"parameter name")
            return {k: z[k] for k in z.files}
    except FrontendError:
        raise
    except Exception as e:  # noqa: BLE001 - numpy's and zipfile's parsers on untrusted bytes
        # raise anything (zlib.error, BadZipFile, EOFError, ValueError, ...)
        raise FrontendError(f"cannot read weights {path}: {e}") from None


def import_model(model, shapes=None):
    """``(IRModule, params, text)``: ``model`` (.onnx or .pt2) imported, and its Relay text."""
    from . import load_model
    mod, params = load_model(model, shapes=shapes)
    return mod, params, mod.astext()


def describe_import(out, params_out, mod, params) -> str:
    """The line `vta import` prints: ``@main``'s inputs and the weights written."""
    inputs = [p for p in mod["main"].params if p.name_hint not in params]
    size = sum(a.nbytes for a in params.values())
    return (f"{out}: @main({', '.join(f'%{p.name_hint}: {p.type_annotation}' for p in inputs)}) "
            f"+ {len(params)} weights ({size / 1e6:.1f} MB) in {params_out}")
