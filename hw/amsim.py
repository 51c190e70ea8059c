"""Run program images on the core in Amaranth's own simulator (slow; for debugging and unit tests).

Same memory model and launch sequence as the cocotb bench (:mod:`hw.cocotb_core`).
"""

from __future__ import annotations

from amaranth.sim import Simulator

from .core import COUNTERS, VTACore
from .memmodel import MemoryModel

__all__ = ["run_image_amaranth"]


def run_image_amaranth(image, *, backpressure=None, max_cycles=200_000, vcd=None, probe=None):
    """Returns a dict like the cocotb bench's result (dram, cycles, error_code, counters)."""
    cfg = image.config
    dut = VTACore(cfg)
    dram = image.dram.copy()
    model = MemoryModel(cfg, dram, backpressure=backpressure)
    result = {}
    w = cfg.bus_width

    async def bench(ctx):
        ctx.set(dut.insn_addr, image.insn_addr)
        ctx.set(dut.insn_count, image.insn_count)
        ctx.set(dut.dram_size, dram.size)
        await ctx.tick()
        ctx.set(dut.launch, 1)
        await ctx.tick()
        ctx.set(dut.launch, 0)
        mem = dut.mem
        o = model.out
        for cycle in range(max_cycles):
            ctx.set(mem.rcmd.ready, o.rcmd_ready)
            ctx.set(mem.wcmd.ready, o.wcmd_ready)
            ctx.set(mem.rd.valid, o.rd_valid)
            ctx.set(mem.rd.payload, {"data": o.rd_data, "last": o.rd_last})
            ctx.set(mem.wr.ready, o.wr_ready)
            ctx.set(mem.wr_ack, o.wr_ack)
            if ctx.get(dut.done):
                break
            if probe is not None:
                probe(ctx, dut, cycle)
            rc, wc = ctx.get(mem.rcmd.payload), ctx.get(mem.wcmd.payload)
            wr = ctx.get(mem.wr.payload)
            model.step(ctx.get(mem.rcmd.valid), rc.addr, rc.len, ctx.get(mem.wcmd.valid),
                       wc.addr, wc.len, ctx.get(mem.rd.ready), ctx.get(mem.wr.valid), wr.data,
                       wr.strb)
            await ctx.tick()
        result.update(dram=dram, done=ctx.get(dut.done), cycles=ctx.get(dut.cycles),
                      error_code=ctx.get(dut.error_code), error_index=ctx.get(dut.error_index),
                      **{n: ctx.get(getattr(dut, n)) for n in COUNTERS})

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    return result
