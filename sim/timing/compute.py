"""The compute module (``hw/compute.py``): LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH.

The GEMM core (``hw/gemm.py``) never stalls and the tensor ALU (``hw/alu.py``) stalls only
where its micro-op indices say (one reading the result of the one just ahead), both behind the
micro-op loop (``hw/uop_loop.py``), so their timeline is known when they start: it is computed
in closed form (:class:`UopRun`) instead of being shifted through pipeline registers.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from isa.arch import ALU_LATENCY, GEMM_LATENCY  # hw.gemm / hw.alu: issue to ACC write
from isa.arch import alu_stalls
from isa.arch import elem_bytes
from isa.config import VTAConfig
from isa.encoding import MemType, Opcode
from isa.errors import ErrorCode

from .common import ModuleBase, range_error
from .dma import TensorLoader

__all__ = ["ComputeModule", "UopRun", "GEMM_LATENCY", "ALU_LATENCY", "CHECK_STAGE",
           "alu_stall_runs", "stall_runs"]

#: Both pipelines check indices in S2: micro-op *j* of a start in *c* raises ``err`` in
#: *c* + 1 + *j* + 2 (S0 micro-op read, S1 indices, S2 range check).
CHECK_STAGE = 2

IDLE, LOADING, RUN, RETIRE = range(4)


class UopRun:
    """The timeline of one GEMM/ALU started in cycle *c* with N micro-ops (``hw.gemm.GemmCore``,
    ``hw.alu.TensorAlu``): micro-op *j* issues in *c* + 1 + *j* + *s*(*j*) and writes in
    *c* + 1 + *j* + *s*(*j*) + L (L = ``GEMM_LATENCY``, ``ALU_LATENCY``), where *s*(*j*) counts
    the stalled micro-ops 1 … *j* (each waits ``ALU_STALL`` = 1 cycle; the GEMM has none),
    given as ``stalls``: sorted, disjoint half-open runs [a, b) of positions ≥ 1.
    ``busy`` lasts N + L + *s*(N − 1) cycles. If micro-op *j* has an index past its buffer,
    ``err`` rises in *c* + 3 + *j* + *s*(*j* − 1) (its first S2 cycle), issue stops, and the
    *j* micro-ops before it still complete.

    ``uop_done`` pulses with the writes, kept as one group per stall run (memory O(runs), however
    many micro-ops stall): a stall run [a, b) gives b − a − 1 lone pulses two cycles apart
    (micro-ops a … b − 2, each after a gap), then a run of consecutive pulses from micro-op
    b − 1 up to the next stall run. Group *g*: ``lo[g]`` its first pulse, ``lone[g]`` its
    lone pulses, ``run_hi[g]`` its last pulse, ``before[g]`` the pulses before it.
    """

    __slots__ = ("start", "busy_end", "err_at", "count", "gemm", "lo", "lone", "run_hi",
                 "before")

    def __init__(self, c: int, n: int, latency: int, bad: int | None, counts: bool,
                 gemm: bool, stalls=()):
        self.start = c
        self.gemm = gemm
        done = n if bad is None else bad
        runs = [(a, min(b, done)) for a, b in stalls if a < done]   # none behind the error
        stalled = sum(b - a for a, b in runs)
        if bad is None:
            self.err_at = -1
            self.busy_end = c + n + latency + stalled      # last busy cycle
        else:
            self.err_at = c + 1 + bad + CHECK_STAGE + stalled
            self.busy_end = max(self.err_at, c + bad + latency + stalled if bad else 0)
        self.count = done if counts else 0
        self.lo, self.lone, self.run_hi, self.before = [], [], [], []
        if self.count:
            first = c + 1 + latency                  # the first write
            shift = 0                                # stalled micro-ops so far
            self.lo.append(first)
            self.lone.append(0)
            self.before.append(0)
            for a, b in runs:
                self.run_hi.append(first + a - 1 + shift)     # micro-op a − 1
                self.lo.append(first + a + shift + 1)
                self.lone.append(b - a - 1)
                self.before.append(a)
                shift += b - a
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
        return off >= 2 * self.lone[g] or off % 2 == 0

    def _pulses_before(self, t: int) -> int:
        g = self._group(t - 1)
        if g < 0:
            return 0
        off = min(t - 1, self.run_hi[g]) - self.lo[g]
        lone = self.lone[g]
        if off < 2 * lone:
            return self.before[g] + off // 2 + 1
        return self.before[g] + lone + off - 2 * lone + 1

    def done_pulses(self, t0: int, t1: int) -> int:
        """uop_done pulses in cycles [t0, t1)."""
        return self._pulses_before(t1) - self._pulses_before(t0) if t1 > t0 else 0

    def events(self, t: int) -> tuple:
        """Cycles around which the run's outputs change, for a jump from ``t`` on: ``err_at``,
        ``busy_end`` + 1 and the first cycle ≥ ``t`` in which ``uop_done`` changes (later
        changes lie beyond it, so they bound no jump more): every cycle of a group's lone
        pulses up to its run's first, then the cycle after its run."""
        g = self._group(t)
        if g < 0:
            nxt = self.lo[0] if self.lo else -1
        elif t <= self.lo[g] + 2 * self.lone[g]:
            nxt = t
        elif t <= self.run_hi[g] + 1:
            nxt = self.run_hi[g] + 1
        else:
            nxt = self.lo[g + 1] if g + 1 < len(self.lo) else -1
        return self.err_at, self.busy_end + 1, nxt


def stall_runs(positions) -> list[tuple[int, int]]:
    """Sorted positions as half-open runs [a, b) of consecutive ones."""
    runs = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1] = (runs[-1][0], p + 1)
        else:
            runs.append((p, p + 1))
    return runs


def alu_stall_runs(semantics, insn, limit: int | None) -> list[tuple[int, int]]:
    """Runs [a, b) of the positions (in loop order, below ``limit`` if given) of the micro-op
    executions of an ALU that wait (:func:`isa.arch.alu_stalls`), from its micro-op indices
    chunk by chunk: a few numbers per run, however many micro-ops stall (a huge loop on one
    ACC entry stalls at every micro-op; bounded-memory fuzz test)."""
    bases = semantics._uop_bases(insn)
    runs, prev, pos = [], None, 0
    for dst, src, _ in semantics._uop_chunks(insn, bases, (True, not insn.use_imm, False)):
        if limit is not None and pos >= limit:
            break
        if prev is not None:          # the chunk's first micro-op against the last one before
            dst = np.concatenate((prev, dst))
            src = None if src is None else np.concatenate((prev, src))
            base = pos - 1
        else:
            base = 0
        idx = np.flatnonzero(alu_stalls(dst, src)) + base + 1
        if idx.size:
            breaks = np.flatnonzero(np.diff(idx) != 1)
            for a, b in zip(idx[np.r_[0, breaks + 1]].tolist(),
                            (idx[np.r_[breaks, idx.size - 1]] + 1).tolist()):
                if runs and runs[-1][1] == a:      # a run across the chunk boundary
                    runs[-1] = (runs[-1][0], b)
                else:
                    runs.append((a, b))
        pos = base + dst.size
        prev = dst[-1:]
    semantics.executing = None
    if limit is not None:
        runs = [(a, min(b, limit)) for a, b in runs if a < limit]
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
        self._stall_cache = {}           # (ALU, its micro-ops) -> runs of stalled positions
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

    def _stalls(self, d, bad: int | None) -> list[tuple[int, int]]:
        """The ALU's runs of stalled micro-op positions (cached: programs repeat their ALUs)."""
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
