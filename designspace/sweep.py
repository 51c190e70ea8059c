"""One sweep: expand the space, simulate the workloads, screen, synthesise, place, rank.

Stages, each a batch of cached tasks run by a :mod:`~designspace.runners` runner, the costliest
first:

1. **cycles** of every workload on every valid point (cycle-accurate simulator), together with
   the Verilog of every point the screening model does not rule out as fitting no device;
2. **screening**: the model (:mod:`~designspace.model`), calibrated on every real synthesis
   known (the shipped ``calibration.json`` and the cache), predicts each point's resources;
   a point is ruled out if, even with the model's error as a margin, it fits no target device
   or another point is smaller on every resource, no slower on every workload and no slower in
   clock;
3. **synthesis** (Yosys ``synth_ecp5``) of every point not ruled out; the points that matter,
   the frontier of the screened points by the model's resources (or every point), at most
   ``max_pnr`` of them, are **placed and routed** (nextpnr-ecp5) in
   the same batch, each right after its own synthesis, on the smallest target device it fits;
   the smallest points first (see ``_pnr_choice``);
4. what is left of ``max_pnr`` goes to the real frontier's points not placed yet.

A point's row holds its configuration, resources (``resources_from``: yosys or model), Fmax
(``fmax_from``: nextpnr or model), the clock it runs at (the lower of Fmax and TARGET_MHZ),
cycles and latency per workload, throughput (all workloads' MACs over their total time) and
whether it fits each device. The result also says how long each kind of task ran.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from isa.config import VTAConfig
from isa.errors import RejectedError

from .cache import Cache, source_digest, task_key
from .devices import DEVICES, RESOURCES, get_device
from .frontier import pareto_front
from .model import Sample, ScreeningModel
from .space import CONFIG_KEYS, Space, expand, point_config, point_name

__all__ = ["run_sweep", "SweepResult", "SweepError", "CALIBRATION", "cycles_task",
           "synth_task", "pnr_task", "HW_NEUTRAL_KEYS", "load_calibration"]

#: Real syntheses shipped with the project: the model's calibration when the cache is empty.
CALIBRATION = Path(__file__).with_name("calibration.json")
#: Configuration keys that do not change the core's RTL (the memory model's latency and the
#: target clock): points differing only in them share one synthesis. tests/designspace checks
#: that the Verilog is indeed the same.
HW_NEUTRAL_KEYS = ("MEM_LATENCY", "TARGET_MHZ")
#: The sources the core's Verilog is made from (hw/ and the isa modules it imports): when they
#: change, the Verilog is made again to see whether the synthesis key changed.
_VERILOG_SOURCES = ("hw", "isa/__init__.py", "isa/config.py", "isa/layout.py", "isa/encoding.py",
                    "isa/errors.py", "isa/registers.py", "isa/bursts.py", "isa/image.py")
_OBJECTIVES = {"minimize": ("LUT4", "DP16KD", "MULT18X18D"), "maximize": ("throughput_gmacs",)}


class SweepError(RejectedError):
    """A sweep that cannot go on (no calibration and no synthesis allowed, a failed tool)."""


# ---------------------------------------------------------------------------- tasks
def cycles_task(point: dict, workload: str, spatial_div: int, seed: int) -> dict:
    """Compile ``workload`` for ``point`` and run it on the cycle-accurate simulator: cycles,
    MACs, launches."""
    from .workloads import WorkloadError, compile_workload, program_cycles
    start = time.monotonic()
    try:
        program = compile_workload(workload, point_config(point), spatial_div=spatial_div,
                                   seed=seed, backend="cycle")
    except WorkloadError as exc:
        return {"error": str(exc)}
    return {"cycles": program_cycles(program), "macs": program.macs,
            "launches": len(program.images), "seconds": round(time.monotonic() - start, 2)}


def verilog_task(point: dict) -> dict:
    """The SHA-256 of the core's Verilog for ``point``: what a synthesis is keyed by."""
    import hashlib

    from hw.verilog import core_verilog
    from .synth import TOP
    text = core_verilog(point_config(point), TOP)
    return {"sha256": hashlib.sha256(text.encode()).hexdigest()}


