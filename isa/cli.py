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
    cfg = load_config(args.config)
    text = sys.stdin.read() if str(args.source) == "-" else _read_text(args.source)
    data = assemble(text, cfg)
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data) // 16} instructions for {cfg}")
    return 0


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None


def _disasm(args) -> int:
    if args.source.suffix == ".npz":
        image = load_image(args.source)
        cfg = load_config(args.config) if args.config else image.config
        data = image.instruction_bytes
    else:
        cfg = load_config(args.config or "default")
        try:
            data = args.source.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {args.source}: {exc.strerror}") from None
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
