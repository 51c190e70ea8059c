"""The compute module (``hw/compute.py``): LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH.

The GEMM core (``hw/gemm.py``) never stalls and the tensor ALU (``hw/alu.py``) waits only
where its micro-op indices say (one reading the result of one just ahead of it:
``isa.arch.alu_stalls``), both behind the micro-op loop (``hw/uop_loop.py``), so their
timeline is known when they start: it is computed in closed form (:class:`UopRun`) instead
of being shifted through pipeline registers.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from isa.arch import ALU_LATENCY, GEMM_LATENCY  # hw.gemm / hw.alu: issue to ACC write
from isa.arch import alu_dependences, alu_waits
from isa.arch import elem_bytes
from isa.config import VTAConfig
from isa.encoding import AluOp, MemType, Opcode
from isa.errors import ErrorCode

from .common import ModuleBase, range_error
from .dma import TensorLoader

__all__ = ["ComputeModule", "UopRun", "GEMM_LATENCY", "ALU_LATENCY", "CHECK_STAGE",
           "alu_stall_runs", "stall_runs", "wait_runs"]

#: Both pipelines check indices in S2: micro-op *j* of a start in *c* raises ``err`` in
#: *c* + 1 + *j* + 2 (S0 micro-op read, S1 indices, S2 range check).
CHECK_STAGE = 2

IDLE, LOADING, RUN, RETIRE = range(4)


class UopRun:
    """The timeline of one GEMM/ALU started in cycle *c* with N micro-ops (``hw.gemm.GemmCore``,
    ``hw.alu.TensorAlu``): micro-op *j* issues in *c* + 1 + *j* + *s*(*j*) and writes in
    *c* + 1 + *j* + *s*(*j*) + L (L = ``GEMM_LATENCY``, ``ALU_LATENCY``), where *s*(*j*) is the
    total wait of micro-ops 1 … *j* (:func:`isa.arch.alu_stalls`; the GEMM has none), given as
    ``stalls``: sorted, disjoint half-open runs (a, b, w) of positions a … b − 1 ≥ 1 that each
    wait w ≥ 1 cycles (a pair (a, b) means w = 1). ``busy`` lasts N + L + *s*(N − 1) cycles.
    If micro-op *j* has an index past its buffer, ``err`` rises in *c* + 3 + *j* + *s*(*j* − 1)
    (its first S2 cycle), issue stops, and the *j* micro-ops before it still complete.

    ``uop_done`` pulses with the writes, kept as one group per stall run (memory O(runs), however
    many micro-ops stall): a stall run (a, b, w) gives b − a − 1 lone pulses w + 1 cycles apart
    (micro-ops a … b − 2, each after a gap of w), then a run of consecutive pulses from
    micro-op b − 1 up to the next stall run. Group *g*: ``lo[g]`` its first pulse, ``lone[g]``
    its lone pulses, ``gap[g]`` their spacing (w + 1), ``run_hi[g]`` its last pulse,
    ``before[g]`` the pulses before it.
    """

    __slots__ = ("start", "busy_end", "err_at", "count", "gemm", "lo", "lone", "gap", "run_hi",
                 "before")

    def __init__(self, c: int, n: int, latency: int, bad: int | None, counts: bool,
                 gemm: bool, stalls=()):
        self.start = c
        self.gemm = gemm
        done = n if bad is None else bad
        runs = [(r[0], min(r[1], done), r[2] if len(r) > 2 else 1)
                for r in stalls if r[0] < done]                      # none behind the error
        stalled = sum((b - a) * w for a, b, w in runs)               # s(done - 1)
        if bad is None:
            self.err_at = -1
            self.busy_end = c + n + latency + stalled      # last busy cycle
        else:
            self.err_at = c + 1 + bad + CHECK_STAGE + stalled
            self.busy_end = max(self.err_at, c + bad + latency + stalled if bad else 0)
        self.count = done if counts else 0
        self.lo, self.lone, self.gap, self.run_hi, self.before = [], [], [], [], []
        if self.count:
            first = c + 1 + latency                  # the first write
            shift = 0                                # total wait so far
            self.lo.append(first)
            self.lone.append(0)
            self.gap.append(1)
            self.before.append(0)
            for a, b, w in runs:
                self.run_hi.append(first + a - 1 + shift)     # micro-op a − 1
                self.lo.append(first + a + shift + w)
                self.lone.append(b - a - 1)
                self.gap.append(w + 1)
                self.before.append(a)
                shift += (b - a) * w
            self.run_hi.append(first + self.count - 1 + shift)

    def busy(self, t: int) -> bool:
        return t <= self.busy_end

    def _group(self, t: int) -> int:
        """The last group starting at or before ``t`` (−1: none)."""
        return bisect_right(self.lo, t) - 1

    def done(self, t: int) -> bool:
        """Whether ``uop_done`` pulses in cycle ``t``."""
        g = self._group(t)
        if g < 0 or t > self.run_hi[g]:
            return False
        off = t - self.lo[g]
        gap = self.gap[g]
        return off >= gap * self.lone[g] or off % gap == 0

    def _pulses_before(self, t: int) -> int:
        g = self._group(t - 1)
        if g < 0:
            return 0
        off = min(t - 1, self.run_hi[g]) - self.lo[g]
        lone, gap = self.lone[g], self.gap[g]
        if off < gap * lone:
            return self.before[g] + off // gap + 1
        return self.before[g] + lone + off - gap * lone + 1

    def done_pulses(self, t0: int, t1: int) -> int:
        """uop_done pulses in cycles [t0, t1)."""
        return self._pulses_before(t1) - self._pulses_before(t0) if t1 > t0 else 0

    def events(self, t: int) -> tuple:
        """Cycles around which the run's outputs change, for a jump from ``t`` on: ``err_at``,
        ``busy_end`` + 1 and the first cycle ≥ ``t`` in which ``uop_done`` changes (later
        changes lie beyond it, so they bound no jump more): each lone pulse's cycle and the
        one after it, the run's first cycle, then the cycle after its run."""
        g = self._group(t)
        if g < 0:
            nxt = self.lo[0] if self.lo else -1
        elif t <= self.lo[g] + self.gap[g] * self.lone[g]:
            off, gap = t - self.lo[g], self.gap[g]
            r = off % gap
            nxt = t if r <= 1 or off == gap * self.lone[g] else t + gap - r
        elif t <= self.run_hi[g] + 1:
            nxt = self.run_hi[g] + 1
        else:
            nxt = self.lo[g + 1] if g + 1 < len(self.lo) else -1
        return self.err_at, self.busy_end + 1, nxt


