"""The whole core, one clock cycle at a time (``hw/core.py``): control, errors and counters."""

from __future__ import annotations

import copy

from isa.arch import COUNTERS, HEAD_SETTLE
from isa.config import VTAConfig
from isa.errors import ErrorCode
from sim.functional import SimulationError

from .compute import ComputeModule
from .decode import Decoder
from .fetch import FetchModule
from .load import LoadModule
from .memport import MemArbiter, MemoryTiming
from .period import GRANT, PeriodSkipper, check_by_stepping
from .queues import CommandQueue, TokenQueues
from .semantics import FastSemantics
from .stream import BeatSkipper
from .store import StoreModule

__all__ = ["Core", "COUNTERS", "SemanticsMismatch"]

# COUNTERS: the RTL's event counters (``hw.core.COUNTERS``), in register-map order.

_NO_INDEX = (1 << 32) - 1
_NONE4 = (False, False, False, False)
_NO_TAKE = (False, False, False)


class SemanticsMismatch(RuntimeError):
    """The functional semantics rejected an instruction that the hardware model accepted."""


class Core:
    """``hw.core.VTACore`` behind the memory model, launched at cycle −1.

    Cycle 0 is the first cycle the RTL's cycle counter counts (the launch pulse's next
    cycle: ``go`` high, fetch starts). :meth:`step` simulates one cycle; ``done`` is the
    register the bench polls, and ``cycles`` equals the RTL counter once it is set.
    """

    def __init__(self, cfg: VTAConfig, dram, insn_addr: int, insn_count: int):
        self.cfg = cfg
        self.dram = dram
        self.dram_size = dram.size
        self.sem = FastSemantics(cfg, dram)
        self.decoder = Decoder(cfg)
        self.mem = MemoryTiming(cfg, dram.size)
        self.arb = MemArbiter(cfg)
        self.fetch = FetchModule(cfg, dram, insn_addr, insn_count, self.decoder)
        self.load = LoadModule(cfg, dram.size, self._execute)
        self.compute = ComputeModule(cfg, dram.size, self._execute, self.sem)
        self.store = StoreModule(cfg, dram.size, self._execute)
        self.modules = (self.load, self.compute, self.store)
        self.queues = tuple(CommandQueue(cfg) for _ in range(3))
        self.tokens = TokenQueues(cfg)
        self.insn_count = insn_count
        self.t = 0
        self.running = False
        self.done = False
        self.fetch_err = self.mod_err = self.core_err = self.finish_seen = False
        self.arb_halt = False
        self.err_code = self.err_index = self.mod_code = self.mod_index = 0
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.tracing = False

    # ------------------------------------------------------------------ semantics
    def _execute(self, d) -> None:
        try:
            self.sem.execute(d.insn)
        except SimulationError as exc:
            raise SemanticsMismatch(f"the functional semantics reject an instruction the "
                                    f"hardware accepts: {exc}") from None

    @property
    def error(self) -> ErrorCode:
        if self.fetch_err or self.core_err:
            return ErrorCode(self.err_code)
        if self.mod_err:
            return ErrorCode(self.mod_code)
        return ErrorCode.NONE

    @property
    def error_index(self) -> int:
        if self.fetch_err or self.core_err:
            return self.err_index
        return self.mod_index if self.mod_err else 0

    # ------------------------------------------------------------------ one cycle
    def step(self) -> None:
        """One cycle: every block's combinational outputs from the registers (the RTL's
        dependency order), then the clock edge. (Hot: locals and no containers per cycle.)"""
        t = self.t
        fetch, load, compute, store = self.fetch, self.load, self.compute, self.store
        lq, cq, sq = self.queues
        tok, mem, arb = self.tokens, self.mem, self.arb
        count = tok.count
        go = t == 0
        fetch_err, mod_err, core_err = self.fetch_err, self.mod_err, self.core_err
        halt_modules = fetch_err or mod_err or core_err or self.finish_seen
        fetch.comb(go, fetch_err or core_err,
                   (len(lq.inner) != lq.inner_depth, len(cq.inner) != cq.inner_depth,
                    len(sq.inner) != sq.inner_depth), self.dram_size)
        failed = fetch_err or core_err or (mod_err and fetch.quiet)
        load.comb(t, lq.head_valid and lq.age == HEAD_SETTLE, lq.head, halt_modules,
                  count[1] != 0)
        compute.comb(t, cq.head_valid and cq.age == HEAD_SETTLE, cq.head, halt_modules,
                     count[0] != 0, count[3] != 0)
        store.comb(t, sq.head_valid and sq.age == HEAD_SETTLE, sq.head, halt_modules,
                   count[2] != 0)

        # Tokens: l2g 0, g2l 1, g2s 2, s2g 3.
        if load.pop or compute.pop or store.pop:
            lf = lq.head[1].f if load.pop else None
            cf = cq.head[1].f if compute.pop else None
            sf = sq.head[1].f if store.pop else None
            pop = (bool(cf and cf["pop_prev"]), bool(lf and lf["pop_next"]),
                   bool(sf and sf["pop_prev"]), bool(cf and cf["pop_next"]))
        else:
            pop = _NONE4
        lpush, cpush, spush = load.push, compute.push, store.push
        if lpush[1] or cpush[0] or cpush[1] or spush[0]:
            push = (lpush[1], cpush[0], cpush[1], spush[0])
            if push[0] and tok.overflow(0, True, pop[0]):
                load.err, load.err_index = ErrorCode.TOKEN_OVERFLOW, load.index
            if (push[1] and tok.overflow(1, True, pop[1])) or \
                    (push[2] and tok.overflow(2, True, pop[2])):
                compute.err, compute.err_index = ErrorCode.TOKEN_OVERFLOW, compute.index
            if push[3] and tok.overflow(3, True, pop[3]):
                store.err, store.err_index = ErrorCode.TOKEN_OVERFLOW, store.index
        else:
            push = _NONE4

        # Memory port: outputs of the memory and the arbiter from this cycle's registers
        # (MemoryTiming.channels and wr_ack, inlined).
        tags = arb.tags
        arb_busy = bool(tags) or arb.writes != 0
        reads, writes, acks = mem.reads, mem.writes, mem.acks
        rd_mem = bool(reads) and t >= reads[0][1] and t >= mem.slot
        wr_ready = bool(writes) and t >= writes[0][1] and t >= mem.slot
        if rd_mem and wr_ready and mem.k > 1:
            rd_mem, wr_ready = not mem.write_turn, mem.write_turn
        wr_ack = bool(acks) and acks[0] == t
        fire = -1               # the read client whose command fires
        wfire = False           # the store's write command fires
        rd_to = -1              # the read client the memory's beat goes to
        rd_last = rd_fire = False
        offers = grant = None
        arb_halt = self.arb_halt     # the RTL's arbiter halt: ``failed`` one cycle late
        if fetch.reader.iw.left or load.active.reader.iw.left or compute.active.reader.iw.left:
            offers = (fetch.cmd(), load.cmd(), compute.cmd())
        # The arbiter sees the commands in the clients' command slices.
        cmds = arb.commands()
        if cmds is not None:
            grant = arb.gnt
            if grant is not None and cmds[grant] is None:
                grant = None        # the granted client's slice holds no command
        if not arb_halt:
            if grant is not None and len(tags) != arb.n and len(reads) < mem.n:
                fire = grant
            if store.writer.iw.left:
                wcmd = store.cmd()
                if wcmd is not None and len(writes) + len(acks) < mem.n:
                    wfire = True
        # Read data through the arbiter's skid buffer (its parked beat first, else the
        # memory's, which moves whenever the buffer is empty) into the head client's slice,
        # which takes it while its own skid is empty.
        skid = arb.skid
        s0, s1, s2 = arb.slices
        if (skid or rd_mem) and tags:
            rd_to = g = tags[0]
            rd_last = arb.skid_last if skid else reads[0][0] == 1
            rd_fire = (s0 if g == 0 else s1 if g == 1 else s2).skid is None
        # Each client sees its slice's main register.
        b0, b1, b2 = s0.main, s1.main, s2.main
        wr_fire = wr_ready and store.wr_valid()

        if self.tracing:
            self._observe(t, [fire == 0, fire == 1, fire == 2, wfire], rd_fire, wr_fire)

        # Errors, FINISH, deadlock, done.
        running = self.running
        new_fetch_err = new_core_err = new_finish = False
        new_err = new_mod_err = None
        if running and fetch.err and not fetch_err and not core_err:
            new_fetch_err = True
            new_err = (fetch.err, fetch.err_index)
        best = None
        if load.err or compute.err or store.err:
            for mod in self.modules:
                if mod.err and (best is None or mod.err_index < best[1]):
                    best = (mod.err, mod.err_index)
        if running and not mod_err and best is not None:
            new_mod_err = best
        if running and compute.finish and best is None:
            new_finish = True
        if running and not halt_modules and not fetch.err and fetch.quiet and \
                (load.idle or load.blocked) and (compute.idle or compute.blocked) and \
                (store.idle or store.blocked):
            quiet = True
            all_empty = True
            blocked_min = _NO_INDEX
            for mod, q in zip(self.modules, self.queues):
                empty = mod.idle and q.level == 0
                all_empty = all_empty and empty
                if mod.blocked and q.head[0] < blocked_min:
                    blocked_min = q.head[0]
                if not (empty or mod.blocked):
                    quiet = False
                    break
            if quiet:
                new_core_err = True
                if all_empty and fetch.all_dispatched:
                    new_err = (ErrorCode.MISSING_FINISH, (self.insn_count - 1) & _NO_INDEX)
                else:
                    new_err = (ErrorCode.DEADLOCK, blocked_min)
        done = False
        if running:
            if failed and arb_halt and not arb_busy:
                done = True
            if self.finish_seen and not mod_err and not fetch_err and fetch.quiet:
                done = True

        # Counters (the RTL counts while (running | go) & ~done: every simulated cycle).
        # (Most are 0 in most cycles: test before touching the dict.)
        c = self.counters
        if fetch.busy:
            c["fetch_busy"] += 1
        if fetch.stall:
            c["fetch_stall"] += 1
        if not load.idle or load.pop:
            c["load_busy"] += 1
        if load.blocked:
            c["load_stall"] += 1
        if not compute.idle or compute.pop:
            c["compute_busy"] += 1
        if compute.blocked:
            c["compute_stall"] += 1
        if not store.idle or store.pop:
            c["store_busy"] += 1
        if store.blocked:
            c["store_stall"] += 1
        run = compute.run
        if run is not None and run.done(t):
            c["gemm_uops" if run.gemm else "alu_uops"] += 1
        if arb_busy:
            c["mem_busy"] += 1

        # Clock edge.
        if wr_ack:
            mem.acked(t)
            arb.writes -= 1
        if rd_mem and not skid:
            mem.read_beat(t)
            if not rd_fire:             # parked
                arb.skid, arb.skid_last = True, rd_last
        elif rd_fire:
            arb.skid = False
        if rd_fire:
            arb.takes += 1
            if rd_last:
                tags.popleft()
        if wr_fire:
            mem.write_beat(t)
        if fire >= 0:
            cmd = cmds[fire]
            mem.read_command(t, cmd[0], cmd[1], fire)
            tags.append(fire)
            arb.ptr = (fire + 1) % 3
        if grant is None or fire >= 0:      # no client waits on the grant: re-pick
            arb.gnt = arb.pick(cmds) if cmds is not None else None
        # The clients' command slices: a client's command is taken while its slice's skid is
        # empty (the client's handshake), the main register moves on the arbiter's.
        took = _NO_TAKE
        if offers is not None or cmds is not None:
            took = [False, False, False]
            for i, sl in enumerate(arb.cmd_slices):
                offer = offers[i] if offers is not None else None
                if offer is not None or sl.main is not None:
                    took[i] = offer is not None and sl.skid is None
                    sl.edge(offer, fire == i)
        if wfire:
            mem.write_command(t, *wcmd)
            arb.writes += 1
        entry = (fetch.index, fetch.buf[0]) if fetch.dispatch is not None else None
        lhead, chead, shead = lq.head, cq.head, sq.head
        if b0 is not None or rd_to == 0:
            s0.edge(rd_last if rd_to == 0 else None, b0 is None or fetch.rd_ready())
        if b1 is not None or rd_to == 1:
            s1.edge(rd_last if rd_to == 1 else None, b1 is None or load.rd_ready())
        if b2 is not None or rd_to == 2:
            s2.edge(rd_last if rd_to == 2 else None, b2 is None or compute.rd_ready())
        fetch.update(go, took[0], b0 is not None, b0 is True)
        load.update(t, lhead, took[1], b1 is not None, b1 is True)
        compute.update(t, chead, took[2], b2 is not None, b2 is True)
        store.update(t, shead, wfire, wr_ready, wr_ack)
        d = fetch.dispatch
        # (A queue with nothing written, read or ageing keeps its registers: no call.)
        if d == 0 or load.pop or lq.inner or (lq.head_valid and lq.age != HEAD_SETTLE):
            lq.update(d == 0, entry, load.pop)
        if d == 1 or compute.pop or cq.inner or (cq.head_valid and cq.age != HEAD_SETTLE):
            cq.update(d == 1, entry, compute.pop)
        if d == 2 or store.pop or sq.inner or (sq.head_valid and sq.age != HEAD_SETTLE):
            sq.update(d == 2, entry, store.pop)
        if push is not _NONE4 or pop is not _NONE4:
            tok.update(push, pop)
        if go:
            self.running = True
        if new_fetch_err:
            self.fetch_err = True
        if new_core_err:
            self.core_err = True
        if new_err is not None:
            self.err_code, self.err_index = new_err
        if new_mod_err is not None:
            self.mod_err = True
            self.mod_code, self.mod_index = new_mod_err
        if new_finish:
            self.finish_seen = True
        self.done = done
        self.arb_halt = failed
        self.t = t + 1

    @property
    def cycles(self) -> int:
        return self.t


