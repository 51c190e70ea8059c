"""DMA engines: the burst reader, the burst writer and the 2-D tensor loader (``hw/dma.py``).

Every engine issues its bursts' commands ahead of their data (several bursts in flight). Each
row of a transfer covers the bus-aligned span of its elements, split into bursts that never
cross a ``max_burst_beats × bus_bytes`` boundary.
Each class has ``comb`` (outputs of this cycle from the registers) and ``update`` (the clock
edge); the port inputs (``cmd_fire``, ``rd_valid``, ...) are what the arbiter routes to it.
"""

from __future__ import annotations

from isa.config import VTAConfig

__all__ = ["DmaReader", "DmaWriter", "TensorLoader"]

_M32 = 0xFFFFFFFF
_M16 = 0xFFFF


class _Walker:
    """``hw.dma._Walker``: the bursts of a 2-D transfer row by row (the rule of
    ``isa.bursts.span_beats``): ``cur`` next beat, ``left`` beats left in the row, ``row`` its
    byte address, ``rows_left`` rows after it."""

    __slots__ = ("bb", "mb", "eb", "cur", "left", "row", "rows_left", "count", "stride")

    def __init__(self, cfg: VTAConfig, eb: int):
        self.bb, self.mb, self.eb = cfg.bus_bytes, cfg.max_burst_beats, eb
        self.cur = self.left = self.row = self.rows_left = self.count = self.stride = 0

    def span(self, addr: int) -> tuple[int, int]:
        first = addr // self.bb
        return first, (addr + self.count * self.eb - 1) // self.bb - first + 1

    def start(self, addr: int, count: int, rows: int, stride: int) -> None:
        self.count, self.stride = count, stride
        self.cur, beats = self.span(addr)
        self.left = beats if rows else 0
        self.row = addr
        self.rows_left = (rows - 1) & _M16

    def burst(self) -> int:
        room = self.mb - self.cur % self.mb
        return self.left if self.left < room else room

    def advance(self) -> None:
        n = self.burst()
        row_end = self.left == n
        self.cur += n
        self.left -= n
        if row_end and self.rows_left:
            self.row += self.stride
            self.cur, self.left = self.span(self.row)
            self.rows_left -= 1


