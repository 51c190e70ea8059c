"""Skipping periodic stretches: whole DMA bursts (and rows) at once.

While a transfer streams (a long row of bursts, the bursts of a load alternating with those of
a store, row after row of a padded load), the core repeats the same sequence of cycles with a
few registers counting: the beats and elements left, the row number, addresses, the event
counters. :class:`PeriodSkipper` looks at the state just after every cycle that grants the memory
port, after the first few beat cycles of each burst and in every fourth cycle of a row of
padding zeros. Every register is either *exact* (FSM states, instruction indices, queue levels,
tokens, everything else) or one of the *counting* registers of :meth:`PeriodSkipper.counting`
(times relative to the cycle). When such a cycle sees the same exact registers as an earlier
one of its kind *T* cycles before, the cycles between them form a period; the next periods
repeat it, each shifting the counting registers by the same amounts *D*, as long as

* no comparison the RTL makes on a counting register changes its outcome (``n == 1``,
  ``beats_left < room`` for every room ≤ ``max_burst_beats``, ``left != 0``, ``cnt == k − 1``,
  ``beat == blen``, the memory's ``beats_left == 1`` and latency, ``r`` against the padding
  rows, ``y == y_size − 1``, the cycle against the GEMM/ALU run's timeline): every value
  from the period's start to the value after the last skipped period lies on one side of each
  comparison. The counting registers only count monotonically between assignments, so the
  values inside a period lie between its ends;
* no counting register with *D* ≠ 0 is assigned in the period: a reader's (writer's) beat
  counter within an element (``cnt``, ``sub``) may change only while no element completes (it
  wraps to 0 when one does: then it must repeat exactly); an element counter (``n``, ``left``,
  ``beats_left``) may change only while its row (``r``, ``y``) stays; when rows change, the
  element counters must repeat exactly (*D* = 0) and the row address must move by whole
  ``max_burst_beats × bus_bytes`` blocks (the same burst split in every row); a grant assigns
  the memory's beats and latency and the writer's beat count: they must repeat exactly when
  the period holds a grant;
* no instruction starts (the module indices, fetch and the queues are exact).

Then ``m`` periods are added at once: ``t`` += ``m·T``, each counting register and event
counter += ``m·D``. The tests compare this with stepping every cycle and with the RTL, and
(``verify``) every jump's whole state with a copy of the core stepped to the same cycle.
"""

from __future__ import annotations

import copy

__all__ = ["PeriodSkipper", "JumpMismatch"]

#: How many earlier looks with the same exact registers are tried as a period's start.
HISTORY = 4
#: After a look at a grant that does not jump, the next grant is passed over: most looks at
#: grants fail (the commands of different instructions), while the periods they find still
#: show at the next grants. Looking at every other grant keeps the phase of two-burst periods
#: (an element of two bursts); passing over two after two failures (the earlier choice) met it
#: only every third look and stepped 14 % more cycles on the blocked GEMM. A jump resets the
#: back-off. Only an optimisation: a look passed over never changes the result, only the
#: speed. (Looks inside bursts and at padding succeed far more often: backing off there costs
#: more cycles stepped than the checks saved.)
GRANT_BACKOFF_MAX = 1
#: The kind of look at a cycle that handed a command to the memory (see ``Core.run``).
GRANT = 1


def _parked_end(arb) -> bool:
    """The arbiter's skid buffer holds a burst's last beat: its first tag is not the memory's
    (whose bursts go with the tags behind it)."""
    return arb.skid and arb.skid_last