def _snapshot(self) -> tuple:
    """Every register that a cycle can change, except time itself (see :meth:`run`); the
    last :data:`_RAMPS` values are the ramp registers (see :func:`_ramp`). It is compared
    with the snapshot from just before the cycle, so the memory's queues and the arbiter's
    tags are their event counts: between two cycles they change only by a command
    (``bursts``), a beat (``read_beats``, ``write_beats``), a burst's end (``read_done``,
    ``write_done``) and a ``wr_ack`` (``arb.writes``)."""
    f, ld, cp, st = self.fetch, self.load, self.compute, self.store
    fr, la, ca, w = f.reader, ld.active, cp.active, st.writer
    lr, cr = la.reader, ca.reader
    lq, cq, sq = self.queues
    m, arb = self.mem, self.arb
    return (self.running, self.done, self.arb_halt, self.fetch_err, self.mod_err, self.core_err,
            self.finish_seen, m.read_beats, m.write_beats, m.read_done, m.write_done,
            len(m.acks), m.slot, m.write_turn, m.bursts, arb.ptr, arb.gnt, arb.writes,
            arb.skid, arb.skid and arb.skid_last, *(sl.state() for sl in arb.slices),
            *(sl.state() for sl in arb.cmd_slices), f.slice.state(),
            f.fsm, f.index, len(f.buf), f.delivered, f.inflight,
            f.w1 is None, f.w1_done, fr.iw.left, fr.active, fr.cnt,
            fr.lane, ld.fsm, ld.index, id(la), la.fsm, la.r, lr.iw.left, lr.active,
            lr.cnt, lr.lane, lr.left,
            cp.fsm, cp.index, id(ca), ca.fsm, ca.r, cr.iw.left, cr.active, cr.cnt,
            cr.lane, cr.left,
            st.fsm, st.index, st.left, st.valid, w.iw.left, w.active, w.pending, w.ahead, w.beat,
            w.sub, w.lane, w.left,
            len(lq.inner), lq.head_valid, len(cq.inner), cq.head_valid,
            len(sq.inner), sq.head_valid, *self.tokens.count,
            lq.age, cq.age, sq.age, la.n, ca.n)