def wait_runs(waits) -> list[tuple[int, int, int]]:
    """Per-position waits as sorted runs (a, b, w) of consecutive positions a … b − 1 that each
    wait w ≥ 1 cycles (split where w changes; positions waiting 0 are left out). ``waits``: a
    mapping {position: wait}, or a 1-D sequence/array laid out like
    :func:`isa.arch.alu_stalls` (entry j − 1 is the wait of position j)."""
    if hasattr(waits, "items"):
        pos = np.array(sorted(p for p, w in waits.items() if w), dtype=np.int64)
        w = np.array([waits[p] for p in pos.tolist()], dtype=np.int64)
    else:
        arr = np.asarray(waits, dtype=np.int64).reshape(-1)
        pos = np.flatnonzero(arr) + 1
        w = arr[pos - 1]
    return _runs(pos, w)


def _runs(pos: np.ndarray, w: np.ndarray, base: int = 0) -> list[tuple[int, int, int]]:
    """Runs (a, b, w) of sorted positions ``pos`` + ``base`` with waits ``w`` (all ≥ 1)."""
    if not pos.size:
        return []
    cut = np.flatnonzero((np.diff(pos) != 1) | (np.diff(w) != 0)) + 1
    lo = np.r_[0, cut]
    hi = np.r_[cut, pos.size]
    return list(zip((pos[lo] + base).tolist(), (pos[hi - 1] + base + 1).tolist(),
                    w[lo].tolist()))


