"""The facts of the VTA architecture, defined once: opcodes, memory types, stages, token
queues, pipeline latencies, counters and DRAM element sizes.

Imported by ``hw/``, ``sim/``, ``driver/``, the program layer and the compiler; nothing here
depends on a configuration except through the :class:`~isa.config.VTAConfig` passed in.
"""

from __future__ import annotations

import functools
from enum import IntEnum
from typing import TYPE_CHECKING

from .registers import COUNTERS

if TYPE_CHECKING:
    from .config import VTAConfig

__all__ = ["Opcode", "MemType", "AluOp", "STAGES", "STAGE_NUMBERS", "TOKEN_QUEUES", "QUEUES",
           "DEP_FLAGS", "POP_FLAGS", "PUSH_FLAGS", "queue_between", "pop_flag", "push_flag",
           "MODULE_OF", "LOAD_STAGE_MEMTYPES", "stage_of_load", "module_of", "elem_bytes",
           "GEMM_LATENCY", "ALU_LATENCY", "ALU_STALL", "alu_stalls", "RANGE_CHECK_STAGES",
           "HEAD_SETTLE", "COUNTERS", "FUNCTIONAL_COUNTERS"]


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemType(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


#: The three modules that execute instructions, in pipeline order (load, then compute, then
#: store); "prev"/"next" in a dependency flag name the neighbour in this order.
STAGES = ("load", "compute", "store")
#: The original runtime's stage numbers (1 load, 2 compute, 3 store).
STAGE_NUMBERS = {"load": 1, "compute": 2, "store": 3}

#: The four dependency-token queues, (name, producer, consumer), in the hardware's order.
TOKEN_QUEUES = (("l2g", "load", "compute"), ("g2l", "compute", "load"),
                ("g2s", "compute", "store"), ("s2g", "store", "compute"))
#: Token queue name -> (producer, consumer).
QUEUES = {name: (src, dst) for name, src, dst in TOKEN_QUEUES}

POP_FLAGS = ("pop_prev", "pop_next")
PUSH_FLAGS = ("push_prev", "push_next")


def _flag_queue(stage: str, flag: str) -> str | None:
    i = STAGES.index(stage) + (-1 if flag.endswith("prev") else 1)
    if not 0 <= i < len(STAGES):
        return None
    other = STAGES[i]
    src, dst = (other, stage) if flag.startswith("pop") else (stage, other)
    return next((n for n, s, d in TOKEN_QUEUES if (s, d) == (src, dst)), None)


#: For each stage, the queue each dependency flag of its instructions refers to (None: the
#: flag must be zero on that stage).
DEP_FLAGS = {s: {f: _flag_queue(s, f) for f in POP_FLAGS + PUSH_FLAGS} for s in STAGES}


_QUEUE_OF = {(src, dst): name for name, src, dst in TOKEN_QUEUES}


def queue_between(src: str, dst: str) -> str | None:
    """The token queue from stage ``src`` to stage ``dst`` (None if there is none)."""
    return _QUEUE_OF.get((src, dst))


def pop_flag(src: str, dst: str) -> str:
    """The flag of an instruction of ``dst`` that pops the queue from ``src``."""
    return "pop_prev" if STAGES.index(src) < STAGES.index(dst) else "pop_next"


def push_flag(src: str, dst: str) -> str:
    """The flag of an instruction of ``src`` that pushes to ``dst``."""
    return "push_next" if STAGES.index(src) < STAGES.index(dst) else "push_prev"


#: The stage that executes each opcode other than LOAD (reference §2.8).
MODULE_OF = {Opcode.STORE: "store", Opcode.GEMM: "compute", Opcode.ALU: "compute",
             Opcode.FINISH: "compute"}
#: LOADs of these memory types run on the load stage; LOAD UOP/ACC/ACC_8BIT on compute.
LOAD_STAGE_MEMTYPES = (MemType.INP, MemType.WGT)


def stage_of_load(memory_type: int) -> str:
    """The stage that executes a LOAD of ``memory_type``."""
    return "load" if memory_type in LOAD_STAGE_MEMTYPES else "compute"


def module_of(insn) -> str:
    """The stage ("load", "compute" or "store") that executes ``insn``."""
    if insn.opcode == Opcode.LOAD:
        return stage_of_load(insn.memory_type)
    return MODULE_OF[insn.opcode]


@functools.lru_cache(maxsize=64)
def _elem_bytes_table(cfg: "VTAConfig") -> dict[int, int]:
    return {MemType.UOP: cfg.uop_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes,
            MemType.INP: cfg.inp_elem_bytes, MemType.ACC: cfg.acc_elem_bytes,
            MemType.OUT: cfg.out_elem_bytes, MemType.ACC_8BIT: cfg.batch * cfg.block_out}


def elem_bytes(cfg: "VTAConfig", memory_type: int) -> int:
    """Bytes of one DRAM element of ``memory_type``: the unit of ``dram_base`` (SPEC §3)."""
    try:
        return _elem_bytes_table(cfg)[memory_type]
    except KeyError:
        raise ValueError(f"{memory_type!r} is not a valid MemType") from None


#: Cycles from a GEMM micro-op's issue to its accumulator write (``hw/gemm.py``): S0 micro-op,
#: S1 indices, S2 check and INP/WGT reads, S3 INP/WGT data registered, S4 products
#: registered and ACC read, S5 products copied to fabric registers and ACC data registered,
#: S6 half sums and ACC operand registered, S7 operand + half sums into a register, S8 write
#: (no block-RAM output feeds logic before a register; no multiplier shares a cycle with an
#: add, the route from the fixed DSP columns has a cycle of its own).
GEMM_LATENCY = 8
#: Cycles from an ALU micro-op's issue to its accumulator write (``hw/alu.py``): S0 micro-op,
#: S1 indices, S2 check and ACC reads, S3 the block RAMs' data registered, S4 operands
#: registered, S5 lanes (MUL: partial products of 16-bit halves) into registers, S6 MUL's
#: halves joined into the result register, S7 write (every op takes both stages, so results
#: come in order).
ALU_LATENCY = 7
#: Cycles an ALU micro-op waits in S2 (``hw/alu.py``) when it reads the accumulator entry the
#: micro-op just ahead of it writes: its dst, or in vector mode its src, equals that one's dst.
#: Its operand then comes from the result's join two stages ahead, so no op (MUL's DSPs,
#: SHR's shifter, the compare's carry chain) shares a cycle with the forward of its result.
#: Micro-ops further apart, and those of different instructions, never wait.
ALU_STALL = 1


def alu_stalls(dst, src=None):
    """Which micro-ops of an ALU wait :data:`ALU_STALL` cycles: a boolean array over the
    executions 1 … n − 1 (in loop order) of the index arrays ``dst`` and ``src`` (``src`` None:
    immediate mode, which reads no src). Entry j − 1 is micro-op j against micro-op j − 1."""
    ahead = dst[:-1]
    hit = dst[1:] == ahead
    if src is not None:
        hit |= src[1:] == ahead
    return hit

#: Registered stages of the LOAD/STORE range check (``hw/extent.py``): pad sums, products,
#: end sums and compares — the check left the start cycle's critical path (docs/hardware.md).
RANGE_CHECK_STAGES = 3
#: Cycles an entry sits at the head of its command queue before the module sees it
#: (``hw/queues.py``): the head register, then the range-check stages.
HEAD_SETTLE = 1 + RANGE_CHECK_STAGES

#: The original functional simulator's profiler counters (reference §5.7).
FUNCTIONAL_COUNTERS = ("gemm_counter", "alu_counter", "inp_load_nbytes", "wgt_load_nbytes",
                       "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes")