#: How many ramp registers end :meth:`Core.snapshot`: the three queue heads' ages, then the
#: active load and compute loaders' element counters.
_RAMPS = 5
#: TensorLoader states writing zeros, one per cycle (ZERO, LPAD, RPAD).
_PADDING = (2, 3, 5)


def _ramp(self, before: tuple, after: tuple) -> int:
    """Cycles from ``self.t`` on that repeat the last one, which changed only ramp registers
    (``before``/``after``: their values around it), or 0.

    A ramp register counts by one each cycle and is read only by one comparison: a queue
    head's ``age`` counts up to ``HEAD_SETTLE`` (``ready`` is its only output), a loader
    writing zeros counts ``n`` down to 1 (its row or padding ends there; nothing else reads
    ``n``). While no comparison changes, every next cycle computes the same outputs as the
    last one and moves the ramps by the same steps, so the cycles up to the first change
    repeat it (:meth:`skip` then moves the ramps)."""
    m = None
    for q, a0, a1 in zip(self.queues, before, after):
        if a1 != a0:
            if a1 != a0 + 1 or not q.head_valid:
                return 0
            room = HEAD_SETTLE - a1     # cycles whose comb still sees age < HEAD_SETTLE
            m = room if m is None or room < m else m
    for ld, n0, n1 in ((self.load.active, before[3], after[3]),
                       (self.compute.active, before[4], after[4])):
        if n1 != n0:
            if n1 != n0 - 1 or ld.fsm not in _PADDING:
                return 0
            room = n1 - 1               # cycles whose update still sees n > 1
            m = room if m is None or room < m else m
    return m or 0


