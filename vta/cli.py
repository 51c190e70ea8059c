"""``vta``: the command-line entry point; each layer registers its own sub-commands."""

from __future__ import annotations

import importlib
import sys

# argparse and pathlib are imported where used: this module loads before the Ctrl-C handler
# is installed (vta.interrupts) when `vta` runs as a console script.

__all__ = ["main", "build_parser", "runners", "file_kind"]

# Modules with a ``register(subparsers)`` function (and, for `vta run` on a file kind of their
# own, a ``RUNNERS`` table), in the order --help lists them.
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


def _command_modules():
    """The command modules of this checkout, imported, in --help order."""
    for name in _COMMAND_MODULES:
        try:
            yield importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            # a layer that is not in this checkout yet


def runners() -> dict:
    """``vta run FILE`` on a file that is not a program image: {file kind: (runner, help line)}
    collected from the command modules' ``RUNNERS`` (e.g. compiler.cli's "vtab"), so that the
    driver, which owns ``vta run`` for images, never imports the layers above it."""
    found = {}
    for module in _command_modules():
        found.update(getattr(module, "RUNNERS", {}))
    return found


def file_kind(path: str) -> str:
    """The kind of a file for the runner registry: its suffix, lower case, without the dot."""
    from pathlib import PurePath

    return PurePath(path).suffix.lower().lstrip(".")


def build_parser() -> "argparse.ArgumentParser":
    import argparse

    from isa.errors import EXIT_CODES_HELP

    modules = list(_command_modules())
    runner_help = "".join(f"\n\n{help_line}" for module in modules
                          for _, help_line in getattr(module, "RUNNERS", {}).values())
    parser = argparse.ArgumentParser(
        prog="vta", description="VTA, the Versatile Tensor Accelerator, in Python: assemble, "
                                "run, build hardware and compile models.",
        epilog=EXIT_CODES_HELP + runner_help,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an internal error (also VTA_DEBUG=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in modules:
        module.register(subparsers)
    return parser


def main(argv=None) -> int:
    """Run one ``vta`` command; returns the exit status documented in ``vta --help``. A
    Ctrl-C while the layers load (before the command's own handling) is one line too."""
    try:
        from .interrupts import install
        install()
        return _main(argv)
    except KeyboardInterrupt:
        from isa.errors import EXIT_INTERRUPTED
        print("vta: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv) -> int:
    from isa.errors import EXIT_USAGE, run_command

    argv = sys.argv[1:] if argv is None else list(argv)
    # `vta run FILE` on a kind of file an upper layer registered (a compiled model, .vtab)
    # goes to that layer's runner; program images stay with the driver.
    debug = "--debug" in argv[:1]
    rest = argv[1:] if debug else argv
    if len(rest) >= 2 and rest[0] == "run" and not rest[1].startswith("-"):
        runner = runners().get(file_kind(rest[1]))
        if runner is not None:
            return run_command(lambda _: runner[0](rest[1:]), None, "vta run", debug=debug)
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