def _limit(v0: int, v1: int, d: int, cuts, m: int) -> int:
    """The most periods ``m`` after which the values from ``v0`` to ``v1 + m·d`` cross no cut
    (a cut *c*: some comparison differs between *c* − 1 and *c*)."""
    if d > 0:
        for c in cuts:
            if c > v0:
                m = min(m, (c - 1 - v1) // d)
    else:
        for c in cuts:
            if c <= v0:
                m = min(m, (v1 - c) // -d)
    return m


def _held(sl) -> tuple:
    """A command slice of the load or compute module: (exact, counting). The commands it
    holds are exact by their burst length; their addresses count (they are copies of the
    client's walker, which counts)."""
    main, skid = sl.main, sl.skid
    return ((None if main is None else main[1], None if skid is None else skid[1]),
            (0 if main is None else main[0], 0 if skid is None else skid[0]))


class JumpMismatch(AssertionError):
    """A jump (in :attr:`PeriodSkipper.verify` mode) left a state stepping does not reach."""


class PeriodSkipper:
    """Records the state after each grant and jumps over repeated periods (see the module)."""

    def __init__(self, core):
        self.core = core
        cfg = core.cfg
        self.mb = cfg.max_burst_beats
        self.block = cfg.max_burst_beats * cfg.bus_bytes
        self.burst_cuts = tuple(range(self.mb + 2))
        self.loaders = (core.load.inp, core.load.wgt, *core.compute.loaders)
        self.seen = {}
        #: tests: check every jump against a copy of the core stepped cycle by cycle
        self.verify = False
        self.jumps = 0
        self.skipped_cycles = 0
        self._ms = None
        #: grant looks still to pass over, and the back-off that set it
        self._pass, self._backoff = 0, 0

    # ------------------------------------------------------------------ the state
    def exact(self, ident=id) -> tuple:
        """Every register that must repeat exactly (``ident``: how an instruction's fields
        and a GEMM/ALU run are told apart). The memory's state counts times relative to
        the cycle."""
        core = self.core
        m, f, cp, st, arb = core.mem, core.fetch, core.compute, core.store, core.arb
        fr, w = f.reader, st.writer
        mb = self.mb
        key = [core.running, core.done, core.arb_halt, core.fetch_err, core.mod_err, core.core_err,
               core.finish_seen, core.err_code, core.err_index, core.mod_code, core.mod_index,
               self._mem_state()[0], arb.ptr, arb.gnt, arb.skid, arb.skid and arb.skid_last,
               *(sl.state() for sl in arb.slices), f.slice.state(),
               arb.cmd_slices[0].state(), *(_held(sl)[0] for sl in arb.cmd_slices[1:]),
               f.fsm, f.running, f.index, len(f.buf), f.delivered, f.inflight,
               f.w1 is None, f.w1_done,
               fr.active, fr.cnt, fr.lane, fr.left, fr.iw.cur, fr.iw.left,
               *core.tokens.count,
               core.load.fsm, core.load.index, core.load.active is core.load.wgt,
               cp.fsm, cp.index, ident(cp.run), cp.loaders.index(cp.active),
               st.fsm, st.index, st.valid, w.active, w.sub, w.lane,
               w.iw.cur % mb, w.dw.cur % mb]
        for q in core.queues:
            key += (len(q.inner), q.head_valid, q.age, q.head[0] if q.head is not None else None,
                    q.inner[0][0] if q.inner else None)
        for ld in self.loaders:
            r = ld.reader
            key += (ld.fsm, ident(ld.f), r.active, r.cnt, r.lane, r.iw.cur % mb)
        return tuple(key)

    def counting(self) -> list:
        """The counting registers, in :meth:`_apply`'s order."""
        out = []
        for ld in self.loaders:
            r, iw = ld.reader, ld.reader.iw
            out += (ld.r, ld.n, ld.writes, r.left, r.drow, r.drows_left,
                    iw.cur, iw.left, iw.row, iw.rows_left)
        core = self.core
        st = core.store
        w = st.writer
        m = core.mem
        out += (st.left, w.left, w.beat, w.pending, w.ahead, core.arb.writes)
        for wk in (w.iw, w.dw):
            out += (wk.cur, wk.left, wk.row, wk.rows_left)
        out += (m.bursts, m.read_beats, m.write_beats, m.read_done, m.write_done)
        for sl in core.arb.cmd_slices[1:]:
            out += _held(sl)[1]
        out += core.counters.values()
        out += self._mem_state()[1]      # last: its length varies
        return out

    def _mem_state(self):
        """``MemoryTiming.state`` of this cycle (computed once per look)."""
        core = self.core
        if self._ms is None or self._ms[0] != core.t:
            tags = core.arb.tags
            if _parked_end(core.arb):
                tags = list(tags)[1:]
            self._ms = (core.t, core.mem.state(core.t, tags))
        return self._ms[1]

    def _apply(self, vals, t: int) -> None:
        it = iter(vals)
        for ld in self.loaders:
            r, iw = ld.reader, ld.reader.iw
            ld.r, ld.n, ld.writes = next(it), next(it), next(it)
            r.left, r.drow, r.drows_left = next(it), next(it), next(it)
            iw.cur, iw.left, iw.row, iw.rows_left = next(it), next(it), next(it), next(it)
        core = self.core
        st = core.store
        w = st.writer
        m = core.mem
        st.left, w.left, w.beat = next(it), next(it), next(it)
        w.pending, w.ahead, core.arb.writes = next(it), next(it), next(it)
        for wk in (w.iw, w.dw):
            wk.cur, wk.left, wk.row, wk.rows_left = next(it), next(it), next(it), next(it)
        m.bursts, m.read_beats, m.write_beats, m.read_done, m.write_done = \
            next(it), next(it), next(it), next(it), next(it)
        for sl in core.arb.cmd_slices[1:]:
            main, skid = next(it), next(it)
            if sl.main is not None:
                sl.main = (main, sl.main[1])
            if sl.skid is not None:
                sl.skid = (skid, sl.skid[1])
        c = core.counters
        for k in c:
            c[k] = next(it)
        tags = core.arb.tags
        parked = tags.popleft() if _parked_end(core.arb) else None
        m.set_state(core.t, list(it), tags)
        if parked is not None:
            tags.appendleft(parked)
        m.shift(t - core.t)
        core.t = t

    # ------------------------------------------------------------------ the jump
    def observe(self, max_cycles: int, kind: int) -> bool:
        """Called after a cycle that granted the port or streamed one of a burst's first beats;
        True if it jumped. The period may span several such cycles with the same exact
        registers (e.g. the bursts of one row): the last few are tried, nearest first.
        After a grant look that fails, the next few are passed over (``GRANT_BACKOFF_MAX``)."""
        if kind == GRANT and self._pass:
            self._pass -= 1
            return False
        key = (kind, self.exact())     # grants, beats and padding: separate histories
        v1 = self.counting()
        t1 = self.core.t
        seen = self.seen
        hist = seen.get(key)
        if hist is None:
            if len(seen) > 256:
                seen.clear()
            hist = seen[key] = []
        for t0, v0 in reversed(hist):
            if self._jump(t0, v0, t1, v1, max_cycles):
                hist[:] = [(self.core.t, self.counting())]
                self._backoff = 0
                return True
        hist.append((t1, v1))
        if len(hist) > HISTORY:
            del hist[0]
        if kind == GRANT:
            self._pass = self._backoff = min(2 * self._backoff or 1, GRANT_BACKOFF_MAX)
        return False

    def _walker(self, v0, v1, d, i: int, m: int) -> int:
        """Limit ``m`` for a burst walker's (cur, left, row, rows_left) at ``i``; -1: no."""
        dcur, dleft, drow, drows = d[i:i + 4]
        if drows:               # rows change: the row's beats are assigned, so they repeat
            if dleft or drow % self.block:
                return -1
            m = _limit(v0[i + 3], v1[i + 3], drows, (0, 1), m)
        elif dleft:         # left < room, left == burst, left != 0 (room: mb − cur mod mb)
            m = _limit(v0[i + 1], v1[i + 1], dleft, self.burst_cuts, m)
        return m

    def _memory(self, v0, v1, d, done: int, i: int, m: int, period: int) -> int:
        """Limit ``m`` for the memory (see ``MemoryTiming.state``): the heads and first runs
        at ``i``, then the times to come; ``done``: the completed bursts (reads, writes)."""
        if m < 1:
            return m
        mem, n = self.core.mem, self.core.cfg.mem_outstanding
        dhr, drr, dhw, drw = d[i:i + 4]
        for dh, dr, ddone, h, q, acks in ((dhr, drr, d[done], i, mem.reads, 0),
                                          (dhw, drw, d[done + 1], i + 2, mem.writes,
                                           len(mem.acks))):
            if dh:              # a head counting down: no burst may end in the period
                if ddone:
                    return -1
                m = _limit(v0[h], v1[h], dh, (1, 2), m)
            if dr:              # a run shrinking or growing: bursts end, heads repeat
                if dh:
                    return -1
                others = len(q) - 1 - v1[h + 1] + acks
                m = _limit(v0[h + 1], v1[h + 1], dr, (1, n - 1 - others), m)
        for j in range(i + 4, len(d)):     # times to come must stay to come (> 0)
            if d[j]:
                # The same event seen at both ends counts down by the period; any other
                # change means the list's entries are not the same events (not a period).
                if d[j] != -period:
                    return -1
                m = _limit(v0[j], v1[j], d[j], (1,), m)
        return m

    def _jump(self, t0, v0, t1, v1, max_cycles) -> bool:
        core = self.core
        period = t1 - t0
        m = (max_cycles - t1) // period
        if m < 1:
            return False
        d = [b - a for a, b in zip(v0, v1)]
        i = 0
        bb = core.cfg.bus_bytes
        for ld in self.loaders:
            dr, dn, _, dl, ddrow, ddrows = d[i:i + 6]
            if (dr or dn or dl or ddrow or ddrows) and ld.f is None:
                return False
            if dr:          # loader rows change: n is assigned, it must repeat
                if dn:
                    return False
                f = ld.f
                m = _limit(v0[i], v1[i], dr, (f["y_pad_0"], f["y_pad_0"] + f["y_size"],
                                              f["rows"], f["rows"] + 1), m)
            elif dn:
                m = _limit(v0[i + 1], v1[i + 1], dn, (1, 2), m)
            if ddrows:      # data rows change: the element count is assigned
                if dl or ddrow % bb:
                    return False
                m = _limit(v0[i + 5], v1[i + 5], ddrows, (0, 1), m)
            elif dl:
                m = _limit(v0[i + 3], v1[i + 3], dl, (0, 1, 2), m)
            m = self._walker(v0, v1, d, i + 6, m)
            if m < 1:
                return False
            i += 10
        dst_left, dw_left, dbeat, dpend, dahead, dwrites = d[i:i + 6]
        if dst_left:
            m = _limit(v0[i], v1[i], dst_left, (0, 1), m)
        n = core.cfg.mem_outstanding
        if dpend:               # write bursts unacknowledged: != 0, != N
            m = _limit(v0[i + 3], v1[i + 3], dpend, (1, n), m)
        if dahead:
            m = _limit(v0[i + 4], v1[i + 4], dahead, (1,), m)
        if dwrites:
            m = _limit(v0[i + 5], v1[i + 5], dwrites, (1,), m)
        m = self._walker(v0, v1, d, i + 6, m)
        if m < 1:
            return False
        dcur, dleft, _, drows = d[i + 10:i + 14]
        if dw_left:
            if drows:
                return False
            m = _limit(v0[i + 1], v1[i + 1], dw_left, (0, 1, 2), m)
        if dbeat:           # no burst may end inside the period (the beat count restarts)
            if dcur or dleft or drows:
                return False
            b = core.store.writer.dw.burst()     # the burst does not change: beat == b − 1
            m = _limit(v0[i + 2], v1[i + 2], dbeat, (b - 1, b), m)
        m = self._walker(v0, v1, d, i + 10, m)
        # A command held in the load or compute module's slice is a copy of its walker's
        # address: it must move with it (the same phase in every period), else no period.
        for h, mod, sl in ((i + 19, core.load, core.arb.cmd_slices[1]),
                           (i + 21, core.compute, core.arb.cmd_slices[2])):
            cur = d[self.loaders.index(mod.active) * 10 + 6] * bb
            if (sl.main is not None and d[h] != cur) or \
                    (sl.skid is not None and d[h + 1] != cur):
                return False
        m = self._memory(v0, v1, d, i + 17, len(v1) - len(self._mem_state()[1]), m, period)
        run = core.compute.run
        if run is not None:
            for e in run.events(t0):
                m = _limit(e - t0, e - t1, -period, (0, 1), m)
        if m < 1:
            return False
        jump = m * period
        ref = copy.deepcopy(core) if self.verify else None
        self._apply([b + m * x for b, x in zip(v1, d)], t1 + jump)
        if ref is not None:
            self._check(ref)
        self.jumps += 1
        self.skipped_cycles += jump
        return True

    def _check(self, ref) -> None:
        """Step ``ref`` (the core before the jump) to the jump's target and compare."""
        ref.periods = None
        check_by_stepping(self.core, ref, "jump")


def check_by_stepping(core, ref, what: str, state=lambda c: ()) -> None:
    """Step ``ref`` (a copy of ``core`` from before a skip, its skippers off) to ``core``'s
    cycle; raise :class:`JumpMismatch` unless both reach the same state (``state(core)``
    adds what a skipper sets beyond the exact state)."""
    while ref.t < core.t and not ref.done:
        ref.step()
    mine, theirs = PeriodSkipper(core), PeriodSkipper(ref)
    a = (core.t, *state(core), mine.exact(_stable), mine.counting())
    b = (ref.t, *state(ref), theirs.exact(_stable), theirs.counting())
    if a != b:
        raise JumpMismatch(f"{what} to cycle {core.t}: skipped {a} stepped {b}")


def _stable(obj):
    """An instruction's fields or a run, by value (for comparing a core with its copy)."""
    if isinstance(obj, dict):
        return tuple(sorted(obj.items()))
    if obj is None:
        return None
    return tuple(getattr(obj, k) for k in obj.__slots__)
