"""Range checks of LOAD/STORE instructions (SPEC §4.6: SRAM_RANGE, DRAM_RANGE)."""

from __future__ import annotations

from amaranth.hdl import Module, Signal

__all__ = ["mem_range_errors"]


def _log2(n: int) -> int:
    return n.bit_length() - 1


def mem_range_errors(m: Module, insn, *, elem_bytes: int, depth: int, dram_size, padded: bool):
    """``(sram_bad, dram_bad)`` for a memory instruction with ``x_size ≥ 1`` (combinational).

    SRAM: ``sram_base + rows · row_len > depth`` (rows and row_len include the pads when
    ``padded``). DRAM (only if ``y_size ≥ 1``): the byte after the last element read or
    written, ``(dram_base + (y_size − 1) · x_stride + x_size) · elem_bytes``, is past
    ``dram_size``.
    """
    rows = Signal(18)
    row_len = Signal(18)
    if padded:
        m.d.comb += [rows.eq(insn.y_pad_0 + insn.y_size + insn.y_pad_1),
                     row_len.eq(insn.x_pad_0 + insn.x_size + insn.x_pad_1)]
    else:
        m.d.comb += [rows.eq(insn.y_size), row_len.eq(insn.x_size)]
    sram_end = Signal(40)
    m.d.comb += sram_end.eq(insn.sram_base + rows * row_len)
    last_elem = Signal(50)
    m.d.comb += last_elem.eq(insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size)
    sram_bad = Signal()
    dram_bad = Signal()
    m.d.comb += [
        sram_bad.eq(sram_end > depth),
        dram_bad.eq((insn.y_size != 0) & ((last_elem << _log2(elem_bytes)) > dram_size)),
    ]
    return sram_bad, dram_bad
