"""cocotb bench of the whole core: runs program images against the memory model.

Loaded by the simulator that :mod:`hw.rtlsim` starts; the jobs come from the JSON file named
by ``VTA_RTLSIM_JOBS`` (a list of ``{"image", "out", "backpressure", "max_cycles"}``), so that
one Verilator process runs many images, resetting the core between them.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from hw.core import COUNTERS
from hw.memmodel import MemoryModel
from isa.image import load_image


class CoreBench:
    """Owns the clock, reset and the memory model of one ``vta_core`` instance."""

    def __init__(self, dut, cfg):
        self.dut = dut
        self.cfg = cfg
        self.w = cfg.bus_width
        self.clk = dut.clk

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        dut.launch.value = 0
        for sig in (dut.mem__rcmd__ready, dut.mem__wcmd__ready, dut.mem__rd__valid,
                    dut.mem__rd__payload,
                    dut.mem__wr__ready, dut.mem__wr_ack):
            sig.value = 0
        for _ in range(3):
            await RisingEdge(self.clk)
        if os.environ.get("VTA_RTLSIM_DEBUG"):
            dut._log.warning("reset done")
        dut.rst.value = 0
        await RisingEdge(self.clk)

    async def run(self, image, *, backpressure=None, max_cycles=5_000_000):
        dut = self.dut
        dram = image.dram.copy()
        model = MemoryModel(self.cfg, dram, backpressure=backpressure)
        await self.reset()
        dut.insn_addr.value = image.insn_addr
        dut.insn_count.value = image.insn_count
        dut.dram_size.value = dram.size
        dut.launch.value = 1
        await RisingEdge(self.clk)
        dut.launch.value = 0

        w = self.w
        strb_bits = w // 8
        mask_w = (1 << w) - 1
        mask_s = (1 << strb_bits) - 1
        rcmd_ready, wcmd_ready = dut.mem__rcmd__ready, dut.mem__wcmd__ready
        rd_valid, rd_payload = dut.mem__rd__valid, dut.mem__rd__payload
        wr_ready, wr_ack = dut.mem__wr__ready, dut.mem__wr_ack
        rcmd_valid, rcmd_payload = dut.mem__rcmd__valid, dut.mem__rcmd__payload
        wcmd_valid, wcmd_payload = dut.mem__wcmd__valid, dut.mem__wcmd__payload
        rd_ready, wr_valid, wr_payload = dut.mem__rd__ready, dut.mem__wr__valid, dut.mem__wr__payload
        done = dut.done
        last = None
        o = model.out
        timed_out = True
        debug = bool(os.environ.get("VTA_RTLSIM_DEBUG"))
        for cycle in range(max_cycles):
            if debug and cycle % 100 == 0:
                dut._log.warning(f"cycle {cycle} cmd_valid {cmd_valid.value} done {done.value}")
            vals = (o.rcmd_ready, o.wcmd_ready, o.rd_valid, o.rd_data | (o.rd_last << w),
                    o.wr_ready)
            if vals != last:
                (rcmd_ready.value, wcmd_ready.value, rd_valid.value, rd_payload.value,
                 wr_ready.value) = vals
                last = vals
            wr_ack.value = o.wr_ack
            await FallingEdge(self.clk)
            if int(done.value):
                timed_out = False
                break
            rv = int(rcmd_valid.value)
            rp = int(rcmd_payload.value) if rv else 0
            cv = int(wcmd_valid.value)
            cp = int(wcmd_payload.value) if cv else 0
            wv = int(wr_valid.value)
            wp = int(wr_payload.value) if wv else 0
            model.step(rv, rp & 0xFFFFFFFF, (rp >> 32) & 0xFF, cv, cp & 0xFFFFFFFF,
                       (cp >> 32) & 0xFF, int(rd_ready.value), wv, wp & mask_w,
                       (wp >> w) & mask_s)
            await RisingEdge(self.clk)
        result = {
            "dram": dram,
            "done": np.int64(0 if timed_out else 1),
            "cycles": np.int64(int(dut.cycles.value)),
            "error_code": np.int64(int(dut.error_code.value)),
            "error_index": np.int64(int(dut.error_index.value)),
            "bursts": np.int64(len(model.bursts)),
        }
        for name in COUNTERS:
            result[name] = np.int64(int(getattr(dut, name).value))
        return result


@cocotb.test()
async def run_jobs(dut):
    """Run every job of ``VTA_RTLSIM_JOBS`` on this core and save each result."""
    with open(os.environ["VTA_RTLSIM_JOBS"]) as fh:
        jobs = json.load(fh)
    if os.environ.get("VTA_RTLSIM_DEBUG"):
        dut._log.warning("starting clock")
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    if os.environ.get("VTA_RTLSIM_DEBUG"):
        await RisingEdge(dut.clk)
        dut._log.warning("first edge")
    bench = None
    for job in jobs:
        image = load_image(job["image"])
        if bench is None:
            bench = CoreBench(dut, image.config)
        try:
            result = await bench.run(image, backpressure=job.get("backpressure"),
                                     max_cycles=job.get("max_cycles", 5_000_000))
        except AssertionError as exc:   # a memory-port violation
            result = {"dram": image.dram, "violation": np.str_(str(exc)), "done": np.int64(0),
                      "cycles": np.int64(0), "error_code": np.int64(0),
                      "error_index": np.int64(0)}
        np.savez(job["out"], **result)
