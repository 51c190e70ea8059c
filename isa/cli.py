"""``vta asm``, ``vta disasm`` and ``vta config``: the ISA from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .asm import AsmError, assemble, disassemble
from .config import ConfigError, load_config, named_configs
from .encoding import IsaError
from .errors import InputError
from .image import ImageError, load_image
from .safeio import MAX_ARRAY_BYTES as MAX_ARRAYS_BYTES
from .safeio import atomic_output, check_output, read_bytes, read_text

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "asm", help="assemble VTA assembly text into a binary instruction stream",
        description="Assemble one instruction per line (see isa/asm.py for the syntax) into "
                    "16-byte little-endian instruction words.")
    p.add_argument("source", type=Path, help="assembly file ('-' for standard input)")
    p.add_argument("-o", "--out", type=Path, required=True, help="binary output file")
    p.add_argument("--config", default="default",
                   help=f"configuration name ({', '.join(named_configs())}) or JSON path "
                        f"(default: %(default)s)")
    p.set_defaults(func=_asm)

    p = subparsers.add_parser(
        "disasm", help="disassemble a binary instruction stream or a program image",
        description="Print one instruction per line. The input is a raw instruction stream or "
                    "a program image (.npz), whose configuration is then used.")
    p.add_argument("source", type=Path, help="instruction binary or program image (.npz)")
    p.add_argument("--config", default=None,
                   help="configuration for a raw binary (default: the image's, or 'default')")
    p.add_argument("--numbered", action="store_true", help="append each instruction's index")
    p.set_defaults(func=_disasm)

    p = subparsers.add_parser(
        "config", help="show a configuration and every size derived from it",
        description="Print the configuration's keys and derived sizes (buffer depths, "
                    "element bytes, field layouts).")
    p.add_argument("name", nargs="?", default="default",
                   help=f"name ({', '.join(named_configs())}) or JSON path")
    p.set_defaults(func=_config)


def _asm(args) -> int:
    check_output(args.out, what="output")
    cfg = load_config(args.config)
    data = assemble(read_text(args.source, what="assembly source"), cfg)
    with atomic_output(args.out) as fh:
        fh.write(data)
    print(f"{args.out}: {len(data) // 16} instructions for {cfg}")
    return 0


#: The largest raw instruction stream ``disasm`` reads (a million instructions).
MAX_STREAM_BYTES = 16 << 20


def _disasm(args) -> int:
    data = read_bytes(args.source, what="input", limit=MAX_ARRAYS_BYTES)
    if args.source.suffix == ".npz" or data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        try:
            image = load_image(data)
        except ImageError as exc:
            raise ImageError(f"{args.source}: {exc}") from None
        cfg = load_config(args.config) if args.config else image.config
        data = image.instruction_bytes
    else:
        cfg = load_config(args.config or "default")
        if len(data) > MAX_STREAM_BYTES:
            raise InputError(f"{args.source} is {len(data):,} bytes; a raw instruction stream "
                             f"this large ({len(data) // 16:,} instructions) is not disassembled "
                             f"(at most {MAX_STREAM_BYTES:,} bytes)")
    sys.stdout.write(disassemble(data, cfg, numbered=args.numbered))
    return 0


def _config(args) -> int:
    from .layout import insn_layouts

    cfg = load_config(args.name)
    print(cfg)
    for key, value in cfg.to_dict().items():
        print(f"  {key:<20} {value}")
    print("derived:")
    for mem in ("uop", "inp", "wgt", "acc", "out"):
        print(f"  {mem.upper():<4} depth {getattr(cfg, f'{mem}_depth'):>7}  element "
              f"{getattr(cfg, f'{mem}_elem_bytes'):>5} B")
    print(f"  GEMM: {cfg.batch}x{cfg.block_in}x{cfg.block_out} = {cfg.macs_per_cycle} MACs per "
          f"micro-op")
    for name, layout in insn_layouts(cfg).items():
        fields = " ".join(f"{f.name}[{f.offset + f.width - 1}:{f.offset}]" for f in layout.fields)
        print(f"  {name:<7} {fields}")
    return 0


# Errors that are the user's input, reported in one line without a traceback.
USER_ERRORS = (AsmError, ConfigError, IsaError, ImageError)
