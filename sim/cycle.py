"""The cycle-accurate simulator: the RTL's twin (SPEC §6).

``run_image(image)`` runs one program image on a cycle model of ``hw/`` (block for block, in
:mod:`sim.timing`) behind the same memory model as the RTL's test benches, and returns the
DRAM (as the functional simulator leaves it), the cycle count (what the RTL's cycle counter
shows, launch to done) and the RTL's busy/stall counters (``hw.core.COUNTERS``). An error in
the program raises :class:`CycleSimulationError` with the ErrorCode and instruction index the
RTL reports.

Command line::

    python -m sim.cycle run IMAGE.npz [--trace T.json] [--out RESULT.npz]
    python -m sim.cycle crosscheck IMAGE.npz      # against the driver's rtl backend
"""

from __future__ import annotations

import mmap
import time
from dataclasses import dataclass, field

import numpy as np

from isa.errors import ErrorCode
from isa.image import ProgramImage, load_image
from sim.functional import SimulationError, SimulationTimeout
from sim.timing.core import COUNTERS, Core

__all__ = ["run_image", "CycleResult", "CycleSimulationError", "SimulationTimeout", "COUNTERS",
           "simulate"]

DEFAULT_MAX_CYCLES = 1 << 40


@dataclass
class CycleResult:
    """What one launch left behind."""

    dram: np.ndarray
    cycles: int
    counters: dict = field(default_factory=dict)
    error: ErrorCode = ErrorCode.NONE
    error_index: int = 0
    summary: dict = field(default_factory=dict)


class CycleSimulationError(SimulationError):
    """The core stopped with ``code`` at instruction ``index``; ``result`` holds the state."""

    def __init__(self, code: ErrorCode, index: int, result: CycleResult):
        self.result = result
        super().__init__(code, index, f"the core stopped with {code.name} after "
                                      f"{result.cycles} cycles")


def _as_image(image) -> ProgramImage:
    return image if isinstance(image, ProgramImage) else load_image(image)


def _copy_dram(dram: np.ndarray) -> np.ndarray:
    """A writable copy of the image's DRAM. Large ones go into memory mapped with
    ``MAP_POPULATE``: one system call maps every page, where a plain copy takes a page fault
    per 4 KiB page (most of a long simulation's time on some virtual machines)."""
    flags = getattr(mmap, "MAP_POPULATE", 0)
    if dram.nbytes < (1 << 22) or not flags or dram.dtype != np.uint8 or dram.ndim != 1:
        return dram.copy()
    try:
        mem = mmap.mmap(-1, dram.nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags)
    except (OSError, ValueError):
        return dram.copy()
    out = np.frombuffer(mem, np.uint8)
    out[:] = dram
    return out


def simulate(image, *, max_cycles: int = DEFAULT_MAX_CYCLES, trace: bool = False,
             fast: bool = True, timeout: float | None = None) -> Core:
    """Run ``image`` to the end and return the :class:`~sim.timing.core.Core` (never raises on
    an error of the program). ``fast=False`` steps every cycle (the reference for tests).
    ``timeout`` (wall-clock seconds) raises :class:`SimulationTimeout`, checked every
    :data:`_DEADLINE_STEPS` cycles stepped and inside long GEMM/ALU instructions."""
    image = _as_image(image)
    core = Core(image.config, _copy_dram(image.dram), image.insn_addr, image.insn_count)
    if trace:
        core.enable_trace()
    if timeout is not None:
        _bound_in_time(core, time.monotonic() + timeout)
    try:
        core.run(max_cycles, fast)
    except SimulationTimeout as exc:
        # The semantics do not know the index of the instruction the core is executing.
        index = exc.index
        if index is None and core.sem.executing is not None:
            index = core.compute.index
        at = f" (instruction {index})" if index is not None and exc.index is None else ""
        raise SimulationTimeout(f"at cycle {core.t:,}{at}: {exc}", index) from None
    return core


#: Cycles stepped between two looks at the clock (a few milliseconds of simulation).
_DEADLINE_STEPS = 1 << 10


def _bound_in_time(core: Core, deadline: float) -> None:
    """Make ``core.run`` raise :class:`SimulationTimeout` once ``deadline`` has passed: the
    semantics check it between the chunks of an instruction, the stepping every
    :data:`_DEADLINE_STEPS` cycles (a wrapper of this core's ``step`` only; the timing model
    is untouched)."""
    core.sem.deadline = deadline
    step, clock = core.step, time.monotonic
    count = 0

    def bounded_step() -> None:
        nonlocal count
        count += 1
        if not count % _DEADLINE_STEPS and clock() > deadline:
            busy = [m.name for m in core.modules if getattr(m, "fsm", 0)]
            raise SimulationTimeout(f"modules still busy: {', '.join(busy) or 'none'} "
                                    f"({core.counters.get('gemm_uops', 0):,} GEMM micro-ops "
                                    f"so far)")
        step()

    core.step = bounded_step


def run_image(image, *, trace=None, max_cycles: int = DEFAULT_MAX_CYCLES,
              fast: bool = True, timeout: float | None = None) -> CycleResult:
    """Run one image (a ProgramImage or a path). ``trace``: a path for a Chrome-trace JSON.

    Raises :class:`CycleSimulationError` if the core stops with an error,
    ``TimeoutError`` if it does not finish within ``max_cycles`` and
    :class:`SimulationTimeout` after ``timeout`` seconds of wall-clock time.
    """
    core = simulate(image, max_cycles=max_cycles, trace=trace is not None, fast=fast,
                    timeout=timeout)
    result = CycleResult(core.dram, core.cycles, dict(core.counters), core.error,
                         core.error_index)
    result.counters["bursts"] = core.mem.bursts
    from sim.cycle_trace import summary, write_trace
    result.summary = summary(core)
    if trace is not None:
        write_trace(core, trace)
    if core.error != ErrorCode.NONE:
        raise CycleSimulationError(core.error, core.error_index, result)
    return result


if __name__ == "__main__":
    import sys

    from sim.cycle_cli import main
    sys.exit(main())