def stall_runs(positions) -> list[tuple[int, int, int]]:
    """Sorted positions, each waiting one cycle, as runs (a, b, 1) of consecutive ones."""
    return wait_runs({int(p): 1 for p in positions})


def alu_stall_runs(semantics, insn, limit: int | None) -> list[tuple[int, int, int]]:
    """Runs (a, b, w) of the positions (in loop order, below ``limit`` if given) of the
    micro-op executions of an ALU that wait w ≥ 1 cycles (:func:`isa.arch.alu_stalls`, MUL's
    rule for a MUL), from its micro-op indices chunk by chunk, carrying the last two dsts and
    the last wait across chunks: a few numbers per run, however many micro-ops wait (a huge
    loop on one ACC entry waits at every micro-op; bounded-memory fuzz test)."""
    mul = insn.alu_opcode == AluOp.MUL
    bases = semantics._uop_bases(insn)
    runs: list[tuple[int, int, int]] = []
    hist = np.zeros(0, np.int64)      # the dsts of the last (up to) two executions before
    last_w, pos = 0, 0                # the wait of execution pos − 1; executions so far
    for dst, src, _ in semantics._uop_chunks(insn, bases, (True, not insn.use_imm, False)):
        if limit is not None and pos >= limit:
            break
        k = hist.size
        cat = np.concatenate((hist, dst))
        sc = None if src is None else np.concatenate((np.zeros(k, src.dtype), src))
        dep1, dep2 = alu_dependences(cat, sc, mul)     # entry i − 1: position i of cat
        if dep2 is not None:
            dep2 = dep2[max(k - 1, 0):]
        dep1 = dep1[max(k - 1, 0):]                # the chunk's executions, from position 1
        w = alu_waits(dep1, dep2, mul, last_w)
        first = pos if k else 1                    # the position of w[0]
        if w.size:
            last_w = int(w[-1])
        nz = np.flatnonzero(w)
        for a, b, ww in _runs(nz, w[nz], first):
            if runs and runs[-1][1] == a and runs[-1][2] == ww:   # across the chunk boundary
                runs[-1] = (runs[-1][0], b, ww)
            else:
                runs.append((a, b, ww))
        pos += dst.size
        hist = cat[-2:]
    semantics.executing = None
    if limit is not None:
        runs = [(a, min(b, limit), w) for a, b, w in runs if a < limit]
    return runs


