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
from dataclasses import dataclass
from pathlib import Path

from isa.config import VTAConfig

from .boards import Board
from .errors import ToolError
from .estimate import check_fit, config_estimate, synthesis_estimate
from .levels import lut_levels
from .progress import Progress, step_of
from .report import make_report, summary_text
from .tools import tool_env, tool_versions

__all__ = ["build_bitstream", "output_dir", "NAME", "BITSTREAMS_DIR"]

NAME = "vta_board"
BITSTREAMS_DIR = Path(__file__).resolve().parent
#: Bound on each tool run (a wedged tool must not hang `make bitstream`).
TOOL_TIMEOUT_S = 4 * 3600
#: With several seeds, once one has placed and routed in T seconds the others are stopped
#: after LAGGARD_FACTOR · T (a seed whose router does not converge would otherwise hold the
#: build to TOOL_TIMEOUT_S and fail it; docs/hardware.md §12 session 21).
LAGGARD_FACTOR = 2.0


def output_dir(board: Board, cfg: VTAConfig, root: Path | None = None, *,
               memory: str = "onchip") -> Path:
    """bitstreams/<board>-<config> (on-chip DRAM) or bitstreams/<board>-<config>-sdram."""
    suffix = "" if memory == "onchip" else f"-{memory}"
    return (root or BITSTREAMS_DIR) / f"{board.name}-{cfg.name}{suffix}"


def _run(tool: str, cmd: list, cwd: Path, log: Path, follow: Path, env: dict,
         progress: Progress, timeout: float) -> None:
    """Run ``cmd`` (its output to ``log``), showing the steps of the tool's own log ``follow``
    (tools buffer their standard output in a pipe); ToolError on failure or timeout."""
    _run_all(tool, [_Job(cmd, log, follow)], cwd, env, progress, timeout)


@dataclass(frozen=True)
class _Job:
    """One run of a tool: its command, the file its output goes to, the log it writes itself
    (followed for progress) and the label progress shows it by when several run at once."""
    cmd: list
    log: Path
    follow: Path
    label: str = ""


@dataclass
class _Running:
    """A started job: its process, the file its output goes to, when it must have ended and how
    far its own log has been followed."""
    job: _Job
    proc: subprocess.Popen
    out: object
    deadline: float
    started: float = 0.0
    pos: int = 0


def _run_all(tool: str, jobs: list, cwd: Path, env: dict, progress: Progress,
             timeout: float, parallel: int = 1, laggards: float | None = None) -> list:
    """Run ``jobs`` of ``tool``, at most ``parallel`` at a time, each bounded by ``timeout``;
    ToolError names the first that fails (the others are stopped). ``laggards``: once a job
    has succeeded after T seconds, each other job is stopped ``laggards`` · T seconds after
    its own start (or at ``timeout``, if earlier) without an error. Returns the jobs so
    stopped."""
    waiting, running, stopped = list(jobs), [], []
    first_ok = None                 # the first success's duration
    try:
        while waiting or running:
            while waiting and len(running) < parallel:
                job = waiting.pop(0)
                job.follow.unlink(missing_ok=True)
                fh = open(job.log, "w")
                proc = subprocess.Popen(job.cmd, cwd=cwd, env=env, stdout=fh,
                                        stderr=subprocess.STDOUT)
                now = time.monotonic()
                running.append(_Running(job, proc, fh, now + timeout, started=now))
            for run in list(running):
                code = run.proc.poll()
                run.pos = _follow(tool, run.job, run.pos, progress)
                now = time.monotonic()
                if code is None and first_ok is not None and \
                        now > min(run.deadline, run.started + laggards * first_ok):
                    run.proc.kill()
                    run.proc.wait()
                    run.out.close()
                    running.remove(run)
                    stopped.append(run.job)
                    progress.update(f"{run.job.label or tool}: stopped after "
                                    f"{now - run.started:.0f} s ({laggards:g}× the first)")
                    continue
                if code is None and now > run.deadline:
                    raise ToolError(f"{tool} ran longer than {timeout:g} s; see {run.job.log}")
                if code is None:
                    continue
                run.out.close()
                running.remove(run)
                if code:
                    tail = "".join(run.job.log.read_text(errors="replace").splitlines(True)[-15:])
                    raise ToolError(f"{tool} failed (exit {code}); the end of {run.job.log}:\n{tail}")
                if laggards is not None and first_ok is None:
                    first_ok = now - run.started
            if running:
                time.sleep(0.5)
        return stopped
    finally:
        # every tool killed before any is waited for: a second interrupt arriving while the
        # first one's cleanup waits must not leave a run orphaned
        for run in running:
            if run.proc.poll() is None:
                run.proc.kill()
        for run in running:
            run.proc.wait()
            run.out.close()


def _follow(tool: str, job: _Job, pos: int, progress: Progress) -> int:
    """Show the steps ``job``'s own log has written since byte ``pos``; the new position."""
    if not job.follow.exists():
        return pos
    with open(job.follow, errors="replace") as f:
        f.seek(pos)
        text = f.read()
    cut = text.rfind("\n") + 1                  # whole lines only
    for line in text[:cut].splitlines():
        step = step_of(tool, line)
        if step:
            progress.update(f"{job.label}: {step}" if job.label else step)
    return pos + len(text[:cut].encode(errors="replace"))


