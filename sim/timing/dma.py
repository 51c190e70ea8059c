"""DMA engines: the burst reader, the burst writer and the 2-D tensor loader (``hw/dma.py``).

Every engine keeps exactly one burst outstanding. A transfer covers the bus-aligned span of
its elements, split into bursts that never cross a ``max_burst_beats × bus_bytes`` boundary.
Each class has ``comb`` (outputs of this cycle from the registers) and ``update`` (the clock
edge); the port inputs (``cmd_fire``, ``rd_valid``, ...) are what the arbiter routes to it.
"""

from __future__ import annotations

from isa.config import VTAConfig

__all__ = ["DmaReader", "DmaWriter", "TensorLoader"]

IDLE, ISSUE, DATA, ACK = range(4)


class _Bursts:
    """The burst splitter shared by reader and writer (``hw.dma._BurstSplitter``; the rule of
    ``isa.bursts.span_beats``)."""

    __slots__ = ("bb", "mb", "eb", "cur_beat", "beats_left")

    def __init__(self, cfg: VTAConfig, eb: int):
        self.bb, self.mb, self.eb = cfg.bus_bytes, cfg.max_burst_beats, eb
        self.cur_beat = 0
        self.beats_left = 0

    def start(self, addr: int, count: int) -> None:
        first = addr // self.bb
        end = addr + count * self.eb
        self.cur_beat = first
        self.beats_left = (end - 1) // self.bb - first + 1

    def burst(self) -> int:
        room = self.mb - self.cur_beat % self.mb
        return self.beats_left if self.beats_left < room else room

    def issued(self, n: int) -> None:
        self.cur_beat += n
        self.beats_left -= n


class _Engine:
    """What the reader and the writer share: burst bookkeeping, element geometry, FSM."""

    def __init__(self, cfg: VTAConfig, eb: int, count_bits: int):
        self.bs = _Bursts(cfg, eb)
        self.eb, self.bb = eb, cfg.bus_bytes
        self.k = eb // self.bb if eb >= self.bb else 0      # beats per element (wide)
        self.per = self.bb // eb if eb < self.bb else 0     # elements per beat (narrow)
        self.count_mask = (1 << count_bits) - 1
        self.fsm = IDLE
        self.lane = 0
        self.left = 0

    @property
    def busy(self) -> bool:
        return self.fsm != IDLE

    def closes(self) -> bool:
        """A narrow element ends its beat: the last lane, or the transfer's last element."""
        return self.lane == self.per - 1 or self.left == 1


