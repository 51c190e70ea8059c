"""Instructions and micro-ops as Python objects, and their bit-exact encodings (SPEC §3)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Union

import numpy as np

from .arch import MODULE_OF, AluOp, MemType, Opcode, module_of
from .errors import InputError
from .layout import Layout, alu_layout, finish_layout, gemm_layout, mem_layout, uop_layout

if TYPE_CHECKING:
    from .config import VTAConfig

__all__ = ["Opcode", "MemType", "AluOp", "IsaError", "Load", "Store", "Gemm", "Alu", "Finish",
           "Uop", "Instruction", "encode", "decode", "encode_program", "decode_program",
           "encode_uop", "decode_uop", "encode_uops", "decode_uops", "MODULE_OF", "module_of"]


class IsaError(InputError):
    """A field value that cannot be encoded or a word that cannot be decoded.

    ``field`` and ``value`` name what is wrong; ``index`` is the instruction index when known.
    """

    def __init__(self, message: str, *, field: str | None = None, value=None,
                 index: int | None = None):
        self.field, self.value, self.index = field, value, index
        self.detail = message
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"instruction {self.index}: " if self.index is not None else ""
        return where + self.detail

    def at(self, index: int) -> "IsaError":
        """The same error, located at instruction ``index``."""
        self.index = index
        self.args = (self._text(),)
        return self


@dataclass(frozen=True)
class _Insn:
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False
    # Don't-care bits of the original word, kept so that decode/encode round-trips exactly.
    unused_bits: int = dataclasses.field(default=0, repr=False)

    opcode: Opcode = dataclasses.field(init=False, default=Opcode.FINISH)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    @property
    def deps(self) -> tuple[bool, bool, bool, bool]:
        return (self.pop_prev, self.pop_next, self.push_prev, self.push_next)


@dataclass(frozen=True)
class _Mem(_Insn):
    memory_type: int = MemType.INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 1
    x_size: int = 1
    x_stride: int = 1
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0


@dataclass(frozen=True)
class Load(_Mem):
    """LOAD: 2-D DMA from DRAM into an on-chip buffer, with zero padding."""

    opcode: Opcode = dataclasses.field(init=False, default=Opcode.LOAD)


@dataclass(frozen=True)
class Store(_Mem):
    """STORE: 2-D DMA of narrowed accumulators to DRAM."""

    memory_type: int = MemType.OUT
    opcode: Opcode = dataclasses.field(init=False, default=Opcode.STORE)


@dataclass(frozen=True)
class _Loop(_Insn):
    reset: bool = False
    uop_bgn: int = 0
    uop_end: int = 1
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0


@dataclass(frozen=True)
class Gemm(_Loop):
    """GEMM: a two-level loop over micro-ops of BATCH x BLOCK_IN x BLOCK_OUT MACs."""

    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    opcode: Opcode = dataclasses.field(init=False, default=Opcode.GEMM)


@dataclass(frozen=True)
class Alu(_Loop):
    """ALU: a two-level loop of element-wise operations on accumulator tiles."""

    alu_opcode: int = AluOp.ADD
    use_imm: bool = False
    imm: int = 0
    opcode: Opcode = dataclasses.field(init=False, default=Opcode.ALU)


@dataclass(frozen=True)
class Finish(_Insn):
    """FINISH: signals completion to the host."""

    opcode: Opcode = dataclasses.field(init=False, default=Opcode.FINISH)


@dataclass(frozen=True)
class Uop:
    """A micro-op: accumulator, input (or ACC source for ALU) and weight indices."""

    dst: int = 0
    src: int = 0
    wgt: int = 0


Instruction = Union[Load, Store, Gemm, Alu, Finish]


def _layout_of(insn, cfg) -> Layout:
    if isinstance(insn, _Mem):
        return mem_layout()
    if isinstance(insn, Gemm):
        return gemm_layout(cfg)
    if isinstance(insn, Alu):
        return alu_layout(cfg)
    if isinstance(insn, Finish):
        return finish_layout()
    raise TypeError(f"not an instruction: {insn!r}")


def _put(layout: Layout, values: dict, what: str) -> int:
    word = 0
    for field in layout.fields:
        value = int(values[field.name])
        lo, hi = ((-(1 << (field.width - 1)), (1 << (field.width - 1)) - 1) if field.signed
                  else (0, field.mask))
        if not lo <= value <= hi:
            raise IsaError(f"{what} field {field.name} = {value} does not fit in "
                           f"{field.width} bits{' (signed)' if field.signed else ''}: "
                           f"it must be in [{lo}, {hi}]", field=field.name, value=value)
        word |= field.insert(value)
    return word


def encode(insn: Instruction, cfg: "VTAConfig") -> int:
    """The 128-bit instruction word (bit 0 = LSB of the first DRAM byte)."""
    layout = _layout_of(insn, cfg)
    values = {f.name: getattr(insn, f.name) for f in dataclasses.fields(insn)
              if f.name in layout}
    values["opcode"] = int(insn.opcode)
    word = _put(layout, values, insn.opcode.name)
    if insn.unused_bits & layout.field_mask:
        raise IsaError(f"{insn.opcode.name} unused_bits overlap its fields",
                       field="unused_bits", value=insn.unused_bits)
    return word | insn.unused_bits


def decode(word: int, cfg: "VTAConfig") -> Instruction:
    """Decode one 128-bit word; raises IsaError for an illegal opcode."""
    opcode = word & 0b111
    if opcode in (Opcode.LOAD, Opcode.STORE):
        cls, layout = (Load if opcode == Opcode.LOAD else Store), mem_layout()
    elif opcode == Opcode.GEMM:
        cls, layout = Gemm, gemm_layout(cfg)
    elif opcode == Opcode.ALU:
        cls, layout = Alu, alu_layout(cfg)
    elif opcode == Opcode.FINISH:
        cls, layout = Finish, finish_layout()
    else:
        raise IsaError(f"illegal opcode {opcode} (legal: 0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, "
                       f"4 ALU)", field="opcode", value=opcode)
    values = {f.name: f.extract(word) for f in layout.fields if f.name != "opcode"}
    for flag in ("pop_prev", "pop_next", "push_prev", "push_next", "reset", "use_imm"):
        if flag in values:
            values[flag] = bool(values[flag])
    return cls(**values, unused_bits=word & ~layout.field_mask & ((1 << 128) - 1))


def encode_uop(uop: Uop, cfg: "VTAConfig") -> int:
    return _put(uop_layout(cfg), {"dst": uop.dst, "src": uop.src, "wgt": uop.wgt}, "UOP")


def decode_uop(word: int, cfg: "VTAConfig") -> Uop:
    layout = uop_layout(cfg)
    return Uop(*(layout[name].extract(word) for name in ("dst", "src", "wgt")))


def encode_program(insns: Iterable[Instruction], cfg: "VTAConfig") -> bytes:
    """Instructions as they lie in DRAM: 16 bytes each, little-endian."""
    out = bytearray()
    for index, insn in enumerate(insns):
        try:
            out += encode(insn, cfg).to_bytes(16, "little")
        except IsaError as exc:
            raise exc.at(index) from None
    return bytes(out)


def decode_program(data: bytes, cfg: "VTAConfig") -> list[Instruction]:
    if len(data) % 16:
        raise IsaError(f"an instruction stream is a multiple of 16 bytes, got {len(data)}")
    out = []
    for index in range(len(data) // 16):
        try:
            out.append(decode(int.from_bytes(data[16 * index:16 * index + 16], "little"), cfg))
        except IsaError as exc:
            raise exc.at(index) from None
    return out


def encode_uops(uops: Iterable[Uop], cfg: "VTAConfig") -> bytes:
    return b"".join(encode_uop(u, cfg).to_bytes(4, "little") for u in uops)


def decode_uops(data: bytes, cfg: "VTAConfig") -> list[Uop]:
    words = np.frombuffer(data, dtype="<u4")
    return [decode_uop(int(w), cfg) for w in words]
