"""``vta``: the command-line entry point; each layer registers its own sub-commands."""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main", "build_parser"]

# Modules with a ``register(subparsers)`` function, in the order --help lists them.
_COMMAND_MODULES = ("vta.demo", "isa.cli", "driver.cli", "sim.trace_plot", "hw.cli", "relay.cli",
                    "isa.program.cli", "compiler.cli")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vta", description="VTA, the Versatile Tensor Accelerator, in Python: assemble, "
                                "run, build hardware and compile models.",
        epilog="'vta run MODEL.vtab --input NAME=ARRAY.npy --out RESULT.npz' runs a compiled "
               "model instead of a program image (see 'vta run MODEL.vtab --help').")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a layer that is not in this checkout yet
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv=None) -> int:
    from isa.cli import USER_ERRORS

    argv = sys.argv[1:] if argv is None else list(argv)
    # `vta run MODEL.vtab` runs a compiled model; images (.npz) stay with the driver, which
    # does not import the compiler.
    if len(argv) >= 2 and argv[0] == "run" and argv[1].endswith(".vtab"):
        from compiler.cli import run_vtab_main
        return run_vtab_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except USER_ERRORS as exc:
        print(f"vta {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
