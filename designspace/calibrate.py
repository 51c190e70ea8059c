"""Rewrite ``designspace/calibration.json`` from the real syntheses in a sweep cache.

    python -m designspace.calibrate [--cache build/designspace-cache]

The shipped file calibrates the screening model on a machine whose cache is empty; every run
in it was measured (Yosys ``synth_ecp5``; Fmax from nextpnr-ecp5 where it was placed). Only
runs of each point's *current* Verilog are taken: the one the sweep's ``verilog`` cache entry
for today's sources names. Syntheses and place-and-route runs of any other Verilog (an older
RTL, or a point whose Verilog the sweep has not made from today's sources) are left out and
listed, in the output and in the file's ``left_out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

from isa.safeio import atomic_output

from .cache import Cache, task_key
from .sweep import CALIBRATION
from .synth import resources

__all__ = ["Collected", "collect", "main"]


@dataclass
class Collected:
    """The calibration runs of a cache (``runs``, one per point, with its nextpnr Fmax when
    the same Verilog was placed) and what was left out (``left_out``: ``{"kind", "point",
    "verilog_sha256", "why"}``)."""

    runs: list = field(default_factory=list)
    left_out: list = field(default_factory=list)


def _current_verilog(cache: Cache, point: dict, known: dict) -> "str | None":
    """The SHA-256 of ``point``'s Verilog made from today's sources (the sweep's cache entry),
    or None when the sweep has not made it."""
    from .sweep import _verilog_desc
    key = task_key(point)
    if key not in known:
        got = cache.get(_verilog_desc(point))
        known[key] = got.get("sha256") if isinstance(got, dict) else None
    return known[key]


def _stale(kind: str, desc: dict, current: "str | None") -> dict:
    why = ("no Verilog of today's sources for this point in the cache (run the sweep)"
           if current is None else f"of another Verilog than today's ({current[:12]})")
    return {"kind": kind, "point": desc["point"], "verilog_sha256": desc.get("verilog"),
            "why": why}


def collect(cache: Cache) -> Collected:
    """The syntheses in ``cache`` of each point's current Verilog as calibration runs, each
    with the Fmax of a place and route of the same (point, Verilog); the rest left out."""
    from .space import CONFIG_KEYS
    from .sweep import HW_NEUTRAL_KEYS
    keys = set(CONFIG_KEYS) - set(HW_NEUTRAL_KEYS)
    out, known = Collected(), {}

    def current(kind, desc):
        """Whether ``desc`` is of its point's current Verilog (else noted as left out)."""
        if set(desc["point"]) != keys:
            out.left_out.append({"kind": kind, "point": desc["point"],
                                 "verilog_sha256": desc.get("verilog"),
                                 "why": "a configuration of an older schema"})
            return False
        now = _current_verilog(cache, desc["point"], known)
        if desc.get("verilog") is None or desc["verilog"] != now:
            out.left_out.append(_stale(kind, desc, now))
            return False
        return True

    pnr = {}
    for desc, result in cache.entries("pnr"):
        if "fmax_mhz" in result and current("pnr", desc):
            pnr[task_key([desc["point"], desc["verilog"]])] = {
                "fmax_mhz": result["fmax_mhz"], "device": desc["device"],
                "pnr_seconds": result["seconds"]}
    runs = {}
    for desc, result in cache.entries("synth"):
        if "cells" not in result or not current("synth", desc):
            continue
        # entries come oldest first: a later synthesis of the same Verilog (other tools)
        # replaces an earlier one
        runs[task_key(desc["point"])] = {
            "point": desc["point"], "resources": resources(result["cells"]),
            "cells": result["cells"], "synth_seconds": result["seconds"],
            "tools": desc["tools"], "verilog_sha256": desc["verilog"],
            **pnr.get(task_key([desc["point"], desc["verilog"]]), {})}
    out.runs = sorted(runs.values(), key=lambda r: json.dumps(r["point"], sort_keys=True))
    return out


def _summary(got: Collected) -> str:
    placed = sum("fmax_mhz" in r for r in got.runs)
    lines = [f"{len(got.runs)} syntheses of the current Verilog used ({placed} with a "
             f"nextpnr Fmax); {len(got.left_out)} runs left out as stale"]
    for s in got.left_out:
        p = s["point"]
        shape = "x".join(str(1 << p.get(k, 0)) for k in ("LOG_BATCH", "LOG_BLOCK_IN",
                                                         "LOG_BLOCK_OUT"))
        sha = (s["verilog_sha256"] or "none")[:12]
        lines.append(f"  left out: {s['kind']} of {shape} (Verilog {sha}): {s['why']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="build/designspace-cache")
    ap.add_argument("--out", default=str(CALIBRATION))
    args = ap.parse_args(argv)
    got = collect(Cache(args.cache))
    print(_summary(got), file=sys.stderr)
    if not got.runs:
        print(f"no synthesis of the current Verilog in {args.cache}: {args.out} left as it is",
              file=sys.stderr)
        return 1
    text = json.dumps({"about": "Real syntheses of the VTA core (Yosys synth_ecp5; Fmax from "
                                "nextpnr-ecp5 out of context) that calibrate the screening "
                                "model; refreshed by python -m designspace.calibrate, which "
                                "takes only runs of each point's current Verilog.",
                       "used": {"syntheses": len(got.runs),
                                "placed": sum("fmax_mhz" in r for r in got.runs)},
                       "runs": got.runs, "left_out": got.left_out},
                      indent=1, sort_keys=True)
    with atomic_output(args.out, what="calibration file", mode="w") as fh:
        fh.write(text + "\n")
    print(f"{len(got.runs)} runs -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from isa.errors import run_command
    sys.exit(run_command(lambda _: main(), None, "designspace.calibrate"))
