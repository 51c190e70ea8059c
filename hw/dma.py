"""DMA engines: a burst reader and a burst writer of 2-D element streams, and the tensor loader.

Every engine talks to one :class:`~hw.memport.MemPortSignature` port and issues its bursts'
commands ahead of their data (several bursts in flight). Bursts cover the bus-aligned span of
each row and are split so that none crosses a ``max_burst_beats × bus_bytes`` boundary
(therefore never a 4 KiB boundary).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from isa.arch import HEAD_SETTLE
from isa.config import VTAConfig

from .fields import mem_insn
from .memport import ADDR_BITS, MemPortSignature

__all__ = ["DmaReader", "DmaWriter", "TensorLoader", "PREPARE_CYCLES", "FETCH_PREPARE_CYCLES"]

_WIDE = ADDR_BITS + 16
#: Cycles the modules' engines (started from the queue head) have their inputs held before
#: ``start`` (``_Walker.prepare``'s three stages).
PREPARE_CYCLES = 3
#: The same for fetch's reader: its inputs are the launch's, present from the launch cycle, and
#: fetch starts in the cycle after it (docs/hardware.md §4).
FETCH_PREPARE_CYCLES = 1
# the modules start the engines from the queue head, which has sat there that long
assert HEAD_SETTLE >= PREPARE_CYCLES


def _log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


def _below(v, k: int):
    """``v < k`` (``v`` unsigned, ``k`` a constant ≥ 1) as the borrow of ``v − k``: a carry
    chain, no LUT tree over ``v``'s bits (Fmax)."""
    return (v - k)[-1]


def _equals(v, k: int):
    """``v == k`` (``v`` unsigned, ``k`` a small constant) from two borrows side by side."""
    return _below(v, 1) if k == 0 else _below(v, k + 1) & ~_below(v, k)


