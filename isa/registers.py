"""The core's control registers: one AXI4-Lite slave, 32-bit registers at 12-bit byte offsets.

This is the one register map of the project. The hardware (``hw/csr.py``) builds its slave
from it, the driver's board backend (``driver/backends/board.py``) programs a board with it
and the software board (``driver/backends/simlink.py``) implements it. docs/hardware.md §7
and §8 describe the timing and the counters.

=========  ==========  ======  ==========================================================
offset     name        access  meaning
=========  ==========  ======  ==========================================================
0x00       CTRL        R/W     write bit 0 = 1: launch (ignored while running);
                               read: bit 0 running, bit 1 done, bit 2 error
0x04       ERROR_CODE  R       :class:`isa.errors.ErrorCode` of the run (0 = none)
0x08       ERROR_INDEX R       index of the failing instruction
0x0C       INSN_ADDR   R/W     byte address of the first instruction
0x10       INSN_COUNT  R/W     number of instructions
0x14       DRAM_SIZE   R/W     bytes of DRAM from address 0 (DRAM_RANGE checks)
0x18/0x1C  CYCLES_LO/HI R      the cycle counter, launch to done
0x20…0x48  counters    R       :data:`COUNTERS`, in that order, upper-case names
0x7C       ID          R       :data:`CSR_ID`
=========  ==========  ======  ==========================================================

Unmapped offsets read 0; writes to read-only registers are ignored.
``isa`` imports nothing else of the project.
"""

from __future__ import annotations

__all__ = ["COUNTERS", "CSR_ID", "REGISTERS", "OFFSETS", "MEANINGS", "CTRL", "ERROR_CODE",
           "ERROR_INDEX", "INSN_ADDR", "INSN_COUNT", "DRAM_SIZE", "CYCLES_LO", "CYCLES_HI",
           "COUNTERS_BASE", "ID", "CTRL_LAUNCH", "CTRL_RUNNING", "CTRL_DONE", "CTRL_ERROR",
           "counter_offset"]

#: The per-run event counters of the core (32 bits each), in register-map order.
#: docs/hardware.md §8 says when each counts.
COUNTERS = ("fetch_busy", "fetch_stall", "load_busy", "load_stall", "compute_busy",
            "compute_stall", "store_busy", "store_stall", "gemm_uops", "alu_uops", "mem_busy")

#: Identification word at ``ID`` ("VTA", register-map version 1).
CSR_ID = 0x56544101

# Byte offsets.
CTRL = 0x00
ERROR_CODE = 0x04
ERROR_INDEX = 0x08
INSN_ADDR = 0x0C
INSN_COUNT = 0x10
DRAM_SIZE = 0x14
CYCLES_LO = 0x18
CYCLES_HI = 0x1C
COUNTERS_BASE = 0x20     # counter i at COUNTERS_BASE + 4 * i
ID = 0x7C

# CTRL bits.
CTRL_LAUNCH = 1 << 0     # write
CTRL_RUNNING = 1 << 0    # read
CTRL_DONE = 1 << 1       # read
CTRL_ERROR = 1 << 2      # read: ERROR_CODE != 0


def counter_offset(name: str) -> int:
    """The byte offset of the counter ``name`` (one of :data:`COUNTERS`)."""
    return COUNTERS_BASE + 4 * COUNTERS.index(name)


#: The register map: byte offset -> (name, access), access "r" or "rw".
REGISTERS = {
    CTRL: ("CTRL", "rw"),
    ERROR_CODE: ("ERROR_CODE", "r"),
    ERROR_INDEX: ("ERROR_INDEX", "r"),
    INSN_ADDR: ("INSN_ADDR", "rw"),
    INSN_COUNT: ("INSN_COUNT", "rw"),
    DRAM_SIZE: ("DRAM_SIZE", "rw"),
    CYCLES_LO: ("CYCLES_LO", "r"),
    CYCLES_HI: ("CYCLES_HI", "r"),
    **{COUNTERS_BASE + 4 * i: (name.upper(), "r") for i, name in enumerate(COUNTERS)},
    ID: ("ID", "r"),
}

#: Register name -> byte offset.
OFFSETS = {name: offset for offset, (name, _) in REGISTERS.items()}

#: Register name -> what it holds (for documentation and tools).
MEANINGS = {
    "CTRL": "write bit 0 = 1: launch (ignored while running); read: bit 0 running, "
            "bit 1 done, bit 2 error",
    "ERROR_CODE": "isa.errors.ErrorCode of the run (0 = none)",
    "ERROR_INDEX": "index of the failing instruction",
    "INSN_ADDR": "byte address of the first instruction",
    "INSN_COUNT": "number of instructions",
    "DRAM_SIZE": "bytes of DRAM from address 0 (DRAM_RANGE checks)",
    "CYCLES_LO": "cycle counter, low 32 bits",
    "CYCLES_HI": "cycle counter, high 32 bits",
    **{name.upper(): f"counter {name} (docs/hardware.md §8)" for name in COUNTERS},
    "ID": f"identification word {CSR_ID:#010x}",
}

assert len(REGISTERS) == len(OFFSETS) == len(MEANINGS)
assert max(REGISTERS) < ID + 4 and COUNTERS_BASE + 4 * len(COUNTERS) <= ID
