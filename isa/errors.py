"""Error codes shared by the simulators and the hardware status register (SPEC §4.6)."""

from enum import IntEnum

__all__ = ["ErrorCode"]


class ErrorCode(IntEnum):
    """The code the hardware latches in its status register; simulators raise with the same."""

    NONE = 0
    ILLEGAL_OPCODE = 1          # opcode 5..7
    ILLEGAL_MEMORY_TYPE = 2     # LOAD of OUT or 6/7; STORE of anything but OUT (unless x_size 0)
    ILLEGAL_ALU_OPCODE = 3      # alu_opcode 5..7
    ILLEGAL_DEP_FLAG = 4        # a must-be-zero token bit is set for the executing module
    STORE_PADDING = 5           # a STORE with a non-zero pad field
    SRAM_RANGE = 6              # an on-chip index past the buffer depth
    DRAM_RANGE = 7              # a DRAM address past the end of memory
    EMPTY_LOOP = 8              # iter_out == 0, iter_in == 0 or uop_end <= uop_bgn
    TOKEN_OVERFLOW = 9          # a push past TOKEN_QUEUE_DEPTH outstanding tokens
    DEADLOCK = 10               # every unfinished module waits on a token nobody can push
    MISSING_FINISH = 11         # the stream ended without a FINISH
