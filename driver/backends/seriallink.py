"""The host link of a real board: LiteX's UART bridge protocol (:mod:`isa.hostlink`) over a
serial port (pyserial, the ``board`` extra), as a :class:`~driver.backends.board.Link`.

Every read waits at most ``timeout`` seconds for its answer; a board that does not answer (no
bitstream loaded, wrong port, wrong baud rate) is a :class:`BoardNotAnswering` naming the port.
The port object only needs pyserial's ``write``, ``read`` (returning fewer bytes on its timeout)
and ``reset_input_buffer``: the simulation tests pass one that drives a simulated serial line.
"""

from __future__ import annotations

import time

import numpy as np

from isa import hostlink as H

from .base import BackendUnavailable, DeviceError

__all__ = ["SerialLink", "BoardNotAnswering", "open_serial", "parse_link"]


class BoardNotAnswering(BackendUnavailable):
    """Nothing (or garbage) came back from the board within the timeout."""


def parse_link(text: str) -> tuple[str, int]:
    """``PORT`` or ``PORT@BAUD`` (e.g. ``/dev/ttyUSB0@3000000``) → (port, baud)."""
    port, _, baud = text.partition("@")
    if not port:
        raise BackendUnavailable(f"link {text!r}: give a serial port, e.g. /dev/ttyUSB0")
    try:
        rate = int(baud) if baud else H.DEFAULT_BAUD
    except ValueError:
        raise BackendUnavailable(f"link {text!r}: the baud rate after '@' must be an "
                                 f"integer") from None
    return port, rate


def open_serial(device: str, baud: int, timeout: float):
    """A pyserial port, or BackendUnavailable saying what is missing."""
    try:
        import serial
    except ImportError:
        raise BackendUnavailable("the board backend needs pyserial: pip install -e "
                                 "'.[board]'") from None
    try:
        return serial.Serial(device, baud, timeout=timeout)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise BackendUnavailable(f"cannot open serial port {device} at {baud} baud: {exc}") \
            from None


class SerialLink:
    """A board behind ``port``; checks that a VTA board design answers and reads its DRAM
    size. ``name`` is how errors name the port."""

    has_cycle_counter = True

    def __init__(self, port, *, name: str = "the serial port", timeout: float = 1.0):
        self.port, self.name, self.timeout = port, name, timeout
        port.reset_input_buffer()
        magic, dram, clock, config = self._read_words(H.INFO_BASE // 4, 4)
        if magic != H.BOARD_MAGIC:
            raise BoardNotAnswering(f"{name}: the device answered {magic:#010x} instead of "
                                    f"the VTA board's {H.BOARD_MAGIC:#010x}: not a VTA board "
                                    f"design (or a wrong baud rate)")
        self.dram_bytes, self.clock_hz, self.config_word = int(dram), int(clock), int(config)

    def check_config(self, cfg) -> None:
        """A DeviceError unless the bitstream was built for ``cfg``'s instruction set."""
        if H.config_word(cfg.key, cfg.bus_width) != self.config_word:
            raise DeviceError(f"the image is for configuration {cfg} but the board's "
                              f"bitstream was built for another one (fingerprint "
                              f"{self.config_word:#010x}); build and load its bitstream "
                              f"(vta bitstream --config ..., vta program)", field="config")

    @classmethod
    def open(cls, link: str, *, timeout: float = 1.0) -> "SerialLink":
        device, baud = parse_link(link)
        return cls(open_serial(device, baud, timeout), name=f"{device} at {baud} baud",
                   timeout=timeout)

    # -- words ----------------------------------------------------------------------------
    def _read_exact(self, n: int) -> bytes:
        deadline = time.monotonic() + self.timeout
        data = b""
        while len(data) < n:
            chunk = self.port.read(n - len(data))
            data += chunk
            if len(data) < n and not chunk and time.monotonic() > deadline:
                raise BoardNotAnswering(
                    f"no board answers on {self.name}: {len(data)} of {n} bytes within "
                    f"{self.timeout:g} s; is the bitstream loaded (vta program) and the port "
                    f"and baud rate right?")
        return data

    def _read_words(self, word_addr: int, count: int) -> np.ndarray:
        out = []
        while count:
            n = min(count, H.MAX_WORDS)
            self.port.write(bytes([H.CMD_READ, n]) + word_addr.to_bytes(4, "big"))
            out.append(np.frombuffer(self._read_exact(4 * n), ">u4"))
            word_addr, count = word_addr + n, count - n
        return np.concatenate(out).astype(np.uint32) if out else np.zeros(0, np.uint32)

    def _write_words(self, word_addr: int, words: np.ndarray) -> None:
        be = np.asarray(words, np.uint32).astype(">u4").tobytes()
        for i in range(0, len(words), H.MAX_WORDS):
            n = min(H.MAX_WORDS, len(words) - i)
            self.port.write(bytes([H.CMD_WRITE, n]) + (word_addr + i).to_bytes(4, "big")
                            + be[4 * i:4 * (i + n)])

    # -- the Link interface ---------------------------------------------------------------
    def mem_ready(self) -> bool:
        """The board description's ``STATUS_MEM_READY`` bit (the SDRAM is initialised)."""
        return bool(int(self._read_words(H.INFO_BASE // 4 + H.INFO_STATUS, 1)[0])
                    & H.STATUS_MEM_READY)

    def read_reg(self, offset: int) -> int:
        return int(self._read_words((H.CSR_BASE + offset) // 4, 1)[0])

    def write_reg(self, offset: int, value: int) -> None:
        self._write_words((H.CSR_BASE + offset) // 4, np.array([value & 0xFFFFFFFF]))

    def _check(self, addr: int, nbytes: int) -> None:
        if addr < 0 or addr + nbytes > self.dram_bytes:
            raise ValueError(f"[{addr}, {addr + nbytes}) is outside the board's DRAM "
                             f"({self.dram_bytes} bytes)")

    def read_mem(self, addr: int, nbytes: int) -> bytes:
        self._check(addr, nbytes)
        first, end = addr // 4, -(-(addr + nbytes) // 4)
        data = self._read_words(first, end - first).astype("<u4").tobytes()
        return data[addr - 4 * first:addr - 4 * first + nbytes]

    def write_mem(self, addr: int, data: bytes) -> None:
        self._check(addr, len(data))
        first, end = addr // 4, -(-(addr + len(data)) // 4)
        buf = bytearray(4 * (end - first))
        if addr % 4 or (addr + len(data)) % 4:         # partial words: keep their other bytes
            buf[:4] = self.read_mem(4 * first, 4)
            buf[-4:] = self.read_mem(4 * (end - 1), 4)
        buf[addr - 4 * first:addr - 4 * first + len(data)] = data
        self._write_words(first, np.frombuffer(bytes(buf), "<u4"))
