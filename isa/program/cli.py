"""``vta link``: inspect a saved relocatable program and link it into program images."""

from __future__ import annotations

import sys
from pathlib import Path

from ..image import save_image
from .files import ProgramFormatError, load_program
from .program import LinkError

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "link", help="inspect a saved VTA program (isa.program) and link it into images",
        description="Print a saved relocatable program: its regions and every launch in `vta "
                    "asm` syntax (relocated addresses as REGION+OFFSET). With --images, link "
                    "it with the automatic layout (inputs zero) and write one SPEC §5 image "
                    "per launch; launch k is meant to run on the DRAM launch k-1 left.")
    p.add_argument("source", type=Path, help="program file (written by Program.save)")
    p.add_argument("--summary", action="store_true",
                   help="only the regions and the size of each launch")
    p.add_argument("--images", type=Path, metavar="DIR",
                   help="write DIR/launch-NNNN.npz, one image per launch")
    p.set_defaults(func=_program)


def _program(args) -> int:
    try:
        program = load_program(args.source)
    except ProgramFormatError as exc:
        print(f"vta link: error: {args.source}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(program.dump(instructions=not args.summary))
    if args.images is not None:
        try:
            linked = program.link()
        except LinkError as exc:
            print(f"vta link: error: {exc}", file=sys.stderr)
            return 1
        args.images.mkdir(parents=True, exist_ok=True)
        for k in range(len(linked)):
            save_image(args.images / f"launch-{k:04d}.npz", linked.image(k))
        print(f"{len(linked)} image(s) in {args.images} ({linked.dram_bytes} bytes of DRAM)")
    return 0