def synth_task(point: dict, workdir: str) -> dict:
    from .synth import synthesize
    return synthesize(point_config(point), workdir)


def pnr_task(point: dict, workdir: str, device: str, target_mhz: int) -> dict:
    """Place and route ``point``'s netlist on ``device``; synthesise it first if ``workdir``
    holds no finished netlist (then the result carries that synthesis under ``synth``)."""
    from .synth import finished_synthesis, place_and_route, synthesize
    synth = None
    if finished_synthesis(workdir) is None:
        synth = synthesize(point_config(point), workdir)
    result = place_and_route(workdir, get_device(device), target_mhz)
    return {**result, "device": device, **({"synth": synth} if synth else {})}


_TASKS = {"cycles": cycles_task, "verilog": verilog_task, "synthesis": synth_task,
          "place and route": pnr_task}


def run_task(kind: str, *args) -> dict:
    """One task of a sweep, by kind (the one function every runner is given)."""
    return _TASKS[kind](*args)


# ---------------------------------------------------------------------------- descriptions
def _hw_point(point: dict) -> dict:
    return {k: v for k, v in point.items() if k not in HW_NEUTRAL_KEYS}


def _cycles_desc(point: dict, workload: str, space: Space) -> dict:
    return {"kind": "cycles", "point": point, "workload": workload,
            "spatial_div": space.spatial_div, "seed": space.seed,
            "code": source_digest("isa", "sim", "driver", "relay", "compiler",
                                  "designspace/workloads.py")}


def _verilog_desc(point: dict) -> dict:
    return {"kind": "verilog", "point": _hw_point(point), "code": source_digest(*_VERILOG_SOURCES)}


def _synth_desc(point: dict, verilog: str) -> dict:
    """A synthesis is keyed by the Verilog itself (``verilog``: its SHA-256), the tools and
    the script: a refactoring of hw/ that leaves the Verilog alone keeps it cached."""
    from .synth import YOSYS_SCRIPT, tool_versions
    return {"kind": "synth", "point": _hw_point(point), "verilog": verilog,
            "tools": tool_versions(), "script": YOSYS_SCRIPT}


def _pnr_desc(point: dict, verilog: str, device: str, target_mhz: int) -> dict:
    from .synth import NEXTPNR_OPTIONS
    return {**_synth_desc(point, verilog), "kind": "pnr", "device": device,
            "target_mhz": target_mhz, "options": list(NEXTPNR_OPTIONS), "seed": 1}


