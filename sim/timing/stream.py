"""Skipping the beats inside a burst in closed form.

While a read burst streams into a tensor loader (or a write burst out of the store), each cycle
moves one beat and changes only a few counters: the burst's beats left, the reader's beat
within its element (``cnt``) or lane, the elements left in the row (``left``, the loader's
``n``, the store's ``left``), the writer's beat in its burst (``beat``, ``sub``). Everything else
repeats. :class:`BeatSkipper` recognises such a cycle — it moved a beat, no command, no other
beat, no ``wr_ack``, and every register except those counters is the same before and after it
(:func:`stream_key`; the state before it is looked at after any cycle that moved a beat, one
that granted a command too). Every next cycle then repeats it,
with the counters moving by the arithmetic of :meth:`BeatSkipper._read` and
:meth:`BeatSkipper._write`, until a comparison on them changes its outcome:

* a burst's last beat (it leaves the memory's queue and the arbiter's tags) — the window ends
  before the head burst's last beat, and before the writer's ``beat == burst − 1`` (in a
  drain, see below, before the last queued burst's);
* an element that ends a row (``left == 1``, the loader's ``n == 1``, the store's OUT reader
  running dry): the window ends before it;
* a time comparison of another block: the next write burst's first cycle, a ``wr_ack``, the
  GEMM/ALU timeline (as in :meth:`Core.skip`), the budget ``max_cycles``. A ``wr_ack`` while a
  write burst streams and the writer has no command left (a store's drain) only counts
  ``arb.writes`` and the writer's ``pending`` down, which stay ≥ 1 (the streaming burst is
  unacknowledged): such acks are applied in closed form and do not end the window.

Elements at least a beat wide take ``k`` beats each, one per cycle: each cycle the memory's
beat passes the arbiter (its skid buffer stays empty) into the loader's slice while the loader
takes the slice's previous beat (the slice's skid stays empty). Narrower ones take one element
per cycle and a beat on every ``per``-th, lane ``per − 1``: the slice's main register holds the
beat in use, its skid the next (full on lanes 1 … ``per − 1``, filled from the arbiter's skid
on lane 0), and the arbiter's skid the one after (the memory's beat parks there on lane 1 and
stays until lane 0). In a store's drain (the
writer has no command left) a write burst's end changes only the memory's queue, the writer's
data cursor and burst count and the acks to come: the skip runs on through the bursts queued
behind the head (elements at least a beat wide), up to the last one's last beat. Only
``mem_beat_interval`` 1 (the channels never wait for each other) and the load and compute
loaders (not fetch: its data are instructions) are covered. The event counters advance as in
:meth:`Core.skip`. Tests compare every skip with stepping (``verify``) and whole runs with the
RTL.
"""

from __future__ import annotations

__all__ = ["BeatSkipper", "stream_key"]

T_DATA = 4      # sim.timing.dma.T_DATA


def streams(core) -> tuple:
    """(read loader or None, write stream?) moving in cycle ``core.t`` by the registers: the
    memory's head read burst has arrived and the beats go to a load or compute loader in DATA;
    the head write burst has arrived and the store's writer has an element for it."""
    t = core.t
    m = core.mem
    if m.slot > t:
        return None, False
    ld = None
    reads, tags = m.reads, core.arb.tags
    if reads and reads[0][1] <= t and tags and tags[0]:
        cand = core.load.active if tags[0] == 1 else core.compute.active
        if cand.fsm == T_DATA and cand.reader.active:
            ld = cand
    st = core.store
    w = st.writer
    wr = bool(m.writes) and m.writes[0][1] <= t and w.active and w.ahead != 0 and st.valid
    return ld, wr


