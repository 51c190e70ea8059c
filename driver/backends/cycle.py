"""The ``cycle`` backend: the cycle-accurate simulator ``sim.cycle``, the RTL's twin.

``sim.cycle.run_image(image)`` returns ``dram``, ``counters`` and ``cycles``; the cycles and
every busy/stall counter equal the RTL's (SPEC §6, docs/timing.md).
"""

from __future__ import annotations

import importlib

from isa.image import ProgramImage

from .base import Backend, BackendUnavailable, DeviceError, RunResult

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
            result = self._sim.run_image(image, trace=self.trace)
        except Exception as exc:  # CycleSimulationError carries code and index
            if hasattr(exc, "code") and hasattr(exc, "index"):
                raise DeviceError(str(exc), code=exc.code, index=exc.index,
                                  field=getattr(exc, "field", None),
                                  value=getattr(exc, "value", None)) from None
            raise
        return RunResult(result.dram, dict(result.counters), int(result.cycles), self.name,
                         getattr(result, "summary", None))
