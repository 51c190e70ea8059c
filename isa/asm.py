"""Text assembler and disassembler: one instruction per line, named fields, comments.

Syntax (fields may appear in any order; an omitted field is 0, except ``x_stride``, which
defaults to ``x_size``; ``;`` or ``#`` starts a comment)::

    LOAD INP sram_base=5 dram_base=0x1234 y_size=4 x_size=4 x_stride=16 y_pad_0=1 push_next
    STORE sram_base=16 dram_base=0x80 y_size=2 x_size=8 x_stride=32 pop_prev push_prev
    GEMM reset uop_bgn=8 uop_end=9 iter_out=1 iter_in=16 dst_factor_in=1
    ALU ADD imm=-5 uop_bgn=0 uop_end=1 iter_out=1 iter_in=8 dst_factor_in=1 src_factor_in=1
    ALU MAX uop_bgn=0 uop_end=4 iter_out=1 iter_in=1          ; vector operand
    FINISH pop_next

The dependency flags are bare words: ``pop_prev pop_next push_prev push_next``. ``ALU OP imm=N``
sets ``use_imm``; ``use_imm=0 imm=N`` keeps an ignored immediate. A STORE's memory type is OUT
unless ``memory_type=N`` says otherwise. ``unused=0x...`` carries the don't-care bits of a
decoded word, so that ``assemble(disassemble(words)) == words`` for every word; a word with an
illegal opcode disassembles to ``WORD 0x...`` (a raw 128-bit word, also accepted as input).
"""

from __future__ import annotations

import dataclasses
import re

from .config import VTAConfig
from .errors import InputError
from .encoding import (Alu, AluOp, Finish, Gemm, Instruction, IsaError, Load, MemType, Store,
                       decode, encode)

__all__ = ["AsmError", "assemble", "disassemble", "format_insn", "parse_line"]

_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
_MEM_FIELDS = ("sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1",
               "x_pad_0", "x_pad_1")
_LOOP_FIELDS = ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                "src_factor_out", "src_factor_in")
_GEMM_FIELDS = _LOOP_FIELDS + ("wgt_factor_out", "wgt_factor_in")
_TOKEN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:=(\S+))?$")


