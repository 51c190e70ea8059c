"""The prelude: ``List``, ``Option`` and ``Tree`` with map, foldl, foldr and friends.

The definitions are Relay text (``prelude.rly``), parsed once.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .ir import IRModule

__all__ = ["prelude", "PRELUDE_PATH"]

PRELUDE_PATH = Path(__file__).with_name("prelude.rly")


@lru_cache(maxsize=None)
def prelude() -> IRModule:
    """The prelude module (immutable, so one shared copy is safe)."""
    from .parser import parse
    return parse(PRELUDE_PATH.read_text(), source=str(PRELUDE_PATH))
