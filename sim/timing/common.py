"""What load, compute and store share: range checks and the per-module bookkeeping."""

from __future__ import annotations

from isa.errors import ErrorCode

__all__ = ["range_error", "ModuleBase"]

IDLE = 0


def range_error(f: dict, *, elem_bytes: int, depth: int, dram_size: int, padded: bool) -> int:
    """``hw.extent.mem_range_checks``: SRAM_RANGE before DRAM_RANGE, or 0 (needs x_size ≥ 1)."""
    if padded:
        rows, row_len = f["rows"], f["row_len"]
    else:
        rows, row_len = f["y_size"], f["x_size"]
    if f["sram_base"] + rows * row_len > depth:
        return ErrorCode.SRAM_RANGE
    if f["y_size"] and (f["dram_base"] + (f["y_size"] - 1) * f["x_stride"]
                        + f["x_size"]) * elem_bytes > dram_size:
        return ErrorCode.DRAM_RANGE
    return 0


class ModuleBase:
    """The ports every module shows the core (``hw.modcommon.module_members``)."""

    name = ""

    def __init__(self):
        self.fsm = IDLE
        self.index = 0
        self.d = None            # the running instruction (Decoded)
        self.started_at = 0
        self.clear()
        self.log = None          # list of (index, opcode, start, end) when tracing

    def clear(self):
        self.idle = self.blocked = self.pop = False
        self.err = 0
        self.err_index = 0
        self.push = (False, False)   # (push_prev, push_next) asserted this cycle

    def retired(self, t: int) -> None:
        if self.log is not None:
            self.log.append((self.index, self.d.opcode, self.started_at, t))
