"""The ``board`` backend: an FPGA reached through a host link (AXI-Lite registers + DRAM).

The driver writes the image's DRAM over the link, programs the instruction address and
count, sets ``launch`` and polls ``CTRL`` until ``done`` or the timeout. On an error the
status register holds the :class:`~isa.errors.ErrorCode` and the index of the instruction;
on a timeout the per-module state registers say which module was still busy and on what.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from isa.encoding import IsaError, decode
from isa.errors import ErrorCode
from isa.image import ProgramImage

from .base import Backend, BackendUnavailable, DeviceError, DeviceTimeout, RunResult

__all__ = ["RegisterMap", "Link", "BoardBackend", "ERROR_FIELDS", "MODULE_STATE_BITS",
           "describe_error"]


@dataclass(frozen=True)
class RegisterMap:
    """Byte offsets of the 32-bit control registers (one AXI-Lite slave)."""

    ctrl: int = 0x00         # W bit 0: launch. R bit 0: busy, bit 1: done
    status: int = 0x04       # R: ErrorCode of the run (0 = none)
    err_index: int = 0x08    # R: index of the instruction that failed
    insn_count: int = 0x0C   # W
    insn_addr_lo: int = 0x10  # W: byte address of the first instruction
    insn_addr_hi: int = 0x14  # W
    cycles_lo: int = 0x18    # R: cycles from launch to done
    cycles_hi: int = 0x1C
    module_state: int = 0x20  # R: one byte per module (load, compute, store), see below
    load_pc: int = 0x24      # R: index of the instruction each module is on
    compute_pc: int = 0x28
    store_pc: int = 0x2C
    tokens: int = 0x30       # R: one byte per queue: l2g, g2l, g2s, s2g

    CTRL_LAUNCH = 1
    CTRL_BUSY = 1
    CTRL_DONE = 2


# Bits of a module's state byte.
MODULE_STATE_BITS = {"busy": 1, "wait_pop_prev": 2, "wait_pop_next": 4}
MODULES = ("load", "compute", "store")
TOKEN_QUEUES = ("l2g", "g2l", "g2s", "s2g")
# Which queue a waiting pop flag refers to, per module.
_WAIT_QUEUE = {("load", "pop_next"): "g2l", ("compute", "pop_prev"): "l2g",
               ("compute", "pop_next"): "s2g", ("store", "pop_prev"): "g2s"}
# The instruction field each error code points at.
ERROR_FIELDS = {
    ErrorCode.ILLEGAL_OPCODE: "opcode", ErrorCode.ILLEGAL_MEMORY_TYPE: "memory_type",
    ErrorCode.ILLEGAL_ALU_OPCODE: "alu_opcode", ErrorCode.ILLEGAL_DEP_FLAG: "dependency flags",
    ErrorCode.STORE_PADDING: "y_pad/x_pad", ErrorCode.SRAM_RANGE: "sram_base / micro-op indices",
    ErrorCode.DRAM_RANGE: "dram_base", ErrorCode.EMPTY_LOOP: "iter_out/iter_in/uop_end",
    ErrorCode.TOKEN_OVERFLOW: "push flags", ErrorCode.DEADLOCK: "pop flags",
    ErrorCode.MISSING_FINISH: "insn_count",
}


class Link(Protocol):
    """The host's view of a board: register and DRAM access."""

    dram_bytes: int
    has_cycle_counter: bool

    def read_reg(self, offset: int) -> int: ...

    def write_reg(self, offset: int, value: int) -> None: ...

    def write_mem(self, addr: int, data: bytes) -> None: ...

    def read_mem(self, addr: int, nbytes: int) -> bytes: ...


