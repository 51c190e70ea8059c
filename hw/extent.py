"""Range checks of LOAD/STORE instructions (SPEC §4.6: SRAM_RANGE, DRAM_RANGE), pipelined."""

from __future__ import annotations

from amaranth.hdl import Module, Signal, signed

from isa.arch import RANGE_CHECK_STAGES

from .dsp import RegisteredProduct

__all__ = ["mem_range_checks", "RANGE_CHECK_STAGES"]

_STAGES = 4     # C1 sums, C2 the multipliers' inputs, C3 products, C4 compares: as built below
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
    C1: pad sums, ``y_size − 1`` and ``dram_base + x_size`` into fabric registers; C2: the
    products' operands copied into the multipliers' input registers; C3: the two products
    (one MULT18X18D each on an ECP5) into registers, and per kind the room the bases leave;
    C4: each product against its room. One call per module (its multipliers are the submodules
    ``area_mul`` and ``span_mul``).
    """
    # C1's sums end in fabric registers and C2 copies them into the multipliers' own input
    # registers (hw.dsp, ``register="inputs"``): no carry chain shares a cycle with the route
    # to the fixed DSP row (Fmax: the head register → the pad sums → the block's input
    # registers were 13–24 endpoints per module at 10.8–10.95 ns on ecp5-large at a 100 MHz
    # target, docs/hardware.md §12 session 16), and C3's products leave the row straight into
    # their fabric registers (§12 step 31)
    if padded:
        rows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        row_len = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    else:
        rows, row_len = insn.y_size, insn.x_size
    rows1, row_len1 = Signal(18, name="rows1"), Signal(18, name="row_len1")
    ym1 = Signal(len(insn.y_size), name="ym1")
    stride1 = Signal(len(insn.x_stride), name="stride1")
    base1 = Signal(len(insn.dram_base) + 1)
    sram1 = Signal(len(insn.sram_base))
    y_nz1 = Signal()
    m.d.sync += [rows1.eq(rows), row_len1.eq(row_len), ym1.eq(insn.y_size - 1),
                 stride1.eq(insn.x_stride),
                 base1.eq(insn.dram_base + insn.x_size), sram1.eq(insn.sram_base),
                 y_nz1.eq(insn.y_size != 0)]
    m.submodules.area_mul = area_mul = RegisteredProduct(18, 18, 36, is_signed=False,
                                                         register="inputs")
    m.submodules.span_mul = span_mul = RegisteredProduct(
        len(ym1), len(stride1), len(ym1) + len(stride1), is_signed=False,
        register="inputs")
    m.d.comb += [area_mul.a.eq(rows1), area_mul.b.eq(row_len1),
                 span_mul.a.eq(ym1), span_mul.b.eq(stride1)]
    # C2: the multipliers' input registers, and the bases and flag carried along; C3: the
    # products, and per kind the room left by the base (``depth − sram_base``, the DRAM's
    # last element index less ``dram_base + x_size``; signed, either may be negative), so
    # that C4 is one compare of a product with a register, not a sum then a compare (two
    # 37-bit carry chains in series: Fmax, docs/hardware.md §12 step 31)
    base2, sram2 = Signal.like(base1), Signal.like(sram1)
    area = Signal(36)
    span = Signal(len(span_mul.p))
    y_nz2, y_nz3 = Signal(), Signal()
    m.d.sync += [base2.eq(base1), sram2.eq(sram1), area.eq(area_mul.p), span.eq(span_mul.p),
                 y_nz2.eq(y_nz1), y_nz3.eq(y_nz2)]
    out = {}
    for key, (elem_bytes, depth) in kinds.items():
        tag = str(getattr(key, "name", key)).lower()
        # sram_base + area > depth  ⟺  area > depth − sram_base
        sram_room = Signal(signed(len(sram1) + 2), name=f"sram_room_{tag}")
        # (base + span) · E > dram_size  ⟺  base + span > ⌊dram_size / E⌋ (integers)
        #                                ⟺  span > ⌊dram_size / E⌋ − base
        dram_room = Signal(signed(max(len(dram_size), len(base1)) + 2), name=f"dram_room_{tag}")
        # (Amaranth's difference of unsigned values is signed and exact)
        m.d.sync += [sram_room.eq(depth - sram2),
                     dram_room.eq((dram_size >> _log2(elem_bytes)) - base2)]
        # C4
        sram_bad, dram_bad = Signal(name=f"sram_bad_{tag}"), Signal(name=f"dram_bad_{tag}")
        m.d.sync += [sram_bad.eq(area > sram_room), dram_bad.eq(y_nz3 & (span > dram_room))]
        out[key] = (sram_bad, dram_bad)
    return out