def _move_ramps(self, before: tuple, after: tuple, n: int) -> None:
    """Move the ramp registers that moved in the last cycle (``before``/``after``) by ``n``
    more steps (and the zeros written with them)."""
    for q, a0, a1 in zip(self.queues, before, after):
        if a1 != a0:
            q.age += n
    for ld, n0, n1 in ((self.load.active, before[3], after[3]),
                       (self.compute.active, before[4], after[4])):
        if n1 != n0:
            ld.n -= n
            ld.writes += n


def _next_event(self, t: int) -> int:
    """The first cycle ≥ ``t`` in which a time comparison of some block changes its outputs."""
    nxt = self.mem.next_times()
    run = self.compute.run
    if run is not None and self.compute.fsm == 2:
        nxt += run.events(t)
    later = [x for x in nxt if x >= t]
    return min(later) if later else t


def _skip(self, until: int) -> None:
    """Advance from ``self.t`` to ``until`` through cycles identical to the last one."""
    t = self.t
    n = until - t
    fetch, load, compute, store = self.fetch, self.load, self.compute, self.store
    c = self.counters
    c["fetch_busy"] += fetch.busy * n
    c["fetch_stall"] += fetch.stall * n
    c["load_busy"] += ((not load.idle) or load.pop) * n
    c["load_stall"] += load.blocked * n
    c["compute_busy"] += ((not compute.idle) or compute.pop) * n
    c["compute_stall"] += compute.blocked * n
    c["store_busy"] += ((not store.idle) or store.pop) * n
    c["store_stall"] += store.blocked * n
    c["mem_busy"] += (not self.arb.idle) * n
    run = compute.run
    if run is not None:
        c["gemm_uops" if run.gemm else "alu_uops"] += run.done_pulses(t, until)
    if self.tracing:
        waiting, idle = self._last_wait
        for i in waiting:
            self.mem_wait[_CLIENTS[i]][0] += n
        for i in idle:
            self.mem_wait[_CLIENTS[i]][1] += n
    self.t = until


