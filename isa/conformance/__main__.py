"""``python -m isa.conformance --config small --out DIR``: write the suite as image files.

For every program NAME: ``DIR/NAME.in.npz`` (the program image, SPEC §5, with its ``outputs``)
and ``DIR/NAME.expect.npz`` (``out_<region>`` arrays with the expected contents, the expected
counters, and for programs that must be rejected ``error``/``error_code``/``error_index``).
``DIR/index.json`` lists them. ``--random N`` also writes N random programs
(``random-SEED.in.npz``, no expectation: compare backends with each other).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..config import load_config
from ..image import save_image
from . import FAMILIES, conformance_programs, random_program


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m isa.conformance", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="default",
                        help="a shipped configuration name or a JSON file (default: default)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="suite seed (default 0)")
    parser.add_argument("--family", action="append", choices=FAMILIES,
                        help="only these families (repeatable)")
    parser.add_argument("--random", type=int, default=0, metavar="N",
                        help="also write N random programs (seeds 0..N-1)")
    parser.add_argument("--list", action="store_true", help="only list the program names")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    progs = conformance_programs(cfg, seed=args.seed, families=tuple(args.family or FAMILIES))
    if args.list:
        for p in progs:
            kind = f"bad {p.expected_error.name}@{p.expected_index}" if p.is_bad else "ok"
            print(f"{p.name:48s} {p.image.insn_count:4d} insns  {kind}")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for p in progs:
        p.save(out)
        index.append({"name": p.name, "tags": list(p.tags), "insn_count": p.image.insn_count,
                      "outputs": [r.name for r in p.image.outputs],
                      "error": p.expected_error.name if p.is_bad else None,
                      "error_index": p.expected_index})
    for seed in range(args.random):
        save_image(out / f"random-{seed}.in.npz", random_program(cfg, seed))
        index.append({"name": f"random-{seed}", "tags": ["random"], "error": None})
    (out / "index.json").write_text(json.dumps({"config": cfg.to_dict(), "seed": args.seed,
                                                "programs": index}, indent=1))
    print(f"wrote {len(progs)} conformance programs"
          + (f" and {args.random} random programs" if args.random else "")
          + f" for {cfg.name} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
