"""The ``board`` backend: an FPGA reached through a host link (AXI4-Lite registers + DRAM).

Links: :class:`~driver.backends.seriallink.SerialLink` for a real board over its USB serial port
(``link="/dev/ttyUSB0"`` or ``"PORT@BAUD"``), :class:`~driver.backends.simlink.SimulatedLink`
for the software board (``link="sim"``), ``link="board-sim"`` for the Verilator simulation of
the whole board design (SDRAM variant; each image runs this backend over ``SerialLink`` inside
the simulation, on the simulated serial pins), or any object with the :class:`Link` methods.

The register map is the hardware's, :mod:`isa.registers` (docs/hardware.md §7). The driver
checks ``ID``, writes the image's DRAM over the link, writes ``INSN_ADDR``, ``INSN_COUNT``,
``DRAM_SIZE``, then ``CTRL`` = launch, and polls ``CTRL`` until ``done`` or the timeout. On an
error (``CTRL`` bit 2) ``ERROR_CODE``/``ERROR_INDEX`` name the :class:`~isa.errors.ErrorCode`
and the instruction, which the driver decodes from the image. After a run it reads
``CYCLES_LO``/``_HI`` and the event counters into the result. On a timeout it reads the
busy/stall counters twice, some polls apart, and says which advance: which module executes,
which waits on a token, whether fetch is blocked on a full command queue, whether the memory
port is busy.
"""

from __future__ import annotations

import time
from typing import Mapping, Protocol

import numpy as np

from isa import registers as R
from isa.encoding import IsaError, decode
from isa.errors import ErrorCode
from isa.image import ProgramImage
from isa.arch import STAGES as MODULES
from isa.registers import COUNTERS, CSR_ID, counter_offset

from .base import Backend, BackendUnavailable, DeviceError, DeviceTimeout, RunResult

__all__ = ["Link", "BoardBackend", "BOARD_SIM", "ERROR_FIELDS", "MODULES", "describe_error",
           "describe_progress"]

# The instruction field each error code points at.
ERROR_FIELDS = {
    ErrorCode.ILLEGAL_OPCODE: "opcode", ErrorCode.ILLEGAL_MEMORY_TYPE: "memory_type",
    ErrorCode.ILLEGAL_ALU_OPCODE: "alu_opcode", ErrorCode.ILLEGAL_DEP_FLAG: "dependency flags",
    ErrorCode.STORE_PADDING: "y_pad/x_pad", ErrorCode.SRAM_RANGE: "sram_base / micro-op indices",
    ErrorCode.DRAM_RANGE: "dram_base", ErrorCode.EMPTY_LOOP: "iter_out/iter_in/uop_end",
    ErrorCode.TOKEN_OVERFLOW: "push flags", ErrorCode.DEADLOCK: "pop flags",
    ErrorCode.MISSING_FINISH: "insn_count",
}
#: The ``link`` that runs images on the Verilator simulation of the whole board design.
BOARD_SIM = "board-sim"
#: Wall-clock bound on one image's run on ``board-sim`` when the caller gives none.
BOARD_SIM_TIMEOUT_S = 1800.0
#: Bound on the wait for a board's DRAM after reset: the SDRAM needs ~100 µs (with its init
#: sequence), so a board not ready after this long will not get ready by waiting.
READY_TIMEOUT_S = 0.5
# The counters a timeout diagnosis compares.
PROGRESS_COUNTERS = tuple(n for n in COUNTERS if n.endswith(("_busy", "_stall")))


class Link(Protocol):
    """The host's view of a board: 32-bit register access (offsets of :mod:`isa.registers`)
    and DRAM access. ``has_cycle_counter`` is False for a board that counts no cycles (the
    software board); its result then has ``cycles`` None."""

    dram_bytes: int
    has_cycle_counter: bool

    def read_reg(self, offset: int) -> int: ...

    def write_reg(self, offset: int, value: int) -> None: ...

    def write_mem(self, addr: int, data: bytes) -> None: ...

    def read_mem(self, addr: int, nbytes: int) -> bytes: ...

    # Optional: ``mem_ready() -> bool``, whether the board's DRAM answers yet (an SDRAM board
    # initialises its chip after reset); a link without it is always ready.


