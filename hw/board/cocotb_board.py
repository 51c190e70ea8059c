"""cocotb bench: the board design (core, on-chip DRAM, UART bridge) on its serial pins, driven by
``BoardBackend(SerialLink(SimSerialPort))`` in a cocotb bridge thread: the host code a real
board runs with, over a simulated 8N1 line. Jobs come from ``VTA_BOARD_SIM_JOBS``."""

import json
import os
from collections import deque

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.task import bridge, resume
from cocotb.triggers import Event, FallingEdge, RisingEdge, Timer

from driver.backends.base import DeviceError, DeviceTimeout
from driver.backends.board import BoardBackend
from driver.backends.seriallink import SerialLink
from isa.image import load_image

CLOCK_NS = 10


class SimSerialPort:
    """pyserial's port interface on the design's ``rx``/``tx`` pins. Bytes written are sent in
    the background; bytes the design sends are collected in the background (as a UART's
    receive buffer would); ``read(n)`` waits for ``n`` bytes or for ``timeout_bytes`` byte
    times after the last byte sent, whichever comes first."""

    def __init__(self, dut, divisor, timeout_bytes=64):
        self.dut, self.bit_ns = dut, divisor * CLOCK_NS
        self.outgoing, self.incoming = deque(), bytearray()
        self.wake = Event()
        self.timeout_bytes = timeout_bytes
        self.write = resume(self._write)
        self.read = resume(self._read)
        self.reset_input_buffer = resume(self._reset)

    async def _write(self, data):
        self.outgoing.extend(bytes(data))
        self.wake.set()
        return len(data)

    async def _reset(self):
        self.incoming.clear()

    async def _read(self, n):
        idle = 0
        while len(self.incoming) < n and idle < self.timeout_bytes:
            await Timer(10 * self.bit_ns, unit="ns")
            idle = 0 if self.outgoing else idle + 1
        data = bytes(self.incoming[:n])
        del self.incoming[:n]
        return data

    async def send_loop(self):
        rx = self.dut.rx
        while True:
            if not self.outgoing:
                self.wake.clear()
                await self.wake.wait()
                continue
            byte = self.outgoing.popleft()
            bits = [0] + [(byte >> i) & 1 for i in range(8)] + [1]
            i = 0
            while i < 10:                      # one wait per run of equal bits
                j = i
                while j < 10 and bits[j] == bits[i]:
                    j += 1
                rx.value = bits[i]
                await Timer((j - i) * self.bit_ns, unit="ns")
                i = j

    async def receive_loop(self):
        tx = self.dut.tx
        while True:
            await FallingEdge(tx)
            await Timer(self.bit_ns // 2, unit="ns")
            if int(tx.value):
                continue                       # a glitch, not a start bit
            byte = 0
            for i in range(8):
                await Timer(self.bit_ns, unit="ns")
                byte |= int(tx.value) << i
            await Timer(self.bit_ns, unit="ns")
            if int(tx.value):
                self.incoming.append(byte)


def run_outcome(backend, image, timeout) -> dict:
    """``backend.run(image)`` as arrays for an npz: ``dram``, ``cycles`` and the counters, or
    for a DeviceError ``error`` (its message), ``timeout`` (1 for a DeviceTimeout), ``code``
    and ``index`` (-1 when absent). Shared with the FPGA shell's bench."""
    try:
        result = backend.run(image, timeout=timeout)
    except DeviceError as exc:
        return {"error": np.str_(str(exc)), "timeout": np.int64(isinstance(exc, DeviceTimeout)),
                "code": np.int64(-1 if exc.code is None else int(exc.code)),
                "index": np.int64(-1 if exc.index is None else exc.index)}
    return {"dram": result.dram, "cycles": np.int64(result.cycles),
            **{name: np.int64(value) for name, value in result.counters.items()}}


async def reset(dut, clock_ns=CLOCK_NS):
    """Start ``dut.clk`` and hold ``dut.rst`` for four cycles, then wait two."""
    cocotb.start_soon(Clock(dut.clk, clock_ns, unit="ns").start())
    dut.rst.value = 1
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)


def run_job(port, image, timeout):
    """One image; ``ready_polls`` says how many looks the backend's wait for the SDRAM took
    (the bench starts the host right after reset, before the chip is initialised)."""
    link = SerialLink(port, name="the simulated serial line", timeout=timeout)
    backend = BoardBackend(link, ready_timeout=timeout)
    out = run_outcome(backend, image, timeout)
    return {**out, "ready_polls": np.int64(backend.ready_polls)}


@cocotb.test()
async def run_jobs(dut):
    with open(os.environ["VTA_BOARD_SIM_JOBS"]) as fh:
        jobs = json.load(fh)
    divisor = int(os.environ["VTA_BOARD_SIM_DIVISOR"])
    dut.rx.value = 1
    await reset(dut)
    # the host starts right after reset; the board backend waits for the SDRAM itself
    sdram = bool(os.environ.get("VTA_BOARD_SIM_SDRAM"))
    port = SimSerialPort(dut, divisor)
    cocotb.start_soon(port.send_loop())
    cocotb.start_soon(port.receive_loop())
    for job in jobs:
        out = await bridge(run_job)(port, load_image(job["image"]), job["timeout"])
        out["leds"] = np.int64(int(dut.leds.value))     # the run's end as the board shows it
        if sdram:
            # the chip model's first broken rule, if any (it latches)
            out["sdram_violation"] = np.int64(int(dut.violation.value))
            out["sdram_violation_cycle"] = np.int64(int(dut.violation_cycle.value))
        np.savez(job["out"], **out)
