"""``vta run IMAGE.npz --backend B --out RESULT.npz`` (SPEC §5)."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from isa.errors import (EXIT_OK, EXIT_REJECTED, EXIT_TIMEOUT, EXIT_UNAVAILABLE,
                        EXIT_USAGE)
from isa.errors import run_command as _run_reporting
from isa.image import ImageError, load_image
from isa.safeio import check_output, save_npz, timeout_seconds
from sim.functional import SCHEDULES

from .backends import BACKENDS, BackendUnavailable, DeviceError, DeviceTimeout, get_backend

__all__ = ["register", "main", "run_command", "EXIT_OK", "EXIT_PROGRAM_ERROR", "EXIT_USAGE",
           "EXIT_UNAVAILABLE", "EXIT_TIMEOUT"]

# The exit codes of every ``vta`` command (isa.errors, documented in ``vta --help``).
EXIT_PROGRAM_ERROR = EXIT_REJECTED   # the program is wrong: the message names insn and field


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``run`` sub-command to the ``vta`` command's sub-parsers."""
    p = subparsers.add_parser(
        "run", help="run a program image on a backend",
        description="Run one program image (SPEC §5) and write the DRAM after it, the "
                    "cycles (where the backend has them) and the counters to RESULT.npz.")
    p.add_argument("image", metavar="IMAGE.npz", help="the program image to run")
    p.add_argument("--backend", "-b", default="functional", choices=sorted(BACKENDS),
                   help="where to run it (default: functional)")
    p.add_argument("--out", "-o", metavar="RESULT.npz",
                   help="write dram, cycles and counters to exactly this file (no suffix is "
                        "added)")
    p.add_argument("--check-races", action="store_true",
                   help="functional only: re-run under other schedules, fail if DRAM differs")
    p.add_argument("--schedule", choices=SCHEDULES, default="in-order",
                   help="functional only: the order in which ready modules run")
    p.add_argument("--seed", type=int, default=0, help="seed of the random schedule")
    p.add_argument("--timeout", type=timeout_seconds, default=None, metavar="SECONDS",
                   help="give up after this many seconds of wall-clock time, with the state of "
                        "the busy modules (exit status 4)")
    p.add_argument("--link", default=None,
                   help="board only: the host link, a serial port PORT[@BAUD] (e.g. "
                        "/dev/ttyUSB0, 3000000 baud by default), 'sim' (the software board) or "
                        "'board-sim' (the whole board design with SDRAM on Verilator, driven "
                        "over its simulated serial line; slow)")
    p.add_argument("--trace", metavar="FILE.json", default=None,
                   help="cycle only: write a per-module timeline in the Chrome trace format "
                        "(open it in ui.perfetto.dev) and print the utilisation summary")
    p.add_argument("--waveform", metavar="FILE.vcd", default=None,
                   help="rtl only: run through the cocotb bench and write a VCD waveform")
    p.set_defaults(func=run_command)

    c = subparsers.add_parser(
        "crosscheck", help="run an image on the cycle simulator and the RTL and compare",
        description="Run one image on the cycle-accurate simulator and on the Verilated RTL; "
                    "when cycles or counters differ, print the first divergence (cycle, "
                    "module, state).")
    c.add_argument("image", metavar="IMAGE.npz")
    c.set_defaults(func=crosscheck_command)
    return p


def crosscheck_command(args: argparse.Namespace) -> int:
    from sim.cycle_crosscheck import crosscheck

    try:
        load_image(args.image)
    except ImageError as exc:
        return _fail(f"{args.image}: {exc}", EXIT_USAGE)
    result = crosscheck(args.image)
    print(result.report())
    return EXIT_OK if result.same else EXIT_PROGRAM_ERROR


def _fail(message: str, status: int) -> int:
    print(f"vta run: error: {message}", file=sys.stderr)
    return status


def run_command(args: argparse.Namespace) -> int:
    functional_only = [opt for opt, on in (("--check-races", args.check_races),
                                           ("--schedule", args.schedule != "in-order"))
                       if on]
    if functional_only and args.backend != "functional":
        return _fail(f"{', '.join(functional_only)} applies to the functional backend only",
                     EXIT_USAGE)
    for option, value, backend in (("--link", args.link, "board"),
                                   ("--trace", args.trace, "cycle"),
                                   ("--waveform", args.waveform, "rtl")):
        if value is not None and args.backend != backend:
            return _fail(f"{option} applies to the {backend} backend only", EXIT_USAGE)
    if args.link not in (None, "sim", "board-sim") and \
            not os.path.exists(args.link.split("@", 1)[0]):
        return _fail(f"--link {args.link!r}: no such board link; give 'sim' (the software "
                     f"board), 'board-sim' (the simulated board design) or the serial port of a "
                     f"board", EXIT_USAGE)
    try:
        image = load_image(args.image)
    except ImageError as exc:
        return _fail(f"{args.image}: {exc}", EXIT_USAGE)
    # Every file the run will write must be writable before the run starts.
    for option, value in (("--out", args.out), ("--trace", args.trace),
                          ("--waveform", args.waveform)):
        if value is not None:
            check_output(value, what=option)
    options = {}
    if args.backend == "functional":
        options = dict(schedule=args.schedule, seed=args.seed, check_races=args.check_races)
    elif args.backend == "board":
        options = dict(link=args.link)
    elif args.backend == "cycle":
        options = dict(trace=args.trace)
    elif args.backend == "rtl" and args.waveform:
        options = dict(waveform=args.waveform)
    try:
        backend = get_backend(args.backend, **options)
        result = backend.run(image, timeout=args.timeout)
    except BackendUnavailable as exc:
        return _fail(str(exc), EXIT_UNAVAILABLE)
    except DeviceTimeout as exc:
        return _fail(str(exc), EXIT_TIMEOUT)
    except DeviceError as exc:
        message = str(exc)
        if exc.field is not None and f"field {exc.field}" not in message:
            message += f" (field {exc.field}"
            message += f" = {exc.value})" if exc.value is not None else ")"
        return _fail(message, EXIT_PROGRAM_ERROR)
    arrays = {"dram": result.dram}
    if result.cycles is not None:
        arrays["cycles"] = np.int64(result.cycles)
    for name, value in result.counters.items():
        if name in ("dram", "cycles"):
            name = f"counter_{name}"
        arrays[name] = np.int64(value)
    if args.out:
        save_npz(args.out, arrays)
    summary = f"{args.backend}: {image.insn_count} instructions"
    if result.cycles is not None:
        summary += f", {result.cycles} cycles"
    print(summary + (f" -> {args.out}" if args.out else ""))
    if result.summary and args.trace:
        _print_summary(result.summary)
        print(f"trace: {args.trace} (open it in ui.perfetto.dev)")
    return EXIT_OK


def _print_summary(summary: dict) -> None:
    for key, value in summary.items():
        if isinstance(value, float):
            value = f"{value:.3f}"
        print(f"  {key:<28} {value}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="vta", description="VTA runtime driver")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return _run_reporting(args.func, args, f"vta {args.command}")


if __name__ == "__main__":
    sys.exit(main())