class ComputeModule(ModuleBase):
    """``hw.compute.ComputeModule``: start in *s* (l2g token if ``pop_prev``, s2g if
    ``pop_next``): entry and tokens popped, checks, the unit starts — LOAD → a
    :class:`TensorLoader` (LOADING until its ``busy`` is low), GEMM/ALU → RUN until the
    unit's ``busy`` is low (N + the unit's latency + the ALU's stalls cycles). One RETIRE
    cycle pushes g2l (``push_prev``) and g2s (``push_next``); FINISH signals ``finish`` in its
    RETIRE cycle.
    FINISH and no-ops take two cycles.
    """

    name = "compute"

    def __init__(self, cfg: VTAConfig, dram_size: int, execute, semantics):
        super().__init__()
        acc8 = elem_bytes(cfg, MemType.ACC_8BIT)
        self.cfg = cfg
        self.geom = {MemType.UOP: (TensorLoader(cfg, cfg.uop_elem_bytes), cfg.uop_elem_bytes,
                                   cfg.uop_depth),
                     MemType.ACC: (TensorLoader(cfg, cfg.acc_elem_bytes), cfg.acc_elem_bytes,
                                   cfg.acc_depth),
                     MemType.ACC_8BIT: (TensorLoader(cfg, acc8), acc8, cfg.acc_depth)}
        self.loaders = [g[0] for g in self.geom.values()]
        self.active = self.loaders[0]
        self.dram_size = dram_size
        self.execute = execute
        self.semantics = semantics       # the functional simulator (micro-op indices)
        self.run = None                  # UopRun of the running GEMM/ALU
        self._stall_cache = {}           # (ALU, its micro-ops) -> runs of waiting positions
        self.start = None                # loader started this cycle
        self.go = None                   # what starts this cycle: "load", "run", "retire"
        self.finish = False

    def cmd(self):
        return self.active.cmd()

    def rd_ready(self) -> bool:
        return self.active.rd_ready()

    def comb(self, t: int, head_valid: bool, head, halt: bool, l2g_avail: bool,
             s2g_avail: bool) -> None:
        self.clear()
        self.start = self.go = None
        self.finish = False
        fsm = self.fsm
        if fsm == IDLE:
            self.idle = True
            if head_valid and not halt:
                index, d = head
                f = d.f
                if (f["pop_prev"] and not l2g_avail) or (f["pop_next"] and not s2g_avail):
                    self.blocked = True
                    return
                self.pop = True
                op = d.opcode
                if op == Opcode.LOAD:
                    if f["x_size"] == 0:
                        self.go = "retire"
                        return
                    loader, eb, depth = self.geom[f["memory_type"]]
                    code = range_error(f, elem_bytes=eb, depth=depth,
                                       dram_size=self.dram_size, padded=True)
                    if code:
                        self.err, self.err_index = code, index
                    else:
                        self.start = loader
                        self.go = "load"
                elif op in (Opcode.GEMM, Opcode.ALU):
                    if f["uop_end"] > self.cfg.uop_depth:
                        self.err, self.err_index = ErrorCode.SRAM_RANGE, index
                    else:
                        self.go = "run"
                else:
                    self.go = "retire"
        elif fsm == RUN:
            if t == self.run.err_at:
                self.err, self.err_index = ErrorCode.SRAM_RANGE, self.index
        elif fsm == RETIRE:
            f = self.d.f
            self.push = (bool(f["push_prev"]), bool(f["push_next"]))
            self.finish = self.d.opcode == Opcode.FINISH

    def _first_bad(self, d) -> int | None:
        """The first micro-op (in loop order) whose index is past its buffer, or None."""
        return self.semantics.first_bad(d.insn)     # from the loop bounds: bounded memory

    def _stalls(self, d, bad: int | None) -> list[tuple[int, int, int]]:
        """The ALU's runs (a, b, w) of waiting micro-op positions (cached: programs repeat
        their ALUs)."""
        insn = d.insn
        sem = self.semantics
        key = (insn, sem.uop[insn.uop_bgn:insn.uop_end].tobytes())
        hit = self._stall_cache.get(key)
        if hit is None:
            hit = alu_stall_runs(sem, insn, bad)
            if len(self._stall_cache) >= 256:
                self._stall_cache.clear()
            self._stall_cache[key] = hit
        return hit

    def update(self, t: int, head, cmd_fire: bool, rd_valid: bool, rd_last: bool) -> None:
        fsm = self.fsm
        start = self.start
        a = self.active
        if fsm == RUN and a.fsm == 0 and not cmd_fire and not rd_valid:   # the loader idle
            if not self.err and t > self.run.busy_end:
                self.fsm = RETIRE
            return
        if fsm == LOADING and not any(ld.busy for ld in self.loaders):
            self.fsm = RETIRE
        a.update(start is a, head[1].f if start is a else None, cmd_fire, rd_valid, rd_last)
        if start is not None and start is not a:
            start.update(True, head[1].f, False, False, False)
            self.active = start
        if fsm == IDLE:
            if self.go is not None:
                self.index, self.d = head
                self.started_at = t
                d = self.d
                if self.go == "run":
                    bad = self._first_bad(d)
                    gemm = d.opcode == Opcode.GEMM
                    stalls = () if gemm or not d.nuops else self._stalls(d, bad)
                    self.run = UopRun(t, d.nuops, GEMM_LATENCY if gemm else ALU_LATENCY,
                                      bad, not (gemm and d.f["reset"]), gemm, stalls)
                    if bad is None:
                        self.execute(d)
                    self.fsm = RUN
                else:
                    self.execute(d)
                    self.fsm = LOADING if self.go == "load" else RETIRE
        elif fsm == RUN:
            if not self.err and t > self.run.busy_end:
                self.fsm = RETIRE
        elif fsm == RETIRE:
            self.retired(t)
            self.fsm = IDLE
