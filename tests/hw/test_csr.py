"""hw/csr.py implements isa/registers.py: the same map, checked on the elaborated slave."""

from amaranth.sim import Simulator

from hw.csr import CSR_ID, REGISTERS, ControlRegisters
from isa import registers as R
from isa.config import load_config


def test_the_hardware_map_is_isa_registers():
    assert REGISTERS == R.REGISTERS and CSR_ID == R.CSR_ID
    import hw.core
    assert hw.core.COUNTERS == R.COUNTERS


def test_every_register_over_axi_lite():
    """Distinct values on every input; each offset of isa.registers reads the right one, the
    R/W registers keep what is written, CTRL's bits are isa's, unmapped offsets read 0."""
    dut = ControlRegisters(load_config("tiny"))
    inputs = {"error_code": 5, "error_index": 0x1234, "cycles": (0xABCD << 32) | 0x5678,
              **{name: 0x100 + i for i, name in enumerate(R.COUNTERS)}}
    expect = {R.ERROR_CODE: 5, R.ERROR_INDEX: 0x1234, R.CYCLES_LO: 0x5678,
              R.CYCLES_HI: 0xABCD, R.ID: R.CSR_ID,
              **{R.counter_offset(n): 0x100 + i for i, n in enumerate(R.COUNTERS)}}
    launches = []

    async def read(ctx, addr):
        bus = dut.bus
        ctx.set(bus.araddr, addr)
        ctx.set(bus.arvalid, 1)
        ctx.set(bus.rready, 1)
        await ctx.tick()
        ctx.set(bus.arvalid, 0)
        while not ctx.get(bus.rvalid):
            await ctx.tick()
        value = ctx.get(bus.rdata)
        await ctx.tick()
        return value

    async def write(ctx, addr, value):
        bus = dut.bus
        ctx.set(bus.awaddr, addr)
        ctx.set(bus.wdata, value)
        ctx.set(bus.awvalid, 1)
        ctx.set(bus.wvalid, 1)
        ctx.set(bus.bready, 1)
        await ctx.tick()
        ctx.set(bus.awvalid, 0)
        ctx.set(bus.wvalid, 0)
        launches.append(ctx.get(dut.launch))
        await ctx.tick()
        launches.append(ctx.get(dut.launch))

    async def bench(ctx):
        for name, value in inputs.items():
            ctx.set(getattr(dut, name), value)
        await ctx.tick()                # the core's status is read as it was a cycle before
        for offset, value in expect.items():
            assert await read(ctx, offset) == value, R.REGISTERS[offset]
        for offset in range(0, 0x80, 4):
            if offset not in R.REGISTERS:
                assert await read(ctx, offset) == 0
        for i, name in enumerate(("INSN_ADDR", "INSN_COUNT", "DRAM_SIZE")):
            await write(ctx, R.OFFSETS[name], 0x1000 + i)
            assert await read(ctx, R.OFFSETS[name]) == 0x1000 + i
            assert ctx.get(getattr(dut, name.lower())) == 0x1000 + i
        await write(ctx, R.ERROR_CODE, 9)                     # read-only
        assert await read(ctx, R.ERROR_CODE) == 5
        for running, done, code, want in ((1, 0, 0, R.CTRL_RUNNING), (0, 1, 0, R.CTRL_DONE),
                                          (0, 1, 3, R.CTRL_DONE | R.CTRL_ERROR)):
            ctx.set(dut.running, running)
            ctx.set(dut.done, done)
            ctx.set(dut.error_code, code)
            await ctx.tick()
            assert await read(ctx, R.CTRL) == want
        launches.clear()
        await write(ctx, R.CTRL, R.CTRL_LAUNCH)               # not running: launches
        assert any(launches)
        launches.clear()
        ctx.set(dut.running, 1)
        await write(ctx, R.CTRL, R.CTRL_LAUNCH)               # running: ignored
        assert not any(launches)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_reads_answer_two_cycles_after_the_handshake_and_offsets_above_the_map_read_0():
    """The read's two registered stages: rvalid from the second cycle after the AR handshake,
    AR not accepted meanwhile; an offset past the map's words (an alias of a register in its
    low bits) reads 0, as an unmapped one does."""
    dut = ControlRegisters(load_config("tiny"))
    seen = []

    async def bench(ctx):
        bus = dut.bus
        ctx.set(dut.error_index, 0x1234)
        ctx.set(bus.rready, 1)
        await ctx.tick()                # the core's status is read as it was a cycle before
        for offset, want in ((R.ERROR_INDEX, 0x1234), (0x80 | R.ERROR_INDEX, 0),
                             (0xF80 | R.ID, 0), (R.ID, R.CSR_ID)):
            ctx.set(bus.araddr, offset)
            ctx.set(bus.arvalid, 1)
            assert ctx.get(bus.arready)
            await ctx.tick()
            ctx.set(bus.arvalid, 0)
            ctx.set(bus.araddr, 0)                  # AXI: the address may go after the handshake
            trace = []
            for _ in range(3):
                trace.append((ctx.get(bus.arready), ctx.get(bus.rvalid)))
                if ctx.get(bus.rvalid):
                    seen.append(ctx.get(bus.rdata) == want)
                await ctx.tick()
            # cycle after the handshake: picking; then rvalid held until rready (taken at once)
            assert trace == [(0, 0), (0, 1), (1, 0)], (hex(offset), trace)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [True] * 4
