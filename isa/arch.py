"""The facts of the VTA architecture, defined once: opcodes, memory types, stages, token
queues, pipeline latencies, counters and DRAM element sizes.

Imported by ``hw/``, ``sim/``, ``driver/``, the program layer and the compiler; nothing here
depends on a configuration except through the :class:`~isa.config.VTAConfig` passed in.
"""

from __future__ import annotations

import functools
from enum import IntEnum
from typing import TYPE_CHECKING

import numpy as np

from .registers import COUNTERS

if TYPE_CHECKING:
    from .config import VTAConfig

__all__ = ["Opcode", "MemType", "AluOp", "STAGES", "STAGE_NUMBERS", "TOKEN_QUEUES", "QUEUES",
           "DEP_FLAGS", "POP_FLAGS", "PUSH_FLAGS", "queue_between", "pop_flag", "push_flag",
           "MODULE_OF", "LOAD_STAGE_MEMTYPES", "stage_of_load", "module_of", "elem_bytes",
           "GEMM_LATENCY", "ALU_LATENCY", "ALU_FORWARD_DISTANCE", "ALU_MUL_FORWARD_DISTANCE",
           "alu_waits", "alu_dependences", "alu_stalls", "RANGE_CHECK_STAGES",
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
#: S1 indices, S2 check and INP/WGT reads, S3 INP/WGT data registered, S4 the operands into
#: the multipliers' input registers, S5 products in their output registers and ACC read, S6
#: products copied to fabric registers and ACC data registered, S7 half sums and ACC operand
#: registered, S8 operand + half sums into a register, S9 write (no block-RAM output feeds
#: logic before a register; no multiplier shares a cycle with an add or a route: the fixed DSP
#: columns have a cycle of their own on each side).
GEMM_LATENCY = 9
#: Cycles from an ALU micro-op's issue to its accumulator write (``hw/alu.py``): S0 micro-op,
#: S1 indices, S2 check and ACC reads, S3 the block RAMs' data registered, S4 operands
#: registered, S5 lanes into registers and MUL's operands into the multipliers' input
#: registers, S6 the pick and MUL's partial products of 16-bit halves into registers, S7
#: MUL's halves joined, every op's result into the result register, S8 write (every op takes
#: every stage, so results come in order).
ALU_LATENCY = 8
#: Minimum issue distance, in cycles, from an ALU micro-op to one that depends on it (reads
#: the accumulator entry it writes: its dst, or in vector mode its src, equals that one's dst;
#: ``hw/alu.py``, S2): the reader takes its operand from the result's join two stages ahead, so
#: no op (SHR's shifter, the compare's carry chain) shares a cycle with the forward.
ALU_FORWARD_DISTANCE = 2
#: The same for MUL: its partial products leave the fixed DSP columns, so the forward of its
#: join two stages ahead was the core's critical path on ECP5; a MUL reader is three issue
#: slots behind its producer instead (one more register before the forward).
ALU_MUL_FORWARD_DISTANCE = 3


def alu_waits(dep1, dep2=None, mul: bool = False, prev_wait: int = 0) -> np.ndarray:
    """The waits (cycles, int64) of consecutive ALU micro-op positions from their
    dependences: ``dep1[i]``, ``dep2[i]`` whether position i depends on the micro-op one,
    resp. two, ahead (``dep2`` is only read when ``mul``; None: no such dependence);
    ``prev_wait`` the wait of the position before the first (0: it is micro-op 0).

    w = max(0, D − 1 if dep1, D − 2 − w_prev if dep2), D = :data:`ALU_FORWARD_DISTANCE`
    (:data:`ALU_MUL_FORWARD_DISTANCE` if ``mul``): D = 2 gives w = dep1; D = 3 gives 2 on
    dep1, else 1 on dep2 after a position that did not wait, else 0. Vectorised: along a run
    of dep2-only positions the waits alternate 1, 0, 1, … from the wait before the run."""
    dep1 = np.asarray(dep1, dtype=bool)
    d = ALU_MUL_FORWARD_DISTANCE if mul else ALU_FORWARD_DISTANCE
    assert d in (2, 3)
    w = dep1.astype(np.int64) * (d - 1)
    if d == 3 and dep2 is not None:
        only2 = np.flatnonzero(np.asarray(dep2, dtype=bool) & ~dep1)
        if only2.size:
            # Runs of consecutive dep2-only positions: their starts, and each one's start.
            new = np.r_[True, np.diff(only2) != 1]
            starts = only2[new]
            before = np.where(starts > 0, w[np.maximum(starts - 1, 0)], prev_wait)
            first = before == 0                        # the run's first position waits 1
            run = np.cumsum(new) - 1
            even = ((only2 - starts[run]) & 1) == 0
            w[only2] = even == first[run]
    return w


def alu_stalls(dst, src=None, mul: bool = False) -> np.ndarray:
    """The waits (cycles, int64 array of n − 1) of the micro-op executions 1 … n − 1 (in loop
    order) of an ALU with index arrays ``dst`` and ``src`` (``src`` None: immediate mode,
    which reads no src; ``mul``: the ALU is a MUL). Entry j − 1 is micro-op j, which issues
    1 + w_j cycles after micro-op j − 1: the least wait keeping it
    :data:`ALU_FORWARD_DISTANCE` (:data:`ALU_MUL_FORWARD_DISTANCE` for MUL) cycles behind each
    of micro-ops j − 1 and j − 2 it depends on (its dst, or in vector mode its src, equals
    their dst); see :func:`alu_waits`. Micro-ops of different instructions never wait."""
    dst = np.asarray(dst)
    if dst.size < 2:
        return np.zeros(0, np.int64)
    return alu_waits(*alu_dependences(dst, src, mul), mul)


def alu_dependences(dst, src=None, mul: bool = False):
    """``(dep1, dep2)`` over the executions 1 … n − 1 of ``dst``/``src`` (n ≥ 1): whether
    each depends on the micro-op one, resp. two, ahead (its dst, or with ``src`` its src,
    equals that one's dst); ``dep2`` None unless ``mul`` (only a MUL waits for it)."""
    dst = np.asarray(dst)
    dep1 = dst[1:] == dst[:-1]
    if src is not None:
        src = np.asarray(src)
        dep1 |= src[1:] == dst[:-1]
    dep2 = None
    if mul:
        dep2 = np.zeros(max(dst.size - 1, 0), bool)
        dep2[1:] = dst[2:] == dst[:-2]
        if src is not None:
            dep2[1:] |= src[2:] == dst[:-2]
    return dep1, dep2

#: Registered stages of the LOAD/STORE range check (``hw/extent.py``): pad sums, the
#: multipliers' input registers, products, compares — the check left the start cycle's
#: critical path (docs/hardware.md).
RANGE_CHECK_STAGES = 4
#: Cycles an entry sits at the head of its command queue before the module sees it
#: (``hw/queues.py``): the head register, then the range-check stages.
HEAD_SETTLE = 1 + RANGE_CHECK_STAGES

#: The original functional simulator's profiler counters (reference §5.7).
FUNCTIONAL_COUNTERS = ("gemm_counter", "alu_counter", "inp_load_nbytes", "wgt_load_nbytes",
                       "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes")