# ---------------------------------------------------------------------------- calibration
def load_calibration(path: Path = CALIBRATION) -> list[dict]:
    """The shipped real syntheses: ``[{"point": {...}, "cells"/"resources": ..., "fmax_mhz"}]``."""
    try:
        return json.loads(path.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        return []


def _samples(cache: Cache) -> list[Sample]:
    """Every real synthesis known, one per hardware point: the cache's of the point's current
    Verilog win over the shipped file's (a cache run of another Verilog is not taken: the
    same rule as :func:`designspace.calibrate.collect`)."""
    from .calibrate import collect
    runs: dict[str, dict] = {}
    for run in load_calibration():
        runs[task_key(_hw_point(run["point"]))] = dict(run)
    for run in collect(cache).runs:
        key = task_key(run["point"])
        shipped = runs.get(key, {})
        if "fmax_mhz" not in run and shipped.get("verilog_sha256") == run["verilog_sha256"]:
            run = {**run, "fmax_mhz": shipped.get("fmax_mhz")}   # placed by the file's run
        runs[key] = run
    samples = []
    for run in runs.values():
        try:
            cfg = VTAConfig.from_dict(run["point"])
        except Exception:  # noqa: BLE001 - a stale calibration entry: skip it
            continue
        samples.append(Sample(cfg, run["resources"], run.get("fmax_mhz")))
    return samples


# ---------------------------------------------------------------------------- the sweep
@dataclass
class SweepResult:
    space: Space
    rows: list = field(default_factory=list)
    rejected: list = field(default_factory=list)       # (point, message)
    excluded: int = 0
    failed: list = field(default_factory=list)         # (point name, what failed)
    frontier: list = field(default_factory=list)       # indices into rows
    model_errors: dict = field(default_factory=dict)
    margin: float = 0.0
    calibration_runs: int = 0
    counts: dict = field(default_factory=dict)         # kind: {"run": n, "cached": n}
    seconds: dict = field(default_factory=dict)        # kind: CPU seconds its tasks took
    phases: list = field(default_factory=list)         # (phase, wall-clock seconds)


@dataclass(frozen=True)
class _Job:
    """A task to run unless its result is cached: its description (the cache key), its kind
    (a key of ``_TASKS``), its arguments and a guess of its cost; ``also`` is the description
    under which a place-and-route that had to synthesise first caches that synthesis."""

    desc: dict
    kind: str
    args: tuple
    cost: float = 0.0
    also: "dict | None" = None


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (Yosys, nextpnr)."""
    import resource
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed_task(kind: str, *args) -> dict:
    """:func:`run_task` and the CPU seconds it took (what the report's time table adds up:
    on a shared machine, wall-clock time says more about the neighbours than the task)."""
    start = _cpu_seconds()
    result = run_task(kind, *args)
    return {**result, "task_seconds": round(_cpu_seconds() - start, 2)}


def _progress(total: int, desc: str, enabled: bool):
    if not enabled or total == 0:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="task", leave=True)


def _stage(runner, cache: Cache, jobs: list, label: str, progress: bool,
           result: SweepResult) -> dict:
    """Run the ``jobs`` not yet cached, all kinds together and the costliest first (so that
    no core idles at the end while one long task finishes); {task key: result}."""
    start = time.monotonic()
    out, todo = {}, {}
    for job in jobs:
        count = result.counts.setdefault(job.kind, {"cached": 0, "run": 0})
        key = task_key(job.desc)
        if key in out or key in todo:
            continue
        hit = cache.get(job.desc)
        if hit is not None:
            out[key] = hit
            count["cached"] += 1
        else:
            todo[key] = job
            count["run"] += 1
    order = sorted(todo.values(), key=lambda j: -j.cost)
    bar = _progress(len(order), label, progress)
    try:
        for i, res, exc in runner.run(_timed_task, [(j.kind, *j.args) for j in order]):
            job = order[i]
            if exc is not None:
                res = {"error": f"{type(exc).__name__}: {exc}"}
            else:
                res = dict(res)
                spent = res.pop("task_seconds", 0.0)
                result.seconds[job.kind] = round(result.seconds.get(job.kind, 0.0) + spent, 2)
                sub = res.pop("synth", None)       # a synthesis nextpnr had to run first
                if job.also is not None and sub is not None:
                    cache.put(job.also, sub)
                    out[task_key(job.also)] = sub
                cache.put(job.desc, res)   # the moment it is known: nothing lost on a kill
            out[task_key(job.desc)] = res
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    if order:
        result.phases.append((label, round(time.monotonic() - start, 1)))
    return out


def _cycles_cost(point: dict, workload: str, space: Space) -> float:
    """The guess that orders cycle tasks: the workload's MACs over the point's MACs per cycle
    (the simulator's time grows with the cycles it simulates)."""
    from .workloads import get_workload
    return get_workload(workload).macs(space.spatial_div) / point_config(point).macs_per_cycle


#: Cost guesses of the FPGA tools' tasks: above any cycle task, nextpnr above Yosys.
_SYNTH_COST, _PNR_COST = 1e12, 2e12


def _unfit(space: Space, preds: list, margin: float) -> list:
    """Per point: None, or why it fits no target device even with the model's error margin."""
    devices = [get_device(d) for d in space.devices]
    return [None if any(d.fits({r: p[r] * (1 - margin) for r in RESOURCES}) for d in devices)
            else "fits no target device even at the model's error margin" for p in preds]


def _ruled_out(names: list, preds: list, cycles: list, margin: float, unfit: list) -> list:
    """Per point: None (must synthesise) or why the model rules it out: ``unfit``'s reason, or
    another point needs less of every resource even with the margin, is no slower on every
    workload and no slower in clock."""
    reasons = list(unfit)
    for i, p in enumerate(preds):
        if reasons[i] is not None or cycles[i] is None:
            continue
        for j, q in enumerate(preds):
            if j == i or cycles[j] is None or unfit[j] is not None:
                continue
            smaller = all(q[r] * (1 + margin) <= p[r] for r in RESOURCES) and any(
                q[r] * (1 + margin) < p[r] for r in RESOURCES)
            faster = all(cj <= ci for cj, ci in zip(cycles[j], cycles[i]))
            clock = (q["fmax_mhz"] or 0) >= (p["fmax_mhz"] or 0)
            if smaller and faster and clock:
                reasons[i] = f"dominated by {names[j]}"
                break
    return reasons


def _smallest_device(space: Space, usage: dict, margin: float = 0.0) -> "str | None":
    """The smallest target device ``usage`` fits, grown by ``margin``."""
    grown = {r: usage[r] * (1 + margin) for r in RESOURCES}
    for d in sorted(space.devices, key=lambda d: DEVICES[d].luts):
        if DEVICES[d].fits(grown):
            return d
    return None


def _row(space: Space, name: str, point: dict, res: dict, res_from: str, fmax, fmax_from: str,
         cyc: "dict | None") -> dict:
    row = {"name": name, **{k: point[k] for k in CONFIG_KEYS}}
    row.update({r: res[r] for r in RESOURCES})
    row["resources_from"] = res_from
    row["fmax_mhz"] = fmax
    row["fmax_from"] = fmax_from
    clock = min(point["TARGET_MHZ"], fmax) if fmax else point["TARGET_MHZ"]
    row["clock_mhz"] = round(clock, 2)
    for d in space.devices:
        row[f"fits_{d}"] = get_device(d).fits(res)
    total_macs = total_cycles = 0
    for w in space.workloads:
        c = cyc.get(w) if cyc else None
        row[f"cycles_{w}"] = c["cycles"] if c else None
        row[f"latency_us_{w}"] = round(c["cycles"] / clock, 3) if c else None
        if c:
            total_macs += c["macs"]
            total_cycles += c["cycles"]
    complete = cyc is not None and all(cyc.get(w) for w in space.workloads)
    row["macs_per_cycle"] = round(total_macs / total_cycles, 4) if complete else None
    row["throughput_gmacs"] = (round(total_macs / total_cycles * clock / 1e3, 5)
                               if complete else None)
    return row


def _pnr_device(space: Space, cache: Cache, point: dict, verilog: str, pred: dict,
                margin: float) -> "str | None":
    """Where to place ``point``: a target device it was placed on already (cached), else the
    smallest its real resources fit (if synthesised), else the smallest its predicted ones fit
    with the model's margin (or without, if none does)."""
    from .synth import resources
    order = sorted(space.devices, key=lambda d: DEVICES[d].luts)
    for d in order:
        if cache.get(_pnr_desc(point, verilog, d, point["TARGET_MHZ"])) is not None:
            return d
    done = cache.get(_synth_desc(point, verilog))
    if done is not None and "cells" in done:
        return _smallest_device(space, resources(done["cells"]))
    return _smallest_device(space, pred, margin) or _smallest_device(space, pred)


def _front(space: Space, rows: list) -> list:
    fit = [r if any(r[f"fits_{d}"] for d in space.devices) else {} for r in rows]
    return pareto_front(fit, **_OBJECTIVES)


def _pnr_choice(space: Space, rows: list, points: list, eligible: set, budget: int) -> list:
    """The points that matter: the frontier of ``rows`` (every row if ``fmax = "all"``) among
    the hardware keys in ``eligible``, one per hardware, at most ``budget``, the smallest (in
    LUT4) first: nextpnr's time grows with the design, so a small budget measures the most
    GEMM shapes, and the model's Fmax (linear in log2 of the MACs) needs two of them."""
    chosen = _front(space, rows) if space.fmax == "frontier" else range(len(rows))
    chosen = sorted((i for i in chosen if _hw_key(points[i]) in eligible),
                    key=lambda i: (rows[i]["LUT4"], -(rows[i]["throughput_gmacs"] or 0)))
    picked: dict = {}
    for i in chosen:
        picked.setdefault(_hw_key(points[i]), i)
    return list(picked.values())[:max(0, budget)]


def run_sweep(space: Space, *, cache: Cache, runner, synthesis: str = "real",
              progress: bool = True, log: Callable = print) -> SweepResult:
    """Run ``space``; ``synthesis`` is ``real`` (Yosys for what the model cannot rule out,
    nextpnr for the frontier's candidates), ``cached`` (no FPGA tools run: the real results
    the cache holds, the model for the rest) or ``model`` (the screening model only)."""
    if synthesis not in ("real", "cached", "model"):
        raise ValueError(f"synthesis must be real, cached or model, not {synthesis!r}")
    result = SweepResult(space)
    exp = expand(space)
    points = list(exp.points)
    result.rejected, result.excluded = list(exp.rejected), exp.excluded
    if space.method == "nsga2":
        from .search import nsga2_points
        points = nsga2_points(space, points, cache=cache, runner=runner, log=log)
    included = {tuple(p.values()): n for n, p in space.include}
    names = [included.get(tuple(p.values()), point_name(p)) for p in points]
    log(f"{len(points)} points ({len(exp.rejected)} rejected by VTAConfig, {exp.excluded} "
        f"excluded by constraints), {len(space.workloads)} workloads")
    run = _Run(space, cache, runner, progress, result, points, names)
    run.calibrate(synthesis, log)
    run.measure(with_verilog=synthesis != "model")
    run.screen()
    if synthesis == "real":
        run.synthesise_and_place()
    elif synthesis == "cached":
        run.from_cache()
    rows = run.rows()
    if synthesis == "real" and space.fmax != "none":
        rows = run.place_leftover(rows)
    for row, why in zip(rows, run.reasons):
        row["screened_out"] = (why or "") if row["resources_from"] == "model" else ""
    result.rows = rows
    result.frontier = _front(space, rows)
    result.model_errors = run.model.errors()
    result.margin = run.margin
    result.calibration_runs = len(run.model.samples)
    return result


@dataclass
class _Run:
    """The state of one sweep between its stages (each method one stage, in order)."""

    space: Space
    cache: Cache
    runner: object
    progress: bool
    result: SweepResult
    points: list
    names: list
    synth: dict = field(default_factory=dict)      # hw key: synthesis result
    pnr: dict = field(default_factory=dict)        # hw key: Fmax from nextpnr
    first: dict = field(default_factory=dict)      # hw key: row index, placed in stage 3

    def _stage(self, jobs: list, label: str) -> dict:
        return _stage(self.runner, self.cache, jobs, label, self.progress, self.result)

    def _refit(self) -> None:
        self.model = ScreeningModel(_samples(self.cache))
        self.preds = [self.model.predict(point_config(p)) for p in self.points]

    def calibrate(self, synthesis: str, log: Callable) -> None:
        """The model first: what fits no device needs neither cycles nor Verilog to be ruled
        out. A cache and calibration without any synthesis get one of the smallest point."""
        if not _samples(self.cache) and synthesis == "real" and self.points:
            smallest = min(self.points, key=lambda p: point_config(p).macs_per_cycle)
            log(f"no calibration yet: synthesising {point_name(smallest)} first")
            _synthesise(self.runner, self.cache, [smallest], self.progress, self.result)
        if not _samples(self.cache):
            raise SweepError("the screening model has no real synthesis to calibrate on: run "
                             "with --synthesis real once (or restore "
                             "designspace/calibration.json)")
        self._refit()
        self.margin = self.model.margin(self.space.margin)
        self.unfit = _unfit(self.space, self.preds, self.margin)

    def measure(self, with_verilog: bool) -> None:
        """Stage 1: cycles of every workload on every point, in one batch with the Verilog of
        every point that may fit (``self.cyc``: per point {workload: result} or None)."""
        space = self.space
        jobs = [_Job(_cycles_desc(p, w, space), "cycles", (p, w, space.spatial_div, space.seed),
                     _cycles_cost(p, w, space)) for p in self.points for w in space.workloads]
        self.hw = {_hw_key(p): p for p, why in zip(self.points, self.unfit)
                   if why is None} if with_verilog else {}
        jobs += [_Job(_verilog_desc(p), "verilog", (p,), _SYNTH_COST) for p in self.hw.values()]
        got = self._stage(jobs, "cycles")
        self.cyc = []
        for p, name in zip(self.points, self.names):
            per = {}
            for w in space.workloads:
                r = got[task_key(_cycles_desc(p, w, space))]
                if "error" in r:
                    self.result.failed.append((name, f"{w}: {r['error']}"))
                else:
                    per[w] = r
            self.cyc.append(per if len(per) == len(space.workloads) else None)
        self.verilog = {}
        for k, p in self.hw.items():
            v = got[task_key(_verilog_desc(p))]
            if "sha256" in v:
                self.verilog[k] = v["sha256"]
            else:
                self.result.failed.append((point_name(p), f"Verilog: {v.get('error')}"))

    def screen(self) -> None:
        """Stage 2: why each point is ruled out (or None), and the hardware left to build."""
        vec = [None if c is None else [c[w]["cycles"] for w in self.space.workloads]
               for c in self.cyc]
        self.reasons = _ruled_out(self.names, self.preds, vec, self.margin, self.unfit)
        self.todo = {_hw_key(p) for p, why, c in zip(self.points, self.reasons, self.cyc)
                     if why is None and c is not None and _hw_key(p) in self.verilog}

    def synthesise_and_place(self) -> None:
        """Stage 3: synthesis of what the model cannot rule out; the frontier's candidates (by
        the model's resources) are placed and routed right after their own synthesis, in the
        same batch, so nextpnr does not wait for the last Yosys run."""
        space, cache = self.space, self.cache
        budget = space.max_pnr if space.fmax != "none" else 0
        model_rows = [_row(space, n, p, pred, "model", pred["fmax_mhz"], "model", c)
                      for n, p, pred, c in zip(self.names, self.points, self.preds, self.cyc)]
        self.first = {_hw_key(self.points[i]): i
                      for i in _pnr_choice(space, model_rows, self.points, self.todo, budget)}
        jobs = []
        for k in sorted(self.todo):
            p, sha = self.hw[k], self.verilog[k]
            sd, work = _synth_desc(p, sha), str(cache.workdir(sha))
            dev = (_pnr_device(space, cache, p, sha, self.preds[self.first[k]], self.margin)
                   if k in self.first else None)
            if dev is not None:
                pd = _pnr_desc(p, sha, dev, p["TARGET_MHZ"])
                # Nothing cached: nextpnr's task synthesises first (no second synthesis).
                both = cache.get(pd) is None and cache.get(sd) is None
                jobs.append(_Job(pd, "place and route", (p, work, dev, p["TARGET_MHZ"]),
                                 _PNR_COST, also=sd if both else None))
                if both:
                    continue
            jobs.append(_Job(sd, "synthesis", (p, work), _SYNTH_COST))
        got = self._stage(jobs, "synthesis")
        for job in jobs:
            k = _hw_key(job.args[0])
            r = got.get(task_key(job.desc))
            if job.kind == "synthesis":
                self.synth[k] = r
                continue
            if r is not None and "fmax_mhz" in r:
                self.pnr[k] = r["fmax_mhz"]
            else:
                self.result.failed.append((point_name(job.args[0]),
                                           f"nextpnr: {(r or {}).get('error')}"))
            if job.also is not None:
                self.synth[k] = got.get(task_key(job.also)) or r
        self._synthesised()

    def from_cache(self) -> None:
        """Stage 3 without tools: the syntheses and places the cache holds."""
        placed = {d["verilog"]: r["fmax_mhz"] for d, r in self.cache.entries("pnr")
                  if "fmax_mhz" in r}
        for k in self.todo:
            hit = self.cache.get(_synth_desc(self.hw[k], self.verilog[k]))
            if hit is not None:
                self.synth[k] = hit
            if self.verilog[k] in placed:
                self.pnr[k] = placed[self.verilog[k]]
        self._synthesised()

    def _synthesised(self) -> None:
        for p, name in zip(self.points, self.names):
            r = self.synth.get(_hw_key(p))
            if r is not None and "cells" not in r:
                self.result.failed.append((name, f"synthesis: {r.get('error')}"))
        if self.synth:
            self._refit()

    def rows(self) -> list:
        from .synth import resources
        rows = []
        for p, name, pred, c in zip(self.points, self.names, self.preds, self.cyc):
            s = self.synth.get(_hw_key(p))
            real = s is not None and "cells" in s
            res = resources(s["cells"]) if real else pred
            f = self.pnr.get(_hw_key(p))
            fmax, src = ((f, "nextpnr") if f else (pred["fmax_mhz"], "model")
                         if pred["fmax_mhz"] else (None, "none: runs at TARGET_MHZ"))
            rows.append(_row(self.space, name, p, res, "yosys" if real else "model", fmax,
                             src, c))
        return rows

    def place_leftover(self, rows: list) -> list:
        """Stage 4: what is left of the place-and-route budget goes to real-frontier points
        that stage 3 did not try."""
        real = {_hw_key(p) for p, r in zip(self.points, rows) if r["resources_from"] == "yosys"}
        tried = set(self.pnr) | set(self.first)
        jobs = []
        for i in _pnr_choice(self.space, rows, self.points, real - tried,
                             self.space.max_pnr - len(tried)):
            p, k = self.points[i], _hw_key(self.points[i])
            dev = _smallest_device(self.space, rows[i])
            if dev is not None:
                jobs.append(_Job(_pnr_desc(p, self.verilog[k], dev, p["TARGET_MHZ"]),
                                 "place and route", (p, str(self.cache.workdir(self.verilog[k])),
                                                     dev, p["TARGET_MHZ"]), _PNR_COST))
        got = self._stage(jobs, "place and route")
        for job in jobs:
            r = got[task_key(job.desc)]
            if "fmax_mhz" in r:
                self.pnr[_hw_key(job.args[0])] = r["fmax_mhz"]
            else:
                self.result.failed.append((point_name(job.args[0]),
                                           f"nextpnr: {r.get('error')}"))
        if not jobs:
            return rows
        self._refit()
        return self.rows()


def _hw_key(point: dict) -> str:
    return task_key(_hw_point(point))


def _synthesise(runner, cache: Cache, points: list, progress: bool,
                result: SweepResult) -> None:
    """Synthesise ``points`` (their Verilog first: a synthesis is keyed by it), into the
    cache; the calibration of a sweep that has none."""
    unique = list({_hw_key(p): p for p in points}.values())
    got = _stage(runner, cache, [_Job(_verilog_desc(p), "verilog", (p,)) for p in unique],
                 "verilog", progress, result)
    jobs = []
    for p in unique:
        v = got[task_key(_verilog_desc(p))]
        if "sha256" in v:
            jobs.append(_Job(_synth_desc(p, v["sha256"]), "synthesis",
                             (p, str(cache.workdir(v["sha256"])))))
    _stage(runner, cache, jobs, "synthesis", progress, result)
