"""``python -m sim.cycle``: run an image on the cycle simulator, or cross-check it with the RTL."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

__all__ = ["main"]


def main(argv=None) -> int:
    from isa.errors import EXIT_USAGE, run_command
    from isa.safeio import timeout_seconds

    ap = argparse.ArgumentParser(prog="python -m sim.cycle",
                                 description="The cycle-accurate VTA simulator.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an image; print cycles, counters and the summary")
    r.add_argument("image")
    r.add_argument("--trace", help="write a Chrome-trace JSON (open it in ui.perfetto.dev)")
    r.add_argument("--out", help="write dram, cycles and the counters to exactly this .npz")
    r.add_argument("--timeout", type=timeout_seconds, default=None, metavar="SECONDS",
                   help="give up after this many seconds of wall-clock time")
    x = sub.add_parser("crosscheck", help="compare with the RTL; print the first divergence")
    x.add_argument("image")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return run_command(_crosscheck if args.cmd == "crosscheck" else _run, args,
                       f"python -m sim.cycle {args.cmd}")


def _crosscheck(args) -> int:
    from isa.image import load_image
    from sim.cycle_crosscheck import crosscheck

    load_image(args.image)              # a bad image is an input error, before any build
    result = crosscheck(args.image)
    print(result.report())
    return 0 if result.same else 1


def _run(args) -> int:
    from isa.image import load_image
    from isa.safeio import check_output, save_npz
    from sim.cycle import run_image

    image = load_image(args.image)
    for option, value in (("--out", args.out), ("--trace", args.trace)):
        if value is not None:
            check_output(value, what=option)
    result = run_image(image, trace=args.trace, timeout=args.timeout)
    print(f"cycles: {result.cycles}")
    print("counters: " + json.dumps(result.counters))
    print("summary: " + json.dumps(result.summary, indent=1))
    if args.out:
        save_npz(args.out, dict(dram=result.dram, cycles=np.int64(result.cycles),
                                **{k: np.int64(v) for k, v in result.counters.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
