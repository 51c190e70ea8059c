"""A sweep's outputs: points.csv, frontier.csv, rejected.csv, report.md and the plots.

Everything is written to a temporary folder beside ``out`` and moved into place at the end,
so a sweep that fails leaves no half-written results.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
from pathlib import Path

from .devices import RESOURCES
from .frontier import pareto_front
from .sweep import SweepResult

__all__ = ["write_results", "best_points", "PLOTS"]

#: (file, x column, y column, y to maximise?) of the plots; each draws its own 2-D frontier.
PLOTS = (("throughput_vs_lut.png", "LUT4", "throughput_gmacs", True),
         ("throughput_vs_dsp.png", "MULT18X18D", "throughput_gmacs", True),
         ("throughput_vs_bram.png", "DP16KD", "throughput_gmacs", True),
         ("latency_vs_area.png", "LUT4", "latency_us", False))


def _csv(rows: list[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
    return buf.getvalue()


def best_points(result: SweepResult) -> dict:
    """``{"device": {dev: row}, "workload": {wl: row}}``: the highest throughput that fits each
    device, and per workload the lowest latency on any target device (None if nothing fits)."""
    space, rows = result.space, result.rows
    fits_any = [r for r in rows if any(r[f"fits_{d}"] for d in space.devices)]
    best = {"device": {}, "workload": {}}
    for d in space.devices:
        cands = [r for r in rows if r[f"fits_{d}"] and r["throughput_gmacs"] is not None]
        best["device"][d] = max(cands, key=lambda r: r["throughput_gmacs"], default=None)
    for w in space.workloads:
        cands = [r for r in fits_any if r[f"latency_us_{w}"] is not None]
        best["workload"][w] = min(cands, key=lambda r: r[f"latency_us_{w}"], default=None)
    return best


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _markdown(result: SweepResult) -> str:
    space, rows = result.space, result.rows
    best = best_points(result)
    out = [f"# Design-space sweep: {Path(space.source).name or 'space'}", ""]
    n_real = sum(r["resources_from"] == "yosys" for r in rows)
    out += [f"{len(rows)} points ({n_real} synthesised with Yosys, {len(rows) - n_real} "
            f"screened by the model), {len(result.rejected)} rejected by VTAConfig, "
            f"{result.excluded} excluded by constraints. Workloads: "
            f"{', '.join(space.workloads)} (convolutions at 1/{space.spatial_div} of their "
            f"spatial size). Throughput is every workload's MACs over their total time at the "
            f"clock each point reaches (the lower of its Fmax and TARGET_MHZ).", ""]
    out += ["## Best point per device", "", "| device | point | throughput (GMAC/s) | LUT4 | "
            "FF | DP16KD | MULT18X18D | Fmax (MHz) | from |", "|---|---|---|---|---|---|---|---|---|"]
    for d, r in best["device"].items():
        if r is None:
            out.append(f"| {d} | nothing fits | | | | | | | |")
            continue
        out.append(f"| {d} | {r['name']} | {_fmt(r['throughput_gmacs'])} | "
                   + " | ".join(_fmt(r[k]) for k in RESOURCES)
                   + f" | {_fmt(r['fmax_mhz'])} | {r['resources_from']}, {r['fmax_from']} |")
    out += ["", "## Best point per workload", "", "| workload | point | latency (µs) | cycles | "
            "LUT4 |", "|---|---|---|---|---|"]
    for w, r in best["workload"].items():
        if r is None:
            out.append(f"| {w} | nothing fits | | | |")
            continue
        out.append(f"| {w} | {r['name']} | {_fmt(r[f'latency_us_{w}'])} | "
                   f"{_fmt(r[f'cycles_{w}'])} | {_fmt(r['LUT4'])} |")
    out += ["", "## Pareto frontier", "", "Throughput against LUT4, DP16KD and MULT18X18D, "
            "among points that fit a target device (`frontier.csv`):", "",
            "| point | throughput (GMAC/s) | LUT4 | DP16KD | MULT18X18D | Fmax (MHz) |",
            "|---|---|---|---|---|---|"]
    for i in result.frontier:
        r = rows[i]
        out.append(f"| {r['name']} | {_fmt(r['throughput_gmacs'])} | {_fmt(r['LUT4'])} | "
                   f"{_fmt(r['DP16KD'])} | {_fmt(r['MULT18X18D'])} | {_fmt(r['fmax_mhz'])} "
                   f"({r['fmax_from']}) |")
    out += _included(result)
    out += ["", "![throughput vs LUT4](throughput_vs_lut.png)", "",
            "## Screening model", "",
            f"Calibrated on {result.calibration_runs} real syntheses; leave-one-out relative "
            f"error (each run predicted by the model fitted on the runs of the other GEMM "
            f"shapes), and the margin the "
            f"screening used ({result.margin:.0%}):", "",
            "| quantity | mean error | max error | runs |", "|---|---|---|---|"]
    for k, e in result.model_errors.items():
        if e is None:
            out.append(f"| {k} | — | — | 0 |")
        else:
            out.append(f"| {k} | {e['mean']:.1%} | {e['max']:.1%} | {e['n']} |")
    screened = [r for r in rows if r.get("screened_out")]
    if screened:
        out += ["", "Ruled out without synthesis:", ""]
        out += [f"- {r['name']}: {r['screened_out']}" for r in screened]
    if result.rejected:
        out += ["", "## Rejected points", ""]
        out += [f"- {_name(p)}: {msg}" for p, msg in result.rejected[:50]]
        if len(result.rejected) > 50:
            out.append(f"- … and {len(result.rejected) - 50} more (rejected.csv)")
    if result.failed:
        out += ["", "## Failures", ""]
        out += [f"- {n}: {what}" for n, what in result.failed]
    counts = ", ".join(f"{k}: {v['run']} run, {v['cached']} cached"
                       for k, v in result.counts.items())
    out += ["", f"Tasks: {counts}.", ""]
    out += _time_table(result)
    return "\n".join(out)


def _time_table(result: SweepResult) -> list:
    """Where this run's time went: CPU seconds per kind of task (summed over the tasks that
    ran, in whatever process, tools included) and the wall-clock time of each batch."""
    if not result.phases:
        return []
    out = ["## Where the time went", "", "| task | run | CPU seconds (sum over tasks) |",
           "|---|---|---|"]
    for kind, secs in sorted(result.seconds.items(), key=lambda kv: -kv[1]):
        out.append(f"| {kind} | {result.counts.get(kind, {}).get('run', 0)} | {secs:.0f} |")
    out.append(f"| total | {sum(v.get('run', 0) for v in result.counts.values())} | "
               f"{sum(result.seconds.values()):.0f} |")
    out += ["", "Wall clock: " + ", ".join(f"{label} {secs:.0f} s"
                                          for label, secs in result.phases) + ".", ""]
    return out


def _included(result: SweepResult) -> list:
    """For every configuration the space includes by name: on the frontier, or what beats it."""
    from .frontier import dominates
    from .sweep import _OBJECTIVES
    rows = result.rows
    keys = [(k, 1) for k in _OBJECTIVES["minimize"]] + [(k, -1) for k in _OBJECTIVES["maximize"]]
    out = []
    for name, _ in result.space.include:
        row = next((r for r in rows if r["name"] == name), None)
        if row is None:
            continue
        idx = rows.index(row)
        if idx in result.frontier:
            out.append(f"- `{name}` ({row['resources_from']}) is on the frontier."
                       + _clock_note(result, row))
            continue
        vec = [s * (row[k] or 0) for k, s in keys]
        better = [rows[i] for i in result.frontier
                  if dominates([s * (rows[i][k] or 0) for k, s in keys], vec)]
        fits = [d for d in result.space.devices if row[f"fits_{d}"]]
        why = ("; ".join(f"{b['name']} ({b['resources_from']}) {_versus(b, row)}"
                         for b in better) if better else
               "fits no target device" if not fits else "dominated")
        out.append(f"- `{name}` ({row['resources_from']}) is not on the frontier: {why}."
                   + _clock_note(result, row))
    return (["", "Included configurations:", ""] + out) if out else []


def _clock_note(result: SweepResult, row: dict) -> str:
    """When ``row``'s TARGET_MHZ caps its clock below its Fmax: what it would give at its Fmax,
    and which device's pick it would then beat (a shipped configuration's target is a choice
    of its own, not a property of the hardware)."""
    fmax, clock, tput = row["fmax_mhz"], row["clock_mhz"], row["throughput_gmacs"]
    if not fmax or not tput or clock >= fmax:
        return ""
    at = tput * fmax / clock
    note = (f" It runs at its TARGET_MHZ of {clock:g} MHz, below its Fmax of {fmax:g} MHz "
            f"({row['fmax_from']}): at its Fmax it would give {at:.4g} GMAC/s")
    picks = best_points(result)["device"]
    beaten = [f"{d} ({b['name']}, {_fmt(b['throughput_gmacs'])})" for d, b in picks.items()
              if b is not None and b is not row and row[f"fits_{d}"]
              and at > b["throughput_gmacs"]]
    return note + (", more than the pick of the " + " and the ".join(beaten) if beaten
                   else "") + "."


def _versus(better: dict, row: dict) -> str:
    """How ``better`` beats ``row``, objective by objective."""
    from .sweep import _OBJECTIVES
    parts = []
    for k in _OBJECTIVES["minimize"]:
        d = (better[k] or 0) - (row[k] or 0)
        parts.append(f"the same {k}" if d == 0 else f"{abs(d)} {'fewer' if d < 0 else 'more'} "
                     f"{k}")
    for k in _OBJECTIVES["maximize"]:
        a, b = better[k] or 0, row[k] or 0
        parts.append(f"{(a / b - 1):+.0%} {k}" if b else f"{k} {a}")
    return "needs " + ", ".join(parts[:-1]) + " and gives " + parts[-1]


def _name(point: dict) -> str:
    from .space import point_name
    return point_name(point)


def _plot(rows: list[dict], x: str, y: str, maximize: bool, path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    fits = [r for r in rows if r.get("fits_any")]
    for label, pts, marker in (
            ("resources from Yosys", [r for r in fits if r["resources_from"] == "yosys"], "o"),
            ("resources from the model", [r for r in fits if r["resources_from"] == "model"],
             "x"),
            ("fits no target device", [r for r in rows if not r.get("fits_any")], "s")):
        pts = [r for r in pts if r.get(y) is not None]
        if pts:
            ax.scatter([r[x] for r in pts], [r[y] for r in pts], marker=marker, label=label,
                       alpha=0.8, **({"facecolors": "none", "edgecolors": "grey"}
                                     if marker == "s" else {}))
    usable = [r for r in fits if r.get(y) is not None]
    idx = pareto_front(usable, minimize=(x,) + (() if maximize else (y,)),
                       maximize=(y,) if maximize else ())
    front = sorted((usable[i] for i in idx), key=lambda r: r[x])
    if front:
        ax.step([r[x] for r in front], [r[y] for r in front], where="post", color="tab:red",
                label="Pareto frontier")
        for r in front:
            ax.annotate(r["name"].split("-u")[0], (r[x], r[y]), fontsize=7,
                        textcoords="offset points", xytext=(3, 3))
    ax.set_xlabel(x)
    ax.set_ylabel({"throughput_gmacs": "throughput (GMAC/s)",
                   "latency_us": "total latency of the workloads (µs)"}.get(y, y))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(result: SweepResult, out: "str | Path", *, plots: bool = True) -> Path:
    """Write every output into ``out`` (replaced as a whole); returns ``out``."""
    out = Path(out)
    space, rows = result.space, result.rows
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        columns = list(rows[0]) if rows else ["name"]
        (tmp / "points.csv").write_text(_csv(rows, columns))
        (tmp / "frontier.csv").write_text(_csv([rows[i] for i in result.frontier], columns))
        rej = [{"name": _name(p), **p, "reason": m} for p, m in result.rejected]
        (tmp / "rejected.csv").write_text(_csv(rej, list(rej[0]) if rej else ["name",
                                                                            "reason"]))
        (tmp / "report.md").write_text(_markdown(result))
        if plots and rows:
            lat = [dict(r, latency_us=(sum(r[f"latency_us_{w}"] for w in space.workloads)
                                       if all(r[f"latency_us_{w}"] is not None
                                              for w in space.workloads) else None),
                        fits_any=any(r[f"fits_{d}"] for d in space.devices))
                   for r in rows]
            for fname, x, y, maximize in PLOTS:
                _plot(lat, x, y, maximize, tmp / fname,
                      f"{Path(space.source).stem or 'sweep'}: {y} vs {x}")
        if out.exists():
            old = out.with_name(f".{out.name}-old-{os.getpid()}")
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