#: Beats into a burst (after the beat that moved) at which :class:`PeriodSkipper` looks for a
#: period: after the first beat, over whole bursts (as they drain); in bursts of at least
#: ``_LONG_BURST`` beats also after the third and fifth, inside the burst (one beat or element,
#: up to 4 elements per beat). Shorter bursts are not worth a look inside.
_STREAM_OFFSETS = {1: 0, 3: 4, 5: 4}
_LONG_BURST = 32


def _look(burst) -> "int | None":
    """The kind of look after a beat of ``burst`` ([beats left, first cycle, beats]), or None."""
    kind = _STREAM_OFFSETS.get(burst[2] - burst[0])
    if kind and burst[2] < _LONG_BURST:
        return None
    return kind


def _run(self, max_cycles: int, fast: bool = True) -> None:
    """Step to ``done``. ``fast``: a cycle that changed no register (same snapshot before and
    after) repeats exactly until some block's time comparison changes (memory latency, the
    end of a GEMM/ALU run): jump there at once; and periods that repeat with a few registers
    counting are added at once (:class:`~sim.timing.period.PeriodSkipper`)."""
    step = self.step
    prev = None
    mem = self.mem
    periods = PeriodSkipper(self) if fast and not self.tracing else None
    beats = BeatSkipper(self) if periods is not None else None
    if beats is not None and not beats.enabled:
        beats = None
    self.periods, self.beats = periods, beats
    bursts = mem.bursts
    rbeats = wbeats = takes = 0
    arb = self.arb
    while not self.done:
        if self.t >= max_cycles:
            raise TimeoutError(f"the core did not finish within {max_cycles} cycles")
        step()
        rmoved, wmoved = mem.read_beats != rbeats, mem.write_beats != wbeats
        moved = rmoved or wmoved
        if periods is not None:
            kind = None
            if mem.bursts != bursts:
                kind = GRANT                # a command handed to the memory
            else:
                # (a read beat reaching its client: a beat parked in the arbiter's skid
                # buffer is looked at when the client takes it, as before the buffer)
                if arb.takes != takes and mem.reads:
                    kind = _look(mem.reads[0])              # 0 or 4
                if kind is None and wmoved and mem.writes:
                    kind = _look(mem.writes[0])
                    if kind is not None:
                        kind = 3 + kind // 2                # 3 or 5
                if kind is None:                # or writing padding zeros
                    la, ca = self.load.active, self.compute.active
                    if (la.fsm in _PADDING and la.n and not la.n & 3) or \
                            (ca.fsm in _PADDING and ca.n and not ca.n & 3):
                        kind = 2
            if kind is not None:
                jumped = periods.observe(max_cycles, kind)
                bursts = mem.bursts
                if jumped:
                    prev = None
                    rbeats, wbeats, takes = mem.read_beats, mem.write_beats, arb.takes
                    if beats is not None:
                        beats.forget()
                    continue
            if beats is not None and (moved or beats.pending()) \
                    and beats.observe(max_cycles):
                prev = None
                rbeats, wbeats, takes = mem.read_beats, mem.write_beats, arb.takes
                continue
        rbeats, wbeats, takes = mem.read_beats, mem.write_beats, arb.takes
        if fast:
            if moved:
                prev = None         # a beat moved: not a frozen cycle
                continue
            snap = self.snapshot()
            if snap == prev:
                until = min(self.next_event(self.t), max_cycles)
                if until > self.t:
                    self.skip(until)
                    self.skipped += 1
            elif prev is not None and snap[:-_RAMPS] == prev[:-_RAMPS]:
                ramps0, ramps1 = prev[-_RAMPS:], snap[-_RAMPS:]
                until = min(self.next_event(self.t), max_cycles, self.t + self.ramp(ramps0,
                                                                                    ramps1))
                if until > self.t:
                    ref = self._copy() if periods is not None and periods.verify else None
                    self.move_ramps(ramps0, ramps1, until - self.t)
                    self.skip(until)
                    self.ramped += 1
                    if ref is not None:
                        check_by_stepping(self, ref, "ramp skip",
                                          lambda c: (c.mem.slot, c.mem.write_turn))
                    snap = self.snapshot()      # the state before the next cycle
            prev = snap
    if self.tracing:
        self.close_spans()