class BoardBackend(Backend):
    """Runs images on a board through ``link`` (e.g. :class:`~driver.backends.simlink.SimulatedLink`).

    ``poll_interval`` is the pause between status polls, in seconds.
    """

    name = "board"
    has_cycles = True

    def __init__(self, link: "Link | str | None" = None, *, regs: RegisterMap = RegisterMap(),
                 poll_interval: float = 0.0, default_timeout: float = 60.0):
        if link == "sim":
            from .simlink import SimulatedLink
            link = SimulatedLink()
        if link is None:
            raise BackendUnavailable("backend 'board' needs a link to a board; none is "
                                     "attached here (use link='sim' for the simulated board)")
        self.link, self.regs = link, regs
        self.poll_interval, self.default_timeout = poll_interval, default_timeout

    def run(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        link, regs = self.link, self.regs
        if image.dram.size > link.dram_bytes:
            raise DeviceError(f"the image's DRAM ({image.dram.size} bytes) is larger than the "
                              f"board's ({link.dram_bytes} bytes)", field="dram",
                              value=image.dram.size)
        if hasattr(link, "configure"):
            # A simulated board takes the image's configuration; a real one's is fixed.
            link.configure(image.config)
        link.write_mem(0, image.dram.tobytes())
        link.write_reg(regs.insn_addr_lo, image.insn_addr & 0xFFFFFFFF)
        link.write_reg(regs.insn_addr_hi, image.insn_addr >> 32)
        link.write_reg(regs.insn_count, image.insn_count)
        link.write_reg(regs.ctrl, regs.CTRL_LAUNCH)
        timeout = self.default_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not link.read_reg(regs.ctrl) & regs.CTRL_DONE:
            if time.monotonic() > deadline:
                raise DeviceTimeout(f"board timed out after {timeout:g} s: {self._busy()}",
                                    field="timeout", value=timeout)
            if self.poll_interval:
                time.sleep(self.poll_interval)
        code = link.read_reg(regs.status)
        if code != ErrorCode.NONE:
            raise describe_error(image, code, link.read_reg(regs.err_index), "the board")
        dram = np.frombuffer(link.read_mem(0, image.dram.size), np.uint8).copy()
        cycles = None
        if link.has_cycle_counter:
            cycles = link.read_reg(regs.cycles_lo) | (link.read_reg(regs.cycles_hi) << 32)
        return RunResult(dram, {}, cycles, self.name)

    def _busy(self) -> str:
        """Which module is busy on what, from the state registers."""
        regs, link = self.regs, self.link
        state = link.read_reg(regs.module_state)
        tokens = link.read_reg(regs.tokens)
        count = {q: (tokens >> (8 * n)) & 0xFF for n, q in enumerate(TOKEN_QUEUES)}
        pcs = {"load": regs.load_pc, "compute": regs.compute_pc, "store": regs.store_pc}
        parts = []
        for n, module in enumerate(MODULES):
            bits = (state >> (8 * n)) & 0xFF
            if not bits & MODULE_STATE_BITS["busy"]:
                parts.append(f"{module} idle")
                continue
            what = f"{module} busy at instruction {link.read_reg(pcs[module])}"
            waits = [f"a token on {_WAIT_QUEUE[(module, flag)]} "
                     f"({count[_WAIT_QUEUE[(module, flag)]]} queued)"
                     for flag in ("pop_prev", "pop_next")
                     if bits & MODULE_STATE_BITS[f"wait_{flag}"]]
            parts.append(what + (", waiting for " + " and ".join(waits) if waits else ""))
        return "; ".join(parts)



def describe_error(image: ProgramImage, code: int, index: int, who: str) -> DeviceError:
    """A DeviceError for a hardware error code: names the instruction and the field."""
    try:
        code = ErrorCode(code)
        name = code.name
    except ValueError:
        name = f"unknown error code {code}"
    field = ERROR_FIELDS.get(code, "?")
    what = ""
    if 0 <= index < image.insn_count:
        at = image.insn_addr + 16 * index
        word = int.from_bytes(image.dram[at:at + 16].tobytes(), "little")
        try:
            what = f" ({decode(word, image.config)!r})"
        except IsaError:
            what = f" (word 0x{word:032x})"
    return DeviceError(f"instruction {index}{what}: {who} stopped with {name}; check field "
                       f"{field} [{name}]", code=code, index=index, field=field)
