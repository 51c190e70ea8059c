"""cocotb bench of the FPGA shell: AXI4-Lite registers (AxiLiteMaster) and AXI4 memory (AxiRam).

With back-pressure, every AXI channel of both interfaces pauses in pseudo-random cycles: on AR
and AW the master waits to hand over commands, on R and B the answers come with random latency.
"""

import itertools
import json
import os
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from hw.csr import CSR_ID, REGISTERS
from isa.image import load_image

REG = {name: offset for offset, (name, _) in REGISTERS.items()}


def pauses(seed, p=0.3):
    rng = random.Random(seed)
    return itertools.cycle([rng.random() < p for _ in range(997)])


class ShellBench:
    def __init__(self, dut, dram_size, backpressure):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_"), dut.clk, dut.rst, size=dram_size)
        self.host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        self.bursts = []
        self.violations = []
        self.in_flight = {"read": 0, "write": 0}
        self.most = {"read": 0, "write": 0}
        if backpressure:
            for i, ch in enumerate((self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                                    self.ram.write_if.b_channel, self.ram.read_if.ar_channel,
                                    self.ram.read_if.r_channel,
                                    self.host.write_if.aw_channel, self.host.write_if.w_channel,
                                    self.host.write_if.b_channel, self.host.read_if.ar_channel,
                                    self.host.read_if.r_channel)):
                ch.set_pause_generator(pauses(100 + i))
        cocotb.start_soon(self.watch_bursts())

    async def watch_bursts(self):
        """Every burst, its 4 KiB rule, and the most transactions in flight per direction."""
        dut = self.dut

        def fire(name):
            return int(getattr(dut, f"m_axi__{name}valid").value) and \
                int(getattr(dut, f"m_axi__{name}ready").value)
        while True:
            await RisingEdge(dut.clk)
            fl = self.in_flight
            fl["read"] += bool(fire("ar")) - bool(fire("r") and int(dut.m_axi__rlast.value))
            fl["write"] += bool(fire("aw")) - bool(fire("b"))
            for k in fl:
                self.most[k] = max(self.most[k], fl[k])
            for ch in ("ar", "aw"):
                if int(getattr(dut, f"m_axi__{ch}valid").value) and \
                        int(getattr(dut, f"m_axi__{ch}ready").value):
                    addr = int(getattr(dut, f"m_axi__{ch}addr").value)
                    beats = int(getattr(dut, f"m_axi__{ch}len").value) + 1
                    nbytes = beats << int(getattr(dut, f"m_axi__{ch}size").value)
                    self.bursts.append((ch, addr, beats))
                    if addr // 4096 != (addr + nbytes - 1) // 4096:
                        self.violations.append((ch, addr, nbytes))

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(2):
            await RisingEdge(self.dut.clk)

    async def run(self, image, max_polls=20000):
        self.ram.write(0, image.dram.tobytes())
        host = self.host
        assert await host.read_dword(REG["ID"]) == CSR_ID
        await host.write_dword(REG["INSN_ADDR"], image.insn_addr)
        await host.write_dword(REG["INSN_COUNT"], image.insn_count)
        await host.write_dword(REG["DRAM_SIZE"], image.dram.size)
        assert await host.read_dword(REG["INSN_COUNT"]) == image.insn_count
        assert await host.read_dword(REG["CTRL"]) & 1 == 0, "running before the launch"
        await host.write_dword(REG["CTRL"], 1)
        for _ in range(max_polls):
            ctrl = await host.read_dword(REG["CTRL"])
            if ctrl & 2:
                break
        else:
            raise AssertionError("the core never signalled done")
        out = {"ctrl": ctrl,
               "error_code": await host.read_dword(REG["ERROR_CODE"]),
               "error_index": await host.read_dword(REG["ERROR_INDEX"]),
               "cycles": await host.read_dword(REG["CYCLES_LO"]),
               "compute_busy": await host.read_dword(REG["COMPUTE_BUSY"]),
               "dram": np.frombuffer(self.ram.read(0, image.dram.size), np.uint8).copy()}
        return out


@cocotb.test()
async def run_jobs(dut):
    """Run every job of VTA_SHELL_JOBS; save DRAM, registers and the bursts seen."""
    with open(os.environ["VTA_SHELL_JOBS"]) as fh:
        jobs = json.load(fh)
    images = [load_image(job["image"]) for job in jobs]
    bench = ShellBench(dut, max(im.dram.size for im in images),
                       os.environ.get("VTA_SHELL_BACKPRESSURE") == "1")
    await bench.reset()
    for job, image in zip(jobs, images):     # no reset between runs: launch again over AXI
        bench.bursts, bench.violations = [], []
        bench.most = {"read": 0, "write": 0}
        out = await bench.run(image)
        out["violations"] = np.str_(json.dumps(bench.violations))
        out["max_len"] = np.int64(max((b for _, _, b in bench.bursts), default=0))
        out["n_bursts"] = np.int64(len(bench.bursts))
        out["most_reads"] = np.int64(bench.most["read"])
        out["most_writes"] = np.int64(bench.most["write"])
        np.savez(job["out"], **out)
