"""Golden encodings of reference/vta-hardware.md §2.9 and property round trips."""

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from isa.config import VTAConfig, load_config
from isa.encoding import (Alu, AluOp, Finish, Gemm, IsaError, Load, MemType, Store, Uop, decode,
                          decode_uop, encode, encode_program, encode_uop, decode_program)
from isa.layout import alu_layout, gemm_layout, mem_layout, uop_layout

DEFAULT = load_config("default")

GOLDEN = [
    (Load(memory_type=MemType.UOP, sram_base=0, dram_base=0x100, y_size=1, x_size=4, x_stride=4),
     0x0000000400000000, 0x0000000400040001),
    (Load(memory_type=MemType.INP, sram_base=5, dram_base=0x1234, y_size=4, x_size=4,
          x_stride=16, y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=1, push_next=True),
     0x00000048D0001540, 0x1111001000040004),
    (Load(memory_type=MemType.WGT, sram_base=0, dram_base=7, y_size=2, x_size=3, x_stride=8,
          pop_next=True), 0x000000001C000090, 0x0000000800030002),
    (Load(memory_type=MemType.ACC, sram_base=16, dram_base=0x40, y_size=1, x_size=8, x_stride=8,
          push_prev=True), 0x00000001000041A0, 0x0000000800080001),
    (Store(sram_base=16, dram_base=0x80, y_size=2, x_size=8, x_stride=32, pop_prev=True,
           push_prev=True), 0x0000000200004229, 0x0000002000080002),
    (Load(memory_type=MemType.INP, y_size=0, x_size=0, x_stride=0, pop_next=True),
     0x0000000000000110, 0x0000000000000000),
    (Gemm(pop_prev=True, push_next=True, uop_bgn=0, uop_end=4, iter_out=2, iter_in=3,
          dst_factor_out=1, dst_factor_in=2, src_factor_out=3, src_factor_in=4,
          wgt_factor_out=5, wgt_factor_in=6), 0x000600100080004A, 0x0180500800C01001),
    (Gemm(reset=True, uop_bgn=8, uop_end=9, iter_out=1, iter_in=16, dst_factor_in=1),
     0x0020000801200882, 0x0000000000000800),
    (Alu(alu_opcode=AluOp.ADD, use_imm=True, imm=-5, uop_bgn=0, uop_end=1, iter_out=1,
         iter_in=8, dst_factor_in=1, src_factor_in=1), 0x0010000800200004, 0xFFFBA00200000800),
    (Alu(alu_opcode=AluOp.SHR, use_imm=True, imm=8, uop_bgn=2, uop_end=3, iter_out=1,
         iter_in=1), 0x0002000800600204, 0x0008B00000000000),
    (Alu(alu_opcode=AluOp.MAX, uop_bgn=0, uop_end=4, iter_out=1, iter_in=1),
     0x0002000800800004, 0x0000100000000000),
    (Finish(pop_next=True), 0x0000000000000013, 0x0000000000000000),
]


@pytest.mark.parametrize("insn, lo, hi", GOLDEN, ids=[g[0].opcode.name + str(i)
                                                      for i, g in enumerate(GOLDEN)])
def test_golden_encoding(insn, lo, hi):
    word = encode(insn, DEFAULT)
    assert (word & (2**64 - 1), word >> 64) == (lo, hi)
    assert decode(word, DEFAULT) == insn


def test_golden_uop():
    assert encode_uop(Uop(1, 2, 3), DEFAULT) == 0x00C01001
    assert decode_uop(0x00C01001, DEFAULT) == Uop(1, 2, 3)


def test_default_layout_matches_reference_tables():
    gemm, alu, uop = gemm_layout(DEFAULT), alu_layout(DEFAULT), uop_layout(DEFAULT)
    assert (gemm["uop_bgn"].offset, gemm["uop_end"].offset, gemm["iter_out"].offset,
            gemm["iter_in"].offset, gemm["dst_factor_out"].offset,
            gemm["wgt_factor_in"].offset) == (8, 21, 35, 49, 64, 118)
    assert (alu["alu_opcode"].offset, alu["use_imm"].offset, alu["imm"].offset) == (108, 111, 112)
    assert (uop["src"].offset, uop["wgt"].offset, uop.used_bits) == (11, 22, 32)
    assert mem_layout()["dram_base"].offset == 26 and mem_layout()["y_size"].offset == 64