def stream_key(core, ld, wr: bool) -> tuple:
    """:meth:`Core.snapshot` without the counters that the streams ``ld`` (the loader a read
    burst streams into, or None) and ``wr`` (a write burst streams) move; see the module (a
    narrow loader's lane also sets the skid buffers: :meth:`BeatSkipper._read` checks them)."""
    f, la, ca, st = core.fetch, core.load.active, core.compute.active, core.store
    fr, w = f.reader, st.writer
    lq, cq, sq = core.queues
    m, arb = core.mem, core.arb
    reads, writes = m.reads, m.writes
    # Between two cycles the memory's queues change only by a command (``bursts``), a head's
    # beat and a burst's end (``read_done``, ``write_done``); the arbiter's tags also by the
    # end of a burst whose last beat the skid buffer held.
    narrow = ld is not None and ld.reader.per
    slices = [sl.state() for sl in arb.slices]
    if narrow:
        slices[arb.tags[0]] = None
    key = [id(ld), wr, None if narrow else (arb.skid, arb.skid and arb.skid_last), *slices,
           *(sl.state() for sl in arb.cmd_slices),
           core.running, core.done, core.arb_halt, core.fetch_err, core.mod_err, core.core_err,
           core.finish_seen, len(reads), len(arb.tags), m.read_done, len(writes), m.write_done,
           len(m.acks), m.bursts, reads[0][0] if reads and ld is None else None,
           writes[0][0] if writes and not wr else None, arb.ptr, arb.gnt, arb.writes,
           f.slice.state(),
           f.fsm, f.index, len(f.buf), f.delivered, f.inflight,
           f.w1 is None, f.w1_done, fr.iw.left, fr.active, fr.cnt,
           fr.lane, core.load.fsm, core.load.index, id(la), core.compute.fsm,
           core.compute.index, id(ca), st.fsm, st.index, st.valid, w.iw.left, w.active,
           w.pending, w.ahead,
           len(lq.inner), lq.head_valid, lq.age, len(cq.inner), cq.head_valid, cq.age,
           len(sq.inner), sq.head_valid, sq.age, *core.tokens.count]
    for lo in (la, ca):
        r = lo.reader
        key += (lo.fsm, lo.r, r.iw.left, r.active, r.drows_left)
        if lo is not ld:
            key += (lo.n, r.cnt, r.lane, r.left)
    if not wr:
        key += (st.left, w.beat, w.sub, w.lane, w.left)
    return tuple(key)


def _lanes(lane: int, j: int, per: int, on: int) -> int:
    """How many of cycles ``t`` … ``t + j − 1`` an engine at ``lane`` (one element per cycle)
    spends on lane ``on`` (mod ``per``)."""
    return (lane + j - 1 - on) // per - (lane - 1 - on) // per


def _last_beat(t: int, j: int, lane: int, per: int, on: int = -1) -> int:
    """The last of cycles ``t`` … ``t + j − 1`` in which a narrow engine at ``lane`` (one
    element per cycle) is on lane ``on`` (mod ``per``; −1: the last lane, which completes a
    beat; 1: where a narrow loader's stream takes the memory's beat)."""
    return t + j - 1 - (lane + j - 1 - on) % per


