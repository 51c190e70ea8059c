"""The ``cycle`` backend: the cycle-accurate simulator (``sim/cycle.py``, a later session).

The contract it will meet: ``sim.cycle.run_image(image)`` returns an object with ``dram``,
``counters`` and ``cycles``, the cycles equal to the RTL's (SPEC §6). Until that module
exists, building this backend raises :class:`BackendUnavailable`.
"""

from __future__ import annotations

import importlib

from isa.image import ProgramImage

from .base import Backend, BackendUnavailable, DeviceError, RunResult

__all__ = ["CycleBackend"]


class CycleBackend(Backend):
    name = "cycle"
    has_cycles = True

    def __init__(self):
        try:
            self._sim = importlib.import_module("sim.cycle")
        except ImportError:
            raise BackendUnavailable("backend 'cycle' is not available yet: sim/cycle.py "
                                     "does not exist") from None

    def run(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        try:
            result = self._sim.run_image(image)
        except Exception as exc:  # the simulator's own error types are not fixed yet
            if hasattr(exc, "code") and hasattr(exc, "index"):
                raise DeviceError(str(exc), code=exc.code, index=exc.index,
                                  field=getattr(exc, "field", None),
                                  value=getattr(exc, "value", None)) from None
            raise
        return RunResult(result.dram, dict(result.counters), int(result.cycles), self.name)
