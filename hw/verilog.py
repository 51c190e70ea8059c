"""Verilog of the core for a configuration (``make verilog`` / ``vta verilog``)."""

from __future__ import annotations

from contextlib import nullcontext
from functools import lru_cache
from pathlib import Path

from amaranth.back import verilog

from isa.config import VTAConfig, load_config

__all__ = ["core_verilog", "write_verilog", "shell_verilog"]


@lru_cache(maxsize=8)
def core_verilog(cfg: VTAConfig, name: str = "vta_core", *, poison: bool = False) -> str:
    """The Verilog text of :class:`~hw.core.VTACore` for ``cfg`` (module ``name``).

    ``poison``: a simulation-only variant whose block RAMs return garbage on a read colliding
    with a write (:func:`hw.sram.poisoned_collisions`)."""
    from .core import VTACore
    from .sram import poisoned_collisions
    with poisoned_collisions() if poison else nullcontext():
        return verilog.convert(VTACore(cfg), name=name, emit_src=False)


@lru_cache(maxsize=8)
def shell_verilog(cfg: VTAConfig, name: str = "vta_shell") -> str:
    """The FPGA top: the core behind an AXI4 master and an AXI4-Lite register slave."""
    from .shell import VTAShell
    return verilog.convert(VTAShell(cfg), name=name, emit_src=False)


def write_verilog(cfg: "VTAConfig | str", path: "str | Path", *, top: str = "shell") -> Path:
    """Write the Verilog of ``top`` (``"shell"`` or ``"core"``) for ``cfg`` to ``path``."""
    cfg = load_config(cfg)
    text = shell_verilog(cfg) if top == "shell" else core_verilog(cfg)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
