"""The ``functional`` backend: sim.functional, the architectural reference."""

from __future__ import annotations

import time

from isa.image import ProgramImage
from sim.functional import (FunctionalSimulator, RaceError, SimulationError, SimulationTimeout,
                            find_race)

from .base import Backend, DeviceError, DeviceTimeout, RunResult

__all__ = ["FunctionalBackend"]


class FunctionalBackend(Backend):
    """Runs an image on :mod:`sim.functional`.

    ``schedule``/``seed`` choose the module interleaving; ``check_races`` re-runs the image
    under other schedules and fails if the DRAM differs (:func:`sim.functional.find_race`).
    """

    name = "functional"
    has_cycles = False

    def __init__(self, *, schedule: str = "in-order", seed: int = 0, check_races: bool = False):
        self.schedule, self.seed, self.check_races = schedule, seed, check_races

    def run(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        dram = image.dram.copy()
        deadline = None if timeout is None else time.monotonic() + timeout
        sim = FunctionalSimulator(image.config, dram, deadline=deadline)
        try:
            sim.run(image.insn_addr, image.insn_count, schedule=self.schedule, seed=self.seed)
            if self.check_races:
                find_race(image, seed=self.seed, deadline=deadline)
        except SimulationError as exc:
            raise DeviceError(str(exc), code=exc.code, index=exc.index, field=exc.field,
                              value=exc.value) from None
        except SimulationTimeout as exc:
            raise DeviceTimeout(f"functional simulation timed out after {timeout:g} s: {exc}",
                                index=exc.index, field="timeout", value=timeout) from None
        except RaceError as exc:
            raise DeviceError(str(exc), field="schedule") from None
        return RunResult(dram, dict(sim.counters), None, self.name)

