"""Refresh ``designspace/calibration.json`` from the real syntheses in a sweep cache.

    python -m designspace.calibrate [--cache build/designspace-cache]

The shipped file calibrates the screening model on a machine whose cache is empty; every run
in it was measured (Yosys ``synth_ecp5``; Fmax from nextpnr-ecp5 where it was placed).
"""

from __future__ import annotations

import argparse
import json
import sys

from .cache import Cache, task_key
from .sweep import CALIBRATION, load_calibration
from .synth import resources


def collect(cache: Cache) -> list[dict]:
    """Every synthesis in ``cache`` as a calibration run, with its best-known Fmax."""
    pnr = {}
    for desc, result in cache.entries("pnr"):
        if "fmax_mhz" in result:
            pnr[task_key(desc["point"])] = {"fmax_mhz": result["fmax_mhz"],
                                            "device": desc["device"],
                                            "pnr_seconds": result["seconds"]}
    runs = []
    for desc, result in cache.entries("synth"):
        if "cells" not in result:
            continue
        run = {"point": desc["point"], "resources": resources(result["cells"]),
               "cells": result["cells"], "synth_seconds": result["seconds"],
               "tools": desc["tools"], **pnr.get(task_key(desc["point"]), {})}
        runs.append(run)
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="build/designspace-cache")
    ap.add_argument("--out", default=str(CALIBRATION))
    args = ap.parse_args(argv)
    runs = {task_key(r["point"]): r for r in load_calibration()}
    runs.update({task_key(r["point"]): r for r in collect(Cache(args.cache))})
    text = json.dumps({"about": "Real syntheses of the VTA core (Yosys synth_ecp5; Fmax from "
                                "nextpnr-ecp5 out of context) that calibrate the screening "
                                "model; refreshed by python -m designspace.calibrate.",
                       "runs": sorted(runs.values(), key=lambda r: json.dumps(r["point"],
                                                                              sort_keys=True))},
                      indent=1, sort_keys=True)
    with open(args.out, "w") as fh:
        fh.write(text + "\n")
    print(f"{len(runs)} runs -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
