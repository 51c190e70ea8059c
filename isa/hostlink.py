"""The host link of a board: LiteX's UART bridge protocol over a serial line, and the board's
address map. The gateware (``hw/board/bridge.py``) and the driver's serial link
(``driver/backends/seriallink.py``) both read this module.

Protocol (bytes on the serial line, 8N1):

* write: ``CMD_WRITE``, *n* (1…255 words), the word address (4 bytes, big-endian), then *n*
  32-bit words, each big-endian. No answer.
* read: ``CMD_READ``, *n*, the word address; the board answers *n* words, each big-endian.

Word address *a* is byte address 4 *a*; consecutive words of a command go to consecutive
addresses. A command that stalls for ``IDLE_TIMEOUT_S`` between two bytes is dropped, so a host
that gave up half-way finds the board listening for a new command.

Address map (byte addresses): the board's DRAM from 0 (the core's physical address 0 is the
host's 0), the core's registers (:mod:`isa.registers`) at ``CSR_BASE`` + offset, and the board's
description at ``INFO_BASE``: ``INFO_MAGIC`` (reads :data:`BOARD_MAGIC`), ``INFO_DRAM_BYTES``,
``INFO_CLOCK_HZ`` (the core's clock), ``INFO_CONFIG`` (:func:`config_word` of the
configuration the bitstream was built for), ``INFO_STATUS`` (bit ``STATUS_MEM_READY``: the DRAM
answers; an SDRAM board raises it once the chip is initialised, ~100 µs after reset, and holds
memory accesses until then) as word offsets. Other addresses read 0 and ignore writes.
"""

from __future__ import annotations

import zlib

__all__ = ["CMD_WRITE", "CMD_READ", "MAX_WORDS", "CSR_BASE", "WORD_BYTES", "IDLE_TIMEOUT_S",
           "FT231X_MAX_BAUD", "DEFAULT_BAUD", "ADDR_WORD_BITS", "PAGE_BYTES", "INFO_BASE",
           "INFO_MAGIC", "INFO_DRAM_BYTES", "INFO_CLOCK_HZ", "INFO_CONFIG", "INFO_STATUS",
           "STATUS_MEM_READY", "BOARD_MAGIC",
           "config_word"]

CMD_WRITE = 0x01
CMD_READ = 0x02
MAX_WORDS = 255
WORD_BYTES = 4
#: Word addresses are 30 bits (byte addresses are 32).
ADDR_WORD_BITS = 30
CSR_BASE = 0xF000_0000
#: The decoder's page: 16 KiB (4096 words) per region above DRAM.
PAGE_BYTES = 0x4000
INFO_BASE = CSR_BASE + PAGE_BYTES
INFO_MAGIC, INFO_DRAM_BYTES, INFO_CLOCK_HZ, INFO_CONFIG, INFO_STATUS = 0, 1, 2, 3, 4
#: ``INFO_STATUS`` bit: the board's DRAM is ready (its SDRAM initialised).
STATUS_MEM_READY = 1 << 0
#: "VTAB": a VTA board design answers on this link.
BOARD_MAGIC = 0x56544142
IDLE_TIMEOUT_S = 0.05
#: The FT231X's highest baud rate (FTDI datasheet: 3 Mbaud, RS232-style signalling).
FT231X_MAX_BAUD = 3_000_000
DEFAULT_BAUD = FT231X_MAX_BAUD

assert CSR_BASE % PAGE_BYTES == 0 and PAGE_BYTES >= 1 << 12   # the register map's 12 bits


def config_word(key: str, bus_width: int) -> int:
    """A 32-bit fingerprint of a configuration's instruction set and bus: what an image must
    match to run on a board (``key`` is :attr:`isa.config.VTAConfig.key`)."""
    return zlib.crc32(f"{key}_bus{bus_width}".encode())
