"""Range checks of LOAD/STORE instructions (SPEC §4.6: SRAM_RANGE, DRAM_RANGE), pipelined."""

from __future__ import annotations

from amaranth.hdl import Module, Signal

from isa.arch import RANGE_CHECK_STAGES

__all__ = ["mem_range_checks", "RANGE_CHECK_STAGES"]

_STAGES = 3     # C1 sums, C2 products, C3 sums and compares: what the code below builds
assert RANGE_CHECK_STAGES == _STAGES, "isa.arch.RANGE_CHECK_STAGES must describe hw.extent"


def _log2(n: int) -> int:
    return n.bit_length() - 1


def mem_range_checks(m: Module, insn, *, kinds: dict, dram_size, padded: bool) -> dict:
    """``{key: (sram_bad, dram_bad)}`` of the memory instruction ``insn`` for every
    ``kinds[key] = (elem_bytes, depth)``, registered: they describe ``insn`` as it was
    ``RANGE_CHECK_STAGES`` cycles earlier (the caller holds ``insn`` that long; the command
    queue does, see ``hw.queues.CommandQueue``). Valid for ``x_size ≥ 1``.

    SRAM: ``sram_base + rows · row_len > depth`` (rows and row_len include the pads when
    ``padded``). DRAM (only if ``y_size ≥ 1``): the byte after the last element read or
    written, ``(dram_base + (y_size − 1) · x_stride + x_size) · elem_bytes``, is past
    ``dram_size``. The products are shared by all kinds; only the compares differ.
    C1: pad sums, ``y_size − 1`` and ``dram_base + x_size``; C2: the two products (one
    MULT18X18D each on an ECP5); C3: the two end sums and the compares.
    """
    # C1
    rows, row_len = Signal(18), Signal(18)
    ym1, stride = Signal(len(insn.y_size)), Signal(len(insn.x_stride))
    base1 = Signal(len(insn.dram_base) + 1)
    sram1 = Signal(len(insn.sram_base))
    y_nz1 = Signal()
    if padded:
        m.d.sync += [rows.eq(insn.y_pad_0 + insn.y_size + insn.y_pad_1),
                     row_len.eq(insn.x_pad_0 + insn.x_size + insn.x_pad_1)]
    else:
        m.d.sync += [rows.eq(insn.y_size), row_len.eq(insn.x_size)]
    m.d.sync += [ym1.eq(insn.y_size - 1), stride.eq(insn.x_stride),
                 base1.eq(insn.dram_base + insn.x_size), sram1.eq(insn.sram_base),
                 y_nz1.eq(insn.y_size != 0)]
    # C2
    area = Signal(36)
    span = Signal(len(ym1) + len(stride))
    base2, sram2, y_nz2 = Signal.like(base1), Signal.like(sram1), Signal()
    m.d.sync += [area.eq(rows * row_len), span.eq(ym1 * stride),
                 base2.eq(base1), sram2.eq(sram1), y_nz2.eq(y_nz1)]
    # C3
    sram_end = Signal(37)
    last_elem = Signal(len(base2) + 1)
    m.d.comb += [sram_end.eq(sram2 + area), last_elem.eq(base2 + span)]
    out = {}
    for key, (elem_bytes, depth) in kinds.items():
        tag = str(getattr(key, "name", key)).lower()
        sram_bad, dram_bad = Signal(name=f"sram_bad_{tag}"), Signal(name=f"dram_bad_{tag}")
        m.d.sync += [sram_bad.eq(sram_end > depth),
                     dram_bad.eq(y_nz2 & ((last_elem << _log2(elem_bytes)) > dram_size))]
        out[key] = (sram_bad, dram_bad)
    return out
