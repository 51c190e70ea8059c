"""A board link simulated in software: the hardware's register map (:mod:`isa.registers`) in
front of a core that executes with :mod:`sim.functional`'s semantics.

The core advances up to ``steps_per_poll`` instructions each time the host reads ``CTRL``, so
a run takes host time as on a real board, and a host that stops polling stops the core. With
``detect_deadlock`` (the SPEC §4.6 hardware, which reports DEADLOCK) a token deadlock ends the
run with the DEADLOCK code; without it the core hangs as the original hardware does, and only
the host's timeout ends the wait.

Registers: ``CTRL`` (write bit 0 launches, ignored while running; read bit 0 running, bit 1
done, bit 2 error), ``ERROR_CODE``, ``ERROR_INDEX``, ``INSN_ADDR``, ``INSN_COUNT``,
``DRAM_SIZE`` (the core sees DRAM ``[0, DRAM_SIZE)``, as the hardware's DRAM_RANGE checks do)
and ``ID`` behave as on the hardware. The simulated board counts no cycles: ``CYCLES_LO``/``_HI``
read 0 (and ``has_cycle_counter`` is False, so the board backend reports ``cycles`` None).
The counters count *host polls* instead of cycles, simply enough for a timeout diagnosis:

* ``load_busy``/``compute_busy``/``store_busy``: polls in which the module executed an
  instruction; ``*_stall``: polls in which it executed none and its head instruction waits
  on a token;
* ``fetch_busy``: polls in which instructions were left to dispatch; ``fetch_stall``: polls
  that ended with the next instruction's command queue full;
* ``mem_busy``: polls in which fetch dispatched or a LOAD or STORE executed;
* ``gemm_uops``/``alu_uops``: exact, as on the hardware (GEMM micro-ops that accumulate, ALU
  micro-ops).
"""

from __future__ import annotations

import numpy as np

from isa import registers as R
from isa.config import VTAConfig, load_config
from isa.encoding import Load, Store
from isa.errors import ErrorCode
from isa.registers import COUNTERS, CSR_ID, counter_offset
from sim.functional import FunctionalSimulator, SimulationError

from .board import MODULES

__all__ = ["SimulatedLink"]

_COUNTER_AT = {counter_offset(name): name for name in COUNTERS}


class _Core:
    """One launch of the functional simulator, stepped by the host's polls, with the error
    state and the counters the registers show."""

    def __init__(self, cfg: VTAConfig, dram: np.ndarray, insn_addr: int, insn_count: int,
                 detect_deadlock: bool):
        self.detect_deadlock = detect_deadlock
        self.sim = FunctionalSimulator(cfg, dram)
        self.done, self.error, self.err_index = False, ErrorCode.NONE, 0
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.steps = 0
        try:
            self.sim.launch(insn_addr, insn_count)
        except SimulationError as exc:
            self._fail(exc.code, 0)

    def _fail(self, code: ErrorCode, index: int | None) -> None:
        self.done, self.error, self.err_index = True, code, index or 0

    def poll(self, steps: int) -> None:
        """Up to ``steps`` instructions, then the poll's counters."""
        if self.done:
            return
        sim = self.sim
        executed = dict.fromkeys(MODULES, False)
        memory = False
        fetched = sim.fetched
        for _ in range(steps):
            if self.done:
                break
            try:
                ready = sim.ready()      # dispatches what fits; the heads below are fixed now
                if not ready and not self.detect_deadlock:
                    if sim.fetched < sim.insn_count or any(sim.queues.values()):
                        break            # hangs, as the original hardware does
                heads = {m: sim.queues[m][0] for m in ready}
                self.done = sim.step()
                self.steps += 1
            except SimulationError as exc:
                self._fail(exc.code, exc.index)
                break
            for m, (index, insn) in heads.items():
                if not sim.queues[m] or sim.queues[m][0][0] != index:
                    executed[m] = True
                    memory |= isinstance(insn, (Load, Store))
        c = self.counters
        try:
            if not self.done:
                sim.ready()
        except SimulationError:
            pass                         # fetch's decode error: the next poll reports it
        for m in MODULES:
            if executed[m]:
                c[f"{m}_busy"] += 1
            elif not self.done and sim.waiting(m):
                c[f"{m}_stall"] += 1
        if fetched < sim.insn_count:
            c["fetch_busy"] += 1
        if not self.done and sim.fetched < sim.insn_count:
            c["fetch_stall"] += 1        # fetch stopped: the next command queue is full
        if memory or sim.fetched != fetched:
            c["mem_busy"] += 1
        c["gemm_uops"] = sim.counters["gemm_counter"] & 0xFFFFFFFF
        c["alu_uops"] = sim.counters["alu_counter"] & 0xFFFFFFFF