def _enable_trace(self) -> None:
    """Record instruction spans, token waits, bursts and memory waits (for sim.cycle_trace)."""
    self.tracing = True
    self.mem.log = []
    for mod in self.modules:
        mod.log = []
    self.blocked_spans = {m.name: [] for m in self.modules}
    self.fetch_stall_spans = []
    self._since = {}
    #: per client: cycles with a command waiting for the port, and cycles owning the port
    #: without a beat moving (latency, ack)
    self.mem_wait = {name: [0, 0] for name in ("fetch", "load", "compute", "store")}
    self._last_wait = ((), ())


_CLIENTS = ("fetch", "load", "compute", "store")


def _observe(self, t, cmd_fire, rd_fire, wr_fire) -> None:
    # (a read command waits at its client or in its command slice until it fires)
    held = [sl.main is not None for sl in self.arb.cmd_slices] + [False]
    pend = (self.fetch.cmd(), self.load.cmd(), self.compute.cmd(), self.store.cmd())
    waiting = [i for i, c in enumerate(pend) if (c is not None or held[i]) and not cmd_fire[i]]
    for i in waiting:
        self.mem_wait[_CLIENTS[i]][0] += 1
    # Clients with a burst in flight none of whose beats moves in this cycle.
    idle = set(self.arb.tags)
    if rd_fire:
        idle.discard(self.arb.tags[0])
    if self.arb.writes and not wr_fire:
        idle.add(3)
    for i in idle:
        self.mem_wait[_CLIENTS[i]][1] += 1
    self._last_wait = (tuple(waiting), tuple(idle))
    for mod in self.modules:
        self._span(mod.name, mod.blocked, t, self.blocked_spans[mod.name])
    self._span("fetch", self.fetch.stall, t, self.fetch_stall_spans)