class AsmError(InputError):
    """Bad assembly text; the message starts with ``line N:``."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(f"line {line}: {message}")


def format_insn(insn: Instruction) -> str:
    """One instruction as a line of assembly."""
    parts: list[str] = []
    if isinstance(insn, (Load, Store)):
        if isinstance(insn, Load):
            parts += ["LOAD", _enum_name(MemType, insn.memory_type)]
        else:
            parts.append("STORE")
            if insn.memory_type != MemType.OUT:
                parts.append(f"memory_type={insn.memory_type}")
        parts += [f"{name}={_num(getattr(insn, name), name)}" for name in _MEM_FIELDS
                  if getattr(insn, name) or name in ("sram_base", "dram_base", "y_size",
                                                     "x_size", "x_stride")]
    elif isinstance(insn, Gemm):
        parts.append("GEMM")
        if insn.reset:
            parts.append("reset")
        parts += _loop_parts(insn, _GEMM_FIELDS)
    elif isinstance(insn, Alu):
        parts += ["ALU", _enum_name(AluOp, insn.alu_opcode)]
        if insn.reset:
            parts.append("reset")
        if insn.use_imm:
            parts.append(f"imm={insn.imm}")
        elif insn.imm:
            parts += ["use_imm=0", f"imm={insn.imm}"]
        parts += _loop_parts(insn, _LOOP_FIELDS)
    elif isinstance(insn, Finish):
        parts.append("FINISH")
    else:
        raise TypeError(f"not an instruction: {insn!r}")
    parts += [flag for flag in _FLAGS if getattr(insn, flag)]
    if insn.unused_bits:
        parts.append(f"unused={insn.unused_bits:#x}")
    return " ".join(parts)


def _enum_name(enum, value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _num(value: int, name: str) -> str:
    return f"{value:#x}" if name == "dram_base" else str(value)


def _loop_parts(insn, names) -> list[str]:
    always = ("uop_bgn", "uop_end", "iter_out", "iter_in")
    return [f"{name}={getattr(insn, name)}" for name in names
            if getattr(insn, name) or name in always]


# ASCII integer literals only (Python's int() also takes digits of other scripts), decimal, 0x,
# 0o or 0b; long enough for a 128-bit WORD in any base.
_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)",
                  re.ASCII)
_MAX_LITERAL = 140


def _int(line: int, name: str, text: str) -> int:
    shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"
    if len(text) > _MAX_LITERAL:
        raise AsmError(line, f"{name}={shown}: the number is too long (at most "
                             f"{_MAX_LITERAL} characters)")
    if not _INT.fullmatch(text):
        raise AsmError(line, f"{name}={shown}: not an integer (decimal, 0x, 0o or 0b, in "
                             f"ASCII digits)")
    try:
        return int(text, 0)
    except ValueError:
        raise AsmError(line, f"{name}={shown}: not an integer") from None


def parse_line(text: str, line: int = 1) -> Instruction | int | None:
    """Parse one line: an instruction, a raw word (``WORD``), or None for a blank line."""
    text = re.split(r"[;#]", text, maxsplit=1)[0].strip()
    if not text:
        return None
    words = text.split()
    mnemonic = words[0].upper()
    rest = words[1:]
    if mnemonic == "WORD":
        if len(rest) != 1:
            raise AsmError(line, "WORD takes one 128-bit number, e.g. WORD 0x5")
        value = _int(line, "WORD", rest[0])
        if not 0 <= value < 1 << 128:
            raise AsmError(line, f"WORD {rest[0]} does not fit in 128 bits")
        return value
    kwargs: dict = {}
    if mnemonic == "LOAD":
        if not rest:
            raise AsmError(line, "LOAD needs a memory type: UOP, WGT, INP, ACC, ACC_8BIT "
                                 "(or a number)")
        kwargs["memory_type"] = _parse_enum(line, MemType, rest.pop(0), "memory type")
        cls, allowed = Load, _MEM_FIELDS
    elif mnemonic == "STORE":
        cls, allowed = Store, _MEM_FIELDS + ("memory_type",)
    elif mnemonic == "GEMM":
        cls, allowed = Gemm, _GEMM_FIELDS + ("reset",)
    elif mnemonic == "ALU":
        if not rest:
            raise AsmError(line, "ALU needs an operation: MIN, MAX, ADD, SHR, MUL (or a number)")
        kwargs["alu_opcode"] = _parse_enum(line, AluOp, rest.pop(0), "ALU operation")
        cls, allowed = Alu, _LOOP_FIELDS + ("reset", "imm", "use_imm")
    elif mnemonic == "FINISH":
        cls, allowed = Finish, ()
    else:
        raise AsmError(line, f"unknown mnemonic {words[0]!r}; expected LOAD, STORE, GEMM, ALU "
                             f"or FINISH")
    for word in rest:
        match = _TOKEN.match(word)
        if not match:
            raise AsmError(line, f"cannot parse {word!r}: expected name=value or a flag")
        name, value = match.groups()
        if name in kwargs:
            raise AsmError(line, f"{name} is given twice")
        if value is None:
            if name in _FLAGS or name == "reset":
                kwargs[name] = True
                continue
            raise AsmError(line, f"{name} needs a value ({name}=...)")
        if name == "unused":
            kwargs["unused_bits"] = _int(line, name, value)
        elif name in _FLAGS or name in ("reset", "use_imm"):
            kwargs[name] = bool(_int(line, name, value))
        elif name in allowed:
            kwargs[name] = _int(line, name, value)
        else:
            raise AsmError(line, f"{mnemonic} has no field {name!r}; its fields are "
                                 f"{', '.join(allowed + _FLAGS)}")
    if cls is Alu and "imm" in kwargs and "use_imm" not in kwargs:
        kwargs["use_imm"] = True
    if cls in (Load, Store):
        kwargs.setdefault("x_stride", kwargs.get("x_size", 1))
    for name in ("y_size", "x_size", "x_stride", "uop_bgn", "uop_end", "iter_out", "iter_in"):
        if name in allowed and name not in kwargs:
            kwargs[name] = 0
    return cls(**kwargs)


def _parse_enum(line: int, enum, text: str, what: str) -> int:
    try:
        return enum[text.upper()]
    except KeyError:
        if _INT.fullmatch(text) and len(text) <= _MAX_LITERAL:
            return int(text, 0)
        names = ", ".join(m.name for m in enum)
        shown = text if len(text) <= 40 else f"{text[:20]}..."
        raise AsmError(line, f"unknown {what} {shown!r}; expected one of {names}") from None


def assemble(text: str, cfg: VTAConfig) -> bytes:
    """Assembly text to an instruction stream (16 bytes per instruction, little-endian)."""
    out = bytearray()
    for number, line in enumerate(text.splitlines(), start=1):
        insn = parse_line(line, number)
        if insn is None:
            continue
        try:
            word = insn if isinstance(insn, int) else encode(insn, cfg)
        except IsaError as exc:
            raise AsmError(number, exc.detail) from None
        out += word.to_bytes(16, "little")
    return bytes(out)


def disassemble(data: bytes, cfg: VTAConfig, *, numbered: bool = False) -> str:
    """An instruction stream as assembly text, one line per instruction."""
    if len(data) % 16:
        raise IsaError(f"an instruction stream is a multiple of 16 bytes, got {len(data)}")
    lines = []
    for index in range(len(data) // 16):
        word = int.from_bytes(data[16 * index:16 * index + 16], "little")
        try:
            text = format_insn(decode(word, cfg))
        except IsaError as exc:
            text = f"WORD {word:#034x} ; {exc.detail}"
        lines.append(f"{text:<96} ; [{index}]" if numbered else text)
    return "\n".join(lines) + ("\n" if lines else "")