class _Walker:
    """Walks the bursts of a 2-D transfer (the rule of :func:`isa.bursts.span_beats`, row by
    row): ``cur`` the next beat, ``left`` the beats left in the row, ``next_row`` the next
    row's byte address, ``rows_left`` the rows after this one. ``burst`` is the next burst's
    length, ``row_end`` whether it ends the row; ``advance`` moves past it (to the next row's
    first beat when it ends the row).

    Rows have ``count ≥ 1`` elements. A row at byte address ``a`` spans
    ``ceil(count·E / B)`` beats plus one if ``a mod B`` pushes its last byte over a beat
    boundary (B the bus bytes): both terms are fixed at ``start``, so the next row's span
    is a choice of two registers (Fmax; docs/hardware.md §12). ``burst`` and ``row_end``
    are registers too, set with ``cur`` and ``left`` (``min(left, room)`` and
    ``left ≤ room``, ``room`` the beats to the next ``M``-beat boundary), so nothing on the
    way from the walker to the memory port, or back to its own registers, compares ``left``.
    """

    def __init__(self, m: Module, cfg: VTAConfig, elem_bytes: int, count_bits: int, stride,
                 name: str):
        self.lb = _log2(cfg.bus_bytes)
        self.le = _log2(elem_bytes)
        self.lm = _log2(cfg.max_burst_beats)
        self.mb = cfg.max_burst_beats
        beats_bits = count_bits + max(self.le - self.lb, 0) + 1
        self.cur = Signal(_WIDE, name=f"{name}_cur")
        self.left = Signal(beats_bits, name=f"{name}_left")
        self.next_row = Signal(_WIDE, name=f"{name}_next_row")
        # the row after it, ``next_row + stride``, set with it: the next row's flags
        # (``_row_one``, ``_over``) read a register, not the stride's adder (Fmax, §12 step 31)
        self._next2 = Signal(_WIDE, name=f"{name}_next2")
        self.rows_left = Signal(16, name=f"{name}_rows_left")
        self.burst = Signal(range(cfg.max_burst_beats + 1), name=f"{name}_burst")
        self.row_end = Signal(name=f"{name}_row_end")
        self.one = Signal(name=f"{name}_one")      # ``burst == 1``, set with it
        # where the burst does not end the row: the next one (from the ``M``-beat boundary)
        # is one beat, ``left − burst == 1``, set with them (Fmax: ``advance``'s ``one``
        # inside a row is this flip-flop, not two carry chains in series)
        self.one_after = Signal(name=f"{name}_one_after")
        # the first burst of the row at ``next_row`` is one beat, set with ``next_row``: the
        # next burst's ``one`` is a choice of two flip-flops (Fmax: ``beat_last``)
        self._row_one = Signal(name=f"{name}_row_one")
        # ``left ≠ 0`` and ``rows_left ≠ 0`` as registers set with them: the command's
        # ``valid`` and the walker's own enables read no wide OR (Fmax)
        self.nz = Signal(name=f"{name}_nz")
        self.more = Signal(name=f"{name}_more")
        self._count_nz = Signal(name=f"{name}_count_nz")
        self._whole = Signal(beats_bits, name=f"{name}_whole")      # ceil(count·E / B)
        self._whole1 = Signal(beats_bits, name=f"{name}_whole1")    # the same plus one
        self._tail = Signal(max(self.lb, 1), name=f"{name}_tail")   # (count·E − 1) mod B
        # ``whole == 1`` and ``whole1 == 1`` (the next row's ``burst == 1`` reads no compare)
        self._whole_one = Signal(name=f"{name}_whole_one")
        self._whole1_one = Signal(name=f"{name}_whole1_one")
        self._stride = stride
        # ``next_row``'s span has ``whole1`` beats (its ``over``), a register set with it: the
        # next row's choices are multiplexers of flip-flops (Fmax)
        self._over = Signal(name=f"{name}_over")
        self._first_n = self.next_row >> self.lb
        self._over_n = self._over if self.lb else Const(0)
        self._beats_n = Mux(self._over, self._whole1, self._whole) if self.lb else self._whole

    def invariants(self, walking=None) -> list:
        """``(name, flag, its definition, when it holds)`` of the walker's registered flags
        (for the tests: each flag equals its definition in every cycle of ``when``);
        ``walking``: while the walk runs (default ``nz``)."""
        on = self.nz if walking is None else walking
        return [("one", self.one, self.burst == 1, on),
                ("one_after", self.one_after,
                 (self.left - self.burst == 1) | (self.mb == 1), on & ~self.row_end),
                ("row_one", self._row_one, self._first_burst(
                    self.next_row, self._whole, self._whole1, self._tail) == 1, on & self.more),
                ("row_end", self.row_end, self.left == self.burst, on),
                ("nz", self.nz, self.left != 0, on),
                ("more", self.more, self.rows_left != 0, on),
                ("over", self._over_n, self._span(self.next_row, self._whole, self._whole1,
                                                  self._tail)[2], on),
                ("next2", self._next2, (self.next_row + self._stride)[:_WIDE], on)]

    def _span(self, addr, whole, whole1, tail):
        """(first beat, beats, beats are ``whole1``) of a row at byte address ``addr``."""
        if not self.lb:
            return addr, whole, Const(0)
        over = (addr[:self.lb] + tail)[self.lb]
        return addr >> self.lb, Mux(over, whole1, whole), over

    def _first_burst(self, addr, whole, whole1, tail):
        """The length of the first burst of a row at byte address ``addr`` (for the tests)."""
        first, beats, _ = self._span(addr, whole, whole1, tail)
        return self._fit(beats, first, beats == 1)[0]

    def _first_one(self, addr, p):
        """The first burst of a row at byte address ``addr`` is one beat (``p``: the span
        terms, the walker's or ``prepare``'s P1 registers). Only ``addr``'s low bits count."""
        first, beats, over = self._span(addr, p["_whole"], p["_whole1"], p["_tail"])
        return self._fit(beats, first,
                         self._span_one(over, p["_whole_one"], p["_whole1_one"]))[2]

    def _span_one(self, over, whole_one, whole1_one):
        """``beats == 1`` of the span :meth:`_span` chose with ``over``."""
        return Mux(over, whole1_one, whole_one) if self.lb else whole_one

    def _fit(self, beats, first, beats_one):
        """(burst, row end, burst is 1) of a row's remaining ``beats`` from beat ``first``:
        the burst stops at the row's end or at the next ``M``-beat boundary. ``beats_one``:
        ``beats == 1`` (the callers have it from a register, or as a borrow). Expressions,
        not signals: they are used under the callers' conditions, which must not gate them."""
        w = self.lm + 1
        room = (self.mb - first[:self.lm])[:w] if self.lm else Const(self.mb, w)
        # beats ≤ room as the borrow of room − beats: a carry chain over every bit of
        # ``beats``, not a LUT tree over its high ones (Fmax)
        fits = ~(room - beats)[-1]
        # ``burst == 1`` from the two candidates' tests, beside the choice (not after it)
        one = Mux(fits, beats_one, room == 1)
        # not fitting, the burst is ``room`` and leaves ``beats − room`` (≥ 1): one beat
        # after it is ``beats < room + 2``, a borrow (every burst is one beat if M = 1)
        one_after = Const(1) if self.mb == 1 else (beats - (room + 2))[-1]
        return Mux(fits, beats[:w], room), fits, one, one_after

    def _set(self, m, cur, left, fit_beats, first, beats_one, one=None):
        """Set the walker to the rest of a row (``one``: ``burst == 1`` if the caller has
        it); returns ``one``."""
        burst, fits, fit_one, one_after = self._fit(fit_beats, first, beats_one)
        one = fit_one if one is None else one
        m.d.sync += [self.cur.eq(cur), self.left.eq(left), self.burst.eq(burst),
                     self.row_end.eq(fits), self.one.eq(one), self.one_after.eq(one_after)]
        return one

    def prepare(self, m: Module, addr, count, rows, stride, cycles: int) -> dict:
        """The walker's state at the start of a transfer from the engine's inputs, in up to
        three registered stages (P0 the inputs copied beside the engine, P1 the row's span
        terms, P2 its first burst) computed every cycle:
        ``start`` copies them, so the inputs must be held ``cycles`` cycles before ``start``
        and in its cycle (the modules give the queue head, which sits there ``HEAD_SETTLE``
        cycles first: ``PREPARE_CYCLES``). The span arithmetic is then off the start
        condition's path (Fmax). ``cycles`` = 1 (fetch's reader, whose inputs come with the
        launch, in the cycle before its ``start``): P2 only is registered; 2: P1 and P2;
        3: all three. The stage registers are reset-less, so the launch's reset does not
        clear what they prepare."""
        assert cycles in (0, 1, 2, 3), cycles

        def stage(values, tag, registered=True):
            # reset-less: recomputed in every cycle, and fetch's launch resets its reader in
            # the cycle these registers must load (cycles = 1)
            regs = {}
            for name, value in values.items():
                like = getattr(self, name, None)
                regs[name] = reg = (
                    Signal.like(like, name=f"{tag}{name}", reset_less=True) if like is not None
                    else Signal(len(Value.cast(value)), name=f"{tag}{name}", reset_less=True))
                domain = m.d.sync if registered else m.d.comb
                domain += reg.eq(value)
            return regs

        if cycles == 3:
            # P0: the queue head's fields reach the engine in a cycle of their own (Fmax: the
            # head sits by the queue's block RAM, far from the engine; STORE's
            # ``p1_count_nz`` was among ecp5-large's worst endpoints, §12 session 21)
            p0 = stage({"_in_addr": addr, "_in_count": count, "_in_rows": rows,
                        "_in_stride": stride}, "p0")
            addr, count, rows, stride = (p0[k] for k in ("_in_addr", "_in_count", "_in_rows",
                                                         "_in_stride"))
        nbytes = count << self.le
        lb = self.lb
        if self.le >= lb:
            # whole beats per element: ceil(n / B) = n·E/B is a shift, the tail B − 1
            whole, tail = count << (self.le - lb), (1 << lb) - 1
        else:
            whole, tail = (nbytes + (1 << lb) - 1) >> lb, (nbytes - 1)[:len(self._tail)]
        # P1: ceil(n / B) and one more (two parallel adders), the tail, the first beat
        p1 = stage({"_whole": whole,
                    "_whole1": (nbytes + (2 << lb) - 1) >> lb,
                    "_tail": tail if lb else 0,
                    "_whole_one": _equals(Value.cast(whole), 1),
                    "_whole1_one": _equals((nbytes + (2 << lb) - 1) >> lb, 1),
                    "addr": addr, "next_row": addr + stride, "rows_left": rows - 1,
                    "more": ~_equals(rows, 1), "_count_nz": ~_equals(count, 0),
                    "rows_nz": ~_equals(rows, 0),
                    # for the engines' data sides, loaded in their idle cycles
                    "count_one": _equals(count, 1)}, "p1", registered=cycles >= 2)
        first, beats, over = self._span(p1["addr"], p1["_whole"], p1["_whole1"], p1["_tail"])
        burst, fits, one, one_after = self._fit(
            beats, first, self._span_one(over, p1["_whole_one"], p1["_whole1_one"]))
        # P2: the first burst (whole1 ≥ 1, and whole ≠ 0 exactly when count ≠ 0)
        # ``go``: the transfer has data (rows and count ≠ 0), the engine's ``active`` at start
        p2 = stage({"cur": first, "left": Mux(p1["rows_nz"], beats, 0), "burst": burst,
                    "row_end": fits, "one": one, "one_after": one_after,
                    "nz": p1["rows_nz"] & (over | p1["_count_nz"]),
                    "go": p1["rows_nz"] & p1["_count_nz"],
                    "_over": self._span(p1["next_row"], p1["_whole"], p1["_whole1"],
                                        p1["_tail"])[2],
                    "_row_one": self._first_one(p1["next_row"], p1),
                    "_next2": p1["next_row"] + stride},
                   "p2", registered=cycles >= 1)
        return {**p2, **{k: p1[k] for k in ("next_row", "rows_left", "more", "_whole",
                                             "_whole1", "_tail", "_count_nz", "_whole_one",
                                             "_whole1_one", "count_one")}}

    def load(self, m: Module, pre: dict):
        """Every walker register from ``pre`` but ``nz``: done in every cycle the engine is
        idle, so only ``nz`` (the engine's ``valid``) waits for ``start`` (Fmax: the start
        condition drives one flip-flop's input, not the walker's multiplexers)."""
        m.d.sync += [getattr(self, name).eq(reg) for name, reg in pre.items()
                     if name not in ("nz", "go", "count_one")]

    def start(self, m: Module, pre: dict):
        m.d.sync += self.nz.eq(pre["nz"])

    def advance(self, m: Module):
        """Move past the burst (in the caller's condition); returns ``one``'s next value (a
        multiplexer of flip-flops)."""
        with m.If(self.row_end & self.more):
            self._set(m, self._first_n, self._beats_n, self._beats_n, self._first_n,
                      Const(0), one=self._row_one)
            after = self._next2
            here = {k: getattr(self, k) for k in ("_whole", "_whole1", "_tail", "_whole_one",
                                                  "_whole1_one")}
            # (``rows_left ≥ 1`` here: ``rows_left != 1`` is ``rows_left ≥ 2``, a borrow)
            m.d.sync += [self.next_row.eq(after), self._next2.eq(after + self._stride),
                         self._over.eq(self._span(
                             after, self._whole, self._whole1, self._tail)[2]),
                         self._row_one.eq(self._first_one(after, here)),
                         self.rows_left.eq(self.rows_left - 1),
                         self.more.eq(~(self.rows_left - 2)[-1]),
                         self.nz.eq(self._over_n | self._count_nz)]
        with m.Else():
            # inside a row the burst ran to an M-beat boundary: the next one starts on it;
            # it left beats exactly when it did not end the row (else it took them all)
            # (the next burst's ``one`` is ``one_after``, registered)
            left = (self.left - self.burst)[:len(self.left)]
            self._set(m, self.cur + self.burst, left, left, Const(0, max(self.lm, 1)),
                      Const(0), one=self.one_after)
            m.d.sync += self.nz.eq(~self.row_end)
        return Mux(self.row_end & self.more, self._row_one, self.one_after)


