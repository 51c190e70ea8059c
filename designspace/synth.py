"""Real synthesis of one point: Yosys ``synth_ecp5`` cell counts and nextpnr-ecp5's Fmax.

The core (``hw.verilog.core_verilog``, no AXI shell: the sweep compares accelerators, not board
glue) is synthesised by YoWASP's Yosys; ``stat -json`` gives every cell type. For the points
that matter, nextpnr-ecp5 places and routes the netlist out of context (no I/O buffers) on a
device and reports the achieved clock. Both tools run at niceness 10 at least, with a time limit.

The tools are the bitstream flow's (``bitstreams.tools``: YoWASP's builds, or $YOSYS /
$NEXTPNR_ECP5), and resources are counted its way (``bitstreams.estimate.synthesis_estimate``),
so a sweep's figures and ``make bitstream``'s report mean the same. Only the invocation differs:
the sweep synthesises the bare core and places it out of context, without a board around it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from isa.config import VTAConfig
from isa.errors import RejectedError, Unavailable

from .devices import Device

__all__ = ["SynthesisError", "ToolMissing", "synthesize", "finished_synthesis",
           "place_and_route", "resources",
           "tool_versions", "tool_path", "TOP", "YOSYS_SCRIPT", "NEXTPNR_OPTIONS"]

TOP = "vta_core"
#: The Yosys script and the nextpnr options: with the tools' versions and the Verilog, what a
#: result depends on (part of its cache key; the Python around them is not).
YOSYS_SCRIPT = ("read_verilog -sv core.v\n"
                f"synth_ecp5 -top {TOP} -json core.json\n"
                "tee -q -o stat.json stat -json\n")
#: The record :func:`synthesize` leaves beside a finished netlist.
_DONE = "synth-done.json"
NEXTPNR_OPTIONS = ("--out-of-context", "--timing-allow-fail", "--threads", "1")


class SynthesisError(RejectedError):
    """A tool failed or ran out of time; the message says which and why."""


class ToolMissing(SynthesisError, Unavailable):
    """Yosys or nextpnr is not installed here; the message says how to get it."""

    exit_code = Unavailable.exit_code


def tool_path(tool: str) -> str:
    """The executable of ``tool`` (``yosys`` or ``nextpnr-ecp5``), as the bitstream flow
    finds it, ready to run (``bitstreams.tools.ready_tool``)."""
    from bitstreams.errors import ToolError
    from bitstreams.tools import ready_tool
    try:
        return ready_tool({"yosys": "YOSYS", "nextpnr-ecp5": "NEXTPNR_ECP5"}[tool])
    except ToolError as exc:
        raise ToolMissing(str(exc)) from None


@lru_cache(maxsize=1)
def tool_versions() -> dict:
    """The tools' own version lines and the flow's Python packages (part of every cache key
    of a synthesis)."""
    from bitstreams.tools import tool_versions as flow_versions
    return flow_versions()


#: The niceness the tools run at, at least (a sweep started under ``nice`` keeps its own).
TOOL_NICENESS = 10


def _nice_prefix() -> list:
    """``nice -n K`` bringing the tools to :data:`TOOL_NICENESS`, or nothing if this process
    is that nice already: ``nice`` adds, and a sweep started with ``nice make sweep`` would
    otherwise run Yosys and nextpnr at 19, starved by every other niced job."""
    nice = shutil.which("nice")
    step = TOOL_NICENESS - os.nice(0)
    return [nice, "-n", str(step)] if nice and step > 0 else []


def _run(cmd: list, cwd: Path, timeout: float, what: str, log: Path) -> None:
    nice = _nice_prefix()
    try:
        with open(log, "w") as fh:
            proc = subprocess.run(nice + cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                                  timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SynthesisError(f"{what} did not finish in {timeout:.0f} s (log: {log})") from None
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        if not tail:            # `yosys -q -l FILE` writes its ERROR line only to FILE
            for other in sorted(cwd.glob("*.log")):
                errors = [line for line in other.read_text(errors="replace").splitlines()
                          if line.startswith("ERROR")]
                if errors:
                    tail, log = errors[-1:], other
                    break
        raise SynthesisError(f"{what} failed with status {proc.returncode}: "
                             f"{' | '.join(tail)} (log: {log})")


def resources(cells: dict) -> dict:
    """The four resources of a point from Yosys' cell counts (``num_cells_by_type``), counted
    as ``make bitstream`` counts them."""
    from bitstreams.estimate import synthesis_estimate
    return synthesis_estimate({"num_cells_by_type": cells})


def synthesize(cfg: VTAConfig, workdir: "str | Path", *, timeout: float = 3600) -> dict:
    """Synthesise the core of ``cfg`` in ``workdir``: ``{"cells": {...}, "seconds": s}``.

    The netlist stays in ``workdir/core.json`` for :func:`place_and_route`.
    """
    from hw.verilog import core_verilog

    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / _DONE).unlink(missing_ok=True)         # the netlist is about to change
    (work / "core.v").write_text(core_verilog(cfg, TOP))
    (work / "synth.ys").write_text(YOSYS_SCRIPT)
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
    result = {"cells": cells, "seconds": round(seconds, 1)}
    # Written last: its presence says core.json is a whole netlist of these tools and script.
    from isa.safeio import atomic_output
    with atomic_output(work / _DONE, what="synthesis record", mode="w") as fh:
        json.dump({"tools": tool_versions(), "script": YOSYS_SCRIPT, "result": result}, fh)
    return result


def finished_synthesis(workdir: "str | Path") -> "dict | None":
    """The result of the synthesis whose netlist is in ``workdir``, if it finished with the
    tools and script of today (so :func:`place_and_route` may use it); None otherwise."""
    work = Path(workdir)
    try:
        done = json.loads((work / _DONE).read_text())
    except (OSError, ValueError):
        return None
    if (done.get("tools") != tool_versions() or done.get("script") != YOSYS_SCRIPT
            or not (work / "core.json").is_file()):
        return None
    return done.get("result")


def place_and_route(workdir: "str | Path", device: Device, target_mhz: float, *,
                    seed: int = 1, timeout: float = 5400) -> dict:
    """nextpnr-ecp5 on ``workdir/core.json``, out of context on ``device``:
    ``{"fmax_mhz": f, "used": {bel type: n}, "seconds": s}``."""
    work = Path(workdir)
    if not (work / "core.json").exists():
        raise SynthesisError(f"no netlist in {work}: synthesise first")
    start = time.monotonic()
    _run([tool_path("nextpnr-ecp5"), device.nextpnr_flag, *NEXTPNR_OPTIONS, "--json",
          "core.json", "--freq", str(target_mhz), "--seed", str(seed), "--report", "pnr.json"],
         work, timeout,
         f"nextpnr-ecp5 on {device.name}", work / "nextpnr.log")
    seconds = time.monotonic() - start
    try:
        report = json.loads((work / "pnr.json").read_text())
        fmax = min(c["achieved"] for c in report["fmax"].values())
        used = {k: v["used"] for k, v in report["utilization"].items() if v["used"]}
    except (OSError, ValueError, KeyError) as exc:
        raise SynthesisError(f"nextpnr wrote no readable report in {work}: {exc}") from None
    return {"fmax_mhz": round(float(fmax), 2), "used": used, "seconds": round(seconds, 1)}