class BeatSkipper:
    """Skips the beats of a burst after two cycles that each moved one (see the module)."""

    def __init__(self, core):
        self.core = core
        cfg = core.cfg
        self.enabled = cfg.mem_beat_interval == 1
        self.prev = None          # (cycle, stream_key) after the last streaming cycle
        #: tests: check every skip against a copy of the core stepped cycle by cycle
        self.verify = False
        self.skips = 0
        self.skipped_cycles = 0
        self.acks_folded = 0

    def forget(self) -> None:
        self.prev = None

    def pending(self) -> bool:
        """Whether the last cycle was looked at (the next one must be, to compare)."""
        return self.prev is not None and self.prev[0] == self.core.t - 1

    def observe(self, max_cycles: int) -> bool:
        """Called after a cycle that moved a beat (or followed such a cycle; a grant in it
        changes the key, so it can only be the first of the two compared); True if it skipped
        ahead."""
        core = self.core
        if not self.enabled:
            return False
        ld, wr = streams(core)
        if ld is None and not wr:
            self.prev = None
            return False
        key = stream_key(core, ld, wr)
        prev, t = self.prev, core.t
        if prev is None or prev[0] != t - 1 or prev[1] != key:
            self.prev = (t, key)
            return False
        self.prev = None
        return self._skip(ld, wr, max_cycles)

    # ------------------------------------------------------------------ the window
    def _window(self, max_cycles: int, streaming) -> int:
        """Cycles from ``core.t`` on before a time comparison of another block changes
        (``streaming``: whether the read and the write channel stream)."""
        core = self.core
        t = core.t
        end = max_cycles
        m = core.mem
        # A burst arriving at the head of a channel that does not stream (from this very
        # cycle on: the cycles compared did not see it).
        for q, on in zip((m.reads, m.writes), streaming):
            if q and not on and q[0][1] >= t:
                end = min(end, q[0][1])
        if m.acks and not self._folds_acks(streaming[1]):
            end = min(end, m.acks[0])
        run = core.compute.run
        if run is not None and core.compute.fsm == 2:
            for e in run.events(t):
                if e >= t:
                    end = min(end, e)
        return end - t

    def _folds_acks(self, wr_on: bool) -> bool:
        """Whether the ``wr_ack``s inside the window are applied in closed form: a write burst
        streams (so its own command stays unacknowledged: ``arb.writes`` and the writer's
        ``pending`` stay ≥ 1, the store stays busy) and the writer has no command left (an ack
        would let it issue one). An ack then only counts those two down."""
        return wr_on and self.core.store.writer.iw.left == 0

    def _read(self, ld, j: int):
        """(loader, cycles, elements, beats the loader takes, memory beats) of at most ``j``
        cycles of the read stream into the loader ``ld``, or None (see the module). The memory
        does not move the stream's last beat (:meth:`_read_beats`); the loader's row does not
        end."""
        core = self.core
        r = ld.reader
        arb = core.arb
        sl = arb.slices[arb.tags[0]]
        if sl.main is None:
            return None
        b = self._read_beats()
        rows = min(r.left, ld.n)       # takes must leave both ≥ 1 (no row end)
        if r.per:           # one element per cycle (the pattern: the module)
            per, lane = r.per, r.lane
            if (sl.skid is not None) != (lane != 0) or arb.skid != (lane != 1):
                return None
            # the memory's b-th beat (its lane-1 cycle) stays out of the window
            j = min(j, (1 - lane) % per + (b - 1) * per, rows - 1)
            if j <= 0:
                return None
            return ld, j, j, _lanes(lane, j, per, per - 1), _lanes(lane, j, per, 1)
        if arb.skid or sl.skid is not None:
            return None
        k = r.k
        j = min(j, b - 1, rows * k - 1 - r.cnt if k > 1 else rows - 1)
        if j <= 0:
            return None
        return ld, j, (r.cnt + j) // k if k > 1 else j, j, j

    def _read_beats(self) -> int:
        """Memory beats that can stream without a pause: the head burst's, and while no read
        client has a command to issue (a burst's end then changes nothing but the queues) those
        of the bursts behind it that have arrived and go to the same client; 0 if the memory's
        head burst is not the stream's (the skid buffer holds another's last beat)."""
        core = self.core
        m, arb = core.mem, core.arb
        reads, tags = m.reads, arb.tags
        quiet = m.log is None and core.fetch.cmd() is None and core.load.cmd() is None and \
            core.compute.cmd() is None and arb.commands() is None
        off = 1 if arb.skid and arb.skid_last else 0     # tags[off] is the memory's head's
        tag = tags[0]
        if off and not quiet or len(tags) <= off or tags[off] != tag:
            return 0
        b = reads[0][0]
        if quiet:
            t = core.t
            for i in range(1, len(reads)):
                if tags[i + off] != tag or reads[i][1] > t:
                    break
                b += reads[i][0]
        return b

    def _read_moves(self, takes: int, beats: int, lane: "int | None") -> None:
        """Move ``beats`` beats out of the memory and ``takes`` out of the stream's slice into
        the loader, popping the memory's bursts and the arbiter's tags they complete (a tag
        with its last beat's hand-over to the slice). The beats held (the slice's main and
        skid registers, the arbiter's skid) are then those that follow the taken ones, in the
        pattern of the loader's ``lane`` after the window (None: a wide stream, the slice's
        main register only)."""
        core = self.core
        m, arb = core.mem, core.arb
        reads, tags = m.reads, arb.tags
        sl = arb.slices[tags[0]]
        # The stream's beats from the oldest (each its ``last``): those held, then the memory's.
        held = [sl.main] + ([sl.skid] if sl.skid is not None else []) + \
            ([arb.skid_last] if arb.skid else [])
        in_slice = 2 if sl.skid is not None else 1
        ends, pos = set(), 0                # the moved beats that end a burst
        for q in reads:
            pos += q[0]
            if pos > beats:
                break
            ends.add(len(held) + pos - 1)

        def last(i):
            return held[i] if i < len(held) else i in ends

        n_slice, n_arb = (1, 0) if lane is None else (1 + (lane != 0), int(lane != 1))
        assert len(held) + beats - takes == n_slice + n_arb, "beat skip: the pattern broke"
        handed = range(in_slice, takes + n_slice)    # the beats handed to the slice
        arb.takes += len(handed)
        for i in handed:
            if last(i):
                tags.popleft()
        while reads and beats >= reads[0][0]:
            beats -= reads.popleft()[0]
            m.read_done += 1
        if beats:
            reads[0][0] -= beats
        sl.main = last(takes)
        sl.skid = last(takes + 1) if n_slice == 2 else None
        arb.skid = bool(n_arb)
        arb.skid_last = last(takes + n_slice) if n_arb else False

    def _write(self, j: int):
        """(cycles, elements, beats) of at most ``j`` cycles of the head write burst, or
        None. The OUT reader must keep an element ready (``left`` ≥ 1 after each advance),
        the writer's row must not end and its burst must not end."""
        core = self.core
        m, st = core.mem, core.store
        w = st.writer
        b = min(m.writes[0][0], w.dw.burst() - w.beat)     # beats left in the burst
        if w.per:               # one element per cycle, a beat on lane per − 1
            j = min(j, b * w.per - 1 - w.lane, w.left - 1, st.left - 1)
            return (j, j, (w.lane + j) // w.per) if j > 0 else None
        k = w.k
        if w.iw.left == 0:      # a drain: on through the arrived bursts behind the head
            t, writes = core.t, m.writes
            for i in range(1, len(writes)):
                if writes[i][1] > t:
                    break
                b += writes[i][0]
        j = min(j, b - 1, st.left * k - 1 - w.sub if k > 1 else st.left - 1)
        if j <= 0:
            return None
        return j, (w.sub + j) // k if k > 1 else j, j

    def _write_beats(self, t: int, beats: int) -> None:
        """Move ``beats`` write beats from cycle ``t`` on, one per cycle: whole bursts first
        (a drain, see :meth:`_write`; never the last one's last beat), as the clock edge of
        their last beat does (``MemoryTiming.write_beat``, ``DmaWriter.update``)."""
        core = self.core
        m, w = core.mem, core.store.writer
        writes = m.writes
        while beats >= writes[0][0]:
            n = writes.popleft()[0]
            beats -= n
            t += n
            m.write_done += 1
            m.acks.append(t - 1 + m.latency)
            w.dw.advance()
            w.beat = 0
            w.ahead -= 1
        writes[0][0] -= beats
        w.beat += beats

    # ------------------------------------------------------------------ the skip
    def _skip(self, ld, wr_on: bool, max_cycles: int) -> bool:
        core = self.core
        j = self._window(max_cycles, (ld is not None, wr_on))
        rd = wr = None
        if ld is not None:
            rd = self._read(ld, j)
            if rd is None:
                return False
            j = rd[1]
        if wr_on:
            wr = self._write(j)
            if wr is None:
                return False
            if rd is not None and wr[0] < j:
                rd = self._read(ld, wr[0])
                if rd is None:
                    return False
            j = wr[0]
        if j <= 0:
            return False
        # The copy shares the DRAM and buffers (Core._copy): no instruction starts inside the
        # window.
        ref = core._copy() if self.verify else None
        t = core.t
        m = core.mem
        last_r = last_w = None
        if rd is not None:
            ld, j, e, takes, beats = rd
            r = ld.reader
            if r.per:
                last_r = _last_beat(t, j, r.lane, r.per, 1) if beats else None
                r.lane = (r.lane + j) % r.per
            else:
                last_r = t + j - 1
                if r.k > 1:
                    r.cnt = (r.cnt + j) % r.k
            r.left -= e
            ld.n -= e
            ld.writes += e
            m.read_beats += beats
            self._read_moves(takes, beats, r.lane if r.per else None)
        if wr is not None:
            j, e, beats = wr
            st = core.store
            w = st.writer
            if w.per:
                last = _last_beat(t, j, w.lane, w.per) if beats else None
                w.lane = (w.lane + j) % w.per
                w.left -= e
            else:
                last = t + j - 1
                if w.k > 1:
                    w.sub = (w.sub + j) % w.k
            st.left -= e
            m.write_beats += beats
            last_w = last if beats else None
            self._write_beats(t, beats)
            if self._folds_acks(True):
                acks, end = m.acks, t + j
                while acks and acks[0] < end:
                    acks.popleft()
                    core.arb.writes -= 1
                    w.pending -= 1
                    self.acks_folded += 1
        # The memory's last beat sets its slot and whose turn it is (a read and a write in
        # the same cycle: the write is applied last).
        if last_r is not None or last_w is not None:
            m.slot = max(x for x in (last_r, last_w) if x is not None) + 1
            m.write_turn = last_w is None or (last_r is not None and last_r > last_w)
        core.skip(t + j)
        if ref is not None:
            self._check(ref)
        self.skips += 1
        self.skipped_cycles += j
        return True

    def _check(self, ref) -> None:
        """Step ``ref`` (the core before the skip) to the skip's target and compare."""
        from .period import check_by_stepping
        ref.periods = ref.beats = None
        check_by_stepping(self.core, ref, "beat skip", lambda c: (c.mem.slot, c.mem.write_turn))