class DmaReader(_Engine):
    """``hw.dma.DmaReader``: ``count`` elements of ``eb`` bytes at ``addr`` as a stream.

    ``start`` in *c* → first ``cmd`` offered in *c* + 1 (while ``issue_ok``). An element leaves
    in the cycle of the bus beat that completes it. One beat per cycle if ``eb ≥ bus_bytes``,
    else one element per cycle (``rd.ready`` low until the beat's last element). After the last
    beat of a burst the next ``cmd`` is offered in the following cycle; ``busy`` from *c* + 1
    until the cycle after the last beat.
    """

    def __init__(self, cfg: VTAConfig, eb: int, count_bits: int):
        super().__init__(cfg, eb, count_bits)
        self.cnt = 0

    def rd_ready(self) -> bool:
        return bool(self.k) or self.closes()

    def out_valid(self, rd_valid: bool) -> bool:
        """Whether an element leaves in this cycle (given the port's ``rd.valid``)."""
        if self.k == 1:
            return rd_valid
        if self.k:
            return rd_valid and self.cnt == self.k - 1
        return rd_valid

    def update(self, start: bool, addr: int, count: int, cmd_fire: bool, rd_valid: bool,
               rd_last: bool) -> None:
        fsm = self.fsm
        rd_fire = rd_valid and self.rd_ready()
        if self.k > 1:
            if start and fsm == IDLE:
                self.cnt = 0
            elif rd_fire:
                self.cnt = 0 if self.cnt == self.k - 1 else self.cnt + 1
        elif not self.k:
            if start and fsm == IDLE:
                self.lane = (addr // self.eb) % self.per
                self.left = count & self.count_mask
            elif rd_valid:
                last_lane = self.lane == self.per - 1 or self.left == 1
                self.left = (self.left - 1) & self.count_mask
                self.lane = 0 if last_lane else self.lane + 1
        if fsm == IDLE:
            if start:
                self.bs.start(addr, count)
                self.fsm = ISSUE
        elif fsm == ISSUE:
            if cmd_fire:
                self.bs.issued(self.bs.burst())
                self.fsm = DATA
        elif rd_fire and rd_last:
            self.fsm = IDLE if self.bs.beats_left == 0 else ISSUE


class DmaWriter(_Engine):
    """``hw.dma.DmaWriter``: ``count`` elements of ``eb`` bytes from a stream to ``addr``.

    ``start`` in *c* → first ``cmd`` offered in *c* + 1; beats from the cycle after the ``cmd``
    handshake, one per cycle if ``eb ≥ bus_bytes`` (else one element per cycle, a beat when
    its last element arrives); after the last beat wait for ``wr_ack``, next ``cmd`` in the
    cycle after it. ``busy`` from *c* + 1 until the cycle after the last ack.
    """

    def __init__(self, cfg: VTAConfig, eb: int, count_bits: int):
        super().__init__(cfg, eb, count_bits)
        self.beat = 0
        self.blen = 0
        self.sub = 0

    def wr_valid(self, inp_valid: bool) -> bool:
        if self.fsm != DATA or not inp_valid:
            return False
        return True if self.k else self.closes()

    def inp_ready(self, wr_ready: bool) -> bool:
        if self.fsm != DATA:
            return False
        if self.k:
            return wr_ready and self.sub == self.k - 1
        return (not self.closes()) or wr_ready

    def update(self, start: bool, addr: int, count: int, cmd_ready: bool, inp_valid: bool,
               wr_ready: bool, wr_ack: bool) -> None:
        fsm = self.fsm
        wr_fire = wr_ready and self.wr_valid(inp_valid)
        if self.k > 1:
            if start and fsm == IDLE:
                self.sub = 0
            elif wr_fire:
                self.sub = 0 if self.sub == self.k - 1 else self.sub + 1
        elif not self.k:
            if start and fsm == IDLE:
                self.lane = (addr // self.eb) % self.per
                self.left = count & self.count_mask
            elif inp_valid and self.inp_ready(wr_ready):
                closes = self.closes()
                self.left = (self.left - 1) & self.count_mask
                self.lane = 0 if closes else self.lane + 1
        if fsm == IDLE:
            if start:
                self.bs.start(addr, count)
                self.fsm = ISSUE
        elif fsm == ISSUE:
            if cmd_ready:
                self.blen = self.bs.burst()
                self.bs.issued(self.blen)
                self.beat = 0
                self.fsm = DATA
        elif fsm == DATA:
            if wr_fire:
                self.beat += 1
                if self.beat == self.blen:
                    self.fsm = ACK
        elif wr_ack:
            self.fsm = IDLE if self.bs.beats_left == 0 else ISSUE


# TensorLoader states
T_IDLE, T_ROW, T_ZERO, T_LPAD, T_DATA, T_RPAD = range(6)


class TensorLoader:
    """``hw.dma.TensorLoader``: a 2-D LOAD with zero padding into one buffer.

    ``start`` in *c* → ``busy`` from *c* + 1. Each row begins with one ROW cycle; a pad row
    writes ``row_len`` zeros, one per cycle; a data row writes ``x_pad_0`` zeros, the
    ``x_size`` elements as the reader delivers them (reader started in the ROW cycle, or in
    the cycle of the last left-pad zero), then ``x_pad_1`` zeros. A final ROW cycle with
    ``r == rows`` ends the instruction (``busy`` low from the next cycle).
    """

    def __init__(self, cfg: VTAConfig, eb: int):
        self.reader = DmaReader(cfg, eb, 16)
        self.eb = eb
        self.fsm = T_IDLE
        self.f = None            # the running instruction's fields (a dict)
        self.r = 0
        self.n = 0
        self.row_dram = 0
        self.writes = 0          # SRAM writes (for the trace)

    @property
    def busy(self) -> bool:
        return self.fsm != T_IDLE

    def reader_start(self) -> bool:
        """``reader.start`` in this cycle (combinational)."""
        fsm, f = self.fsm, self.f
        if fsm == T_ROW:
            r = self.r
            return (r != f["rows"] and f["y_pad_0"] <= r < f["y_pad_0"] + f["y_size"]
                    and f["x_pad_0"] == 0)
        return fsm == T_LPAD and self.n == 1

    def update(self, start: bool, fields: dict | None, cmd_fire: bool, rd_valid: bool,
               rd_last: bool) -> None:
        reader = self.reader
        fsm = self.fsm
        if fsm == T_IDLE:
            reader.update(False, 0, 0, cmd_fire, rd_valid, rd_last)
            if start:
                self.f = fields
                self.r = 0
                self.row_dram = fields["dram_base"]
                self.fsm = T_ROW
            return
        f = self.f
        rstart = self.reader_start()
        out_valid = reader.out_valid(rd_valid)
        reader.update(rstart, (self.row_dram * self.eb) & 0xFFFFFFFF, f["x_size"], cmd_fire,
                      rd_valid, rd_last)
        if fsm == T_ROW:
            r = self.r
            if r == f["rows"]:
                self.fsm = T_IDLE
            elif r < f["y_pad_0"] or r >= f["y_pad_0"] + f["y_size"]:
                self.n = f["row_len"]
                self.fsm = T_ZERO
            elif f["x_pad_0"]:
                self.n = f["x_pad_0"]
                self.fsm = T_LPAD
            else:
                self.n = f["x_size"]
                self.fsm = T_DATA
        elif fsm == T_ZERO:
            self.writes += 1
            if self.n == 1:
                self.r += 1
                self.fsm = T_ROW
            self.n -= 1
        elif fsm == T_LPAD:
            self.writes += 1
            if self.n == 1:
                self.n = f["x_size"]
                self.fsm = T_DATA
            else:
                self.n -= 1
        elif fsm == T_DATA:
            if out_valid:
                self.writes += 1
                if self.n == 1:
                    self._after_data(f)
                else:
                    self.n -= 1
        else:  # T_RPAD
            self.writes += 1
            if self.n == 1:
                self.r += 1
                self.row_dram += f["x_stride"]
                self.fsm = T_ROW
            self.n -= 1

    def _after_data(self, f) -> None:
        if f["x_pad_1"]:
            self.n = f["x_pad_1"]
            self.fsm = T_RPAD
        else:
            self.n = 0
            self.r += 1
            self.row_dram += f["x_stride"]
            self.fsm = T_ROW
