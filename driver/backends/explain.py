"""What a hardware error code means, in the functional simulator's words.

The core (RTL, cycle model, board) reports only ERROR_CODE and ERROR_INDEX. The functional
simulator raises the same code at the same instruction for the same program (SPEC §4.6) and
knows the field and the value; :func:`explain_error` replays the image on it, bounded in time,
and uses its message. If the replay does not finish in time or disagrees, the instruction's
fields alone are checked (which names field and value for the codes they reveal: opcode,
memory type, ALU opcode, dependency flag, padding, empty loop); failing that, the message
names the decoded instruction and the field the code points at (:func:`board.describe_error`).
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
    static = _from_fields(image, code, index)
    if static is not None:
        return DeviceError(f"{static} (reported by {who})", code=ErrorCode(code), index=index,
                           field=static.field, value=static.value)
    return describe_error(image, code, index, who)


def _from_fields(image: ProgramImage, code: int, index: int):
    """The functional simulator's error for instruction ``index`` from its word alone, if it
    is the hardware's ``code``; else None."""
    import numpy as np

    from sim.functional import FunctionalSimulator, SimulationError

    if not 0 <= index < image.insn_count:
        return None
    at = image.insn_addr + 16 * index
    word = int.from_bytes(image.dram[at:at + 16].tobytes(), "little")
    try:
        FunctionalSimulator(image.config, np.zeros(16, np.uint8))._decode(word, index)
    except SimulationError as exc:
        return exc if exc.code == code else None
    return None
