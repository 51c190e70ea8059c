"""``vta``: the command-line entry point; each layer registers its own sub-commands."""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main", "build_parser"]

# Modules with a ``register(subparsers)`` function, in the order --help lists them.
_COMMAND_MODULES = (
    "vta.demo",
    "isa.cli",
    "isa.program.cli",
    "driver.cli",
    "sim.trace_plot",
    "hw.cli",
    "bitstreams.cli",
    "relay.cli",
    "compiler.model_cli",
    "compiler.cli",
    "designspace.cli",
)


# `vta run` on a compiled model is routed to the compiler in main(); --help says so.
_VTAB_HELP = ("\n\n'vta run MODEL.vtab --input NAME=ARRAY.npy --out RESULT.npz' runs a compiled\n"
              "model instead of a program image (see 'vta run MODEL.vtab --help').")


def build_parser() -> argparse.ArgumentParser:
    from isa.errors import EXIT_CODES_HELP

    parser = argparse.ArgumentParser(
        prog="vta", description="VTA, the Versatile Tensor Accelerator, in Python: assemble, "
                                "run, build hardware and compile models.",
        epilog=EXIT_CODES_HELP + _VTAB_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an internal error (also VTA_DEBUG=1)")
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
    """Run one ``vta`` command; returns the exit status documented in ``vta --help``."""
    from isa.errors import EXIT_USAGE, run_command

    argv = sys.argv[1:] if argv is None else list(argv)
    # `vta run MODEL.vtab` runs a compiled model; images (.npz) stay with the driver, which
    # does not import the compiler.
    debug = "--debug" in argv[:1]
    rest = argv[1:] if debug else argv
    if len(rest) >= 2 and rest[0] == "run" and rest[1].endswith(".vtab"):
        from compiler.cli import run_vtab_main
        return run_command(lambda _: run_vtab_main(rest[1:]), None, "vta run", debug=debug)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:      # --help (0) or a usage error (2, message already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    name = " ".join(["vta", args.command] + ([args.relay_command] if getattr(
        args, "relay_command", None) else []))
    return run_command(args.func, args, name, debug=args.debug)
