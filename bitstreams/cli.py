"""``vta bitstream`` (``make bitstream BOARD= CONFIG=``) and ``vta program``.

Exit status: 0 built / loaded; 1 the configuration does not fit the device; 2 bad usage (an
unknown board or configuration, a missing bitstream); 3 a tool is missing or failed.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from .boards import BOARDS
from .errors import BitstreamError, FitError, ToolError, UsageError

__all__ = ["register", "main"]

EXIT_OK, EXIT_DOES_NOT_FIT, EXIT_USAGE, EXIT_TOOL = 0, 1, 2, 3
DEFAULT_BOARD = "ulx3s-85f"
DEFAULT_CONFIG = "ecp5-small"
PROGRAM_TIMEOUT_S = 600
#: More seeds than this is a typo, not a plan (each is a whole place and route).
MAX_SEEDS = 64


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--board", default=DEFAULT_BOARD, choices=sorted(BOARDS),
                   help=f"the board (default: {DEFAULT_BOARD})")
    p.add_argument("--config", default=DEFAULT_CONFIG,
                   help=f"a shipped configuration name or a JSON file (default: "
                        f"{DEFAULT_CONFIG}; ecp5-large is the largest that fits the 85F)")
    p.add_argument("--memory", choices=("onchip", "sdram"), default="onchip",
                   help="the core's DRAM: 'onchip' block RAM (the bring-up variant, default) or "
                        "'sdram', the board's 32 MB SDRAM through LiteDRAM (needs the 'sdram' "
                        "extra); an SDRAM build lives in bitstreams/<board>-<config>-sdram")


def register(subparsers) -> None:
    from .build import LAGGARD_FACTOR
    b = subparsers.add_parser(
        "bitstream", help="build an FPGA bitstream of the VTA board design (Yosys, nextpnr)",
        description="Build the board design (VTA core, DRAM on chip or in SDRAM, UART host "
                    "link) for a board with YoWASP's Yosys, nextpnr-ecp5 and ecppack, into "
                    "bitstreams/<board>-<config>/ with report.json and report.txt (resources "
                    "against the device, Fmax against the target, seed, tool versions). A "
                    "configuration that cannot fit is refused before place and route.")
    _common(b)
    b.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed (default 1)")
    b.add_argument("--seeds", type=int, default=1, metavar="N",
                   help="place and route with the N seeds SEED ... SEED+N-1, as many at once "
                        "as the machine has cores, and keep the one with the fastest core "
                        "clock; once one seed has finished in T, a seed still running after "
                        f"{LAGGARD_FACTOR:g}·T is stopped (reported as stopped); the report "
                        "lists every seed's Fmax (default 1)")
    b.add_argument("--dram-kib", type=int, default=None,
                   help="DRAM the host and core see, in KiB, a power of two (default: 64 on "
                        "chip, all 32768 of the SDRAM)")
    b.add_argument("-o", "--out", type=Path, default=None,
                   help="output folder (default: bitstreams/<board>-<config>)")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    b.add_argument("--check", action="store_true",
                   help="only check the options, the configuration and its fit estimate "
                        "(block RAM, multipliers) against the board: seconds, no Yosys, "
                        "nothing written")
    b.add_argument("--synth-only", action="store_true",
                   help="stop after synthesis (minutes, not the half hour of place and "
                        "route): the synthesis fit and the netlist's LUT4 levels between "
                        "registers, the depth that sets the clock; the netlist stays in "
                        "OUT/build for `python -m bitstreams.levels`; no bitstream, no report")
    b.set_defaults(func=bitstream_command)

    p = subparsers.add_parser(
        "program", help="load a bitstream onto the board with openFPGALoader",
        description="Load bitstreams/<board>-<config>/vta_board.bit (or BITFILE) into the "
                    "board's FPGA with openFPGALoader (into its configuration SRAM; --flash "
                    "writes the SPI flash so it survives a power cycle).")
    _common(p)
    p.add_argument("bitfile", nargs="?", type=Path, default=None, metavar="BITFILE")
    p.add_argument("--flash", action="store_true", help="write the SPI flash instead of SRAM")
    p.set_defaults(func=program_command)


def _fail(cmd: str, message: str, status: int) -> int:
    print(f"vta {cmd}: error: {message}", file=sys.stderr)
    return status


def _config(name):
    from isa.config import ConfigError, load_config
    try:
        return load_config(name)
    except (ConfigError, OSError, ValueError) as exc:
        raise UsageError(f"configuration {name!r}: {exc}") from None


def _terminate_as_interrupt(signum, frame):
    # A SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the running tool is killed too.
    raise KeyboardInterrupt


def bitstream_command(args) -> int:
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        return _bitstream(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _bitstream(args) -> int:
    from hw.board.ulx3s import SDRAM_BYTES
    from isa.errors import Unavailable

    from .boards import get_board
    from .build import build_bitstream
    from .progress import Progress

    try:
        board, cfg = get_board(args.board), _config(args.config)
        _check_out(args.out)
        # nextpnr reads its seed as a C int
        if not 0 <= args.seed < 1 << 31:
            raise UsageError(f"--seed {args.seed} must be in 0 .. {(1 << 31) - 1}")
        if not 1 <= args.seeds <= MAX_SEEDS or args.seed + args.seeds > 1 << 31:
            raise UsageError(f"--seeds {args.seeds} must be in 1 .. {MAX_SEEDS}, with "
                             f"--seed + --seeds at most {1 << 31}")
        mem = None
        if args.dram_kib is not None:
            kib = args.dram_kib
            if kib <= 0 or kib & (kib - 1):
                raise UsageError(f"--dram-kib {kib} must be a positive power of two")
            mem = kib << 10
        if args.memory == "sdram" and mem is not None and mem > SDRAM_BYTES:
            raise UsageError(f"--dram-kib {args.dram_kib}: the board's SDRAM has "
                             f"{SDRAM_BYTES >> 10} KiB")
        _check_clocks(cfg, mem, args.memory, args.config)
        report = build_bitstream(board, cfg, out=args.out, seed=args.seed,
                                 seeds=args.seeds, mem_bytes=mem,
                                 progress=Progress(enabled=not args.quiet), memory=args.memory,
                                 check_only=args.check, synth_only=args.synth_only)
    except FitError as exc:
        return _fail("bitstream", f"configuration {args.config}: {exc}", EXIT_DOES_NOT_FIT)
    except UsageError as exc:
        return _fail("bitstream", str(exc), EXIT_USAGE)
    except (BitstreamError, Unavailable) as exc:
        return _fail("bitstream", str(exc), EXIT_TOOL)
    if args.check:
        used = ", ".join(f"{r} {n} of {board.total(r)}" for r, n in
                         report["config_estimate"].items())
        print(f"configuration {args.config} on the {board.name} ({args.memory} DRAM): the "
              f"estimate before synthesis fits ({used})")
        return EXIT_OK
    if args.synth_only:
        return _print_synthesis(report, board, args.config)
    from .report import summary_text
    print(summary_text(report), end="")
    return EXIT_OK


def _print_synthesis(result: dict, board, name) -> int:
    from .report import levels_lines

    used = ", ".join(f"{r} {n} of {board.total(r)}" for r, n in
                     result["synthesis_estimate"].items())
    print(f"configuration {name} on the {board.name}: synthesis fits ({used})")
    print("\n".join(levels_lines(result["lut_levels"], worst=10)))
    print(f"netlist: {result['netlist']} (its deepest paths: python -m bitstreams.levels "
          f"{result['netlist']})")
    return EXIT_OK


def _check_clocks(cfg, mem_bytes, memory: str, name) -> None:
    """Refuse a TARGET_MHZ the board's PLL cannot make, or whose clock cannot make the UART's
    baud rate (the board design's constructor checks both, with ValueErrors)."""
    from hw.board.pll import PllError
    from hw.board.ulx3s import Ulx3sTop

    try:
        Ulx3sTop(cfg, mem_bytes=mem_bytes, memory=memory)
    except (PllError, ValueError) as exc:
        raise UsageError(f"configuration {name}: TARGET_MHZ {cfg.target_mhz:g}: {exc}") \
            from None


def _check_out(out: "Path | None") -> None:
    """Refuse an --out that cannot be a build folder before anything runs."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder")
    if not out.exists() and not out.parent.is_dir():
        raise UsageError(f"--out {out}: the folder {out.parent} does not exist; create it "
                         f"first")


def program_command(args) -> int:
    from .boards import get_board
    from .build import NAME, output_dir
    from .tools import openfpgaloader

    try:
        board = get_board(args.board)
        bit = args.bitfile or (output_dir(board, _config(args.config), memory=args.memory)
                               / f"{NAME}.bit")
        if not bit.is_file():
            raise UsageError(f"no bitstream at {bit}: build it with `vta bitstream --board "
                             f"{board.name} --config {args.config} --memory {args.memory}` "
                             f"(make bitstream)")
        tool = openfpgaloader()
        cmd = [tool, "-b", board.openfpgaloader_board, "-f" if args.flash else "-m", str(bit)]
        try:
            done = subprocess.run(cmd, timeout=PROGRAM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ToolError(f"openFPGALoader did not finish within {PROGRAM_TIMEOUT_S} s") \
                from None
        if done.returncode:
            raise ToolError(f"openFPGALoader failed (exit {done.returncode}): is the board "
                            f"plugged in and its USB port accessible?")
    except UsageError as exc:
        return _fail("program", str(exc), EXIT_USAGE)
    except BitstreamError as exc:
        return _fail("program", str(exc), EXIT_TOOL)
    print(f"loaded {bit} into the {board.name}")
    return EXIT_OK


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bitstreams.cli", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
