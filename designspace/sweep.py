"""One sweep: expand the space, simulate the workloads, screen, synthesise, place, rank.

Stages, each a set of cached tasks run by a :mod:`~designspace.runners` runner:

1. **cycles** of every workload on every valid point (cycle-accurate simulator);
2. **screening**: the model (:mod:`~designspace.model`), calibrated on every real synthesis
   known (the shipped ``calibration.json`` and the cache), predicts each point's resources;
   a point is ruled out if, even with the model's error as a margin, it fits no target device
   or another point is smaller on every resource, no slower on every workload and no slower in
   clock;
3. **synthesis** (Yosys ``synth_ecp5``) of every point not ruled out;
4. **place and route** (nextpnr-ecp5) of the frontier's points (or all), fastest first, at
   most ``max_pnr``, each on the smallest target device it fits.

A point's row holds its configuration, resources (``resources_from``: yosys or model), Fmax
(``fmax_from``: nextpnr or model), the clock it runs at (the lower of Fmax and TARGET_MHZ),
cycles and latency per workload, throughput (all workloads' MACs over their total time) and
whether it fits each device.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from isa.config import VTAConfig

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


class SweepError(RuntimeError):
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
    from .synth import place_and_route, synthesize
    if not (Path(workdir) / "core.json").exists():
        synthesize(point_config(point), workdir)
    return place_and_route(workdir, get_device(device), target_mhz)


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
    from .synth import tool_versions
    return {"kind": "synth", "point": _hw_point(point), "verilog": verilog,
            "tools": tool_versions(), "script": source_digest("designspace/synth.py")}


def _pnr_desc(point: dict, verilog: str, device: str, target_mhz: int) -> dict:
    return {**_synth_desc(point, verilog), "kind": "pnr", "device": device,
            "target_mhz": target_mhz}


# ---------------------------------------------------------------------------- calibration
def load_calibration(path: Path = CALIBRATION) -> list[dict]:
    """The shipped real syntheses: ``[{"point": {...}, "cells"/"resources": ..., "fmax_mhz"}]``."""
    try:
        return json.loads(path.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        return []


def _samples(cache: Cache) -> list[Sample]:
    """Every real synthesis known, one per hardware point (the cache wins over the file)."""
    from .synth import resources
    runs: dict[str, dict] = {}
    for run in load_calibration():
        runs[task_key(_hw_point(run["point"]))] = dict(run)
    fmax = {}
    for desc, result in cache.entries("pnr"):
        if "fmax_mhz" in result:
            fmax[task_key(desc["point"])] = result["fmax_mhz"]
    for desc, result in cache.entries("synth"):
        if "cells" in result:
            key = task_key(desc["point"])
            runs[key] = {"point": desc["point"], "resources": resources(result["cells"]),
                         "fmax_mhz": fmax.get(key, runs.get(key, {}).get("fmax_mhz"))}
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
    counts: dict = field(default_factory=dict)         # tasks run / cached per stage


def _progress(total: int, desc: str, enabled: bool):
    if not enabled or total == 0:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="task", leave=True)


def _stage(space: Space, runner, cache: Cache, fn: Callable, jobs: list, desc: str,
           progress: bool, counts: dict) -> dict:
    """Run ``jobs`` [(description, args)] not yet cached; return {task key: result}."""
    out, todo = {}, []
    for d, args in jobs:
        hit = cache.get(d)
        if hit is not None:
            out[task_key(d)] = hit
        else:
            todo.append((d, args))
    counts[desc] = {"cached": len(out), "run": len(todo)}
    bar = _progress(len(todo), desc, progress)
    try:
        for i, result, exc in runner.run(fn, [a for _, a in todo]):
            d = todo[i][0]
            if exc is not None:
                result = {"error": f"{type(exc).__name__}: {exc}"}
            else:
                cache.put(d, result)       # the moment it is known: nothing lost on a kill
            out[task_key(d)] = result
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return out


def _ruled_out(space: Space, names: list, preds: list, cycles: list, margin: float) -> list:
    """Per point: None (must synthesise) or why the model rules it out."""
    devices = [get_device(d) for d in space.devices]
    reasons = []
    for p in preds:
        low = {r: p[r] * (1 - margin) for r in RESOURCES}
        reasons.append(None if any(d.fits(low) for d in devices) else
                       "fits no target device even at the model's error margin")
    for i, p in enumerate(preds):
        if reasons[i] is not None or cycles[i] is None:
            continue
        for j, q in enumerate(preds):
            if j == i or cycles[j] is None or reasons[j] is not None:
                continue
            smaller = all(q[r] * (1 + margin) <= p[r] for r in RESOURCES) and any(
                q[r] * (1 + margin) < p[r] for r in RESOURCES)
            faster = all(cj <= ci for cj, ci in zip(cycles[j], cycles[i]))
            clock = (q["fmax_mhz"] or 0) >= (p["fmax_mhz"] or 0)
            if smaller and faster and clock:
                reasons[i] = f"dominated by {names[j]}"
                break
    return reasons


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


def run_sweep(space: Space, *, cache: Cache, runner, synthesis: str = "real",
              progress: bool = True, log: Callable = print) -> SweepResult:
    """Run ``space``; ``synthesis`` is ``real`` (Yosys/nextpnr for what the model cannot rule
    out) or ``model`` (the screening model only: no FPGA tools)."""
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

    # 1. cycles
    jobs = [(_cycles_desc(p, w, space), (p, w, space.spatial_div, space.seed))
            for p in points for w in space.workloads]
    got = _stage(space, runner, cache, cycles_task, jobs, "cycles", progress, result.counts)
    cyc = []
    for p, name in zip(points, names):
        per = {}
        for w in space.workloads:
            r = got[task_key(_cycles_desc(p, w, space))]
            if "error" in r:
                result.failed.append((name, f"{w}: {r['error']}"))
            else:
                per[w] = r
        cyc.append(per if len(per) == len(space.workloads) else None)

    # 2. screening
    samples = _samples(cache)
    if not samples and synthesis == "real" and points:
        smallest = min(points, key=lambda p: point_config(p).macs_per_cycle)
        log(f"no calibration yet: synthesising {point_name(smallest)} first")
        _synth_points(space, runner, cache, [smallest], progress, result.counts)
        samples = _samples(cache)
    if not samples:
        raise SweepError("the screening model has no real synthesis to calibrate on: run "
                         "with --synthesis real once (or restore designspace/calibration.json)")
    model = ScreeningModel(samples)
    margin = model.margin(space.margin)
    preds = [model.predict(point_config(p)) for p in points]
    cyc_vec = [None if c is None else [c[w]["cycles"] for w in space.workloads] for c in cyc]
    reasons = _ruled_out(space, names, preds, cyc_vec, margin)

    # 3. synthesis of what the model cannot rule out
    synth = {}
    if synthesis == "real":
        todo = [p for p, why, c in zip(points, reasons, cyc) if why is None and c is not None]
        synth = _synth_points(space, runner, cache, todo, progress, result.counts)
        for p, name in zip(points, names):
            r = synth.get(_hw_key(p))
            if r is not None and "error" in r:
                result.failed.append((name, f"synthesis: {r['error']}"))
        samples = _samples(cache)
        model = ScreeningModel(samples)
        preds = [model.predict(point_config(p)) for p in points]

    def rows_for(pnr: dict) -> list:
        from .synth import resources
        rows = []
        for p, name, pred, c in zip(points, names, preds, cyc):
            s = synth.get(_hw_key(p))
            real = s is not None and "cells" in s
            res = resources(s["cells"]) if real else pred
            f = pnr.get(_hw_key(p))
            fmax, src = (f, "nextpnr") if f else (pred["fmax_mhz"], "model")
            rows.append(_row(space, name, p, res, "yosys" if real else "model", fmax, src, c))
        return rows

    def front(rows):
        fit = [r if any(r[f"fits_{d}"] for d in space.devices) else {} for r in rows]
        return pareto_front(fit, **_OBJECTIVES)

    # 4. place and route the points that matter
    pnr: dict = {}
    rows = rows_for(pnr)
    if synthesis == "real" and space.fmax != "none" and space.max_pnr > 0:
        chosen = front(rows) if space.fmax == "frontier" else range(len(rows))
        chosen = [i for i in chosen if rows[i]["resources_from"] == "yosys"]
        chosen.sort(key=lambda i: -(rows[i]["throughput_gmacs"] or 0))
        jobs = []
        for i in chosen[:space.max_pnr]:
            dev = next((d for d in sorted(space.devices, key=lambda d: DEVICES[d].luts)
                        if rows[i][f"fits_{d}"]), None)
            if dev is None:
                continue
            p = points[i]
            sha = synth[_hw_key(p)]["verilog"]
            d = _pnr_desc(p, sha, dev, p["TARGET_MHZ"])
            jobs.append((d, (p, str(cache.workdir(task_key(_synth_desc(p, sha)))), dev,
                             p["TARGET_MHZ"])))
        got = _stage(space, runner, cache, pnr_task, jobs, "place and route", progress,
                     result.counts)
        for d, args in jobs:
            r = got[task_key(d)]
            if "fmax_mhz" in r:
                pnr[_hw_key(args[0])] = r["fmax_mhz"]
            else:
                result.failed.append((point_name(args[0]), f"nextpnr: {r.get('error')}"))
        if pnr:
            model = ScreeningModel(_samples(cache))
            preds = [model.predict(point_config(p)) for p in points]
        rows = rows_for(pnr)
    for row, why in zip(rows, reasons):
        row["screened_out"] = (why or "") if row["resources_from"] == "model" else ""
    result.rows = rows
    result.frontier = front(rows)
    result.model_errors = model.errors()
    result.margin = margin
    result.calibration_runs = len(model.samples)
    return result


def _hw_key(point: dict) -> str:
    return task_key(_hw_point(point))


def _synth_points(space, runner, cache: Cache, points: list, progress: bool,
                  counts: dict) -> dict:
    """Synthesise ``points`` (one per distinct hardware): ``{hw key: result}``; every result
    also names the SHA-256 of its Verilog under ``verilog``."""
    unique = list({_hw_key(p): p for p in points}.values())
    vjobs = [(_verilog_desc(p), (p,)) for p in unique]
    got = _stage(space, runner, cache, verilog_task, vjobs, "verilog", progress, counts)
    jobs, out = [], {}
    for p in unique:
        v = got[task_key(_verilog_desc(p))]
        if "sha256" not in v:
            out[_hw_key(p)] = {"error": f"Verilog: {v.get('error')}"}
            continue
        d = _synth_desc(p, v["sha256"])
        jobs.append((d, (p, str(cache.workdir(task_key(d))))))
    got = _stage(space, runner, cache, synth_task, jobs, "synthesis", progress, counts)
    for d, (p, _) in jobs:
        out[_hw_key(p)] = {**got[task_key(d)], "verilog": d["verilog"]}
    return out
