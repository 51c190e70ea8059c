"""Amaranth views of instructions and micro-ops, generated from ``isa.layout`` (never retyped)."""

from __future__ import annotations

from functools import lru_cache

from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from isa import layout as _layout
from isa.config import INSN_BITS, VTAConfig

__all__ = ["flexible", "mem_insn", "gemm_insn", "alu_insn", "uop", "queue_entry", "INDEX_BITS",
           "INSN_BITS"]

#: Width of the instruction index that travels with every instruction (error reporting).
INDEX_BITS = 32


def flexible(layout: _layout.Layout) -> data.FlexibleLayout:
    """A ``data.FlexibleLayout`` with exactly the offsets and widths of an ``isa.layout.Layout``."""
    return data.FlexibleLayout(layout.total_bits, {
        f.name: data.Field(signed(f.width) if f.signed else unsigned(f.width), f.offset)
        for f in layout.fields})


@lru_cache(maxsize=None)
def mem_insn() -> data.FlexibleLayout:
    return flexible(_layout.mem_layout())


@lru_cache(maxsize=None)
def gemm_insn(cfg: VTAConfig) -> data.FlexibleLayout:
    return flexible(_layout.gemm_layout(cfg))


@lru_cache(maxsize=None)
def alu_insn(cfg: VTAConfig) -> data.FlexibleLayout:
    return flexible(_layout.alu_layout(cfg))


@lru_cache(maxsize=None)
def uop(cfg: VTAConfig) -> data.FlexibleLayout:
    return flexible(_layout.uop_layout(cfg))


def queue_entry() -> data.StructLayout:
    """What a command queue holds: the instruction word and its index in the program."""
    return data.StructLayout({"word": unsigned(INSN_BITS), "index": unsigned(INDEX_BITS)})
