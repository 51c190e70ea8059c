"""A board link simulated in software: the register map of :mod:`driver.backends.board` in
front of a core that executes with :mod:`sim.functional`'s semantics.

The core advances ``steps_per_poll`` instructions each time the host reads ``CTRL``, so a run
takes host time as on a real board, and a host that stops polling stops the core. With
``detect_deadlock`` (the SPEC §4.6 hardware) a token deadlock ends the run with the DEADLOCK
code; without it the core hangs as the original hardware does, and only the host's timeout
ends the wait.
"""

from __future__ import annotations

import numpy as np

from isa.config import VTAConfig, load_config
from isa.errors import ErrorCode
from sim.functional import FunctionalSimulator, SimulationError

from .board import MODULES, TOKEN_QUEUES, RegisterMap

__all__ = ["SimulatedLink"]

class _Core:
    """One launch of the functional simulator, stepped by the host's polls, with the error
    state the status registers show."""

    def __init__(self, cfg: VTAConfig, dram: np.ndarray, insn_addr: int, insn_count: int,
                 detect_deadlock: bool):
        self.detect_deadlock = detect_deadlock
        self.sim = FunctionalSimulator(cfg, dram)
        self.done, self.error, self.err_index = False, ErrorCode.NONE, 0
        self.steps = 0
        try:
            self.sim.launch(insn_addr, insn_count)
        except SimulationError as exc:
            self._fail(exc.code, 0)

    @property
    def queues(self):
        return self.sim.queues

    @property
    def tokens(self):
        return self.sim.tokens

    def _fail(self, code: ErrorCode, index: int | None) -> None:
        self.done, self.error, self.err_index = True, code, index or 0

    def waiting(self, module: str) -> list[str]:
        """The pop flags the head instruction of ``module`` waits on."""
        return self.sim.waiting(module)

    def step(self) -> None:
        """Execute one ready instruction (the oldest); without deadlock detection a core with
        nothing ready simply hangs."""
        if self.done:
            return
        try:
            if not self.detect_deadlock and not self.sim.ready():
                if self.sim.fetched < self.sim.insn_count or any(self.sim.queues.values()):
                    return
            self.done = self.sim.step()
            self.steps += 1
        except SimulationError as exc:
            self._fail(exc.code, exc.index)


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
