"""The compute module (``hw/compute.py``): LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH.

The GEMM core (``hw/gemm.py``) never stalls and the tensor ALU (``hw/alu.py``) stalls only
where its micro-op indices say (one reading the result of the one just ahead), both behind the
micro-op loop (``hw/uop_loop.py``), so their timeline is known when they start: it is computed
in closed form (:class:`UopRun`) instead of being shifted through pipeline registers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

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
           "alu_stall_positions"]

#: Both pipelines check indices in S2: micro-op *j* of a start in *c* raises ``err`` in
#: *c* + 1 + *j* + 2 (S0 micro-op read, S1 indices, S2 range check).
CHECK_STAGE = 2

IDLE, LOADING, RUN, RETIRE = range(4)


class UopRun:
    """The timeline of one GEMM/ALU started in cycle *c* with N micro-ops (``hw.gemm.GemmCore``,
    ``hw.alu.TensorAlu``): micro-op *j* issues in *c* + 1 + *j* + *s*(*j*) and writes in
    *c* + 1 + *j* + *s*(*j*) + L (L = ``GEMM_LATENCY``, ``ALU_LATENCY``), where *s*(*j*) counts
    the ``stalls`` (sorted micro-op positions ≥ 1 that wait ``ALU_STALL`` = 1 cycle; the GEMM
    has none); ``busy`` for N + L + *s*(N − 1) cycles. If micro-op *j* has an index past its
    buffer, ``err`` rises in *c* + 3 + *j* + *s*(*j* − 1) (its first S2 cycle), issue stops,
    and the *j* micro-ops before it still complete. ``uop_done`` pulses with the writes: runs
    of consecutive cycles (``seg_lo``/``seg_hi``) broken by a cycle before each stalled one.
    """

    __slots__ = ("start", "busy_end", "err_at", "done_lo", "done_hi", "count", "gemm",
                 "seg_lo", "seg_hi", "_before", "_changes")

    def __init__(self, c: int, n: int, latency: int, bad: int | None, counts: bool,
                 gemm: bool, stalls=()):
        self.start = c
        self.gemm = gemm
        done = n if bad is None else bad
        stalls = [p for p in stalls if p < done]      # a stall behind the error never happens
        if bad is None:
            self.err_at = -1
            self.busy_end = c + n + latency + len(stalls)      # last busy cycle
        else:
            self.err_at = c + 1 + bad + CHECK_STAGE + len(stalls)
            self.busy_end = max(self.err_at, c + bad + latency + len(stalls) if bad else 0)
        self.count = done if counts else 0
        first = c + 1 + latency                      # the first write
        self.seg_lo, self.seg_hi, self._before = [], [], []
        if self.count:
            bounds = [0, *stalls, self.count]
            for k in range(len(bounds) - 1):
                self._before.append(bounds[k])       # pulses in the runs before run k
                self.seg_lo.append(first + bounds[k] + k)
                self.seg_hi.append(first + bounds[k + 1] - 1 + k)
        self._changes = [e for lo, hi in zip(self.seg_lo, self.seg_hi) for e in (lo, hi + 1)]
        self.done_lo = first                         # first uop_done pulse
        self.done_hi = self.seg_hi[-1] if self.count else first - 1   # last (inclusive)

    def busy(self, t: int) -> bool:
        return t <= self.busy_end

    def done(self, t: int) -> bool:
        """Whether ``uop_done`` pulses in cycle ``t``."""
        k = bisect_right(self.seg_lo, t) - 1
        return k >= 0 and t <= self.seg_hi[k]

    def _pulses_before(self, t: int) -> int:
        k = bisect_right(self.seg_lo, t - 1) - 1
        if k < 0:
            return 0
        return self._before[k] + min(t - 1, self.seg_hi[k]) - self.seg_lo[k] + 1

    def done_pulses(self, t0: int, t1: int) -> int:
        """uop_done pulses in cycles [t0, t1)."""
        return self._pulses_before(t1) - self._pulses_before(t0) if t1 > t0 else 0

    def events(self, t: int) -> tuple:
        """Cycles around which the run's outputs change, for a jump from ``t`` on: ``err_at``,
        ``busy_end`` + 1 and the first cycle ≥ ``t`` in which ``uop_done`` changes (later
        changes lie beyond it, so they bound no jump more)."""
        k = bisect_left(self._changes, t)
        nxt = self._changes[k] if k < len(self._changes) else -1
        return self.err_at, self.busy_end + 1, nxt


def alu_stall_positions(semantics, insn, limit: int | None) -> list[int]:
    """Positions (in loop order, below ``limit`` if given) of the micro-op executions of an ALU
    that wait (:func:`isa.arch.alu_stalls`), from its micro-op indices chunk by chunk."""
    bases = semantics._uop_bases(insn)
    # Runs of consecutive stalled positions, expanded at the end: a huge loop that the run's
    # timeout stops part-way through this walk holds a few numbers per chunk, not one per
    # stall (every micro-op of a loop on one ACC entry stalls; bounded-memory fuzz test).
    chunks, prev, pos = [], None, 0
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
            chunks.append((idx[np.r_[0, breaks + 1]], idx[np.r_[breaks, idx.size - 1]] + 1))
        pos = base + dst.size
        prev = dst[-1:]
    semantics.executing = None
    out = []
    if chunks:
        starts = np.concatenate([c[0] for c in chunks])
        lengths = np.concatenate([c[1] for c in chunks]) - starts
        before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        out = (np.repeat(starts - before, lengths) + np.arange(lengths.sum())).tolist()
    return out if limit is None else [p for p in out if p < limit]


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
        self._stall_cache = {}           # (ALU, its micro-ops) -> stalled positions
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

    def _stalls(self, d, bad: int | None) -> list[int]:
        """The ALU's stalled micro-op positions (cached: programs repeat their ALUs)."""
        insn = d.insn
        sem = self.semantics
        key = (insn, sem.uop[insn.uop_bgn:insn.uop_end].tobytes())
        hit = self._stall_cache.get(key)
        if hit is None:
            hit = alu_stall_positions(sem, insn, bad)
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
