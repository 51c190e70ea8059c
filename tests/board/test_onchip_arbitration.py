"""The on-chip DRAM's two users at once (Amaranth simulator): the core's bursts on its memory
port (random lengths, strobes and read back-pressure) and the host's 32-bit word accesses,
each against a plain Python model of the memory; and the latencies OnChipMemory and
MemPortSram document (a read's first beat three cycles after its command, a host write
acknowledged a cycle after it is offered to an idle memory, a host read four cycles after;
a host waits while the core keeps offering commands). The 64 KiB memory (ecp5-small's) has
four groups of block RAMs, each driven by its own copy of the registers: the copies must
follow the adapter's and the host's in every cycle."""

import random

import pytest
from amaranth.sim import Simulator

from hw.board.onchip import OnChipMemory
from isa.config import load_config

CFG = load_config("tiny")
SIZE = 1024                                   # bytes: one group of block RAMs
BEAT = CFG.bus_width // 8
WINDOW = 512                                  # bytes each user touches (the model stays dense)


def _windows(size):
    """The core's beats (the window under the middle) and the host's words (the top one)."""
    core = range((size // 2 - WINDOW) // BEAT, size // 2 // BEAT)
    return core, range((size - WINDOW) // 4, size // 4)


def _run(benches, size=SIZE):
    dut = OnChipMemory(CFG, size)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for bench in benches:
        sim.add_testbench(bench(dut))
    sim.run()


async def _offer(ctx, stream, **payload):
    """Offer one beat on ``stream`` until it is taken; the cycle count it waited."""
    ctx.set(stream.valid, 1)
    for name, value in payload.items():
        ctx.set(getattr(stream.payload, name), value)
    waited = 0
    while True:
        ready = ctx.get(stream.ready)
        await ctx.tick()
        if ready:
            break
        waited += 1
    ctx.set(stream.valid, 0)
    return waited


async def _host_access(ctx, bus, addr, data=None):
    """One word access; (cycles from offer to acknowledge, read data)."""
    ctx.set(bus.addr, addr)
    ctx.set(bus.we, data is not None)
    ctx.set(bus.wdata, data or 0)
    ctx.set(bus.stb, 1)
    cycles = 0
    while True:
        ack, rdata = ctx.get(bus.ack), ctx.get(bus.rdata)
        await ctx.tick()
        if ack:
            break
        cycles += 1
        assert cycles < 200, "the host's access is never acknowledged"
    ctx.set(bus.stb, 0)
    return cycles, rdata


@pytest.mark.parametrize("size", [SIZE, 64 << 10])
def test_core_bursts_and_host_words_at_once_match_a_model(size):
    rng = random.Random(12)
    core_beats, host_words = _windows(size)
    core_mem = {}                            # beat index -> 64-bit word (only beats written)
    host_mem = {}                            # word address -> 32-bit word
    done = []

    def core(dut):
        async def bench(ctx):
            port = dut.port
            for _ in range(40):
                # a gap now and then: the core has priority, a host waits for a cycle in
                # which the core neither has a burst nor offers one
                for _ in range(rng.choice((0, 0, 1, 2))):
                    await ctx.tick()
                n = rng.randrange(1, CFG.max_burst_beats + 1)
                start = rng.randrange(core_beats.start, core_beats.stop - n + 1)
                if rng.random() < 0.5:
                    await _offer(ctx, port.wcmd, addr=start * BEAT, len=n - 1)
                    for k in range(n):
                        data = rng.getrandbits(CFG.bus_width)
                        strb = rng.getrandbits(BEAT) if rng.random() < 0.3 else (1 << BEAT) - 1
                        old = core_mem.get(start + k, 0)
                        core_mem[start + k] = sum(
                            ((data if strb >> b & 1 else old) >> (8 * b) & 0xFF) << (8 * b)
                            for b in range(BEAT))
                        await _offer(ctx, port.wr, data=data, strb=strb, last=k == n - 1)
                    for _ in range(10):
                        acked = ctx.get(port.wr_ack)
                        await ctx.tick()
                        if acked:
                            break
                    else:
                        raise AssertionError("no wr_ack after a write burst")
                else:
                    await _offer(ctx, port.rcmd, addr=start * BEAT, len=n - 1)
                    got = []
                    while len(got) < n:
                        ready = rng.random() < 0.7
                        ctx.set(port.rd.ready, ready)
                        valid = ctx.get(port.rd.valid)
                        beat = (ctx.get(port.rd.payload.data), ctx.get(port.rd.payload.last))
                        await ctx.tick()
                        if valid and ready:
                            got.append(beat)
                    ctx.set(port.rd.ready, 0)
                    want = [(core_mem.get(start + k, 0), int(k == n - 1)) for k in range(n)]
                    assert got == want, (start, n)
            done.append("core")
        return bench

    def host(dut):
        async def bench(ctx):
            for _ in range(60):
                addr = rng.choice(host_words)
                if rng.random() < 0.5:
                    value = rng.getrandbits(32)
                    await _host_access(ctx, dut.bus, addr, value)
                    host_mem[addr] = value
                else:
                    _, got = await _host_access(ctx, dut.bus, addr)
                    assert got == host_mem.get(addr, 0), hex(addr)
                for _ in range(rng.randrange(0, 3)):
                    await ctx.tick()
            done.append("host")
        return bench

    _run([core, host], size)
    assert sorted(done) == ["core", "host"]


@pytest.mark.parametrize("size", [SIZE, 64 << 10])
def test_latencies_of_each_user_alone(size):
    seen = {}

    def bench(dut):
        async def run(ctx):
            port = dut.port
            seen["write"], _ = await _host_access(ctx, dut.bus, 8, 0x12345678)
            seen["read"], seen["value"] = await _host_access(ctx, dut.bus, 8)
            await _offer(ctx, port.rcmd, addr=32, len=0)     # handshake in cycle t
            ctx.set(port.rd.ready, 1)
            cycles = 1                                       # now in t + 1
            while not ctx.get(port.rd.valid):
                await ctx.tick()
                cycles += 1
            seen["first_beat"] = cycles
            seen["beat"] = ctx.get(port.rd.payload.data)
        return run

    _run([bench], size)
    # offered in t: granted (decided) in t, the host's in t + 1 (a write is acknowledged
    # then); a read's word passes the block RAM's latch and output register and the host's
    # read register: t + 4
    assert (seen["write"], seen["read"], seen["value"]) == (1, 4, 0x12345678)
    assert seen["first_beat"] == 3
    assert seen["beat"] == 0x12345678             # host word 8: the low half of beat 4 (byte 32)