class BoardBackend(Backend):
    """Runs images on a board through ``link`` (e.g. :class:`~driver.backends.simlink.SimulatedLink`).

    ``poll_interval`` is the pause between status polls, in seconds; ``diagnosis_polls`` is
    how many polls apart a timeout reads the counters twice. Before it touches the board's
    DRAM the backend waits, at most ``ready_timeout`` seconds, for the link's ``mem_ready()``
    (the board description's ``STATUS_MEM_READY``); ``ready_polls`` is how many looks the
    last wait took.
    """

    name = "board"
    has_cycles = True

    def __init__(self, link: "Link | str | None" = None, *, poll_interval: float = 0.0,
                 default_timeout: float = 60.0, diagnosis_polls: int = 16,
                 ready_timeout: float = READY_TIMEOUT_S):
        self._board_sim = link == BOARD_SIM
        if link == "sim":
            from .simlink import SimulatedLink
            link = SimulatedLink()
        elif self._board_sim:
            link = BOARD_SIM
        elif isinstance(link, str):
            from .seriallink import SerialLink
            link = SerialLink.open(link)
        if link is None:
            raise BackendUnavailable("backend 'board' needs a link to a board: a serial port "
                                     "(--link /dev/ttyUSB0[@BAUD]), 'sim' for the software "
                                     f"board or '{BOARD_SIM}' for the simulated board design")
        self.link = link
        self.poll_interval, self.default_timeout = poll_interval, default_timeout
        self.diagnosis_polls = diagnosis_polls
        self.ready_timeout, self.ready_polls = ready_timeout, 0

    def run(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        if self._board_sim:
            return self._run_board_sim(image, timeout)
        link = self.link
        if image.dram.size > link.dram_bytes:
            raise DeviceError(f"the image's DRAM ({image.dram.size} bytes) is larger than the "
                              f"board's ({link.dram_bytes} bytes)", field="dram",
                              value=image.dram.size)
        for what, value in (("insn_addr", image.insn_addr), ("insn_count", image.insn_count),
                            ("dram", image.dram.size)):
            if not 0 <= value < 1 << 32:
                raise DeviceError(f"{what} = {value} does not fit the board's 32-bit register",
                                  field=what, value=value)
        if hasattr(link, "configure"):
            # A simulated board takes the image's configuration; a real one's is fixed.
            link.configure(image.config)
        if hasattr(link, "check_config"):
            link.check_config(image.config)
        ident = link.read_reg(R.ID)
        if ident != CSR_ID:
            raise BackendUnavailable(f"the board's ID register reads {ident:#010x}, not the "
                                     f"VTA core's {CSR_ID:#010x}: not this register map")
        self._wait_mem_ready()
        if link.read_reg(R.CTRL) & R.CTRL_RUNNING:
            raise DeviceError("the board is still running an earlier launch", field="CTRL")
        link.write_mem(0, image.dram.tobytes())
        link.write_reg(R.INSN_ADDR, image.insn_addr)
        link.write_reg(R.INSN_COUNT, image.insn_count)
        link.write_reg(R.DRAM_SIZE, image.dram.size)
        link.write_reg(R.CTRL, R.CTRL_LAUNCH)
        timeout = self.default_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not (ctrl := link.read_reg(R.CTRL)) & R.CTRL_DONE:
            if time.monotonic() > deadline:
                raise DeviceTimeout(f"board timed out after {timeout:g} s: {self._diagnose()}",
                                    field="timeout", value=timeout)
            if self.poll_interval:
                time.sleep(self.poll_interval)
        code = link.read_reg(R.ERROR_CODE)
        if ctrl & R.CTRL_ERROR or code != ErrorCode.NONE:
            raise describe_error(image, code, link.read_reg(R.ERROR_INDEX), "the board")
        dram = np.frombuffer(link.read_mem(0, image.dram.size), np.uint8).copy()
        cycles = link.read_reg(R.CYCLES_LO) | (link.read_reg(R.CYCLES_HI) << 32)
        if not getattr(link, "has_cycle_counter", True):
            cycles = None
        return RunResult(dram, self._counters(COUNTERS), cycles, self.name)

    def _run_board_sim(self, image: ProgramImage, timeout: float | None) -> RunResult:
        """One image on the Verilator simulation of the whole board design (core, LiteDRAM and
        the SDRAM chip model, UART bridge), run by this same backend over ``SerialLink`` on
        the simulated serial pins (hw/board/simserial.py)."""
        try:
            from hw.board.simserial import BOARD_SIM_BYTES, run_on_board_sim
            from hw.toolchain import ToolchainError
        except ImportError as exc:
            raise BackendUnavailable(f"link {BOARD_SIM!r} needs the hardware tools: {exc}") \
                from None
        try:
            # a simulated second lasts minutes of wall-clock time: its own default bound
            (r,) = run_on_board_sim([image], mem_bytes=BOARD_SIM_BYTES, memory="sdram",
                                    timeout=BOARD_SIM_TIMEOUT_S if timeout is None else timeout)
        except ToolchainError as exc:
            raise BackendUnavailable(f"link {BOARD_SIM!r}: {exc}") from None
        if int(r.get("sdram_violation", 0)):
            from hw.board.sdram_model import Violation
            raise RuntimeError(f"the board simulation's SDRAM chip saw the controller break "
                               f"{Violation(int(r['sdram_violation'])).name} at cycle "
                               f"{int(r['sdram_violation_cycle'])}")
        if "error" in r:
            code, index = int(r["code"]), int(r["index"])
            kind = DeviceTimeout if int(r["timeout"]) else DeviceError
            raise kind(str(r["error"]), code=ErrorCode(code) if code >= 0 else None,
                       index=index if index >= 0 else None)
        counters = {name: int(r[name]) for name in COUNTERS}
        return RunResult(np.asarray(r["dram"], np.uint8), counters, int(r["cycles"]), self.name)

    def _wait_mem_ready(self) -> None:
        """Poll the link's ``mem_ready()`` until it holds, for at most ``ready_timeout`` s
        (and at least twice, so a slow host still looks once after the bound)."""
        ready = getattr(self.link, "mem_ready", None)
        self.ready_polls = 0
        if ready is None:
            return
        deadline = time.monotonic() + self.ready_timeout
        while True:
            self.ready_polls += 1
            if ready():
                return
            if self.ready_polls >= 2 and time.monotonic() > deadline:
                raise BackendUnavailable(
                    f"the board's SDRAM did not finish its init within "
                    f"{self.ready_timeout * 1e3:g} ms: the board description's status word "
                    f"never showed STATUS_MEM_READY ({self.ready_polls} looks); press the "
                    f"board's reset, check LED 3 (lit when the SDRAM is ready), or reload the "
                    f"bitstream (vta program)")
            if self.poll_interval:
                time.sleep(self.poll_interval)

    def _counters(self, names) -> dict:
        return {name: self.link.read_reg(counter_offset(name)) for name in names}

    def _diagnose(self) -> str:
        """Who makes progress: the busy/stall counters read twice, ``diagnosis_polls`` polls
        of CTRL apart."""
        before = self._counters(PROGRESS_COUNTERS)
        finished = False
        for _ in range(self.diagnosis_polls):
            finished |= bool(self.link.read_reg(R.CTRL) & R.CTRL_DONE)
            if self.poll_interval:
                time.sleep(self.poll_interval)
        after = self._counters(PROGRESS_COUNTERS)
        advanced = {n: (after[n] - before[n]) & 0xFFFFFFFF for n in PROGRESS_COUNTERS}
        text = f"over {self.diagnosis_polls} polls: {describe_progress(advanced)}"
        return text + ("; it finished during these polls" if finished else "")


def describe_progress(advanced: Mapping[str, int]) -> str:
    """Say which modules advance, from how much each busy/stall counter advanced (docs/hardware.md
    §8): ``*_busy`` a module executes, ``*_stall`` its head instruction waits on a token,
    ``fetch_stall`` fetch is blocked on a full command queue, ``mem_busy`` a burst is out."""
    parts = []
    if advanced.get("fetch_stall"):
        parts.append("fetch busy, blocked on a full command queue (fetch_stall advancing)")
    elif advanced.get("fetch_busy"):
        parts.append("fetch busy (fetch_busy advancing)")
    else:
        parts.append("fetch idle")
    for module in MODULES:
        busy, stall = advanced.get(f"{module}_busy"), advanced.get(f"{module}_stall")
        if busy and stall:
            parts.append(f"{module} busy, executing and waiting on tokens ({module}_busy and "
                         f"{module}_stall advancing)")
        elif stall:
            parts.append(f"{module} busy, waiting on a token ({module}_stall advancing)")
        elif busy:
            parts.append(f"{module} busy, executing ({module}_busy advancing)")
        else:
            parts.append(f"{module} idle")
    parts.append("memory port busy (mem_busy advancing)" if advanced.get("mem_busy")
                 else "memory port idle")
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
