"""``make bitstream``: the board design through Yosys, the fit check, nextpnr and ecppack.

Amaranth's build system writes the design (RTLIL), the Yosys script and the pin/clock
constraints (LPF) from the amaranth-boards platform; this module runs the three tools itself,
so it can show progress, check the fit between synthesis and place-and-route, and ask nextpnr
for its JSON report. Products, in ``bitstreams/<board>-<config>/``: ``vta_board.bit``
(not committed), ``report.json``, ``report.txt``, and ``build/`` with every tool's log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from isa.config import VTAConfig

from .boards import Board
from .errors import ToolError
from .estimate import check_fit, config_estimate, synthesis_estimate
from .progress import Progress, step_of
from .report import make_report, summary_text
from .tools import tool_env, tool_versions

__all__ = ["build_bitstream", "output_dir", "NAME", "BITSTREAMS_DIR"]

NAME = "vta_board"
BITSTREAMS_DIR = Path(__file__).resolve().parent
#: Bound on each tool run (a wedged tool must not hang `make bitstream`).
TOOL_TIMEOUT_S = 4 * 3600


def output_dir(board: Board, cfg: VTAConfig, root: Path | None = None, *,
               memory: str = "onchip") -> Path:
    """bitstreams/<board>-<config> (on-chip DRAM) or bitstreams/<board>-<config>-sdram."""
    suffix = "" if memory == "onchip" else f"-{memory}"
    return (root or BITSTREAMS_DIR) / f"{board.name}-{cfg.name}{suffix}"


def _run(tool: str, cmd: list, cwd: Path, log: Path, follow: Path, env: dict,
         progress: Progress, timeout: float) -> None:
    """Run ``cmd`` (its output to ``log``), showing the steps of the tool's own log ``follow``
    (tools buffer their standard output in a pipe); ToolError on failure or timeout."""
    deadline = time.monotonic() + timeout
    follow.unlink(missing_ok=True)
    pos = 0
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            while True:
                code = proc.poll()
                if follow.exists():
                    with open(follow, errors="replace") as f:
                        f.seek(pos)
                        text = f.read()
                    cut = text.rfind("\n") + 1       # whole lines only
                    pos += len(text[:cut].encode(errors="replace"))
                    for line in text[:cut].splitlines():
                        step = step_of(tool, line)
                        if step:
                            progress.update(step)
                if code is not None:
                    break
                if time.monotonic() > deadline:
                    raise ToolError(f"{tool} ran longer than {timeout:g} s; see {log}")
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if code:
        tail = "".join(log.read_text(errors="replace").splitlines(True)[-15:])
        raise ToolError(f"{tool} failed (exit {code}); the end of {log}:\n{tail}")


def build_bitstream(board: Board, cfg: VTAConfig, *, out: Path | None = None, seed: int = 1,
                    mem_bytes: int | None = None, progress: Progress | None = None,
                    timeout: float = TOOL_TIMEOUT_S, synth_only: bool = False,
                    memory: str = "onchip", check_only: bool = False) -> dict:
    """Build the bitstream of ``cfg`` for ``board``; returns the report (also written).

    ``memory`` is the DRAM variant, ``"onchip"`` (block RAM, ``mem_bytes``) or ``"sdram"``
    (LiteDRAM on the board's SDRAM). ``synth_only`` stops after the synthesis fit check and
    returns the synthesis estimate (``{"synthesis_estimate": {...}}``) without writing a
    report; ``check_only`` stops after the fit check from the configuration, before any tool
    runs or anything is written, and returns ``{"config_estimate": {...}}``."""
    from hw.board.ulx3s import Ulx3sTop

    progress = progress or Progress(enabled=False)
    folder = out or output_dir(board, cfg, memory=memory)
    work = folder / "build"
    t0 = time.monotonic()

    progress.start("elaborate (Amaranth)")
    top = Ulx3sTop(cfg, mem_bytes=mem_bytes, memory=memory)
    progress.start("fit check (estimate from the configuration)")
    mems = [] if memory == "sdram" else [(top.mem_bytes * 8 // cfg.bus_width, cfg.bus_width)]
    estimate = config_estimate(cfg, mems)
    check_fit(estimate, board, "estimate from the configuration: lower bounds before synthesis")
    if check_only:
        progress.done(f"the configuration's estimate fits: {estimate}")
        return {"config_estimate": estimate}

    env = tool_env()
    versions = tool_versions()
    platform = board.make_platform()
    if work.exists():
        shutil.rmtree(work)
    plan = platform.build(top, name=NAME, build_dir=str(work), do_build=False,
                          script_after_synth=f"tee -q -o {NAME}.stat.json stat -json")
    plan.extract(str(work))
    # the bitstream of an earlier build goes before anything new is made
    for stale in ("report.json", "report.txt", f"{NAME}.bit"):
        (folder / stale).unlink(missing_ok=True)

    progress.start("synthesis (yosys)")
    _run("yosys", [env["YOSYS"], "-l", f"{NAME}.rpt", f"{NAME}.ys"], work,
         work / "yosys.log", work / f"{NAME}.rpt", env, progress, timeout)
    stat = json.loads((work / f"{NAME}.stat.json").read_text())
    synth = synthesis_estimate(stat)
    progress.start("fit check (synthesis)")
    check_fit(synth, board, "estimate from synthesis, before place and route")
    if synth_only:
        progress.done(f"synthesis fits: {synth}")
        return {"synthesis_estimate": synth}

    progress.start("place and route (nextpnr-ecp5)")
    device_opt = platform._nextpnr_device_options[platform.device]
    package_opt = platform._nextpnr_package_options[platform.package].upper()
    _run("nextpnr", [env["NEXTPNR_ECP5"], device_opt, "--package", package_opt,
                     "--speed", platform.speed, "--json", f"{NAME}.json", "--lpf", f"{NAME}.lpf",
                     "--textcfg", f"{NAME}.config", "--report", "nextpnr-report.json",
                     "--seed", str(seed), "--timing-allow-fail", "--log", f"{NAME}.tim"],
         work, work / "nextpnr.log", work / f"{NAME}.tim", env, progress, timeout)

    progress.start("bitstream (ecppack)")
    _run("ecppack", [env["ECPPACK"], "--compress", "--input", f"{NAME}.config",
                     "--bit", f"{NAME}.bit"], work, work / "ecppack.log", work / "ecppack.log", env,
         progress, timeout)

    pnr = json.loads((work / "nextpnr-report.json").read_text())
    report = make_report(board, cfg, pnr, synth, top, seed=seed, versions=versions,
                         seconds=time.monotonic() - t0)
    tmp = folder / f".{NAME}.bit.tmp"
    shutil.copyfile(work / f"{NAME}.bit", tmp)
    os.replace(tmp, folder / f"{NAME}.bit")
    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (folder / "report.txt").write_text(summary_text(report))
    progress.done(f"wrote {folder / (NAME + '.bit')} and its report")
    return report
