"""``vta verilog`` (``make verilog CONFIG=...``): write the Verilog of the core."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .toolchain import REPO_ROOT

__all__ = ["register", "main"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="default",
                   help="a shipped configuration name or a JSON file (default: default)")
    p.add_argument("--top", choices=("shell", "core"), default="shell",
                   help="shell: the core behind AXI4-Lite registers and an AXI4 master "
                        "(default); core: the core with its plain memory port")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="output file (default: build/verilog/<config>/<module>.v)")
    p.add_argument("--lint", action="store_true",
                   help="also run verilator --lint-only -Wall with hw/verilator_waivers.vlt")
    p.set_defaults(func=_verilog)


def register(subparsers) -> None:
    p = subparsers.add_parser("verilog", help="write the Verilog of the VTA core",
                              description="Write the Verilog of the VTA core (Amaranth) for a "
                                          "configuration.")
    _add_arguments(p)


def _verilog(args) -> int:
    from isa.config import load_config

    from .lint import lint_verilog
    from .verilog import write_verilog

    if args.output is not None:
        from isa.safeio import check_output
        check_output(args.output, what="--output")      # before minutes of elaboration
    cfg = load_config(args.config)
    module = "vta_shell" if args.top == "shell" else "vta_core"
    out = args.output or REPO_ROOT / "build" / "verilog" / cfg.name / f"{module}.v"
    path = write_verilog(cfg, out, top=args.top)
    print(f"wrote {path} ({module}, {cfg})")
    if args.lint:
        clean, output = lint_verilog(cfg, top=args.top)
        if not clean:
            print(output, file=sys.stderr)
            return 1
        print("verilator --lint-only -Wall: clean (with hw/verilator_waivers.vlt)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.cli", description=__doc__)
    _add_arguments(parser)
    args = parser.parse_args(argv)
    return _verilog(args)


if __name__ == "__main__":
    sys.exit(main())