def _span(self, key, on, t, spans) -> None:
    since = self._since.get(key)
    if on and since is None:
        self._since[key] = t
    elif not on and since is not None:
        spans.append((since, t))
        del self._since[key]


def _close_spans(self) -> None:
    t = self.t
    for key, since in list(self._since.items()):
        spans = self.fetch_stall_spans if key == "fetch" else self.blocked_spans[key]
        spans.append((since, t))
    self._since.clear()


Core._observe = _observe
Core._span = _span
Core.close_spans = _close_spans


Core.run = _run
Core.snapshot = _snapshot
Core.next_event = _next_event
Core.skip = _skip
Core.skipped = 0
Core.ramp = _ramp
Core.move_ramps = _move_ramps
Core.ramped = 0


def _copy_core(self):
    """A copy of the core sharing its DRAM, on-chip buffers (the semantics), decoder and
    skippers, the skippers off: to check a ramp skip by stepping (no instruction starts inside
    one; if a wrong skip let one start, the states compared differ anyway)."""
    shared = (self.dram, self.sem, self.decoder, self.periods, self.beats)
    ref = copy.deepcopy(self, {id(x): x for x in shared})
    ref.periods = ref.beats = None
    return ref


Core._copy = _copy_core
Core.enable_trace = _enable_trace
