"""hw.queues.CommandQueue's FIFO against Amaranth's SyncFIFOBuffered (the reference it
replaces): the same stimulus, the same flags, level and output in every cycle."""

import random

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.sim import Simulator

from hw.queues import CommandQueue
from isa.config import load_config


class _Pair(Elaboratable):
    def __init__(self, depth):
        self.dut = CommandQueue(load_config("tiny").replace(cmd_queue_depth=depth))
        self.ref = SyncFIFOBuffered(width=len(self.dut.w_data.as_value()), depth=depth)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut, m.submodules.ref = self.dut, self.ref
        return m


@pytest.mark.parametrize("depth", [2, 3, 4, 5, 9, 17, 512])
def test_command_queue_fifo_matches_sync_fifo_buffered(depth):
    """Random writes and reads in phases (filling, draining, mixed): ``w_rdy`` and ``level``
    equal the reference's in every cycle, and the head register holds the reference's
    output of the cycle before whenever that was valid; the queue fills up and empties."""
    rng = random.Random(depth)
    pair = _Pair(depth)
    dut, ref = pair.dut, pair.ref
    seen = {"full": 0, "reads": 0, "empty": 0}
    span = max(50, 2 * depth)       # cycles per phase: long enough to fill the queue
    cycles = 4 * span

    async def bench(ctx):
        before = None            # the reference's (r_rdy, r_data) of the cycle before
        for t in range(cycles):
            phase = (t // span) % 3
            w = rng.random() < (0.9, 0.1, 0.5)[phase]
            r = ctx.get(ref.r_rdy) and rng.random() < (0.1, 0.9, 0.5)[phase]
            data = rng.getrandbits(len(dut.w_data.as_value()))
            ctx.set(dut.w_en, w)
            ctx.set(dut.w_data.as_value(), data)
            ctx.set(ref.w_en, w)
            ctx.set(ref.w_data, data)
            ctx.set(dut.r_en, r)
            ctx.set(ref.r_en, r)
            assert (ctx.get(dut.w_rdy), ctx.get(dut.level)) == \
                (ctx.get(ref.w_rdy), ctx.get(ref.level)), t
            assert ctx.get(dut.empty) == (ctx.get(ref.level) == 0), t
            if before is not None and before[0]:
                assert ctx.get(dut.r_data.as_value()) == before[1], t
            before = (ctx.get(ref.r_rdy), ctx.get(ref.r_data))
            seen["full"] += not ctx.get(ref.w_rdy)
            seen["reads"] += r
            seen["empty"] += ctx.get(ref.level) == 0
            await ctx.tick()

    sim = Simulator(pair)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["full"] > 0 and seen["empty"] > 0 and seen["reads"] > depth, seen
