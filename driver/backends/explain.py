"""What a hardware error code means, in the functional simulator's words.

The core (RTL, cycle model, board) reports only ERROR_CODE and ERROR_INDEX. The functional
simulator raises the same code at the same instruction for the same program (SPEC §4.6) and
knows the field and the value; :func:`explain_error` replays the image on it, bounded in time,
and uses its message. If the replay does not finish in time or disagrees, the message falls
back to the decoded instruction and the field the code points at (:func:`board.describe_error`).
"""

from __future__ import annotations

import time

from isa.errors import ErrorCode
from isa.image import ProgramImage

from .base import DeviceError

__all__ = ["explain_error", "REPLAY_SECONDS"]

#: Wall-clock budget of the functional replay that names the field and value.
REPLAY_SECONDS = 10.0


def explain_error(image: ProgramImage, code: int, index: int, who: str, *,
                  budget: float = REPLAY_SECONDS) -> DeviceError:
    """A DeviceError for the hardware's (code, index) naming the field and its value."""
    from sim.functional import SimulationError, SimulationTimeout, run_image

    from .board import describe_error

    try:
        run_image(image, deadline=time.monotonic() + budget)
    except SimulationError as exc:
        if exc.code == code and exc.index == index:
            return DeviceError(f"{exc} (reported by {who})", code=ErrorCode(code), index=index,
                               field=exc.field, value=exc.value)
    except SimulationTimeout:
        pass
    return describe_error(image, code, index, who)