class SimulatedLink:
    """A software board: ``dram_bytes`` of DRAM and the control registers of
    :mod:`isa.registers` (see the module's text for what it simulates).

    Like an SDRAM board just out of reset, its DRAM becomes ready at the ``init_polls``-th
    look of :meth:`mem_ready` (never with None); a DRAM access before is refused (a real
    board would not answer it)."""

    has_cycle_counter = False  # the software core counts instructions, not cycles

    def __init__(self, *, dram_bytes: int = 64 << 20, config: "VTAConfig | str | None" = None,
                 steps_per_poll: int = 64, detect_deadlock: bool = True,
                 init_polls: "int | None" = 2):
        self.init_polls, self.ready_looks = init_polls, 0
        self.dram_bytes = dram_bytes
        self.config = None if config is None else load_config(config)
        self.steps_per_poll, self.detect_deadlock = steps_per_poll, detect_deadlock
        self.dram = np.zeros(dram_bytes, np.uint8)
        self._regs = {R.INSN_ADDR: 0, R.INSN_COUNT: 0, R.DRAM_SIZE: 0}
        self._core: _Core | None = None
        self.reg_writes = self.reg_reads = 0

    # Images carry their configuration; a real board has one, fixed by its bitstream.
    def configure(self, cfg: VTAConfig) -> None:
        self.config = cfg

    def mem_ready(self) -> bool:
        self.ready_looks += 1
        return self.init_polls is not None and self.ready_looks >= self.init_polls

    def _check_ready(self) -> None:
        if self.init_polls is None or self.ready_looks < self.init_polls:
            raise RuntimeError("the simulated board's DRAM was accessed before mem_ready() "
                               "reported its SDRAM initialised")

    def write_mem(self, addr: int, data: bytes) -> None:
        self._check_ready()
        if addr < 0 or addr + len(data) > self.dram_bytes:
            raise ValueError(f"link write [{addr}, {addr + len(data)}) is outside the board's "
                             f"DRAM ({self.dram_bytes} bytes)")
        self.dram[addr:addr + len(data)] = np.frombuffer(data, np.uint8)

    def read_mem(self, addr: int, nbytes: int) -> bytes:
        self._check_ready()
        if addr < 0 or addr + nbytes > self.dram_bytes:
            raise ValueError(f"link read [{addr}, {addr + nbytes}) is outside the board's "
                             f"DRAM ({self.dram_bytes} bytes)")
        return self.dram[addr:addr + nbytes].tobytes()

    @property
    def running(self) -> bool:
        return self._core is not None and not self._core.done

    def write_reg(self, offset: int, value: int) -> None:
        self.reg_writes += 1
        value &= 0xFFFFFFFF
        if offset in self._regs:
            self._regs[offset] = value
        elif offset == R.CTRL and value & R.CTRL_LAUNCH and not self.running:
            if self.config is None:
                raise RuntimeError("the simulated board has no configuration: pass config= "
                                   "or call configure()")
            r = self._regs
            dram = self.dram[:min(r[R.DRAM_SIZE], self.dram_bytes)]   # a view: runs in place
            self._core = _Core(self.config, dram, r[R.INSN_ADDR], r[R.INSN_COUNT],
                               self.detect_deadlock)
        # writes to read-only or unmapped offsets are ignored

    def read_reg(self, offset: int) -> int:
        self.reg_reads += 1
        core = self._core
        if offset == R.ID:
            return CSR_ID
        if offset in self._regs:
            return self._regs[offset]
        if offset == R.CTRL:
            if core is None:
                return 0
            core.poll(self.steps_per_poll)
            if not core.done:
                return R.CTRL_RUNNING
            return R.CTRL_DONE | (R.CTRL_ERROR if core.error != ErrorCode.NONE else 0)
        if core is None:
            return 0
        if offset == R.ERROR_CODE:
            return int(core.error)
        if offset == R.ERROR_INDEX:
            return core.err_index
        if offset in _COUNTER_AT:
            return core.counters[_COUNTER_AT[offset]]
        return 0   # CYCLES_LO/HI (no cycle counter) and unmapped offsets
