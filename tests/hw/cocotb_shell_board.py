"""cocotb bench: the driver's board backend on the FPGA shell's real AXI4-Lite slave.

A :class:`~driver.backends.board.Link` whose register accesses are cocotbext-axi
``AxiLiteMaster`` transactions and whose DRAM is an ``AxiRam``; ``BoardBackend.run`` runs in a
cocotb bridge thread (``cocotb.task.bridge``/``resume``), so the backend drives the RTL exactly
as it would drive a board. Jobs come from ``VTA_BOARD_JOBS``.
"""

import json
import os

import cocotb
import numpy as np
from cocotb.task import bridge, resume
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from driver.backends.board import BoardBackend
from hw.board.cocotb_board import reset, run_outcome
from isa.image import load_image


class AxiLink:
    """The board link over the shell's ports."""

    has_cycle_counter = True

    def __init__(self, host, ram, dram_bytes):
        self.host, self.ram, self.dram_bytes = host, ram, dram_bytes
        self._read = resume(host.read_dword)
        self._write = resume(host.write_dword)

    def read_reg(self, offset):
        return self._read(offset)

    def write_reg(self, offset, value):
        self._write(offset, value)

    def write_mem(self, addr, data):
        self.ram.write(addr, data)

    def read_mem(self, addr, nbytes):
        return self.ram.read(addr, nbytes)


def run_job(link, image, timeout):
    return run_outcome(BoardBackend(link), image, timeout)


@cocotb.test()
async def run_jobs(dut):
    with open(os.environ["VTA_BOARD_JOBS"]) as fh:
        jobs = json.load(fh)
    images = [load_image(job["image"]) for job in jobs]
    size = max(im.dram.size for im in images)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_"), dut.clk, dut.rst, size=size)
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    await reset(dut)
    link = AxiLink(host, ram, size)
    for job, image in zip(jobs, images):
        out = await bridge(run_job)(link, image, job["timeout"])
        np.savez(job["out"], **out)
