"""The memory port: the deterministic memory model behind it and the fixed-priority arbiter.

Twin of ``hw/memport.py`` (``MemArbiter``) and ``hw/memmodel.py`` (``MemoryModel`` without
backpressure), timing only: the data moves through :mod:`sim.functional`'s semantics.
"""

from __future__ import annotations

from isa.config import VTAConfig

__all__ = ["MemoryTiming", "MemArbiter", "MemoryViolation", "CLIENTS"]

#: Arbiter inputs in priority order (index 0 wins), as in ``hw.memport.CLIENTS``.
CLIENTS = ("fetch", "load", "compute", "store")

IDLE, READ, WRITE, ACK = range(4)


class MemoryViolation(AssertionError):
    """The core broke the memory-port protocol (range, alignment, burst size or 4 KiB rule)."""


class MemoryTiming:
    """``hw.memmodel.MemoryModel``: for a command handshake in cycle *t*,

    * read: beat *i* is offered from *t* + ``latency`` + *i* on, one per cycle while accepted;
      idle again in the cycle after the last beat's handshake;
    * write: ``wr_ready`` from *t* + 1; the last beat accepted in *u* → ``wr_ack`` in
      *u* + ``latency``, idle from *u* + ``latency`` + 1;
    * ``cmd_ready`` exactly when idle.
    """

    def __init__(self, cfg: VTAConfig, dram_size: int):
        self.latency = cfg.mem_latency
        self.bb = cfg.bus_bytes
        self.mb = cfg.max_burst_beats
        self.dram_size = dram_size
        self.state = IDLE
        self.beats_left = 0
        self.next_at = 0
        self.ack_at = -1
        self.bursts = 0
        self.read_beats = 0
        self.write_beats = 0
        self.log = None     # list of (cycle, write, addr, beats, client) when tracing

    def check(self, addr: int, beats: int, write: bool) -> None:
        bb = self.bb
        what = "write" if write else "read"
        if addr % bb:
            raise MemoryViolation(f"{what} burst at {addr:#x} is not aligned to {bb} bytes")
        if not 1 <= beats <= self.mb:
            raise MemoryViolation(f"{what} burst of {beats} beats (max {self.mb})")
        end = addr + beats * bb
        if end > self.dram_size:
            raise MemoryViolation(f"{what} burst [{addr:#x}, {end:#x}) past the end of DRAM "
                                  f"({self.dram_size:#x})")
        if addr // 4096 != (end - 1) // 4096:
            raise MemoryViolation(f"{what} burst [{addr:#x}, {end:#x}) crosses a 4 KiB "
                                  f"boundary")

    # outputs in cycle t
    def rd_valid(self, t: int) -> bool:
        return self.state == READ and t >= self.next_at

    def wr_ready(self, t: int) -> bool:
        return self.state == WRITE and t >= self.next_at

    def wr_ack(self, t: int) -> bool:
        return self.state == ACK and t == self.ack_at

    def command(self, t: int, addr: int, beats: int, write: bool, client: int = 0) -> None:
        self.check(addr, beats, write)
        self.bursts += 1
        if self.log is not None:
            self.log.append([t, write, addr, beats, client, None])
        self.beats_left = beats
        self.state = WRITE if write else READ
        self.next_at = t + 1 if write else t + self.latency

    def read_beat(self, t: int) -> None:
        self.read_beats += 1
        self.beats_left -= 1
        if self.beats_left == 0:
            self.state = IDLE
            if self.log is not None:
                self.log[-1][5] = t + 1

    def write_beat(self, t: int) -> None:
        self.write_beats += 1
        self.beats_left -= 1
        if self.beats_left == 0:
            self.state = ACK
            self.ack_at = t + self.latency

    def acked(self, t: int) -> None:
        self.state = IDLE
        if self.log is not None:
            self.log[-1][5] = t + 1


class MemArbiter:
    """``hw.memport.MemArbiter``: grant-and-hold, fixed priority fetch > load > compute > store.

    With no burst outstanding and ``halt`` low, the highest-priority client with a command is
    connected combinationally (zero added latency); it owns the port until its last read beat
    or its ``wr_ack``. One burst at a time; ``busy`` is the ``mem_busy`` counter's event.
    """

    def __init__(self):
        self.busy = False
        self.grant = 0
        self.is_write = False
