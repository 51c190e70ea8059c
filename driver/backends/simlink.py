"""A board link simulated in software: the register map of :mod:`driver.backends.board` in
front of a core that executes with :mod:`sim.functional`'s semantics.

The core advances ``steps_per_poll`` instructions each time the host reads ``CTRL``, so a run
takes host time as on a real board, and a host that stops polling stops the core. With
``detect_deadlock`` (the SPEC §4.6 hardware) a token deadlock ends the run with the DEADLOCK
code; without it the core hangs as the original hardware does, and only the host's timeout
ends the wait.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from isa.config import VTAConfig, load_config
from isa.encoding import Finish, IsaError, decode, module_of
from isa.errors import ErrorCode
from sim.functional import FunctionalSimulator, SimulationError

from .board import MODULES, TOKEN_QUEUES, RegisterMap

__all__ = ["SimulatedLink"]

# Per module: flag -> token queue (None: must be zero).
_DEPS = {
    "load": {"pop_prev": None, "pop_next": "g2l", "push_prev": None, "push_next": "l2g"},
    "compute": {"pop_prev": "l2g", "pop_next": "s2g", "push_prev": "g2l", "push_next": "g2s"},
    "store": {"pop_prev": "g2s", "pop_next": None, "push_prev": "s2g", "push_next": None},
}


class _Core:
    """One launch executing instruction by instruction, with visible per-module state."""

    def __init__(self, cfg: VTAConfig, dram: np.ndarray, insn_addr: int, insn_count: int,
                 detect_deadlock: bool):
        self.cfg, self.dram = cfg, dram
        self.insn_addr, self.insn_count = insn_addr, insn_count
        self.detect_deadlock = detect_deadlock
        self.sim = FunctionalSimulator(cfg, dram)
        self.queues = {m: deque() for m in MODULES}
        self.tokens = dict.fromkeys(TOKEN_QUEUES, 0)
        self.fetched, self.pending = 0, None
        self.done, self.error, self.err_index = False, ErrorCode.NONE, 0
        self.steps = 0

    def _fail(self, code: ErrorCode, index: int) -> None:
        self.done, self.error, self.err_index = True, code, index

    def _fetch(self) -> None:
        while self.fetched < self.insn_count:
            if self.pending is None:
                at = self.insn_addr + 16 * self.fetched
                if at + 16 > self.dram.size:
                    return self._fail(ErrorCode.DRAM_RANGE, self.fetched)
                word = int.from_bytes(self.dram[at:at + 16].tobytes(), "little")
                try:
                    insn = decode(word, self.cfg)
                except IsaError:
                    return self._fail(ErrorCode.ILLEGAL_OPCODE, self.fetched)
                module = module_of(insn)
                if any(getattr(insn, f) for f, q in _DEPS[module].items() if q is None):
                    return self._fail(ErrorCode.ILLEGAL_DEP_FLAG, self.fetched)
                self.pending = (self.fetched, module, insn)
            if len(self.queues[self.pending[1]]) >= self.cfg.cmd_queue_depth:
                return
            self.queues[self.pending[1]].append((self.pending[0], self.pending[2]))
            self.fetched, self.pending = self.fetched + 1, None

    def waiting(self, module: str) -> list[str]:
        """The pop flags the head instruction of ``module`` waits on."""
        if not self.queues[module]:
            return []
        insn = self.queues[module][0][1]
        return [f for f in ("pop_prev", "pop_next")
                if getattr(insn, f) and self.tokens[_DEPS[module][f]] == 0]

    def step(self) -> None:
        """Fetch, then execute one ready instruction (the oldest)."""
        if self.done:
            return
        self._fetch()
        if self.done:
            return
        ready = [m for m in MODULES if self.queues[m] and not self.waiting(m)]
        if not ready:
            if self.fetched == self.insn_count and not any(self.queues.values()):
                self._fail(ErrorCode.MISSING_FINISH, self.insn_count - 1)
            elif self.detect_deadlock:
                self._fail(ErrorCode.DEADLOCK,
                           min(self.queues[m][0][0] for m in MODULES if self.queues[m]))
            return  # without detection the core simply hangs
        module = min(ready, key=lambda m: self.queues[m][0][0])
        index, insn = self.queues[module].popleft()
        deps = _DEPS[module]
        for flag in ("pop_prev", "pop_next"):
            if getattr(insn, flag):
                self.tokens[deps[flag]] -= 1
        try:
            FunctionalSimulator._check_static(insn)
            self.sim.execute(insn)
        except SimulationError as exc:
            return self._fail(exc.code, index)
        for flag in ("push_prev", "push_next"):
            if getattr(insn, flag):
                if self.tokens[deps[flag]] >= self.cfg.token_queue_depth:
                    return self._fail(ErrorCode.TOKEN_OVERFLOW, index)
                self.tokens[deps[flag]] += 1
        self.steps += 1
        if isinstance(insn, Finish):
            self.done = True


class SimulatedLink:
    """A software board: ``dram_bytes`` of DRAM and the control registers of ``regs``."""

    has_cycle_counter = False  # the software core counts instructions, not cycles

    def __init__(self, *, dram_bytes: int = 64 << 20, config: "VTAConfig | str | None" = None,
                 regs: RegisterMap = RegisterMap(), steps_per_poll: int = 64,
                 detect_deadlock: bool = True):
        self.dram_bytes, self.regs = dram_bytes, regs
        self.config = None if config is None else load_config(config)
        self.steps_per_poll, self.detect_deadlock = steps_per_poll, detect_deadlock
        self.dram = np.zeros(dram_bytes, np.uint8)
        self._regs: dict[int, int] = {}
        self._core: _Core | None = None
        self.reg_writes = self.reg_reads = 0

    # Images carry their configuration; a real board has one, fixed by its bitstream.
    def configure(self, cfg: VTAConfig) -> None:
        self.config = cfg

    def write_mem(self, addr: int, data: bytes) -> None:
        if addr < 0 or addr + len(data) > self.dram_bytes:
            raise ValueError(f"link write [{addr}, {addr + len(data)}) is outside the board's "
                             f"DRAM ({self.dram_bytes} bytes)")
        self.dram[addr:addr + len(data)] = np.frombuffer(data, np.uint8)

    def read_mem(self, addr: int, nbytes: int) -> bytes:
        if addr < 0 or addr + nbytes > self.dram_bytes:
            raise ValueError(f"link read [{addr}, {addr + nbytes}) is outside the board's "
                             f"DRAM ({self.dram_bytes} bytes)")
        return self.dram[addr:addr + nbytes].tobytes()

    def write_reg(self, offset: int, value: int) -> None:
        self.reg_writes += 1
        self._regs[offset] = value & 0xFFFFFFFF
        if offset == self.regs.ctrl and value & self.regs.CTRL_LAUNCH:
            if self.config is None:
                raise RuntimeError("the simulated board has no configuration: pass config= "
                                   "or call configure()")
            r = self._regs
            addr = r.get(self.regs.insn_addr_lo, 0) | (r.get(self.regs.insn_addr_hi, 0) << 32)
            self._core = _Core(self.config, self.dram, addr, r.get(self.regs.insn_count, 0),
                               self.detect_deadlock)

    def read_reg(self, offset: int) -> int:
        self.reg_reads += 1
        regs, core = self.regs, self._core
        if offset == regs.ctrl:
            if core is None:
                return 0
            for _ in range(self.steps_per_poll):
                if core.done:
                    break
                core.step()
            return regs.CTRL_DONE if core.done else regs.CTRL_BUSY
        if core is None:
            return self._regs.get(offset, 0)
        if offset == regs.status:
            return int(core.error)
        if offset == regs.err_index:
            return core.err_index
        if offset in (regs.cycles_lo, regs.cycles_hi):
            return 0
        if offset == regs.module_state:
            word = 0
            for n, m in enumerate(MODULES):
                busy = bool(core.queues[m]) and not core.done
                bits = int(busy) | sum({"pop_prev": 2, "pop_next": 4}[f] for f in core.waiting(m))
                word |= (bits if busy else 0) << (8 * n)
            return word
        pcs = {regs.load_pc: "load", regs.compute_pc: "compute", regs.store_pc: "store"}
        if offset in pcs:
            queue = core.queues[pcs[offset]]
            return queue[0][0] if queue else 0
        if offset == regs.tokens:
            return sum(min(core.tokens[q], 255) << (8 * n) for n, q in enumerate(TOKEN_QUEUES))
        return self._regs.get(offset, 0)