def _engine_members(cfg: VTAConfig, count_bits: int) -> dict:
    return {"start": In(1), "addr": In(ADDR_BITS), "count": In(count_bits),
            "rows": In(16, init=1), "stride": In(ADDR_BITS), "busy": Out(1),
            "port": Out(MemPortSignature(cfg))}


class DmaReader(wiring.Component):
    """Reads ``rows`` rows of ``count`` elements of ``elem_bytes`` (row *y* at byte address
    ``addr + y·stride``) as one element stream.

    Commands: ``start`` in cycle *c* → the first ``rcmd`` is offered in *c* + 1 (while
    ``issue_ok``), and each following burst's ``rcmd`` in the cycle after the previous
    handshake, without waiting for data (the arbiter bounds the bursts in flight). Data: an
    element leaves ``out`` in the cycle of the bus beat that completes it (combinational path
    from ``rd``) while ``out.ready``: one beat per cycle if ``elem_bytes ≥ bus_bytes``;
    otherwise one element per cycle (``rd.ready`` only with the beat's last element of the
    row's span). ``busy`` is high from *c* + 1 until every command is issued and every element
    has left. ``addr``, ``count``, ``rows`` and ``stride`` are held from
    *c* − ``prepare_cycles`` (0, 1 or 2) to *c* (:meth:`_Walker.prepare`); ``start`` only while
    ``busy`` is low (the transfer's registers follow the inputs in every idle cycle).
    """

    def __init__(self, cfg: VTAConfig, *, elem_bytes: int, count_bits: int = 32,
                 prepare_cycles: int = 0):
        self._cfg = cfg
        self._eb = elem_bytes
        self._count_bits = count_bits
        self._prepare = prepare_cycles
        super().__init__({
            **_engine_members(cfg, count_bits),
            "issue_ok": In(1, init=1),
            "out": Out(stream.Signature(unsigned(elem_bytes * 8))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, eb, bb = self._cfg, self._eb, self._cfg.bus_bytes
        w = bb * 8
        le = _log2(eb)
        count = Signal(self._count_bits)
        stride = Signal(ADDR_BITS)
        iw = _Walker(m, cfg, eb, self._count_bits, stride, "issue")
        pre = iw.prepare(m, self.addr, self.count, self.rows, self.stride, self._prepare)
        port = self.port
        rd_fire = Signal()
        take = Signal()
        active = Signal()             # elements still to come
        drow = Signal(_WIDE)          # byte address of the data row
        drows_left = Signal(16)
        left = Signal(self._count_bits)   # elements left in the data row
        # ``left == 1``, ``count == 1`` and ``drows_left == 0`` as registers set with what they
        # compare: the data side's enables and ``rd.ready`` read no wide compare (Fmax)
        last = Signal()
        count_one = Signal()
        final_row = Signal()
        m.d.comb += [rd_fire.eq(port.rd.valid & port.rd.ready),
                     take.eq(self.out.valid & self.out.ready),
                     self.busy.eq(iw.nz | active),
                     port.rcmd.valid.eq(self.issue_ok & iw.nz),
                     port.rcmd.payload.addr.eq(iw.cur << iw.lb),
                     port.rcmd.payload.len.eq(iw.burst - 1)]
        idle = Signal()     # ``busy`` low: the transfer's registers follow the inputs
        m.d.comb += idle.eq(~(iw.nz | active))
        with m.If(port.rcmd.valid & port.rcmd.ready):
            iw.advance(m)
        with m.If(idle):
            iw.load(m, pre)
            # (the flags from the prepared registers, ``rows − 1 == 0`` as ``more``: no
            # compare of the inputs before these registers' multiplexers)
            m.d.sync += [count.eq(self.count), stride.eq(self.stride), drow.eq(self.addr),
                         drows_left.eq(pre["rows_left"]), left.eq(self.count),
                         count_one.eq(pre["count_one"]), final_row.eq(~pre["more"])]
        # ``start`` comes only while idle and ``take`` only while active: the two never meet,
        # so neither gates the other (Fmax: the start condition reaches `nz` and `active` only)
        with m.If(self.start):
            iw.start(m, pre)
            m.d.sync += active.eq(pre["go"])
        # (``left == 2`` and ``drows_left == 1`` as borrows, carry chains and no LUT trees:
        # ``left ≥ 2`` where the first is kept, ``drows_left ≥ 1`` where the second is, and
        # after the final row ``final_row`` is unread until the idle cycles set it again)
        #: for the tests (``_Walker.invariants``)
        self.invariants = [*iw.invariants(),
                           ("last", last, left == 1, active),
                           ("final_row", final_row, drows_left == 0, active)]
        last_next = Signal()
        m.d.comb += last_next.eq(Mux(take, Mux(last, count_one, (left - 3)[-1]),
                                     Mux(idle, pre["count_one"], last)))
        m.d.sync += last.eq(last_next)
        row_done = Signal()     # ``take & last``: the row's last element leaves
        with m.If(take):
            m.d.sync += left.eq(left - 1)
        with m.If(row_done):
            m.d.sync += [left.eq(count), drow.eq(drow + stride),
                         drows_left.eq(drows_left - 1), final_row.eq((drows_left - 2)[-1])]
            with m.If(final_row):
                m.d.sync += active.eq(0)

        if eb >= bb:
            k = eb // bb
            m.d.comb += port.rd.ready.eq(self.out.ready)
            if k == 1:
                m.d.comb += [self.out.valid.eq(port.rd.valid),
                             self.out.payload.eq(port.rd.payload.data),
                             row_done.eq(take & last)]
            else:
                sr = Signal((k - 1) * w)
                cnt = Signal(range(k))
                cnt_next = Signal.like(cnt)
                # ``cnt == k − 1 & last`` (the beat completes the row) a register, from both
                # next values: ``row_done`` is one gate of the handshake's terms (Fmax)
                closing = Signal()
                m.d.comb += [self.out.payload.eq(Cat(sr, port.rd.payload.data)),
                             self.out.valid.eq(port.rd.valid & (cnt == k - 1)),
                             cnt_next.eq(Mux(idle, 0, Mux(rd_fire, Mux(cnt == k - 1, 0, cnt + 1),
                                                          cnt))),
                             row_done.eq(port.rd.valid & self.out.ready & closing)]
                m.d.sync += [cnt.eq(cnt_next), closing.eq((cnt_next == k - 1) & last_next)]
                self.invariants.append(("closing", closing, (cnt == k - 1) & last, active))
                with m.If(rd_fire):
                    m.d.sync += sr.eq(Cat(sr[w:], port.rd.payload.data) if k > 2
                                      else port.rd.payload.data)
        else:
            per = bb // eb
            lane = Signal(range(per))
            last_lane = Signal()
            nxt = Signal(_WIDE)
            m.d.comb += [
                self.out.payload.eq(port.rd.payload.data.word_select(lane, eb * 8)),
                self.out.valid.eq(port.rd.valid),
                last_lane.eq((lane == per - 1) | last),
                port.rd.ready.eq(self.out.ready & last_lane),
                nxt.eq(drow + stride),
                row_done.eq(take & last),
            ]
            with m.If(idle):
                m.d.sync += lane.eq((self.addr >> le)[:_log2(per)])
            with m.Elif(take):
                m.d.sync += lane.eq(Mux(last, (nxt >> le)[:_log2(per)],
                                        Mux(last_lane, 0, lane + 1)))
        return m


class DmaWriter(wiring.Component):
    """Writes ``rows`` rows of ``count`` elements of ``elem_bytes`` from the stream ``inp``
    (row *y* at byte address ``addr + y·stride``).

    Commands: ``start`` in cycle *c* → the first ``wcmd`` is offered in *c* + 1 and each next
    one in the cycle after the previous handshake, while fewer than ``cfg.mem_outstanding``
    write bursts are unacknowledged. Data: a burst's beats are offered from the cycle after its
    ``wcmd`` handshake: if ``elem_bytes ≥ bus_bytes`` one beat per cycle (each element gives
    ``elem_bytes / bus_bytes`` beats, full strobes), otherwise one element per cycle and a beat
    in the cycle its last element (of the beat, or of the row) arrives, with the strobes of the
    lanes it carries. ``busy`` is high from *c* + 1 until every beat is written and the last
    ``wr_ack`` has been seen. ``addr``, ``count``, ``rows`` and ``stride`` are held from
    *c* − ``prepare_cycles`` (0, 1 or 2) to *c* (:meth:`_Walker.prepare`); ``start`` only while
    ``busy`` is low (the transfer's registers follow the inputs in every idle cycle).
    """

    def __init__(self, cfg: VTAConfig, *, elem_bytes: int, count_bits: int = 32,
                 prepare_cycles: int = 0):
        self._cfg = cfg
        self._eb = elem_bytes
        self._count_bits = count_bits
        self._prepare = prepare_cycles
        super().__init__({
            **_engine_members(cfg, count_bits),
            "inp": In(stream.Signature(unsigned(elem_bytes * 8))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, eb, bb = self._cfg, self._eb, self._cfg.bus_bytes
        w = bb * 8
        le = _log2(eb)
        depth = cfg.mem_outstanding
        count = Signal(self._count_bits)
        stride = Signal(ADDR_BITS)
        iw = _Walker(m, cfg, eb, self._count_bits, stride, "issue")
        dw = _Walker(m, cfg, eb, self._count_bits, stride, "data")
        pre = iw.prepare(m, self.addr, self.count, self.rows, self.stride, self._prepare)
        port = self.port
        pending = Signal(range(depth + 1))   # write bursts not yet acknowledged
        ahead = Signal(range(depth + 1))     # bursts commanded whose beats are still to go
        beat = Signal(range(cfg.max_burst_beats + 1))
        active = Signal()
        data_ok = Signal()
        wcmd_fire = Signal()
        wr_fire = Signal()
        burst_done = Signal()
        # registers for ``ahead != 0`` and ``beat == burst − 1``, each set from the values it
        # compares a cycle ahead: the data channel's ``valid``, ``last`` and the handshakes
        # that follow read no compare (Fmax)
        ahead_nz = Signal()
        beat_last = Signal()    # the beat offered ends its burst (``wr.last``)
        # ``pending != depth`` and ``pending != 0`` as registers, chosen by the handshakes
        # among compares of this cycle's ``pending`` (Fmax: ``wcmd.valid`` and ``busy`` leave
        # flip-flops)
        pending_room = Signal(init=1)
        pending_nz = Signal()
        with m.Switch(Cat(wcmd_fire, port.wr_ack)):
            with m.Case(0b01):
                m.d.sync += [pending_room.eq(pending != depth - 1), pending_nz.eq(1)]
            with m.Case(0b10):
                m.d.sync += [pending_room.eq(1), pending_nz.eq(pending != 1)]
        m.d.comb += [
            port.wcmd.valid.eq(iw.nz & pending_room),
            port.wcmd.payload.addr.eq(iw.cur << iw.lb),
            port.wcmd.payload.len.eq(iw.burst - 1),
            wcmd_fire.eq(port.wcmd.valid & port.wcmd.ready),
            wr_fire.eq(port.wr.valid & port.wr.ready),
            port.wr.payload.last.eq(beat_last),
            self.busy.eq(iw.nz | active | pending_nz),
        ]
        # The counters' next values chosen by the handshakes among this cycle's ±1 (Fmax: the
        # handshakes are the last multiplexers, not an adder's inputs)
        def up_down(reg, up, down):
            plus, minus = Signal.like(reg), Signal.like(reg)
            m.d.comb += [plus.eq(reg + 1), minus.eq(reg - 1)]
            m.d.sync += reg.eq(Mux(up, Mux(down, reg, plus), Mux(down, minus, reg)))

        up_down(pending, wcmd_fire, port.wr_ack)
        up_down(ahead, wcmd_fire, burst_done)
        ends = Signal()     # the burst on the data channel is the transfer's last
        m.d.comb += ends.eq(dw.row_end & ~dw.more)
        m.d.sync += [active.eq(Mux(self.start, pre["go"], active & ~(burst_done & ends))),
                     ahead_nz.eq(Mux(wcmd_fire == burst_done, ahead_nz,
                                     wcmd_fire | (ahead != 1)))]
        # ``data_ok`` (``active & ahead != 0``) a register too, from both next values; ``start``
        # comes while idle, where ``active`` and ``ahead`` are 0 and stay so for a cycle, so
        # it is not among its inputs, and ``burst_done`` is the last choice (Fmax)
        m.d.sync += data_ok.eq(active & Mux(burst_done, ~ends & (wcmd_fire | (ahead != 1)),
                                            wcmd_fire | ahead_nz))
        idle = Signal()     # ``busy`` low: the transfer's registers follow the inputs
        m.d.comb += idle.eq(~(iw.nz | active | pending_nz))
        #: for the tests (``_Walker.invariants``; the data walker's hold while ``active``)
        self.invariants = [*iw.invariants(),
                           *[(f"data_{name}", flag, value, when)
                             for name, flag, value, when in dw.invariants(active)
                             if name != "nz"],
                           ("beat_last", beat_last, beat + 1 == dw.burst, active)]
        with m.If(wcmd_fire):
            iw.advance(m)
        with m.If(idle):
            iw.load(m, pre)
            dw.load(m, pre)
            m.d.sync += [count.eq(self.count), stride.eq(self.stride), beat.eq(0)]
        # ``start`` comes only while idle, the beats only while active: neither gates the other
        with m.If(self.start):
            iw.start(m, pre)
        with m.If(burst_done):
            m.d.sync += beat.eq(0)
            next_one = dw.advance(m)
        with m.Elif(wr_fire):
            m.d.sync += beat.eq(beat + 1)
        # ``beat_last`` a register: for a burst's first beat the data walker's ``one`` (set
        # with it; the next burst's from its registers, ``one_after`` inside a row), then
        # ``beat + 1 == burst`` a beat ahead (Fmax: ``burst_done``, which moves the data walker
        # and the bookkeeping, is the handshake and one flip-flop). The beat's handshake is
        # the last choice; no beat moves while idle.
        beat_last_next = Signal()
        m.d.comb += beat_last_next.eq(Mux(wr_fire, Mux(beat_last, next_one, beat + 2 == dw.burst),
                                          Mux(idle, pre["one"], beat_last)))
        m.d.sync += beat_last.eq(beat_last_next)

        if eb >= bb:
            k = eb // bb
            sub = Signal(range(k))
            m.d.comb += [
                port.wr.valid.eq(data_ok & self.inp.valid),
                port.wr.payload.data.eq(self.inp.payload.word_select(sub, w) if k > 1
                                        else self.inp.payload),
                port.wr.payload.strb.eq(Const(-1, bb)),
                self.inp.ready.eq(data_ok & port.wr.ready & (sub == k - 1)),
                burst_done.eq(wr_fire & beat_last),
            ]
            if k > 1:
                with m.If(idle):
                    m.d.sync += sub.eq(0)
                with m.Elif(wr_fire):
                    m.d.sync += sub.eq(Mux(sub == k - 1, 0, sub + 1))
        else:
            per = bb // eb
            lane = Signal(range(per))
            left = Signal(self._count_bits)     # elements left in the row
            last = Signal()                     # ``left == 1``, set with it (Fmax)
            count_one = Signal()
            acc = Signal(w)
            strb = Signal(bb)
            closes = Signal()
            closes_next = Signal()
            # ``closes & beat_last`` a register, from both next values: ``burst_done`` is one
            # gate of the handshake's four terms (Fmax: it moves the data walker)
            closes_last = Signal()
            m.d.sync += [closes.eq(closes_next), closes_last.eq(closes_next & beat_last_next)]
            cur_data = Signal(w)
            cur_strb = Signal(bb)
            m.d.comb += [
                cur_data.eq(acc),
                cur_strb.eq(strb),
            ]
            for i in range(per):
                with m.If(lane == i):
                    m.d.comb += [cur_data[i * eb * 8:(i + 1) * eb * 8].eq(self.inp.payload),
                                 cur_strb[i * eb:(i + 1) * eb].eq(Const(-1, eb))]
            m.d.comb += [
                port.wr.valid.eq(data_ok & self.inp.valid & closes),
                port.wr.payload.data.eq(cur_data),
                port.wr.payload.strb.eq(cur_strb),
                self.inp.ready.eq(data_ok & (~closes | port.wr.ready)),
                burst_done.eq(data_ok & self.inp.valid & port.wr.ready & closes_last),
                closes_next.eq(closes),
            ]
            # ``closes`` = ``lane == per − 1 | left == 1`` (the element completes a beat) a
            # register, set from the next lane and ``last`` (a lane after a closing one is 0,
            # or the next row's first one)
            lane0 = (self.addr >> le)[:_log2(per)]
            next_lane = (dw.next_row >> le)[:_log2(per)]
            self.invariants += [("last", last, left == 1, active),
                                ("closes", closes, (lane == per - 1) | (left == 1), active),
                                ("closes_last", closes_last, closes & beat_last, active)]
            with m.If(idle):
                m.d.comb += closes_next.eq((lane0 == per - 1) | pre["count_one"])
                m.d.sync += [lane.eq(lane0),
                             left.eq(self.count), last.eq(pre["count_one"]),
                             count_one.eq(pre["count_one"]), acc.eq(0), strb.eq(0)]
            with m.Elif(self.inp.valid & self.inp.ready):
                # ``left == 2`` as ``left < 3``, a borrow (a carry chain, no LUT tree): read
                # only where ``left ≥ 2`` (``last`` chooses the other terms)
                two = (left - 3)[-1]
                m.d.sync += [left.eq(left - 1), last.eq(two)]
                m.d.comb += closes_next.eq(Mux(last, (next_lane == per - 1) | count_one,
                                               ~closes & (lane == per - 2) | two))
                with m.If(closes):
                    m.d.sync += [lane.eq(0), acc.eq(0), strb.eq(0)]
                with m.Else():
                    m.d.sync += [lane.eq(lane + 1), acc.eq(cur_data), strb.eq(cur_strb)]
                with m.If(last):
                    m.d.sync += [left.eq(count), last.eq(count_one), lane.eq(next_lane)]
        return m


class TensorLoader(wiring.Component):
    """2-D LOAD with zero padding into one on-chip buffer (reference §3.2).

    ``start`` (cycle *c*, fields on ``insn``; ``x_size ≥ 1``) → ``busy`` from *c* + 1; the
    :class:`DmaReader` is started in *c* for all ``y_size`` data rows, so its commands run
    ahead of the rows' processing. Rows are processed in order, each beginning with one ROW
    cycle. A pad row then writes ``row_len`` zeros (one per cycle). A data row writes
    ``x_pad_0`` zeros, then the ``x_size`` elements as the reader delivers them (it accepts
    them only in DATA), then ``x_pad_1`` zeros; the row after the last element of a data row
    with ``x_pad_1 == 0`` starts in the next cycle. A final ROW cycle with ``r == rows`` ends
    the instruction: ``busy`` is low from the cycle after it.
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
            # ``wr_data`` split for a user that registers it (hw.compute): the element read
            # (valid in a data write) and "this write is a pad zero", neither gated by the
            # reader's handshake, so the register needs no clear term from a deep enable
            "wr_raw": Out(sram_bits),
            "wr_pad": Out(1),
            "port": Out(MemPortSignature(cfg)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.reader = reader = DmaReader(self._cfg, elem_bytes=self._eb, count_bits=16,
                                                 prepare_cycles=PREPARE_CYCLES)
        wiring.connect(m, wiring.flipped(self.port), reader.port)
        insn = Signal(mem_insn())
        # The row counter r is kept as r + 1 (``nr``), with the ROW cycle's tests of r as
        # registers set with it (r == rows: ``ended``, a pad row: ``pad``): ROW's choice reads
        # flip-flops, and the compares of ``nr`` run in the cycles before (Fmax)
        nr = Signal(24)
        ended = Signal()
        pad = Signal()
        # the row's first run length and the pads' tests, registered with the instruction:
        # ``n``'s next value is a choice of registers (Fmax)
        xp0_nz, xp1_nz = Signal(), Signal()
        first_n = Signal(16)
        n = Signal(24)       # cells left in the current zero run / data run
        n_one = Signal()     # ``n == 1``, set with ``n`` (Fmax: the states' exits)
        busy = Signal()
        sram_addr = Signal(ADDR_BITS)
        # the instruction's sums, registered with it: ROW compares registers (Fmax)
        row_len = Signal(24)
        rows = Signal(24)
        data_end = Signal(24)      # the first bottom pad row
        le = _log2(self._eb)
        m.d.comb += [
            reader.start.eq(self.start),
            reader.addr.eq(self.insn.dram_base << le),
            reader.count.eq(self.insn.x_size),
            reader.rows.eq(self.insn.y_size),
            reader.stride.eq(self.insn.x_stride << le),
            self.wr_addr.eq(sram_addr),
        ]
        data = reader.out.payload
        if self._transform is not None:
            data = self._transform(data)

        # ``n == 1`` of each value ``n`` is set to, registered with the instruction (``n``'s
        # sources are registers; ``n_one`` chooses among their flags): ROW's and the runs'
        # choices of ``n_one`` are multiplexers of flip-flops (Fmax)
        row_len_one, first_n_one, x_size_one, xp1_one = (
            Signal(name=f"{k}_one") for k in ("row_len", "first_n", "x_size", "x_pad_1"))

        # in DATA and in ROW, flip-flops set with the state: the reader's ``out.ready`` (and
        # with it the memory's ``rd.ready`` and the reader's data-side enables) and ``n``'s
        # choices read no state decode (Fmax); ``busy`` (not IDLE) a flip-flop as well
        in_data, in_row = Signal(), Signal()
        m.d.comb += [reader.out.ready.eq(in_data), self.busy.eq(busy)]
        m.d.sync += in_row.eq(0)

        # ``n``'s next value outside the FSM, a multiplexer of register values and ``n − 1``
        # chosen by the two state flags, the reader's ``valid`` and ``n_one``: ROW loads the
        # row's first run; a count stops in DATA without an element; at ``n == 1`` LPAD
        # goes on with the data run, DATA with the right pad (unused when it is 0: ROW sets
        # ``n`` again), ZERO and RPAD with ROW; IDLE's value is unused. ``n − 1 == 1`` as
        # ``n < 3``, the borrow of a subtraction (a carry chain, no LUT tree): ``n ≥ 1`` in
        # every counting state.
        hold = Signal()
        m.d.comb += hold.eq(in_data & ~reader.out.valid)
        m.d.sync += [
            n.eq(Mux(in_row, Mux(pad, row_len, first_n),
                     Mux(hold, n, Mux(n_one, Mux(in_data, insn.x_pad_1, insn.x_size),
                                      n - 1)))),
            n_one.eq(Mux(in_row, Mux(pad, row_len_one, first_n_one),
                         Mux(hold, n_one, Mux(n_one, Mux(in_data, xp1_one, x_size_one),
                                              (n - 3)[-1])))),
        ]

        m.d.comb += self.wr_raw.eq(data)

        def write_zero():
            m.d.comb += [self.wr_en.eq(1), self.wr_data.eq(0), self.wr_pad.eq(1)]
            m.d.sync += sram_addr.eq(sram_addr + 1)

        def next_row():
            # ``nr == rows`` as ``nr ≥ rows`` (``nr ≤ rows`` while rows run), the borrow of
            # a subtraction: a carry chain, no LUT tree (Fmax)
            m.d.sync += [nr.eq(nr + 1), ended.eq(~(nr - rows)[-1]),
                         pad.eq((nr < insn.y_pad_0) | (nr >= data_end)), in_row.eq(1)]
            m.next = "ROW"

        def after_data():
            with m.If(xp1_nz):
                m.next = "RPAD"
            with m.Else():
                next_row()

        # The instruction through a copy of its own, loaded in every cycle: IDLE's registers
        # load from it beside this loader, and the queue head (the module's, read by every
        # unit and its range checks across the die) ends in one flip-flop per loader (Fmax:
        # the head → the ACC_8BIT loader's ``insn``/``sram_addr`` were 31 endpoints at
        # 10.7–10.9 ns on ecp5-large at a 100 MHz target, docs/hardware.md §12 session 17).
        # The fields are held from c − PREPARE_CYCLES (as the reader needs), so the copy in
        # c − 1 and IDLE's registers loaded from it in c are the start's fields.
        held = Signal(mem_insn())
        m.d.sync += held.eq(self.insn)
        with m.FSM() as fsm:
            with m.State("IDLE"):
                # taken in every idle cycle, not only with `start`: the start condition
                # then drives the state alone, not these registers' enables (Fmax)
                f = held
                # (row 0's flags from the registers loaded the cycle before: the head sits
                # there PREPARE_CYCLES cycles before ``start``)
                m.d.sync += [insn.eq(f), nr.eq(1), sram_addr.eq(f.sram_base),
                             row_len.eq(f.x_pad_0 + f.x_size + f.x_pad_1),
                             rows.eq(f.y_pad_0 + f.y_size + f.y_pad_1),
                             data_end.eq(f.y_pad_0 + f.y_size),
                             ended.eq(rows == 0),
                             pad.eq((insn.y_pad_0 != 0) | (data_end == 0)),
                             xp0_nz.eq(f.x_pad_0 != 0), xp1_nz.eq(f.x_pad_1 != 0),
                             first_n.eq(Mux(f.x_pad_0 != 0, f.x_pad_0, f.x_size)),
                             # (from the registers of the cycle before, as ``ended``)
                             row_len_one.eq(row_len == 1), first_n_one.eq(first_n == 1),
                             x_size_one.eq(insn.x_size == 1), xp1_one.eq(insn.x_pad_1 == 1)]
                with m.If(self.start):
                    m.d.sync += [in_row.eq(1), busy.eq(1)]
                    m.next = "ROW"
            with m.State("ROW"):
                # (``n`` is loaded with the row's first run, unused when the rows have ended)
                with m.If(ended):
                    m.d.sync += busy.eq(0)
                    m.next = "IDLE"
                with m.Elif(pad):
                    m.next = "ZERO"
                with m.Elif(xp0_nz):
                    m.next = "LPAD"
                with m.Else():
                    m.d.sync += in_data.eq(1)
                    m.next = "DATA"
            with m.State("ZERO"):
                write_zero()
                with m.If(n_one):
                    next_row()
            with m.State("LPAD"):
                write_zero()
                with m.If(n_one):
                    m.d.sync += in_data.eq(1)
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(reader.out.valid):
                    m.d.comb += [self.wr_en.eq(1), self.wr_data.eq(data)]
                    m.d.sync += sram_addr.eq(sram_addr + 1)
                    with m.If(n_one):
                        m.d.sync += in_data.eq(0)
                        after_data()
            with m.State("RPAD"):
                write_zero()
                with m.If(n_one):
                    next_row()
        counting = fsm.ongoing("ZERO") | fsm.ongoing("LPAD") | fsm.ongoing("DATA") | \
            fsm.ongoing("RPAD")
        #: for the tests (``_Walker.invariants``)
        self.invariants = [("n_one", n_one, n == 1, counting),
                           ("in_data", in_data, fsm.ongoing("DATA"), 1),
                           ("in_row", in_row, fsm.ongoing("ROW"), 1),
                           ("busy", busy, ~fsm.ongoing("IDLE"), 1),
                           ("ended", ended, nr == rows + 1, fsm.ongoing("ROW"))]
        return m