def test_bytes_are_little_endian_words():
    data = encode_program([GOLDEN[0][0]], DEFAULT)
    assert data[:8] == (0x0000000400000000).to_bytes(8, "little")
    assert data[8:] == (0x0000000400040001).to_bytes(8, "little")


def test_dont_care_bits_are_ignored_and_kept():
    word = encode(Finish(pop_next=True), DEFAULT) | (0xABC << 70)
    insn = decode(word, DEFAULT)
    assert insn.pop_next and insn.unused_bits == 0xABC << 70
    assert encode(insn, DEFAULT) == word
    assert insn.replace(unused_bits=0) == Finish(pop_next=True)


def test_out_of_range_field_names_field_and_limit():
    with pytest.raises(IsaError, match=r"GEMM field uop_bgn = 8192 does not fit in 13 bits"):
        encode(Gemm(uop_bgn=8192, uop_end=8193), DEFAULT)
    with pytest.raises(IsaError, match=r"ALU field imm = -40000 does not fit in 16 bits \(signed\)"):
        encode(Alu(imm=-40000, use_imm=True), DEFAULT)
    with pytest.raises(IsaError, match=r"instruction 1: LOAD field x_pad_0 = 16"):
        encode_program([Finish(), Load(x_pad_0=16)], DEFAULT)


def test_illegal_opcode_is_rejected_with_index():
    data = encode_program([Finish()], DEFAULT) + (6).to_bytes(16, "little")
    with pytest.raises(IsaError, match="instruction 1: illegal opcode 6") as info:
        decode_program(data, DEFAULT)
    assert (info.value.field, info.value.value, info.value.index) == ("opcode", 6, 1)


# ---------------------------------------------------------------- property tests
@st.composite
def configs(draw):
    """Random valid configurations (invalid draws are rejected by the constructor)."""
    from isa.config import ConfigError
    from hypothesis import assume

    kwargs = dict(
        log_batch=draw(st.integers(0, 2)), log_block_in=draw(st.integers(0, 5)),
        log_block_out=draw(st.integers(0, 5)), log_uop_buff_size=draw(st.integers(4, 17)),
        log_inp_buff_size=draw(st.integers(8, 18)), log_wgt_buff_size=draw(st.integers(10, 20)),
        log_acc_buff_size=draw(st.integers(10, 19)))
    try:
        return VTAConfig(**kwargs)
    except ConfigError:
        assume(False)


def _random_fields(draw, cls, layout):
    values = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "unused_bits":
            continue
        width = layout[f.name].width
        if layout[f.name].signed:
            values[f.name] = draw(st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1))
        elif width == 1:
            values[f.name] = draw(st.booleans())
        else:
            values[f.name] = draw(st.integers(0, (1 << width) - 1))
    return cls(**values)


@st.composite
def instructions(draw, cfg):
    kind = draw(st.sampled_from(["load", "store", "gemm", "alu", "finish"]))
    if kind == "load":
        return _random_fields(draw, Load, mem_layout())
    if kind == "store":
        return _random_fields(draw, Store, mem_layout())
    if kind == "gemm":
        return _random_fields(draw, Gemm, gemm_layout(cfg))
    if kind == "alu":
        return _random_fields(draw, Alu, alu_layout(cfg))
    return _random_fields(draw, Finish, mem_layout())


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_round_trip_random_fields_random_configs(data):
    cfg = data.draw(configs())
    insn = data.draw(instructions(cfg))
    word = encode(insn, cfg)
    assert 0 <= word < 1 << 128
    assert decode(word, cfg) == insn
    layout = uop_layout(cfg)
    uop = Uop(*(data.draw(st.integers(0, layout[n].mask)) for n in ("dst", "src", "wgt")))
    assert decode_uop(encode_uop(uop, cfg), cfg) == uop


@settings(max_examples=300, deadline=None, derandomize=True)
@given(configs(), st.integers(0, (1 << 128) - 1))
def test_every_legal_word_round_trips(cfg, word):
    word = (word & ~7) | (word % 5)
    assert encode(decode(word, cfg), cfg) == word
