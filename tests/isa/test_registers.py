"""isa/registers.py: the one register map of the core (hardware, board backend, software board)."""

from isa import registers as R


def test_map_is_well_formed():
    offsets = list(R.REGISTERS)
    assert len(set(offsets)) == len(offsets)
    assert all(o % 4 == 0 and 0 <= o < 4096 for o in offsets)
    assert all(access in ("r", "rw") for _, access in R.REGISTERS.values())
    assert {name for name, _ in R.REGISTERS.values()} == set(R.OFFSETS) == set(R.MEANINGS)
    assert all(R.REGISTERS[R.OFFSETS[name]][0] == name for name in R.OFFSETS)
    rw = {name for name, access in R.REGISTERS.values() if access == "rw"}
    assert rw == {"CTRL", "INSN_ADDR", "INSN_COUNT", "DRAM_SIZE"}


def test_offsets_of_the_hardware():
    assert (R.CTRL, R.ERROR_CODE, R.ERROR_INDEX, R.INSN_ADDR, R.INSN_COUNT, R.DRAM_SIZE,
            R.CYCLES_LO, R.CYCLES_HI, R.ID) == (0, 4, 8, 0xC, 0x10, 0x14, 0x18, 0x1C, 0x7C)
    assert R.CSR_ID == 0x56544101
    assert (R.CTRL_LAUNCH, R.CTRL_RUNNING, R.CTRL_DONE, R.CTRL_ERROR) == (1, 1, 2, 4)
    assert len(R.COUNTERS) == 11
    for i, name in enumerate(R.COUNTERS):
        assert R.counter_offset(name) == 0x20 + 4 * i
        assert R.REGISTERS[0x20 + 4 * i] == (name.upper(), "r")
    assert R.counter_offset("mem_busy") == 0x48
