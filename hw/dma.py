"""DMA engines: a burst reader and a burst writer of element streams, and the 2-D tensor loader.

Every engine talks to one :class:`~hw.memport.MemPortSignature` port and keeps exactly one burst
outstanding. Bursts cover the bus-aligned span of the transfer and are split so that none crosses
a ``max_burst_beats × bus_bytes`` boundary (therefore never a 4 KiB boundary).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from .fields import mem_insn
from .memport import ADDR_BITS, MemPortSignature

__all__ = ["DmaReader", "DmaWriter", "TensorLoader"]

_WIDE = ADDR_BITS + 16


def _log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


class _BurstSplitter:
    """Shared burst bookkeeping of the reader and the writer (the rule of isa.bursts)."""

    def __init__(self, m: Module, cfg: VTAConfig, elem_bytes: int, count_bits: int):
        self.lb = _log2(cfg.bus_bytes)
        self.le = _log2(elem_bytes)
        self.lm = _log2(cfg.max_burst_beats)
        self.cur_beat = Signal(_WIDE)
        self.beats_left = Signal(_WIDE)
        self.burst = Signal(range(cfg.max_burst_beats + 1))
        mb = cfg.max_burst_beats
        room = Signal(range(mb + 1))
        m.d.comb += room.eq(mb - self.cur_beat[:self.lm]) if self.lm else room.eq(1)
        m.d.comb += self.burst.eq(Mux(self.beats_left < room, self.beats_left, room))

    def start(self, m: Module, addr, count):
        first = Signal(_WIDE)
        end = Signal(_WIDE)
        m.d.comb += [first.eq(addr >> self.lb), end.eq(addr + (count << self.le))]
        m.d.sync += [self.cur_beat.eq(first),
                     self.beats_left.eq(((end - 1) >> self.lb) - first + 1)]

    def issue(self, m: Module, cmd, write: int):
        m.d.comb += [cmd.payload.addr.eq(self.cur_beat << self.lb),
                     cmd.payload.len.eq(self.burst - 1),
                     cmd.payload.write.eq(write)]
        with m.If(cmd.valid & cmd.ready):
            m.d.sync += [self.cur_beat.eq(self.cur_beat + self.burst),
                         self.beats_left.eq(self.beats_left - self.burst)]


class DmaReader(wiring.Component):
    """Reads ``count`` elements of ``elem_bytes`` at byte address ``addr`` as an element stream.

    Latency: ``start`` in cycle *c* → first ``cmd`` offered in *c* + 1 (while ``issue_ok``).
    An element leaves ``out`` in the same cycle as the bus beat that completes it (combinational
    path from ``rd``), so the consumer must always accept (``out`` has no ``ready``).
    Throughput: one beat per cycle if ``elem_bytes ≥ bus_bytes``; otherwise one element per
    cycle (``rd.ready`` falls until every element of the beat has left). After the last beat of
    a burst the next ``cmd`` is offered in the following cycle. ``busy`` is high from *c* + 1
    until the cycle after the last beat.
    """

    def __init__(self, cfg: VTAConfig, *, elem_bytes: int, count_bits: int = 32):
        self._cfg = cfg
        self._eb = elem_bytes
        self._count_bits = count_bits
        super().__init__({
            "start": In(1),
            "addr": In(ADDR_BITS),
            "count": In(count_bits),
            "issue_ok": In(1, init=1),
            "busy": Out(1),
            "out": Out(stream.Signature(unsigned(elem_bytes * 8), always_ready=True)),
            "port": Out(MemPortSignature(cfg)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, eb, bb = self._cfg, self._eb, self._cfg.bus_bytes
        w = bb * 8
        bs = _BurstSplitter(m, cfg, eb, self._count_bits)
        port = self.port
        rd_fire = Signal()
        m.d.comb += rd_fire.eq(port.rd.valid & port.rd.ready)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    bs.start(m, self.addr, self.count)
                    m.next = "ISSUE"
            with m.State("ISSUE"):
                m.d.comb += [self.busy.eq(1), port.cmd.valid.eq(self.issue_ok)]
                bs.issue(m, port.cmd, write=0)
                with m.If(port.cmd.valid & port.cmd.ready):
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += self.busy.eq(1)
                with m.If(rd_fire & port.rd.payload.last):
                    with m.If(bs.beats_left == 0):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "ISSUE"

        if eb >= bb:
            k = eb // bb
            m.d.comb += port.rd.ready.eq(1)
            if k == 1:
                m.d.comb += [self.out.valid.eq(port.rd.valid), self.out.payload.eq(port.rd.payload.data)]
            else:
                sr = Signal((k - 1) * w)
                cnt = Signal(range(k))
                m.d.comb += self.out.payload.eq(Cat(sr, port.rd.payload.data))
                with m.If(self.start & ~self.busy):
                    m.d.sync += cnt.eq(0)
                with m.Elif(rd_fire):
                    with m.If(cnt == k - 1):
                        m.d.comb += self.out.valid.eq(1)
                        m.d.sync += cnt.eq(0)
                    with m.Else():
                        m.d.sync += cnt.eq(cnt + 1)
                    m.d.sync += sr.eq(Cat(sr[w:], port.rd.payload.data) if k > 2
                                      else port.rd.payload.data)
        else:
            per = bb // eb
            lane = Signal(range(per))
            left = Signal(self._count_bits)
            last_lane = Signal()
            m.d.comb += [
                self.out.payload.eq(port.rd.payload.data.word_select(lane, eb * 8)),
                self.out.valid.eq(port.rd.valid),
                last_lane.eq((lane == per - 1) | (left == 1)),
                port.rd.ready.eq(last_lane),
            ]
            with m.If(self.start & ~self.busy):
                m.d.sync += [lane.eq((self.addr >> _log2(eb))[:_log2(per)]), left.eq(self.count)]
            with m.Elif(port.rd.valid):
                m.d.sync += [left.eq(left - 1), lane.eq(Mux(last_lane, 0, lane + 1))]
        return m


class DmaWriter(wiring.Component):
    """Writes ``count`` elements of ``elem_bytes`` from the stream ``inp`` to byte address ``addr``.

    ``start`` in cycle *c* → first ``cmd`` offered in *c* + 1. After the ``cmd`` handshake the
    burst's beats are offered from the next cycle: if ``elem_bytes ≥ bus_bytes`` one beat per
    cycle (each element gives ``elem_bytes / bus_bytes`` beats), otherwise one element per cycle
    and a beat in the cycle its last element arrives (partial beats carry byte strobes). After
    the last beat the writer waits for ``wr_ack``; the next ``cmd`` is offered in the cycle after
    the ack. ``busy`` is high from *c* + 1 until the cycle after the last ack.
    """

    def __init__(self, cfg: VTAConfig, *, elem_bytes: int, count_bits: int = 32):
        self._cfg = cfg
        self._eb = elem_bytes
        self._count_bits = count_bits
        super().__init__({
            "start": In(1),
            "addr": In(ADDR_BITS),
            "count": In(count_bits),
            "busy": Out(1),
            "inp": In(stream.Signature(unsigned(elem_bytes * 8))),
            "port": Out(MemPortSignature(cfg)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, eb, bb = self._cfg, self._eb, self._cfg.bus_bytes
        w = bb * 8
        bs = _BurstSplitter(m, cfg, eb, self._count_bits)
        port = self.port
        beat = Signal(range(cfg.max_burst_beats + 1))
        blen = Signal(range(cfg.max_burst_beats + 1))
        data_phase = Signal()
        wr_fire = Signal()
        m.d.comb += [wr_fire.eq(port.wr.valid & port.wr.ready),
                     port.wr.payload.last.eq(beat == blen - 1)]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    bs.start(m, self.addr, self.count)
                    m.next = "ISSUE"
            with m.State("ISSUE"):
                m.d.comb += [self.busy.eq(1), port.cmd.valid.eq(1)]
                bs.issue(m, port.cmd, write=1)
                with m.If(port.cmd.ready):
                    m.d.sync += [beat.eq(0), blen.eq(bs.burst)]
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += [self.busy.eq(1), data_phase.eq(1)]
                with m.If(wr_fire):
                    m.d.sync += beat.eq(beat + 1)
                    with m.If(beat == blen - 1):
                        m.next = "ACK"
            with m.State("ACK"):
                m.d.comb += self.busy.eq(1)
                with m.If(port.wr_ack):
                    with m.If(bs.beats_left == 0):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "ISSUE"

        if eb >= bb:
            k = eb // bb
            sub = Signal(range(k))
            m.d.comb += [
                port.wr.valid.eq(data_phase & self.inp.valid),
                port.wr.payload.data.eq(self.inp.payload.word_select(sub, w) if k > 1
                                        else self.inp.payload),
                port.wr.payload.strb.eq(Const(-1, bb)),
                self.inp.ready.eq(data_phase & port.wr.ready & (sub == k - 1)),
            ]
            if k > 1:
                with m.If(self.start & ~self.busy):
                    m.d.sync += sub.eq(0)
                with m.Elif(wr_fire):
                    m.d.sync += sub.eq(Mux(sub == k - 1, 0, sub + 1))
        else:
            per = bb // eb
            lane = Signal(range(per))
            left = Signal(self._count_bits)
            acc = Signal(w)
            strb = Signal(bb)
            closes = Signal()
            cur_data = Signal(w)
            cur_strb = Signal(bb)
            m.d.comb += [
                closes.eq((lane == per - 1) | (left == 1)),
                cur_data.eq(acc),
                cur_strb.eq(strb),
            ]
            for i in range(per):
                with m.If(lane == i):
                    m.d.comb += [cur_data[i * eb * 8:(i + 1) * eb * 8].eq(self.inp.payload),
                                 cur_strb[i * eb:(i + 1) * eb].eq(Const(-1, eb))]
            m.d.comb += [
                port.wr.valid.eq(data_phase & self.inp.valid & closes),
                port.wr.payload.data.eq(cur_data),
                port.wr.payload.strb.eq(cur_strb),
                self.inp.ready.eq(data_phase & (~closes | port.wr.ready)),
            ]
            with m.If(self.start & ~self.busy):
                m.d.sync += [lane.eq((self.addr >> _log2(eb))[:_log2(per)]),
                             left.eq(self.count), acc.eq(0), strb.eq(0)]
            with m.Elif(self.inp.valid & self.inp.ready):
                m.d.sync += left.eq(left - 1)
                with m.If(closes):
                    m.d.sync += [lane.eq(0), acc.eq(0), strb.eq(0)]
                with m.Else():
                    m.d.sync += [lane.eq(lane + 1), acc.eq(cur_data), strb.eq(cur_strb)]
        return m


class TensorLoader(wiring.Component):
    """2-D LOAD with zero padding into one on-chip buffer (reference §3.2).

    ``start`` (cycle *c*, fields on ``insn``; ``x_size ≥ 1``) → ``busy`` from *c* + 1. Rows are
    processed in order, each beginning with one ROW cycle. A pad row then writes ``row_len``
    zeros (one per cycle). A data row writes ``x_pad_0`` zeros, then the ``x_size`` elements as
    the :class:`DmaReader` delivers them (started in the ROW cycle if ``x_pad_0 == 0``, else in
    the cycle of the last left-pad zero), then ``x_pad_1`` zeros; the row after the last element
    of a data row with ``x_pad_1 == 0`` starts in the next cycle. A final ROW cycle with
    ``r == rows`` ends the instruction: ``busy`` is low from the cycle after it.
    SRAM writes are dense from ``sram_base`` (``wr_addr``/``wr_data``/``wr_en``).
    """

    def __init__(self, cfg: VTAConfig, *, elem_bytes: int, sram_bits: int, addr_bits: int,
                 transform=None):
        self._cfg = cfg
        self._eb = elem_bytes
        self._sram_bits = sram_bits
        self._transform = transform
        super().__init__({
            "start": In(1),
            "insn": In(mem_insn()),
            "busy": Out(1),
            "wr_addr": Out(addr_bits),
            "wr_data": Out(sram_bits),
            "wr_en": Out(1),
            "port": Out(MemPortSignature(cfg)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.reader = reader = DmaReader(self._cfg, elem_bytes=self._eb, count_bits=16)
        wiring.connect(m, wiring.flipped(self.port), reader.port)
        insn = Signal(mem_insn())
        r = Signal(24)       # row counter
        n = Signal(24)       # cells left in the current zero run / data run
        sram_addr = Signal(ADDR_BITS)
        row_dram = Signal(_WIDE)  # element index in DRAM of the current data row
        row_len = Signal(24)
        rows = Signal(24)
        le = _log2(self._eb)
        m.d.comb += [
            row_len.eq(insn.x_pad_0 + insn.x_size + insn.x_pad_1),
            rows.eq(insn.y_pad_0 + insn.y_size + insn.y_pad_1),
            reader.addr.eq(row_dram << le),
            reader.count.eq(insn.x_size),
            self.wr_addr.eq(sram_addr),
        ]
        data = reader.out.payload if self._transform is None else self._transform(reader.out.payload)

        def write_zero():
            m.d.comb += [self.wr_en.eq(1), self.wr_data.eq(0)]
            m.d.sync += [sram_addr.eq(sram_addr + 1), n.eq(n - 1)]

        def start_reader():
            m.d.comb += reader.start.eq(1)
            m.d.sync += n.eq(insn.x_size)

        def after_data():
            with m.If(insn.x_pad_1 != 0):
                m.d.sync += n.eq(insn.x_pad_1)
                m.next = "RPAD"
            with m.Else():
                m.d.sync += [r.eq(r + 1), row_dram.eq(row_dram + insn.x_stride)]
                m.next = "ROW"

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [insn.eq(self.insn), r.eq(0),
                                 sram_addr.eq(self.insn.sram_base),
                                 row_dram.eq(self.insn.dram_base)]
                    m.next = "ROW"
            with m.State("ROW"):
                m.d.comb += self.busy.eq(1)
                with m.If(r == rows):
                    m.next = "IDLE"
                with m.Elif((r < insn.y_pad_0) | (r >= insn.y_pad_0 + insn.y_size)):
                    m.d.sync += n.eq(row_len)
                    m.next = "ZERO"
                with m.Elif(insn.x_pad_0 != 0):
                    m.d.sync += n.eq(insn.x_pad_0)
                    m.next = "LPAD"
                with m.Else():
                    start_reader()
                    m.next = "DATA"
            with m.State("ZERO"):
                m.d.comb += self.busy.eq(1)
                write_zero()
                with m.If(n == 1):
                    m.d.sync += r.eq(r + 1)
                    m.next = "ROW"
            with m.State("LPAD"):
                m.d.comb += self.busy.eq(1)
                write_zero()
                with m.If(n == 1):
                    start_reader()
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += self.busy.eq(1)
                with m.If(reader.out.valid):
                    m.d.comb += [self.wr_en.eq(1), self.wr_data.eq(data)]
                    m.d.sync += [sram_addr.eq(sram_addr + 1), n.eq(n - 1)]
                    with m.If(n == 1):
                        after_data()
            with m.State("RPAD"):
                m.d.comb += self.busy.eq(1)
                write_zero()
                with m.If(n == 1):
                    m.d.sync += [r.eq(r + 1), row_dram.eq(row_dram + insn.x_stride)]
                    m.next = "ROW"
        return m
