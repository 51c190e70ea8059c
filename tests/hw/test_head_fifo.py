"""hw.fetch.HeadFIFO against Amaranth's SyncFIFO (the reference): same stimulus, the same
outputs in every cycle."""

import random

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from hw.fetch import HeadFIFO


class _Pair(Elaboratable):
    def __init__(self, width, depth):
        self.ref = SyncFIFO(width=width, depth=depth)
        self.dut = HeadFIFO(width, depth)

    def elaborate(self, platform):
        m = Module()
        m.submodules.ref = self.ref
        m.submodules.dut = self.dut
        return m


@pytest.mark.parametrize("depth", [2, 3, 16])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_head_fifo_matches_sync_fifo(depth, seed):
    """Random writes and reads (full and empty ones included, bursts of each): ``r_rdy``,
    ``w_rdy``, ``level`` and, while ``r_rdy``, ``r_data`` equal SyncFIFO's in every cycle;
    ``r_data`` is zero while ``r_rdy`` is low."""
    rng = random.Random(seed)
    pair = _Pair(8, depth)
    ref, dut = pair.ref, pair.dut
    seen = {"reads": 0, "full": 0}

    async def bench(ctx):
        for cycle in range(600):
            phase = (cycle // 50) % 3        # mostly writing, mostly reading, mixed
            w = rng.random() < (0.8, 0.2, 0.5)[phase]
            r = rng.random() < (0.2, 0.8, 0.5)[phase]
            data = rng.randrange(1, 256)
            for f in (ref, dut):
                ctx.set(f.w_en, w)
                ctx.set(f.w_data, data)
                ctx.set(f.r_en, r)
            want = [ctx.get(getattr(ref, s)) for s in ("r_rdy", "w_rdy", "level")]
            got = [ctx.get(getattr(dut, s)) for s in ("r_rdy", "w_rdy", "level")]
            assert got == want, (cycle, got, want)
            if want[0]:
                assert ctx.get(dut.r_data) == ctx.get(ref.r_data), cycle
                seen["reads"] += r
            else:
                assert ctx.get(dut.r_data) == 0, cycle      # zero without a head
            seen["full"] += not want[1]
            await ctx.tick()

    sim = Simulator(pair)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["reads"] > 100 and seen["full"] > 0, seen
