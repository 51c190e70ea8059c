import random

import pytest

from isa.asm import AsmError, assemble, disassemble, format_insn, parse_line
from isa.config import load_config

from .test_encoding import GOLDEN

CFG = load_config("default")


@pytest.mark.parametrize("config", ["default", "small", "batch2"])
def test_disassembly_reassembles_every_word(config):
    cfg = load_config(config)
    rng = random.Random(7)
    words = [rng.getrandbits(128) for _ in range(3000)]
    data = b"".join(w.to_bytes(16, "little") for w in words)
    assert assemble(disassemble(data, cfg), cfg) == data


def test_golden_instructions_in_text():
    text = "\n".join(format_insn(insn) for insn, _, _ in GOLDEN)
    data = assemble(text, CFG)
    for k, (_, lo, hi) in enumerate(GOLDEN):
        assert data[16 * k:16 * k + 16] == (lo | hi << 64).to_bytes(16, "little")


def test_readable_syntax_with_comments_and_defaults():
    text = """
    ; a load-compute-store round trip
    LOAD ACC sram_base=0 dram_base=0x40 y_size=1 x_size=8   # stride defaults to x_size
    ALU SHR imm=0 uop_bgn=0 uop_end=1 iter_out=1 iter_in=8 dst_factor_in=1 src_factor_in=1
    STORE sram_base=0 dram_base=0x100 y_size=1 x_size=8 push_prev
    FINISH
    """
    data = assemble(text, CFG)
    assert len(data) == 64
    load = parse_line("LOAD ACC sram_base=0 dram_base=0x40 y_size=1 x_size=8")
    assert load.x_stride == 8 and load.memory_type == 3
    assert disassemble(data, CFG).splitlines()[2] == (
        "STORE sram_base=0 dram_base=0x100 y_size=1 x_size=8 x_stride=8 push_prev")


@pytest.mark.parametrize("text, message", [
    ("FINISH\nLOAD XYZ", "line 2: unknown memory type 'XYZ'"),
    ("GEMM foo=1", "line 1: GEMM has no field 'foo'"),
    ("\n\nALU ADD imm=70000", "line 3: ALU field imm = 70000 does not fit in 16 bits"),
    ("FROB", "line 1: unknown mnemonic 'FROB'"),
    ("LOAD INP x_size=abc", "line 1: x_size=abc: not an integer"),
    ("GEMM uop_bgn=1 uop_bgn=2", "line 1: uop_bgn is given twice"),
    ("STORE sram_base", "line 1: sram_base needs a value"),
    ("WORD 0x1 0x2", "line 1: WORD takes one 128-bit number"),
])
def test_errors_name_the_line(text, message):
    with pytest.raises(AsmError, match=message):
        assemble(text, CFG)


def test_illegal_words_disassemble_as_raw_words():
    data = (0x7 | 1 << 100).to_bytes(16, "little")
    text = disassemble(data, CFG)
    assert text.startswith("WORD 0x") and "illegal opcode 7" in text
    assert assemble(text, CFG) == data
