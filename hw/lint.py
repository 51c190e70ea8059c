"""``verilator --lint-only -Wall`` on the generated Verilog, with the waivers of Amaranth idioms."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from isa.config import VTAConfig, load_config

from .toolchain import setup_verilator

__all__ = ["WAIVERS", "lint_verilog"]

WAIVERS = Path(__file__).with_name("verilator_waivers.vlt")


def lint_verilog(cfg: "VTAConfig | str", *, top: str = "shell") -> tuple[bool, str]:
    """Lint the Verilog of ``top`` (``shell`` or ``core``); returns (clean, Verilator output)."""
    from .verilog import core_verilog, shell_verilog

    cfg = load_config(cfg)
    root = setup_verilator()
    name = "vta_shell" if top == "shell" else "vta_core"
    text = shell_verilog(cfg) if top == "shell" else core_verilog(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.v"        # file named after the module (DECLFILENAME)
        path.write_text(text)
        proc = subprocess.run([str(root / "bin" / "verilator"), "--lint-only", "-Wall",
                               str(WAIVERS), str(path), "--top-module", name],
                              capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout + proc.stderr
