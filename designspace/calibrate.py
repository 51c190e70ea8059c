"""Rewrite ``designspace/calibration.json`` from the real syntheses in a sweep cache.

    python -m designspace.calibrate [--cache build/designspace-cache]

The shipped file calibrates the screening model on a machine whose cache is empty; every run
in it was measured (Yosys ``synth_ecp5``; Fmax from nextpnr-ecp5 where it was placed).
"""

from __future__ import annotations

import argparse
import json
import sys

from isa.safeio import atomic_output

from .cache import Cache, task_key
from .sweep import CALIBRATION
from .synth import resources


def collect(cache: Cache) -> list[dict]:
    """Every synthesis in ``cache`` as a calibration run, with its best-known Fmax."""
    pnr = {}
    for desc, result in cache.entries("pnr"):
        if "fmax_mhz" in result:
            pnr[task_key(desc["point"])] = {"fmax_mhz": result["fmax_mhz"],
                                            "device": desc["device"],
                                            "pnr_seconds": result["seconds"]}
    from .space import CONFIG_KEYS
    from .sweep import HW_NEUTRAL_KEYS
    keys = set(CONFIG_KEYS) - set(HW_NEUTRAL_KEYS)
    runs = []
    for desc, result in cache.entries("synth"):
        if "cells" not in result or "verilog" not in desc:
            continue        # keyed before synthesis was keyed by the Verilog: unknown RTL
        if set(desc["point"]) != keys:
            continue        # a configuration of an older schema, hence an older RTL
        run = {"point": desc["point"], "resources": resources(result["cells"]),
               "cells": result["cells"], "synth_seconds": result["seconds"],
               "tools": desc["tools"], "verilog_sha256": desc["verilog"],
               **pnr.get(task_key(desc["point"]), {})}
        runs.append(run)
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="build/designspace-cache")
    ap.add_argument("--out", default=str(CALIBRATION))
    args = ap.parse_args(argv)
    runs = {task_key(r["point"]): r for r in collect(Cache(args.cache))}
    if not runs:
        print(f"no synthesis in {args.cache}: {args.out} left as it is", file=sys.stderr)
        return 1
    text = json.dumps({"about": "Real syntheses of the VTA core (Yosys synth_ecp5; Fmax from "
                                "nextpnr-ecp5 out of context) that calibrate the screening "
                                "model; refreshed by python -m designspace.calibrate.",
                       "runs": sorted(runs.values(), key=lambda r: json.dumps(r["point"],
                                                                              sort_keys=True))},
                      indent=1, sort_keys=True)
    with atomic_output(args.out, what="calibration file", mode="w") as fh:
        fh.write(text + "\n")
    print(f"{len(runs)} runs -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from isa.errors import run_command
    sys.exit(run_command(lambda _: main(), None, "designspace.calibrate"))
