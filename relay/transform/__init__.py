"""Passes: each is a function from ``IRModule`` to ``IRModule`` (see each docstring)."""
from .infer_type import infer_type

__all__ = ["infer_type"]
