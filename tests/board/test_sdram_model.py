"""The behavioural SDRAM chip (hw/board/sdram_model.py) on Amaranth's simulator: it stores and
returns data with the CAS latency of its mode register, and flags each timing rule a command
sequence breaks (the checks the board simulation relies on)."""

import pytest
from amaranth.sim import Simulator

from hw.board.sdram_model import ChipTimings, SdramChipModel, Violation

# 100 MHz, MT48LC16M16-like: tRCD 2, tRP 2, tRAS 5, tRC 7, tWR 2, tRFC 7, tMRD 2
T = ChipTimings.from_ns(100e6, rcd=20, rp=20, ras=44, wr=15, rfc=66, refi=7812.5)
CMDS = {"nop": 0b111, "act": 0b011, "read": 0b101, "write": 0b100, "pre": 0b010,
        "ref": 0b001, "mrs": 0b000}


def run(script, cl=2, raw=False):
    """Drive ``script`` (a list of (command, bank, address, data) or ints = idle cycles) after
    a legal power-up; return (violation name, words read on DQ in order), or with ``raw`` the
    DQ sample after each clock edge, with "READ" before the edge that samples a READ."""
    dut = SdramChipModel(T, nbanks=4, rows=4, ncols=16)
    init = [("pre", 0, 1 << 10, None), T.rp, ("ref", 0, 0, None), T.rfc, ("ref", 0, 0, None),
            T.rfc, ("mrs", 0, cl << 4, None), T.mrd]
    seen = []

    async def bench(ctx):
        p = dut.pins
        ctx.set(p.cke, 1)
        for step in init + script:
            if isinstance(step, int):
                for _ in range(step - 1):
                    await ctx.tick()
                    seen.append(ctx.get(p.dq_i))
                continue
            name, bank, addr, data = step
            code = CMDS[name]
            ctx.set(p.cs_n, 0)
            ctx.set(p.ras_n, code >> 2)
            ctx.set(p.cas_n, (code >> 1) & 1)
            ctx.set(p.we_n, code & 1)
            ctx.set(p.ba, bank)
            ctx.set(p.a, addr)
            ctx.set(p.dq_oe, data is not None)
            ctx.set(p.dq_o, data or 0)
            if name == "read":
                seen.append("READ")
            await ctx.tick()
            seen.append(ctx.get(p.dq_i))
            ctx.set(p.cs_n, 1)
            ctx.set(p.dq_oe, 0)
        for _ in range(6):
            await ctx.tick()
            seen.append(ctx.get(p.dq_i))
        seen.append(Violation(ctx.get(dut.violation)).name)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    if raw:
        return seen[:-1]
    return seen[-1], [w for w in seen[:-1] if w and w != "READ"]


@pytest.mark.parametrize("cl", [2, 3])
def test_legal_sequence_stores_and_reads_back_with_the_cas_latency(cl):
    script = [("act", 1, 3, None), T.rcd, ("write", 1, 5, 0xBEEF), 1,
              ("write", 1, 6, 0x1234), T.wr, ("read", 1, 5, None), 1,
              ("read", 1, 6 | 1 << 10, None), T.ras + T.rp, ("act", 1, 2, None), T.rcd,
              ("read", 1, 5, None), T.ras, ("pre", 1, 0, None), T.rp]
    violation, words = run(script, cl)
    assert violation == "NONE"
    assert words == [0xBEEF, 0x1234]          # row 2 was never written: reads 0


def test_read_data_appears_cas_latency_cycles_after_the_command():
    # the samples after the READ's edge: cycle 1, 2, ... after it; the word is on DQ in
    # cycle CL only (the host of a chip clocked like the model's samples it at that edge)
    for cl in (2, 3):
        samples = run([("act", 0, 0, None), T.rcd, ("write", 0, 1, 0x55AA), T.wr,
                       ("read", 0, 1, None), 8], cl, raw=True)
        after = samples[samples.index("READ") + 1:]
        assert after[cl - 1] == 0x55AA and after.count(0x55AA) == 1, (cl, after)


@pytest.mark.parametrize("script, expected", [
    ([("act", 0, 0, None), 1, ("read", 0, 0, None), 4], "T_RCD"),
    ([("read", 2, 0, None), 4], "BANK_IDLE"),
    ([("act", 0, 0, None), T.rcd, ("act", 0, 1, None), 2], "BANK_OPEN"),
    ([("act", 0, 0, None), 2, ("pre", 0, 0, None), 2], "T_RAS"),
    ([("act", 0, 0, None), T.ras, ("write", 0, 0, 1), 1, ("pre", 0, 0, None), 2], "T_WR"),
    ([("act", 0, 0, None), T.ras, ("pre", 0, 0, None), 1, ("act", 0, 0, None), 2], "T_RP"),
    ([("act", 0, 0, None), T.ras, ("ref", 0, 0, None), 2], "BANK_OPEN"),
    ([("ref", 0, 0, None), 2, ("act", 0, 0, None), 2], "T_RFC"),
    ([("act", 0, 8, None), T.rcd, ("read", 0, 0, None), 4], "ROW_OUTSIDE_MODEL"),
    ([("act", 0, 0, None), T.rcd, ("read", 0, 0, None), 2, ("write", 0, 1, 7), 4],
     "DQ_CONFLICT"),
    ([("mrs", 0, 2 << 4 | 3, None), 4], "BAD_MODE"),
    ([("act", 0, 0, None), T.rcd, ("read", 0, 1 << 10, None), 2, ("act", 0, 0, None), 2],
     "T_RP"),
])
def test_each_broken_rule_is_flagged(script, expected):
    assert run(script)[0] == expected


def test_a_command_before_initialisation_is_flagged():
    dut = SdramChipModel(T, nbanks=4, rows=4, ncols=16)

    async def bench(ctx):
        ctx.set(dut.pins.cke, 1)
        ctx.set(dut.pins.cs_n, 0)
        ctx.set(dut.pins.cas_n, 1)
        ctx.set(dut.pins.we_n, 1)
        ctx.set(dut.pins.ras_n, 0)                # ACTIVE
        await ctx.tick()
        ctx.set(dut.pins.cs_n, 1)
        await ctx.tick()
        assert Violation(ctx.get(dut.violation)) == Violation.BEFORE_INIT

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
