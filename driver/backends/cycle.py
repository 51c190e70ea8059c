"""The ``cycle`` backend: the cycle-accurate simulator ``sim.cycle``, the RTL's twin.

``sim.cycle.run_image(image)`` returns ``dram``, ``counters`` and ``cycles``; the cycles and
every busy/stall counter equal the RTL's (SPEC §6, docs/timing.md).
"""

from __future__ import annotations

import importlib

from isa.image import ProgramImage

from .base import Backend, BackendUnavailable, DeviceTimeout, RunResult
from .explain import explain_error

__all__ = ["CycleBackend"]


class CycleBackend(Backend):
    name = "cycle"
    has_cycles = True

    def __init__(self, *, trace: "str | None" = None):
        self.trace = trace
        try:
            self._sim = importlib.import_module("sim.cycle")
        except ImportError:
            raise BackendUnavailable("backend 'cycle' is not available: sim/cycle.py is "
                                     "missing from this checkout") from None

    def run(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        try:
            result = self._sim.run_image(image, trace=self.trace, timeout=timeout)
        except self._sim.SimulationTimeout as exc:
            raise DeviceTimeout(f"cycle simulation timed out after {timeout:g} s {exc}",
                                index=exc.index, field="timeout", value=timeout) from None
        except self._sim.CycleSimulationError as exc:
            raise explain_error(image, exc.code, exc.index, "the cycle simulator") from None
        return RunResult(result.dram, dict(result.counters), int(result.cycles), self.name,
                         getattr(result, "summary", None))
