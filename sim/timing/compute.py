"""The compute module (``hw/compute.py``): LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH.

The GEMM core (``hw/gemm.py``) and the tensor ALU (``hw/alu.py``) behind the micro-op loop
(``hw/uop_loop.py``) never stall, so their timeline is known when they start: it is computed
in closed form (:class:`UopRun`) instead of being shifted through pipeline registers.
"""

from __future__ import annotations

import numpy as np

from isa.arch import ALU_LATENCY, GEMM_LATENCY  # hw.gemm / hw.alu: issue to ACC write
from isa.arch import elem_bytes
from isa.config import VTAConfig
from isa.encoding import MemType, Opcode
from isa.errors import ErrorCode

from .common import ModuleBase, range_error
from .dma import TensorLoader

__all__ = ["ComputeModule", "UopRun", "GEMM_LATENCY", "ALU_LATENCY", "CHECK_STAGE"]

#: Both pipelines check indices in S2: micro-op *j* of a start in *c* raises ``err`` in
#: *c* + 1 + *j* + 2 (S0 micro-op read, S1 indices, S2 range check).
CHECK_STAGE = 2

IDLE, LOADING, RUN, RETIRE = range(4)


class UopRun:
    """The timeline of one GEMM/ALU started in cycle *c* with N micro-ops (``hw.gemm.GemmCore``,
    ``hw.alu.TensorAlu``): micro-op *j* issues in *c* + 1 + *j* and writes in
    *c* + 1 + *j* + L (L = ``GEMM_LATENCY``, ``ALU_LATENCY``); ``busy`` for N + L cycles. If
    micro-op *j* has an index past its buffer, ``err`` rises in *c* + 3 + *j*, issue stops,
    and the *j* micro-ops before it still complete.
    """

    __slots__ = ("start", "busy_end", "err_at", "done_lo", "done_hi", "count", "gemm")

    def __init__(self, c: int, n: int, latency: int, bad: int | None, counts: bool,
                 gemm: bool):
        self.start = c
        self.gemm = gemm
        if bad is None:
            self.err_at = -1
            done = n
            self.busy_end = c + n + latency          # last busy cycle
        else:
            self.err_at = c + 1 + bad + CHECK_STAGE
            done = bad
            self.busy_end = max(self.err_at, c + bad + latency if bad else 0)
        self.count = done if counts else 0
        self.done_lo = c + 1 + latency               # first uop_done pulse
        self.done_hi = c + latency + self.count      # last uop_done pulse (inclusive)

    def busy(self, t: int) -> bool:
        return t <= self.busy_end

    def done_pulses(self, t0: int, t1: int) -> int:
        """uop_done pulses in cycles [t0, t1)."""
        lo, hi = max(t0, self.done_lo), min(t1 - 1, self.done_hi)
        return hi - lo + 1 if hi >= lo else 0


class ComputeModule(ModuleBase):
    """``hw.compute.ComputeModule``: start in *s* (l2g token if ``pop_prev``, s2g if
    ``pop_next``): entry and tokens popped, checks, the unit starts — LOAD → a
    :class:`TensorLoader` (LOADING until its ``busy`` is low), GEMM/ALU → RUN until the
    unit's ``busy`` is low (N + the unit's latency cycles). One RETIRE cycle pushes g2l
    (``push_prev``) and g2s (``push_next``); FINISH signals ``finish`` in its RETIRE cycle.
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
                    self.run = UopRun(t, d.nuops, GEMM_LATENCY if gemm else ALU_LATENCY,
                                      bad, not (gemm and d.f["reset"]), gemm)
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
