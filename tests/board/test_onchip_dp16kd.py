"""The on-chip DRAM built of DP16KD primitives for a synthesis (``OnChipMemory(dp16kd=True)``):
one block RAM per slice of the word, each holding the whole depth (no read multiplexer), its
output register on, in groups of 8 each driven by its own copy of the registers (the fan-out
to 32 spread block RAMs bounded the board). Its behaviour is the simulated model's
(tests/board/test_board_sim.py, test_onchip_arbitration.py)."""

import collections
import re

from amaranth.back import verilog

from hw.board.onchip import OnChipMemory
from isa.config import load_config


def _instances(cfg, size):
    text = verilog.convert(OnChipMemory(cfg, size, dp16kd=True), name="dram", emit_src=False)
    return text, re.findall(r"DP16KD\s*#\((.*?)\)\s*\w+\s*\(", text, re.S)


def test_ecp5_small_dram_is_32_dp16kd_with_output_registers():
    cfg = load_config("ecp5-small")
    size = 64 << 10
    text, insts = _instances(cfg, size)
    depth = size // cfg.bus_bytes                    # 8192 words: the x2 mode
    assert depth == 8192 and len(insts) == cfg.bus_width // 2
    for params in insts:
        assert re.search(r"\.REGMODE_B\(\"OUTREG\"\)", params)
        assert re.search(r"\.REGMODE_A\(\"NOREG\"\)", params)
        assert re.search(r"\.DATA_WIDTH_A\(32'd2\)", params)
        assert re.search(r"\.DATA_WIDTH_B\(32'd2\)", params)
    # the read enable, the output register's enable and every address pin reach each block
    # RAM from its group's copy: 4 nets of 8 block RAMs each, never one net to all 32
    for pin in ("CEB", "OCEB", "ADA1", "ADB1", "ADA13", "ADB13"):
        nets = collections.Counter(re.findall(rf"\.{pin}\(([^)]*)\)", text))
        assert sorted(nets.values()) == [8] * 4, (pin, nets)

def test_depths_without_a_single_block_ram_mode_fall_back_to_the_model():
    cfg = load_config("ecp5-small")
    text, insts = _instances(cfg, 1 << 10)          # 128 words: no DP16KD mode holds them
    assert insts == [] and "reg [63:0]" in text
