"""The deterministic memory model behind the core's memory port (docs/hardware.md, "Memory port").

Pure Python, stepped once per clock cycle; the cocotb bench drives the RTL with it and the
cycle-accurate simulator can reuse it. Timing, for a command handshake in cycle *t*:

* read: beat *i* (0-based) is offered (``rd_valid``) from cycle *t* + ``latency`` + *i* on,
  one per cycle while the initiator accepts; the model is idle again in the cycle after the
  last beat's handshake.
* write: ``wr_ready`` is high from cycle *t* + 1; when the last beat is accepted in cycle *u*,
  ``wr_ack`` pulses in cycle *u* + ``latency``; the model is idle from *u* + ``latency`` + 1.
* ``cmd_ready`` is high exactly when the model is idle.

DRAM whose size is not a multiple of the bus width: the core reads whole beats, so a transfer
that ends in the last, partial beat reads past the image's DRAM. The model pads DRAM to a whole
number of beats with zeros: reads of the padding return zeros, writes may cover the padding only
with zero byte strobes (a strobed byte there is a violation), and ``dram`` (the caller's array,
updated in place) keeps the image's size. The core's DRAM_SIZE stays the image's size.

With ``backpressure`` (an integer seed) the model additionally withholds ``rd_valid``,
``wr_ready`` and ``cmd_ready`` in pseudo-random cycles (each with probability
``gap_probability``), which shifts timing but never data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from isa.config import VTAConfig

__all__ = ["MemoryModel", "MemoryViolation", "MemOutputs"]


class MemoryViolation(AssertionError):
    """The core broke the memory-port protocol (range, alignment, burst size or 4 KiB rule)."""


@dataclass
class MemOutputs:
    cmd_ready: int = 1
    rd_valid: int = 0
    rd_data: int = 0
    rd_last: int = 0
    wr_ready: int = 0
    wr_ack: int = 0


@dataclass
class MemoryModel:
    cfg: VTAConfig
    dram: np.ndarray
    latency: int | None = None
    backpressure: int | None = None
    gap_probability: float = 0.3
    cycle: int = 0
    bursts: list = field(default_factory=list)   # (cycle, write, addr, beats) of every burst

    def __post_init__(self):
        if self.latency is None:
            self.latency = self.cfg.mem_latency
        self._bb = self.cfg.bus_bytes
        self._size = self.dram.size
        self._padded = -(-self._size // self._bb) * self._bb   # whole beats; the rest is zeros
        self._rng = random.Random(self.backpressure) if self.backpressure is not None else None
        self._state = "idle"
        self._addr = 0
        self._beats_left = 0
        self._next_at = 0
        self._ack_at = None
        self._gap = False
        self.out = MemOutputs()
        self._update_outputs()

    # ------------------------------------------------------------------ helpers
    def _check(self, addr: int, beats: int, write: bool):
        bb, mb = self._bb, self.cfg.max_burst_beats
        what = "write" if write else "read"
        if addr % bb:
            raise MemoryViolation(f"{what} burst at {addr:#x} is not aligned to {bb} bytes")
        if not 1 <= beats <= mb:
            raise MemoryViolation(f"{what} burst of {beats} beats (max {mb})")
        end = addr + beats * bb
        if end > self._padded:
            raise MemoryViolation(f"{what} burst [{addr:#x}, {end:#x}) past the end of DRAM "
                                  f"({self._size:#x}, padded to {self._padded:#x})")
        if addr // 4096 != (end - 1) // 4096:
            raise MemoryViolation(f"{what} burst [{addr:#x}, {end:#x}) crosses a 4 KiB boundary")

    def _beat(self, addr: int) -> int:
        # Bytes past the image's DRAM (the padding of the last beat) read as zeros.
        return int.from_bytes(self.dram[addr:addr + self._bb].tobytes(), "little")

    def _update_outputs(self):
        o = self.out
        gap = self._gap
        o.cmd_ready = int(self._state == "idle" and not gap)
        o.rd_valid = int(self._state == "read" and self.cycle >= self._next_at and not gap)
        o.rd_data = self._beat(self._addr) if o.rd_valid else 0
        o.rd_last = int(o.rd_valid and self._beats_left == 1)
        o.wr_ready = int(self._state == "write" and self.cycle >= self._next_at and not gap)
        o.wr_ack = int(self._state == "ack" and self.cycle == self._ack_at)

    # ------------------------------------------------------------------ one clock edge
    def step(self, cmd_valid: int, cmd_addr: int, cmd_len: int, cmd_write: int, rd_ready: int,
             wr_valid: int, wr_data: int, wr_strb: int):
        """Apply the rising edge that ends the current cycle, given the core's outputs."""
        o = self.out
        if o.cmd_ready and cmd_valid:
            beats = cmd_len + 1
            self._check(cmd_addr, beats, bool(cmd_write))
            self.bursts.append((self.cycle, bool(cmd_write), cmd_addr, beats))
            self._addr, self._beats_left = cmd_addr, beats
            self._state = "write" if cmd_write else "read"
            self._next_at = self.cycle + (1 if cmd_write else self.latency)
        elif o.rd_valid and rd_ready:
            self._addr += self._bb
            self._beats_left -= 1
            if self._beats_left == 0:
                self._state = "idle"
        elif o.wr_ready and wr_valid:
            data = wr_data.to_bytes(self._bb, "little")
            for i in range(self._bb):
                if wr_strb >> i & 1:
                    if self._addr + i >= self._size:
                        raise MemoryViolation(
                            f"write of byte {self._addr + i:#x} (strobe set) in the padding "
                            f"past the end of DRAM ({self._size:#x})")
                    self.dram[self._addr + i] = data[i]
            self._addr += self._bb
            self._beats_left -= 1
            if self._beats_left == 0:
                self._state = "ack"
                self._ack_at = self.cycle + self.latency
        elif o.wr_ack:
            self._state = "idle"
        self.cycle += 1
        self._gap = bool(self._rng and self._rng.random() < self.gap_probability)
        self._update_outputs()

    @property
    def idle(self) -> bool:
        return self._state == "idle"
