"""The interface every device backend implements, and the errors they raise."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from isa.errors import EXIT_TIMEOUT, RejectedError, Unavailable
from isa.image import ProgramImage

__all__ = ["Backend", "RunResult", "DeviceError", "DeviceTimeout", "BackendUnavailable"]


@dataclass
class RunResult:
    """What one launch left behind: the whole DRAM, the counters and (if known) the cycles."""

    dram: np.ndarray
    counters: dict = field(default_factory=dict)
    cycles: int | None = None
    backend: str = ""
    summary: dict | None = None   # the cycle simulator's utilisation/bandwidth summary


class DeviceError(RejectedError):
    """The device stopped on an error in the program (SPEC §4.6).

    ``code`` (:class:`~isa.errors.ErrorCode` or None), instruction ``index``, ``field`` and
    ``value`` locate it when the backend knows them.
    """

    def __init__(self, message: str, *, code=None, index: int | None = None,
                 field: str | None = None, value=None):
        super().__init__(message)
        self.code, self.index, self.field, self.value = code, index, field, value


class DeviceTimeout(DeviceError):
    """A bounded wait ran out; the message says which module was still busy and on what."""

    exit_code = EXIT_TIMEOUT


class BackendUnavailable(Unavailable):
    """The backend cannot run here (a missing tool, an unbuilt model, no board)."""


class Backend(ABC):
    """Runs program images. Subclasses set ``name`` and ``has_cycles``."""

    name: str = ""
    has_cycles: bool = False

    @abstractmethod
    def run(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        """Run one launch; return the DRAM after it. ``timeout`` is in seconds.

        Raises :class:`DeviceError` for an error in the program and :class:`DeviceTimeout`
        when the device does not finish in time.
        """