class _Engine:
    """What the reader and the writer share: the command walker and element geometry."""

    def __init__(self, cfg: VTAConfig, eb: int, count_bits: int):
        self.iw = _Walker(cfg, eb)
        self.eb, self.bb = eb, cfg.bus_bytes
        self.k = eb // self.bb if eb >= self.bb else 0      # beats per element (wide)
        self.per = self.bb // eb if eb < self.bb else 0     # elements per beat (narrow)
        self.count_mask = (1 << count_bits) - 1
        self.active = False
        self.lane = 0
        self.left = 0        # elements left in the row (narrow writer; reader)

    def closes(self) -> bool:
        """A narrow element ends its beat: the last lane, or the row's last element."""
        return self.lane == self.per - 1 or self.left == 1

    def next_lane(self, row: int) -> int:
        return (row // self.eb) % self.per


class DmaReader(_Engine):
    """``hw.dma.DmaReader``: ``rows`` rows of ``count`` elements of ``eb`` bytes as a stream.

    ``start`` in *c* → first ``rcmd`` offered in *c* + 1 (while ``issue_ok``), each next one
    in the cycle after the previous handshake (no wait for data). An element leaves in the
    cycle of the bus beat that completes it while the consumer is ready: one beat per cycle
    if ``eb ≥ bus_bytes``, else one element per cycle (``rd.ready`` with the beat's last
    element). ``busy`` from *c* + 1 until all is issued and every element has left.
    """

    def __init__(self, cfg: VTAConfig, eb: int, count_bits: int):
        super().__init__(cfg, eb, count_bits)
        self.cnt = 0
        self.drow = 0
        self.drows_left = 0

    @property
    def busy(self) -> bool:
        return self.iw.left != 0 or self.active

    def cmd(self, issue_ok: bool = True):
        iw = self.iw
        if iw.left and issue_ok:
            return iw.cur * self.bb, iw.burst()
        return None

    def rd_ready(self, out_ready: bool) -> bool:
        if self.k:
            return out_ready
        return out_ready and self.closes()

    def out_valid(self, rd_valid: bool) -> bool:
        """Whether an element is offered in this cycle (given the port's ``rd.valid``)."""
        if self.k > 1:
            return rd_valid and self.cnt == self.k - 1
        return rd_valid

    def update(self, start: bool, addr: int, count: int, rows: int, stride: int,
               cmd_fire: bool, rd_valid: bool, out_ready: bool) -> None:
        if cmd_fire:
            self.iw.advance()
        if start:
            self.iw.start(addr, count, rows, stride)
            self.drow, self.drows_left = addr, (rows - 1) & _M16
            self.left = count & self.count_mask
            self.active = rows != 0 and count != 0
            self.cnt = 0
            if self.per:
                self.lane = self.next_lane(addr)
            return
        if not rd_valid:
            return
        take = out_ready and self.out_valid(True)
        if self.k > 1 and out_ready:          # rd fires with out.ready
            self.cnt = 0 if self.cnt == self.k - 1 else self.cnt + 1
        if take:
            left = self.left
            if self.per:
                self.lane = (self.next_lane(self.drow + self.iw.stride) if left == 1 else
                             0 if self.lane == self.per - 1 else self.lane + 1)
            if left == 1:
                self.left = self.iw.count
                self.drow += self.iw.stride
                if self.drows_left == 0:
                    self.active = False
                self.drows_left = (self.drows_left - 1) & _M16
            else:
                self.left = left - 1


class DmaWriter(_Engine):
    """``hw.dma.DmaWriter``: ``rows`` rows of ``count`` elements from a stream.

    ``start`` in *c* → first ``wcmd`` offered in *c* + 1, each next one in the cycle after the
    previous handshake while fewer than ``mem_outstanding`` bursts are unacknowledged. A
    burst's beats from the cycle after its ``wcmd``: one per cycle if ``eb ≥ bus_bytes``, else
    one element per cycle and a beat with the last element of a beat or row. ``busy`` from
    *c* + 1 until every beat is written and the last ``wr_ack`` seen.
    """

    def __init__(self, cfg: VTAConfig, eb: int, count_bits: int):
        super().__init__(cfg, eb, count_bits)
        self.dw = _Walker(cfg, eb)
        self.n = cfg.mem_outstanding
        self.pending = 0
        self.ahead = 0
        self.beat = 0
        self.sub = 0

    @property
    def busy(self) -> bool:
        return self.iw.left != 0 or self.active or self.pending != 0

    def cmd(self):
        iw = self.iw
        if iw.left and self.pending != self.n:
            return iw.cur * self.bb, iw.burst()
        return None

    def wr_valid(self, inp_valid: bool) -> bool:
        if not (self.active and self.ahead and inp_valid):
            return False
        return True if self.k else self.closes()

    def inp_ready(self, wr_ready: bool) -> bool:
        if not (self.active and self.ahead):
            return False
        if self.k:
            return wr_ready and self.sub == self.k - 1
        return (not self.closes()) or wr_ready

    def update(self, start: bool, addr: int, count: int, rows: int, stride: int,
               cmd_fire: bool, inp_valid: bool, wr_ready: bool, wr_ack: bool) -> None:
        wr_fire = wr_ready and self.wr_valid(inp_valid)
        dw = self.dw
        burst_done = wr_fire and self.beat == dw.burst() - 1
        if self.per and not start and inp_valid and self.inp_ready(wr_ready):
            left = self.left
            self.lane = (self.next_lane(dw.row + dw.stride) if left == 1 else
                         0 if self.closes() else self.lane + 1)
            self.left = dw.count if left == 1 else left - 1
        elif self.k > 1 and not start and wr_fire:
            self.sub = 0 if self.sub == self.k - 1 else self.sub + 1
        self.pending += cmd_fire - wr_ack
        self.ahead += cmd_fire - burst_done
        if cmd_fire:
            self.iw.advance()
        if start:
            self.iw.start(addr, count, rows, stride)
            dw.start(addr, count, rows, stride)
            self.beat = 0
            self.active = rows != 0 and count != 0
            self.sub = 0
            if self.per:
                self.lane = self.next_lane(addr)
                self.left = count & self.count_mask
        elif burst_done:
            last = dw.left == dw.burst() and dw.rows_left == 0
            dw.advance()
            self.beat = 0
            if last:
                self.active = False
        elif wr_fire:
            self.beat += 1


# TensorLoader states
T_IDLE, T_ROW, T_ZERO, T_LPAD, T_DATA, T_RPAD = range(6)


class TensorLoader:
    """``hw.dma.TensorLoader``: a 2-D LOAD with zero padding into one buffer.

    ``start`` in *c* → ``busy`` from *c* + 1; the reader starts in *c* for all ``y_size``
    data rows (its commands run ahead). Each row begins with one ROW cycle; a pad row writes
    ``row_len`` zeros, one per cycle; a data row writes ``x_pad_0`` zeros, the ``x_size``
    elements as the reader delivers them (accepted only in DATA), then ``x_pad_1`` zeros. A
    final ROW cycle with ``r == rows`` ends the instruction (``busy`` low from the next
    cycle).
    """

    def __init__(self, cfg: VTAConfig, eb: int):
        self.reader = DmaReader(cfg, eb, 16)
        self.eb = eb
        self.fsm = T_IDLE
        self.f = None            # the running instruction's fields (a dict)
        self.r = 0
        self.n = 0
        self.writes = 0          # SRAM writes (for the trace)

    @property
    def busy(self) -> bool:
        return self.fsm != T_IDLE

    def cmd(self):
        return self.reader.cmd()

    def rd_ready(self) -> bool:
        return self.reader.rd_ready(self.fsm == T_DATA)

    def update(self, start: bool, fields: dict | None, cmd_fire: bool, rd_valid: bool,
               rd_last: bool = False) -> None:
        """The clock edge (``rd_last`` is not needed: the reader counts elements)."""
        fsm = self.fsm
        if fsm == T_IDLE and not (start or cmd_fire or rd_valid):
            return
        reader = self.reader
        if start:
            eb = self.eb
            reader.update(True, (fields["dram_base"] * eb) & _M32, fields["x_size"],
                          fields["y_size"], (fields["x_stride"] * eb) & _M32, cmd_fire,
                          rd_valid, False)
            self.f = fields
            self.r = 0
            self.fsm = T_ROW
            return
        data = fsm == T_DATA
        out_valid = data and reader.out_valid(rd_valid)
        if cmd_fire or rd_valid:
            reader.update(False, 0, 0, 0, 0, cmd_fire, rd_valid, data)
        if fsm == T_IDLE:
            return
        f = self.f
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
                self.fsm = T_ROW
            self.n -= 1

    def _after_data(self, f) -> None:
        if f["x_pad_1"]:
            self.n = f["x_pad_1"]
            self.fsm = T_RPAD
        else:
            self.n = 0
            self.r += 1
            self.fsm = T_ROW
