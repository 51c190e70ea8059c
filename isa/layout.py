"""Bit layouts of instructions and micro-ops, generated from the configuration (SPEC §3).

Fields are packed LSB first in declaration order; a field that would straddle a 64-bit boundary
(32-bit for micro-ops) starts at the next boundary, exactly like the C bitfields of the
original ``hw_spec.h``. Every consumer (encoder, simulators, hardware decoders) slices
instructions with these layouts; no offset is typed by hand anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from . import config as _c

if TYPE_CHECKING:
    from .config import VTAConfig

__all__ = ["Field", "Layout", "mem_layout", "gemm_layout", "alu_layout", "finish_layout",
           "uop_layout", "insn_layouts", "check_layouts_fit", "HEADER_FIELDS"]

HEADER_FIELDS = (("opcode", _c.OPCODE_BITS), ("pop_prev", 1), ("pop_next", 1),
                 ("push_prev", 1), ("push_next", 1))


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    width: int
    signed: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def extract(self, word: int) -> int:
        value = (word >> self.offset) & self.mask
        if self.signed and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def insert(self, value: int) -> int:
        return (value & self.mask) << self.offset


@dataclass(frozen=True)
class Layout:
    """An ordered set of fields inside a word of ``total_bits``."""

    kind: str
    total_bits: int
    fields: tuple[Field, ...]
    used_bits: int  # position after the last field

    def __getitem__(self, name: str) -> Field:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(f"{self.kind} has no field {name!r}")

    def __contains__(self, name: str) -> bool:
        return any(field.name == name for field in self.fields)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.fields)

    @property
    def field_mask(self) -> int:
        """Bits covered by some field; the rest are don't-care."""
        mask = 0
        for field in self.fields:
            mask |= field.mask << field.offset
        return mask & ((1 << self.total_bits) - 1)


def _pack(kind: str, fields, unit: int, total: int, signed=()) -> Layout:
    pos = 0
    placed = []
    for name, width in fields:
        if pos // unit != (pos + width - 1) // unit:
            pos = (pos // unit + 1) * unit
        placed.append(Field(name, pos, width, name in signed))
        pos += width
    return Layout(kind, total, tuple(placed), pos)


def _loop_fields(cfg: "VTAConfig"):
    return (("uop_bgn", cfg.log_uop_depth), ("uop_end", cfg.log_uop_depth + 1),
            ("iter_out", _c.LOOP_ITER_BITS), ("iter_in", _c.LOOP_ITER_BITS))


@lru_cache(maxsize=None)
def mem_layout() -> Layout:
    """LOAD and STORE: configuration independent."""
    return _pack("memory", HEADER_FIELDS + (
        ("memory_type", _c.MEMOP_ID_BITS), ("sram_base", _c.SRAM_ADDR_BITS),
        ("dram_base", _c.DRAM_ADDR_BITS), ("y_size", _c.MEMOP_SIZE_BITS),
        ("x_size", _c.MEMOP_SIZE_BITS), ("x_stride", _c.MEMOP_STRIDE_BITS),
        ("y_pad_0", _c.MEMOP_PAD_BITS), ("y_pad_1", _c.MEMOP_PAD_BITS),
        ("x_pad_0", _c.MEMOP_PAD_BITS), ("x_pad_1", _c.MEMOP_PAD_BITS)), 64, _c.INSN_BITS)


@lru_cache(maxsize=None)
def gemm_layout(cfg: "VTAConfig") -> Layout:
    return _pack("gemm", HEADER_FIELDS + (("reset", 1),) + _loop_fields(cfg) + (
        ("dst_factor_out", cfg.log_acc_depth), ("dst_factor_in", cfg.log_acc_depth),
        ("src_factor_out", cfg.log_inp_depth), ("src_factor_in", cfg.log_inp_depth),
        ("wgt_factor_out", cfg.log_wgt_depth), ("wgt_factor_in", cfg.log_wgt_depth)),
        64, _c.INSN_BITS)


@lru_cache(maxsize=None)
def alu_layout(cfg: "VTAConfig") -> Layout:
    return _pack("alu", HEADER_FIELDS + (("reset", 1),) + _loop_fields(cfg) + (
        ("dst_factor_out", cfg.log_acc_depth), ("dst_factor_in", cfg.log_acc_depth),
        ("src_factor_out", cfg.log_acc_depth), ("src_factor_in", cfg.log_acc_depth),
        ("alu_opcode", _c.ALU_OPCODE_BITS), ("use_imm", 1), ("imm", _c.ALU_IMM_BITS)),
        64, _c.INSN_BITS, signed=("imm",))


@lru_cache(maxsize=None)
def finish_layout() -> Layout:
    return _pack("finish", HEADER_FIELDS, 64, _c.INSN_BITS)


@lru_cache(maxsize=None)
def uop_layout(cfg: "VTAConfig") -> Layout:
    return _pack("uop", (("dst", cfg.log_acc_depth),
                         ("src", max(cfg.log_acc_depth, cfg.log_inp_depth)),
                         ("wgt", cfg.log_wgt_depth)), 32, _c.UOP_BITS)


def insn_layouts(cfg: "VTAConfig") -> dict[str, Layout]:
    return {"memory": mem_layout(), "gemm": gemm_layout(cfg), "alu": alu_layout(cfg),
            "finish": finish_layout(), "uop": uop_layout(cfg)}


def check_layouts_fit(cfg: "VTAConfig") -> None:
    """Raise ConfigError naming the layout and field that no longer fits."""
    for layout in insn_layouts(cfg).values():
        if layout.used_bits > layout.total_bits:
            last = next(f for f in layout.fields if f.offset + f.width > layout.total_bits)
            raise _c.ConfigError(
                f"{layout.kind} {'micro-op' if layout.kind == 'uop' else 'instruction'} field "
                f"{last.name!r} ends at bit {last.offset + last.width}, past the "
                f"{layout.total_bits}-bit limit: reduce the buffer sizes of {cfg.key}")
