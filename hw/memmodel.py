"""The deterministic memory model behind the core's memory port (docs/hardware.md, "Memory port").

Pure Python, stepped once per clock cycle; the cocotb bench and the Amaranth bench drive the RTL
with it (the rtl backend's C++ harness and ``sim/timing/memport.py`` do the same). Parameters
from the configuration: ``LAT`` = ``mem_latency``, ``N`` = ``mem_outstanding``, ``K`` =
``mem_beat_interval``. Outputs in cycle *c*:

* ``rcmd_ready`` while fewer than N read bursts are in flight (``rcmd`` handshake to the last
  beat's handshake); ``wcmd_ready`` while fewer than N write bursts are (``wcmd`` handshake to
  ``wr_ack``).
* read: a read burst accepted in cycle *t* may deliver beats from *t* + LAT on; bursts are
  answered in order, so ``rd_valid`` is high when the oldest burst may deliver and the bus's
  beat slot is free (below); each handshake moves to the next beat.
* write: the oldest write burst still receiving data, accepted in *t*, takes beats
  (``wr_ready``) from *t* + 1 on while the slot is free; its last beat accepted in *u* →
  ``wr_ack`` pulses in *u* + LAT (pulses in order, one per burst).
* bandwidth: after a beat handshake (read or write) in *c* the next beat may move from
  *c* + K on (K = 1: every cycle, reads and writes independently). With K > 1, when both a read
  beat and a write beat could move in a cycle, only the channel that did not move last is
  offered (reads first).

DRAM whose size is not a multiple of the bus width: the core reads whole beats, so a transfer
that ends in the last, partial beat reads past the image's DRAM. The model pads DRAM to a whole
number of beats with zeros: reads of the padding return zeros, writes may cover the padding only
with zero byte strobes (a strobed byte there is a violation), and ``dram`` (the caller's array,
updated in place) keeps the image's size. The core's DRAM_SIZE stays the image's size.

With ``backpressure`` (an integer seed) the model additionally withholds ``rd_valid``,
``wr_ready``, ``rcmd_ready`` and ``wcmd_ready`` in pseudo-random cycles (each with probability
``gap_probability``), which shifts timing but never data. ``outstanding`` (default N) lowers the
number of bursts the model accepts, to test a memory that accepts fewer than the core issues.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from isa.config import VTAConfig

__all__ = ["MemoryModel", "MemoryViolation", "MemOutputs"]


class MemoryViolation(AssertionError):
    """The core broke the memory-port protocol (range, alignment, burst size or 4 KiB rule)."""


@dataclass
class MemOutputs:
    rcmd_ready: int = 1
    wcmd_ready: int = 1
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
    outstanding: int | None = None
    beat_interval: int | None = None
    cycle: int = 0
    bursts: list = field(default_factory=list)   # (cycle, write, addr, beats) of every burst

    def __post_init__(self):
        if self.latency is None:
            self.latency = self.cfg.mem_latency
        if self.outstanding is None:
            self.outstanding = self.cfg.mem_outstanding
        if self.beat_interval is None:
            self.beat_interval = self.cfg.mem_beat_interval
        self._bb = self.cfg.bus_bytes
        self._size = self.dram.size
        self._padded = -(-self._size // self._bb) * self._bb   # whole beats; the rest is zeros
        self._rng = random.Random(self.backpressure) if self.backpressure is not None else None
        self._reads = deque()     # [addr, beats left, first cycle] per read burst in flight
        self._writes = deque()    # the same per write burst still taking data
        self._acks = deque()      # cycle of each pending wr_ack
        self._slot = 0            # first cycle the next beat may move
        self._write_turn = False  # K > 1: the write channel goes first on a conflict
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
        o, c, gap = self.out, self.cycle, self._gap
        n = self.outstanding
        rd = bool(self._reads) and c >= self._reads[0][2] and c >= self._slot
        wr = bool(self._writes) and c >= self._writes[0][2] and c >= self._slot
        if rd and wr and self.beat_interval > 1:
            rd, wr = not self._write_turn, self._write_turn
        o.rcmd_ready = int(len(self._reads) < n and not gap)
        o.wcmd_ready = int(len(self._writes) + len(self._acks) < n and not gap)
        o.rd_valid = int(rd and not gap)
        o.rd_data = self._beat(self._reads[0][0]) if o.rd_valid else 0
        o.rd_last = int(o.rd_valid and self._reads[0][1] == 1)
        o.wr_ready = int(wr and not gap)
        o.wr_ack = int(bool(self._acks) and self._acks[0] == c)

    # ------------------------------------------------------------------ one clock edge
    def step(self, rcmd_valid: int = 0, rcmd_addr: int = 0, rcmd_len: int = 0,
             wcmd_valid: int = 0, wcmd_addr: int = 0, wcmd_len: int = 0, rd_ready: int = 0,
             wr_valid: int = 0, wr_data: int = 0, wr_strb: int = 0):
        """Apply the rising edge that ends the current cycle, given the core's outputs."""
        o, c = self.out, self.cycle
        if o.wr_ack:
            self._acks.popleft()
        if o.rd_valid and rd_ready:
            burst = self._reads[0]
            burst[0] += self._bb
            burst[1] -= 1
            if burst[1] == 0:
                self._reads.popleft()
            self._slot = c + self.beat_interval
            self._write_turn = True
        if o.wr_ready and wr_valid:
            burst = self._writes[0]
            addr = burst[0]
            data = wr_data.to_bytes(self._bb, "little")
            for i in range(self._bb):
                if wr_strb >> i & 1:
                    if addr + i >= self._size:
                        raise MemoryViolation(
                            f"write of byte {addr + i:#x} (strobe set) in the padding "
                            f"past the end of DRAM ({self._size:#x})")
                    self.dram[addr + i] = data[i]
            burst[0] += self._bb
            burst[1] -= 1
            if burst[1] == 0:
                self._writes.popleft()
                self._acks.append(c + self.latency)
            self._slot = c + self.beat_interval
            self._write_turn = False
        if o.rcmd_ready and rcmd_valid:
            self._check(rcmd_addr, rcmd_len + 1, False)
            self.bursts.append((c, False, rcmd_addr, rcmd_len + 1))
            self._reads.append([rcmd_addr, rcmd_len + 1, c + self.latency])
        if o.wcmd_ready and wcmd_valid:
            self._check(wcmd_addr, wcmd_len + 1, True)
            self.bursts.append((c, True, wcmd_addr, wcmd_len + 1))
            self._writes.append([wcmd_addr, wcmd_len + 1, c + 1])
        self.cycle += 1
        self._gap = bool(self._rng and self._rng.random() < self.gap_probability)
        self._update_outputs()

    @property
    def idle(self) -> bool:
        return not (self._reads or self._writes or self._acks)
