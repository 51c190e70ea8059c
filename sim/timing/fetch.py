"""The fetch module (``hw/fetch.py``): instruction bursts into a buffer, dispatch to the queues."""

from __future__ import annotations

from collections import deque

from isa.config import VTAConfig
from isa.errors import ErrorCode

from .decode import Decoder
from .dma import DmaReader
from .memport import SliceTiming

__all__ = ["FetchModule", "fetch_buffer_depth"]

F_IDLE, F_RUN, F_END, F_STOPPED = range(4)


def fetch_buffer_depth(cfg: VTAConfig) -> tuple[int, int]:
    """(instructions per full burst P, instruction-buffer depth 2P), as ``hw.fetch``."""
    per = max(1, cfg.max_burst_beats * cfg.bus_bytes // 16)
    return per, 2 * per


class FetchModule:
    """``hw.fetch.FetchModule``: ``start`` in *c* → the reader offers its first burst in
    *c* + 1; the port's beats pass a slice of their own before the reader (``slice``), and
    each instruction the reader completes one register (``w1``, with its burst's end
    ``w1_done``) before the buffer. Instructions enter a buffer of 2P entries; a burst is
    requested (ahead of the data) only while the level plus P per burst in flight plus P fit
    in 2P (a burst is in flight until its last instruction is written). An instruction
    written into the buffer in *t* can be dispatched from *t* + 1, one per cycle, stalling while its command queue is full (head-of-line). Field
    errors are raised when the instruction reaches the dispatch point; fetch then stops.
    """

    def __init__(self, cfg: VTAConfig, dram, insn_addr: int, insn_count: int, decoder: Decoder):
        self.per, self.depth = fetch_buffer_depth(cfg)
        self.reader = DmaReader(cfg, 16, 32)
        self.dram = dram
        self.insn_addr, self.insn_count = insn_addr, insn_count
        self.decoder = decoder
        self.fsm = F_IDLE
        self.running = False
        self.index = 0
        self.buf = deque()
        self.slice = SliceTiming()  # the beats pass it before the reader
        self.delivered = 0       # elements the reader has delivered so far
        self.inflight = 0        # bursts requested and not complete
        self.w1 = None           # the decoded instruction in the register before the buffer
        self.w1_done = False     # ... and whether it ends its burst
        # combinational outputs of the current cycle
        self.busy = self.stall = self.quiet = self.all_dispatched = False
        self.err = 0
        self.err_index = 0
        self.dispatch = None     # the queue number written this cycle, or None

    def issue_ok(self) -> bool:
        return self.running and len(self.buf) + self.inflight * self.per <= self.depth - self.per

    def cmd(self):
        return self.reader.cmd(self.issue_ok())

    def rd_ready(self) -> bool:
        """The port's ``rd.ready``: its slice's."""
        return self.slice.skid is None

    def comb(self, start: bool, halt: bool, q_rdy, dram_size: int) -> None:
        self.busy = self.stall = self.quiet = self.all_dispatched = False
        self.err = 0
        self.dispatch = None
        fsm = self.fsm
        if fsm == F_RUN:
            self.busy = True
            if self.buf and not halt:
                d = self.buf[0]
                if d.illegal:
                    self.err, self.err_index = d.illegal, self.index
                elif q_rdy[d.target]:
                    self.dispatch = d.target
                else:
                    self.stall = self.quiet = True
        elif fsm == F_IDLE:
            if start and self.insn_count and \
                    self.insn_addr + (self.insn_count << 4) > dram_size:
                self.err, self.err_index = ErrorCode.DRAM_RANGE, 0
        elif fsm == F_END:
            self.quiet = self.all_dispatched = True
        else:
            self.quiet = True

    def update(self, start: bool, cmd_fire: bool, rd_valid: bool, rd_last: bool) -> None:
        """The clock edge; ``rd_valid``/``rd_last``: the beat offered at the port."""
        sl = self.slice
        if not (cmd_fire or rd_valid) and sl.main is None and self.dispatch is None and \
                self.w1 is None and not self.w1_done and self.fsm != F_IDLE and not self.err:
            return              # no beat, no command, nothing dispatched: no change
        reader = self.reader
        # the reader sees the slice's main register
        beat = sl.main
        if beat is not None or rd_valid:
            sl.edge(rd_last if rd_valid else None, beat is None or reader.rd_ready(True))
        rd_valid, rd_last = beat is not None, beat is True
        out_valid = reader.out_valid(rd_valid)
        fsm = self.fsm
        rstart = fsm == F_IDLE and start and self.insn_count != 0 and not self.err
        if self.w1_done:
            self.inflight -= 1
        if cmd_fire:
            self.inflight += 1
        self.w1_done = rd_valid and rd_last and reader.rd_ready(True)
        if rstart or cmd_fire or rd_valid:
            reader.update(rstart, self.insn_addr, self.insn_count, 1, 0, cmd_fire, rd_valid, True)
        popped = None
        if self.dispatch is not None:
            popped = self.buf.popleft()
        if self.w1 is not None and self.running and \
                len(self.buf) + (popped is not None) != self.depth:
            self.buf.append(self.w1)
        self.w1 = None
        if out_valid:
            a = self.insn_addr + 16 * self.delivered
            self.delivered += 1
            self.w1 = self.decoder(int.from_bytes(self.dram[a:a + 16].tobytes(), "little"))
        if fsm == F_IDLE:
            if start:
                self.index = 0
                if self.insn_count == 0:
                    self.fsm = F_END
                elif self.err:
                    self.fsm = F_STOPPED
                else:
                    self.running = True
                    self.fsm = F_RUN
        elif fsm == F_RUN:
            if self.err:
                self.running = False
                self.fsm = F_STOPPED
            elif self.dispatch is not None:
                self.index += 1
                if self.index == self.insn_count:
                    self.running = False
                    self.fsm = F_END
