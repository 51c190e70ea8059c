"""``python -m sim.cycle``: run an image on the cycle simulator, or cross-check it with the RTL."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

__all__ = ["main"]


def main(argv=None) -> int:
    from sim.cycle import CycleSimulationError, run_image
    ap = argparse.ArgumentParser(prog="python -m sim.cycle",
                                 description="The cycle-accurate VTA simulator.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an image; print cycles, counters and the summary")
    r.add_argument("image")
    r.add_argument("--trace", help="write a Chrome-trace JSON (open it in ui.perfetto.dev)")
    r.add_argument("--out", help="write dram, cycles and the counters to this .npz")
    x = sub.add_parser("crosscheck", help="compare with the RTL; print the first divergence")
    x.add_argument("image")
    args = ap.parse_args(argv)
    if args.cmd == "crosscheck":
        from sim.cycle_crosscheck import crosscheck
        result = crosscheck(args.image)
        print(result.report())
        return 0 if result.same else 1
    try:
        result = run_image(args.image, trace=args.trace)
    except CycleSimulationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"cycles: {result.cycles}")
    print("counters: " + json.dumps(result.counters))
    print("summary: " + json.dumps(result.summary, indent=1))
    if args.out:
        np.savez(args.out, dram=result.dram, cycles=np.int64(result.cycles),
                 **{k: np.int64(v) for k, v in result.counters.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