def build_bitstream(board: Board, cfg: VTAConfig, *, out: Path | None = None, seed: int = 1,
                    seeds: int = 1, mem_bytes: int | None = None, progress: Progress | None = None,
                    timeout: float = TOOL_TIMEOUT_S, synth_only: bool = False,
                    memory: str = "onchip", check_only: bool = False) -> dict:
    """Build the bitstream of ``cfg`` for ``board``; returns the report (also written).

    ``memory`` is the DRAM variant, ``"onchip"`` (block RAM, ``mem_bytes``) or ``"sdram"``
    (LiteDRAM on the board's SDRAM). ``synth_only`` stops after synthesis, its fit check and the
    netlist's LUT4 levels, and returns ``{"synthesis_estimate", "lut_levels", "netlist"}``
    without writing a report (the netlist stays in ``<out>/build``); ``seeds`` > 1 places and routes with seeds ``seed`` … ``seed + seeds - 1`` (as many
    at once as the machine has cores) and keeps the one whose core clock is fastest; ``check_only`` stops after the fit check from the configuration, before any tool
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
    # the bitstream of an earlier build goes before anything new is made; a synthesis-only
    # run makes none, so it keeps them
    for stale in () if synth_only else ("report.json", "report.txt", f"{NAME}.bit"):
        (folder / stale).unlink(missing_ok=True)

    progress.start("synthesis (yosys)")
    _run("yosys", [env["YOSYS"], "-l", f"{NAME}.rpt", f"{NAME}.ys"], work,
         work / "yosys.log", work / f"{NAME}.rpt", env, progress, timeout)
    stat = json.loads((work / f"{NAME}.stat.json").read_text())
    synth = synthesis_estimate(stat)
    progress.start("fit check (synthesis)")
    check_fit(synth, board, "estimate from synthesis, before place and route")
    progress.start("LUT4 levels between registers (the synthesised netlist)")
    levels = lut_levels(json.loads((work / f"{NAME}.json").read_text()), worst=10)
    if synth_only:
        progress.done(f"synthesis fits: {synth}")
        return {"synthesis_estimate": synth, "lut_levels": levels,
                "netlist": str(work / f"{NAME}.json")}

    progress.start("place and route (nextpnr-ecp5)" if seeds == 1 else
                   f"place and route (nextpnr-ecp5, seeds {seed}-{seed + seeds - 1})")
    best, pnr, fmax = _place_and_route(platform, work, range(seed, seed + seeds), env, progress,
                                       timeout)

    progress.start("bitstream (ecppack)")
    _run("ecppack", [env["ECPPACK"], "--compress", "--input", f"{NAME}.s{best}.config",
                     "--bit", f"{NAME}.bit"], work, work / "ecppack.log", work / "ecppack.log", env,
         progress, timeout)

    report = make_report(board, cfg, pnr, synth, top, seed=best, versions=versions,
                         seconds=time.monotonic() - t0, seeds_fmax=fmax,
                         levels=levels)
    tmp = folder / f".{NAME}.bit.tmp"
    shutil.copyfile(work / f"{NAME}.bit", tmp)
    os.replace(tmp, folder / f"{NAME}.bit")
    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (folder / "report.txt").write_text(summary_text(report))
    progress.done(f"wrote {folder / (NAME + '.bit')} and its report")
    return report


def _place_and_route(platform, work: Path, seeds, env: dict, progress: Progress,
                     timeout: float) -> tuple:
    """nextpnr once per seed into ``<NAME>.s<seed>.config`` / ``nextpnr-report.s<seed>.json``;
    returns the seed whose core clock is fastest (the lowest such seed on a tie), its report,
    and every seed's core-clock Fmax in MHz (None for a seed stopped as a laggard,
    :data:`LAGGARD_FACTOR`)."""
    from .report import core_fmax

    device_opt = platform._nextpnr_device_options[platform.device]
    package_opt = platform._nextpnr_package_options[platform.package].upper()
    seeds = list(seeds)
    jobs = [_Job([env["NEXTPNR_ECP5"], device_opt, "--package", package_opt,
                  "--speed", platform.speed, "--json", f"{NAME}.json", "--lpf", f"{NAME}.lpf",
                  "--textcfg", f"{NAME}.s{s}.config", "--report", f"nextpnr-report.s{s}.json",
                  "--detailed-timing-report",
                  "--seed", str(s), "--timing-allow-fail", "--log", f"{NAME}.s{s}.tim"],
                 work / f"nextpnr.s{s}.log", work / f"{NAME}.s{s}.tim",
                 f"seed {s}" if len(seeds) > 1 else "") for s in seeds]
    stopped = _run_all("nextpnr", jobs, work, env, progress, timeout,
                       parallel=max(1, min(len(seeds), os.cpu_count() or 1)),
                       laggards=LAGGARD_FACTOR if len(seeds) > 1 else None)
    done = [s for s, job in zip(seeds, jobs) if job not in stopped]
    reports = {s: json.loads((work / f"nextpnr-report.s{s}.json").read_text()) for s in done}
    fmax = {s: core_fmax(reports[s]) if s in reports else None for s in seeds}
    best = max(done, key=lambda s: (fmax[s], -s))
    return best, reports[best], fmax
