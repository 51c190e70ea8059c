"""The UART bridge on on-chip memory in Amaranth's simulator, at the bit level: the protocol of
isa/hostlink.py (byte order, word addresses, bursts), the idle timeout that drops a broken
command, and the memory's two users (the host's 32-bit words on a 64-bit memory)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.board.bridge import UartBridge
from hw.board.onchip import OnChipMemory
from isa import hostlink as H
from isa.config import load_config

DIV = 4
TIMEOUT = 200


def _session(commands):
    """Send ``commands`` (a list of (bytes, idle cycles after)) and return the bytes answered."""
    m = Module()
    m.submodules.bridge = bridge = UartBridge(DIV, TIMEOUT)
    m.submodules.mem = mem = OnChipMemory(load_config("tiny"), 1024)
    wiring.connect(m, bridge.bus, mem.bus)
    got = []

    async def host(ctx):
        ctx.set(bridge.rx, 1)
        await ctx.tick().repeat(4)
        for data, idle in commands:
            for byte in data:
                for bit in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                    ctx.set(bridge.rx, bit)
                    await ctx.tick().repeat(DIV)
            if idle:
                await ctx.tick().repeat(idle)

    async def line(ctx):
        while True:                          # a bit-level receiver for the bridge's tx
            await ctx.tick()
            if ctx.get(bridge.tx) == 0:
                await ctx.tick().repeat(DIV // 2)
                byte = 0
                for i in range(8):
                    await ctx.tick().repeat(DIV)
                    byte |= ctx.get(bridge.tx) << i
                await ctx.tick().repeat(DIV)
                got.append(byte)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(host)
    sim.add_testbench(line, background=True)
    sim.run()
    return bytes(got)


def write(addr, words):
    return bytes([H.CMD_WRITE, len(words)]) + (addr // 4).to_bytes(4, "big") + \
        b"".join(w.to_bytes(4, "big") for w in words)


def read(addr, n):
    return bytes([H.CMD_READ, n]) + (addr // 4).to_bytes(4, "big")


def test_burst_write_and_read_back_big_endian_words():
    words = [0x11223344, 0xA5A5F00D, 0xDEADBEEF]
    answer = _session([(write(8, words), 0), (read(4, 5), 6 * 10 * DIV * 4)])
    assert answer == b"".join(w.to_bytes(4, "big") for w in [0, *words, 0])


def test_a_broken_command_is_dropped_after_the_idle_timeout():
    # a write that stops after two data bytes, then silence, then a clean read: the read is
    # answered and the broken write left the memory alone
    broken = write(0, [0xCAFEBABE])[:8]
    answer = _session([(write(0, [0x01020304]), 0), (broken, 2 * TIMEOUT),
                       (read(0, 1), 5 * 10 * DIV)])
    assert answer == (0x01020304).to_bytes(4, "big")


def test_zero_length_and_unknown_bytes_are_ignored():
    answer = _session([(bytes([0x55, 0x00]) + bytes([H.CMD_READ, 0]) + (0).to_bytes(4, "big"), 0),
                       (write(16, [7]), 0), (read(16, 1), 5 * 10 * DIV)])
    assert answer == (7).to_bytes(4, "big")
