"""The functional simulator: the architectural semantics of SPEC §4, vectorised with numpy.

Three modules (load, compute, store) execute their own instructions in program order, each
instruction atomically; only the four token queues order them against each other. Fetch
dispatches in program order into command queues of ``cfg.cmd_queue_depth`` entries (an entry is
freed when its module starts the instruction), so the programs that deadlock here are exactly
those that deadlock in the hardware. A *schedule* picks which ready module runs next; a
race-free program gives the same DRAM under every schedule (:func:`find_race` checks).
"""

from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from isa.arch import DEP_FLAGS, FUNCTIONAL_COUNTERS, QUEUES, STAGES, elem_bytes
from isa.config import VTAConfig
from isa.encoding import (Alu, AluOp, Finish, Gemm, Instruction, IsaError, Load, MemType,
                          Opcode, Store, decode, module_of)
from isa.errors import ErrorCode, RejectedError, RunTimeout
from isa.image import ProgramImage
from isa.layout import uop_layout

__all__ = ["FunctionalSimulator", "FunctionalResult", "SimulationError", "SimulationTimeout",
           "RaceError", "UOP_CHUNK", "uop_loop_max", "first_bad_uop",
           "run_image", "find_race", "check_fields", "alu_op", "SCHEDULES", "MODULES",
           "QUEUES", "DEP_QUEUES"]

# The modules, the token queues (name -> (producer, consumer)) and, for each module, which
# queue each dependency flag refers to (None: must be zero): the facts of isa.arch.
MODULES, DEP_QUEUES = STAGES, DEP_FLAGS
SCHEDULES = ("in-order", "load-first", "store-first", "compute-first", "random")
#: Micro-op executions whose indices are materialised at once: a GEMM or ALU instruction runs
#: in chunks of about this many (its loops may describe up to 2^14 x 2^14 x 2^13 executions),
#: so memory is bounded whatever the loop extents, and a deadline is checked between chunks.
UOP_CHUNK = 1 << 18
#: Decoded instructions by configuration and 16-byte word (only words that decode cleanly):
#: a model's segments run the same streams on every inference. Keyed by the bytes fetched, so
#: a stream rewritten in DRAM is decoded afresh; cleared when it grows past this many words.
_DECODED: dict = {}
#: The largest |product| of two int8 values, (-128)·(-128).
_INT8_PRODUCT_MAX = 1 << 14
_DECODED_MAX = 1 << 17
#: int8 products one float32 matrix product may sum: 2^10 of at most 2^14 stay within 2^24,
#: where float32 holds every integer, so the sum is exact whatever the order.
_EXACT_TERMS = (1 << 24) // _INT8_PRODUCT_MAX
#: Plans of GEMM and ALU instructions (:class:`_GemmPlan`, :class:`_AluPlan`) by configuration
#: and (instruction, the micro-op words it reads): a model's layers run the same instructions
#: over many tiles and inferences, so their index arrays are worked out once. Only instructions
#: of at most UOP_CHUNK executions get one; forgotten past this many index entries (8 bytes
#: each: 64 MB; ResNet-18's plans hold 0.6 M).
_PLANS: dict = {}
_PLAN_BUDGET = 1 << 23
_BLAS = None        # threadpoolctl's controller of numpy's BLAS, made on first use


class SimulationError(RejectedError):
    """An error in the program (SPEC §4.6): ``code``, instruction ``index``, ``field``, ``value``."""

    def __init__(self, code: ErrorCode, index: int | None, message: str, *,
                 field: str | None = None, value=None):
        self.code, self.index, self.field, self.value = code, index, field, value
        self.detail = message
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"instruction {self.index}: " if self.index is not None else ""
        return f"{where}{self.detail} [{self.code.name}]"

    def at(self, index: int) -> "SimulationError":
        """The same error, located at instruction ``index``."""
        self.index = index
        self.args = (self._text(),)
        return self


class SimulationTimeout(RunTimeout):
    """The wall-clock deadline passed; ``index`` is the instruction that was running."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


class RaceError(RejectedError):
    """Two legal schedules of one program left different DRAM."""


@dataclass
class FunctionalResult:
    dram: np.ndarray
    counters: dict = field(default_factory=dict)
    finished: bool = True


def _counters() -> dict:
    # The original's profiler counters, then this project's own.
    keys = FUNCTIONAL_COUNTERS + ("gemm_reset_counter", "load_insns", "store_insns",
                                  "gemm_insns", "alu_insns", "finish_insns", "nop_insns")
    return dict.fromkeys(keys, 0)


class FunctionalSimulator:
    """Architectural state (SRAMs, token counts, DRAM) and the instruction semantics.

    ``dram`` is used in place; :meth:`run` executes one launch.
    """

    def __init__(self, cfg: VTAConfig, dram: np.ndarray, *, deadline: float | None = None):
        self.cfg = cfg
        self.dram = dram
        #: ``time.monotonic()`` after which :class:`SimulationTimeout` is raised (checked
        #: before each instruction and between the chunks of a long GEMM or ALU).
        self.deadline = deadline
        self.executing: tuple | None = None      # (instruction, uops done, uops in all)
        self.index: int | None = None            # of the instruction that runs last
        c = cfg
        self.uop = np.zeros(c.uop_depth, np.uint32)
        self.inp = np.zeros((c.inp_depth, c.batch, c.block_in), np.int8)
        self.wgt = np.zeros((c.wgt_depth, c.block_out, c.block_in), np.int8)
        self.acc = np.zeros((c.acc_depth, c.batch, c.block_out), np.int32)
        self.counters = _counters()
        lay = uop_layout(cfg)
        self._uop_fields = [(f.offset, f.mask) for f in (lay["dst"], lay["src"], lay["wgt"])]
        # By memory type: (buffer, DRAM element bytes, counter, bytes counted per element);
        # like the original, an ACC_8BIT load counts whole accumulator elements.
        self._load_targets = {
            mt: (buf, elem_bytes(cfg, mt), f"{key}_load_nbytes",
                 cfg.acc_elem_bytes if mt == MemType.ACC_8BIT else elem_bytes(cfg, mt))
            for mt, buf, key in ((MemType.UOP, self.uop, "uop"), (MemType.WGT, self.wgt, "wgt"),
                                 (MemType.INP, self.inp, "inp"), (MemType.ACC, self.acc, "acc"),
                                 (MemType.ACC_8BIT, self.acc, "acc"))}
        #: False runs every GEMM and ALU by chunks of index arrays (the simple path that the
        #: plans are tested against).
        self.use_plans = True
        self._insn_plans = _PLANS.setdefault(cfg, _Plans())

    # ------------------------------------------------------------------ scheduling
    def run(self, insn_addr: int, insn_count: int, *, schedule: str = "in-order",
            seed: int = 0) -> bool:
        """Execute one launch; returns when FINISH has executed. Raises SimulationError."""
        self.launch(insn_addr, insn_count, schedule=schedule, seed=seed)
        with _one_blas_thread():
            while not self.step():
                pass
        return True

    def launch(self, insn_addr: int, insn_count: int, *, schedule: str = "in-order",
               seed: int = 0) -> None:
        """Start a launch: empty command queues, no tokens, fetch at ``insn_addr``."""
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; choose from {', '.join(SCHEDULES)}")
        words = self.dram[insn_addr:insn_addr + 16 * insn_count]
        if words.size < 16 * insn_count:
            raise SimulationError(ErrorCode.DRAM_RANGE, None,
                                  f"the instruction stream at {insn_addr} ({insn_count} "
                                  f"instructions) runs past the end of DRAM ({self.dram.size} "
                                  f"bytes)", field="insn_addr", value=insn_addr)
        self._words = memoryview(words)
        self._decoded = _DECODED.setdefault(self.cfg, {})
        if len(self._decoded) > _DECODED_MAX:
            self._decoded.clear()
        self._schedule, self._rng = schedule, random.Random(seed)
        self.insn_count, self.fetched, self._pending = insn_count, 0, None
        self.queues = {m: deque() for m in MODULES}
        # Beside each queue: its instructions' (pop queues, (push flag, queue) pairs).
        self._plans = {m: deque() for m in MODULES}
        self.tokens = dict.fromkeys(QUEUES, 0)
        self.finished = False

    def _fetch(self) -> None:
        """Dispatch in program order while the target command queue has room."""
        while self.fetched < self.insn_count:
            if self._pending is None:
                at = 16 * self.fetched
                raw = self._words[at:at + 16].tobytes()
                pending = self._decoded.get(raw)
                if pending is None:
                    pending = _plan(self._decode(int.from_bytes(raw, "little"), self.fetched))
                    self._decoded[raw] = pending
                self._pending = pending
            insn, module, plan = self._pending
            queue = self.queues[module]
            if len(queue) >= self.cfg.cmd_queue_depth:
                return
            queue.append((self.fetched, insn))
            self._plans[module].append(plan)
            self.fetched, self._pending = self.fetched + 1, None

    def waiting(self, module: str) -> list[str]:
        """The pop flags on which the head instruction of ``module`` waits for a token."""
        if not self.queues[module]:
            return []
        insn, dq = self.queues[module][0][1], DEP_QUEUES[module]
        return [flag for flag in ("pop_prev", "pop_next")
                if getattr(insn, flag) and self.tokens[dq[flag]] == 0]

    def ready(self) -> list[str]:
        """Modules whose head instruction can start now (after fetching what fits)."""
        self._fetch()
        tokens, plans = self.tokens, self._plans
        ready = []
        for m in MODULES:               # a plain loop: this runs once per instruction
            if plans[m]:
                for q in plans[m][0][0]:
                    if not tokens[q]:
                        break
                else:
                    ready.append(m)
        return ready

    def step(self) -> bool:
        """Execute one instruction of a ready module; True once FINISH has executed.

        Raises SimulationError for an error in the program, including a deadlock or a missing
        FINISH when no module can go on.
        """
        ready = self.ready()
        if not ready:
            self._stuck()
        module = self._pick(ready)
        index, insn = self.queues[module].popleft()
        pops, pushes = self._plans[module].popleft()
        self.index = index
        if self.deadline is not None:
            self.check_deadline(insn)
        tokens = self.tokens
        for queue in pops:
            tokens[queue] -= 1
        try:
            self.execute(insn)
        except SimulationError as exc:
            raise exc.at(index) from None
        for flag, queue in pushes:
            if tokens[queue] >= self.cfg.token_queue_depth:
                raise SimulationError(
                    ErrorCode.TOKEN_OVERFLOW, index,
                    f"{flag} on {module}: queue {queue} already holds {tokens[queue]} "
                    f"tokens (TOKEN_QUEUE_DEPTH = {self.cfg.token_queue_depth})",
                    field=flag, value=tokens[queue])
            tokens[queue] += 1
        self.finished = isinstance(insn, Finish)
        return self.finished

    def check_deadline(self, next_insn: Instruction | None = None) -> None:
        """Raise :class:`SimulationTimeout` (saying what was running) if the deadline passed."""
        if self.deadline is None or time.monotonic() <= self.deadline:
            return
        index = self.index
        if self.executing is not None:
            insn, done, total = self.executing
            at = f" (instruction {index})" if index is not None else ""
            what = (f"the {module_of(insn)} module was executing {insn.opcode.name}{at} and "
                    f"had done {done:,} of its {total:,} micro-op executions")
        elif next_insn is not None:
            what = (f"the {module_of(next_insn)} module was about to execute "
                    f"{next_insn.opcode.name} after {self.instructions_executed()} instructions")
        else:
            what = f"after {self.instructions_executed()} instructions"
        raise SimulationTimeout(what, index)

    def instructions_executed(self) -> int:
        """Instructions executed so far."""
        c = self.counters
        return sum(c[k] for k in ("load_insns", "store_insns", "gemm_insns", "alu_insns",
                                  "finish_insns"))

    def _decode(self, word: int, index: int) -> Instruction:
        """Decode at dispatch, with the errors that the fields alone reveal."""
        try:
            insn = decode(word, self.cfg)
        except IsaError as exc:
            raise SimulationError(ErrorCode.ILLEGAL_OPCODE, index, exc.detail,
                                  field=exc.field, value=exc.value) from None
        module = module_of(insn)
        for flag, queue in DEP_QUEUES[module].items():
            if queue is None and getattr(insn, flag):
                raise SimulationError(ErrorCode.ILLEGAL_DEP_FLAG, index,
                                      f"{flag} must be 0 on a {module}-module instruction "
                                      f"({insn.opcode.name})", field=flag, value=1)
        try:
            check_fields(insn)
        except SimulationError as exc:
            raise exc.at(index) from None
        return insn

    def _pick(self, ready: list[str]) -> str:
        if len(ready) == 1:
            return ready[0]
        oldest = min(ready, key=lambda m: self.queues[m][0][0])
        if self._schedule == "random":
            return self._rng.choice(ready)
        first = self._schedule.split("-")[0]
        return first if first in ready else oldest

    def _stuck(self):
        queues, tokens, fetched, insn_count = self.queues, self.tokens, self.fetched, self.insn_count
        if fetched == insn_count and not any(queues.values()):
            raise SimulationError(ErrorCode.MISSING_FINISH, insn_count - 1,
                                  f"the stream of {insn_count} instructions ended without a "
                                  f"FINISH (no instruction has opcode 3)", field="opcode",
                                  value=None)
        waits = []
        for module in MODULES:
            if not queues[module]:
                waits.append(f"{module} has no instruction")
                continue
            index, insn = queues[module][0]
            dq = DEP_QUEUES[module]
            empty = [f"{flag} from {dq[flag]} (0 tokens)" for flag in self.waiting(module)]
            waits.append(f"{module} waits at instruction {index} ({insn.opcode.name}) to "
                         + " and ".join(empty))
        if fetched < insn_count:
            waits.append(f"fetch waits at instruction {fetched}: its command queue is full")
        oldest = min(queues[m][0][0] for m in MODULES if queues[m])
        raise SimulationError(ErrorCode.DEADLOCK, oldest, "token deadlock: " + "; ".join(waits),
                              field="tokens", value=dict(tokens))

    # ------------------------------------------------------------------ semantics
    def execute(self, insn: Instruction) -> None:
        """Execute one instruction atomically (token handling is the scheduler's)."""
        c = self.counters
        if isinstance(insn, Load):
            c["load_insns"] += 1
            self._load(insn)
        elif isinstance(insn, Store):
            c["store_insns"] += 1
            self._store(insn)
        elif isinstance(insn, Gemm):
            c["gemm_insns"] += 1
            self._gemm(insn)
        elif isinstance(insn, Alu):
            c["alu_insns"] += 1
            self._alu(insn)
        else:
            c["finish_insns"] += 1

    def _dram_elements(self, insn, elem_bytes: int) -> np.ndarray:
        """Element indices (y_size, x_size) that a 2-D transfer touches; checks the range."""
        rows = insn.dram_base + np.arange(insn.y_size, dtype=np.int64)[:, None] * insn.x_stride
        idx = rows + np.arange(insn.x_size, dtype=np.int64)[None, :]
        if idx.size:
            last = int(idx.max())
            if (last + 1) * elem_bytes > self.dram.size:
                raise SimulationError(ErrorCode.DRAM_RANGE, None,
                                      f"{insn.opcode.name} reaches DRAM byte "
                                      f"{(last + 1) * elem_bytes - 1} past the end of DRAM "
                                      f"({self.dram.size} bytes); dram_base = {insn.dram_base}",
                                      field="dram_base", value=insn.dram_base)
        return idx

    def _check_dram_range(self, insn, elem_bytes: int) -> None:
        """The range check of :meth:`_dram_elements`, from the last element alone."""
        last = insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size - 1
        if insn.y_size and insn.x_size and (last + 1) * elem_bytes > self.dram.size:
            self._dram_elements(insn, elem_bytes)      # raises, with the same message

    def _load(self, insn: Load) -> None:
        if insn.x_size == 0:
            self.counters["nop_insns"] += 1
            return
        buf, eb, key, counted = self._load_targets[insn.memory_type]
        row_len = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        rows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        if insn.sram_base + row_len * rows > buf.shape[0]:
            raise SimulationError(ErrorCode.SRAM_RANGE, None,
                                  f"LOAD {MemType(insn.memory_type).name} writes SRAM entries "
                                  f"up to {insn.sram_base + row_len * rows - 1} but the buffer "
                                  f"has {buf.shape[0]}; sram_base = {insn.sram_base}",
                                  field="sram_base", value=insn.sram_base)
        self._check_dram_range(insn, eb)
        tile = buf[insn.sram_base:insn.sram_base + rows * row_len].reshape(
            (rows, row_len) + buf.shape[1:])
        if rows != insn.y_size or row_len != insn.x_size:
            tile[...] = 0
        self.counters[key] += insn.x_size * insn.y_size * counted
        if insn.y_size == 0:
            return
        # Rows of x_size elements every x_stride elements: a strided view of DRAM, no copy.
        raw = np.ndarray((insn.y_size, insn.x_size * eb), np.uint8, self.dram,
                         insn.dram_base * eb, (insn.x_stride * eb, 1))
        shape = (insn.y_size, insn.x_size) + buf.shape[1:]
        if insn.memory_type == MemType.ACC_8BIT:
            data = raw.view(np.int8).reshape(shape)          # widened by the copy below
        else:
            data = raw.view(buf.dtype).reshape(shape)
        tile[insn.y_pad_0:insn.y_pad_0 + insn.y_size,
             insn.x_pad_0:insn.x_pad_0 + insn.x_size] = data

    def _store(self, insn: Store) -> None:
        if insn.x_size == 0:
            self.counters["nop_insns"] += 1
            return
        n = insn.x_size * insn.y_size
        if insn.sram_base + n > self.cfg.acc_depth:
            raise SimulationError(ErrorCode.SRAM_RANGE, None,
                                  f"STORE reads accumulator entries up to "
                                  f"{insn.sram_base + n - 1} but the buffer has "
                                  f"{self.cfg.acc_depth}; sram_base = {insn.sram_base}",
                                  field="sram_base", value=insn.sram_base)
        eb = self.cfg.out_elem_bytes
        narrowed = self.acc[insn.sram_base:insn.sram_base + n].astype(np.int8).view(np.uint8)
        if insn.x_stride >= insn.x_size or insn.y_size <= 1:
            # Rows that do not overlap: a strided view of DRAM takes them in one copy.
            self._check_dram_range(insn, eb)
            if n:
                np.ndarray((insn.y_size, insn.x_size * eb), np.uint8, self.dram,
                           insn.dram_base * eb, (insn.x_stride * eb, 1))[...] = \
                    narrowed.reshape(insn.y_size, -1)
        else:           # overlapping rows: scattered in order, the later row wins
            idx = self._dram_elements(insn, eb)
            byte_idx = idx[..., None] * eb + np.arange(eb)
            self.dram[byte_idx] = narrowed.reshape(idx.shape + (eb,))
        self.counters["out_store_nbytes"] += n * eb

    def _uop_bases(self, insn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The dst, src, wgt fields of the instruction's micro-ops (int64, one per micro-op)."""
        if insn.uop_end > self.cfg.uop_depth:
            raise SimulationError(ErrorCode.SRAM_RANGE, None,
                                  f"uop_end = {insn.uop_end} is past the micro-op buffer "
                                  f"({self.cfg.uop_depth} entries)", field="uop_end",
                                  value=insn.uop_end)
        words = self.uop[insn.uop_bgn:insn.uop_end].astype(np.int64)
        return tuple((words >> offset) & mask for offset, mask in self._uop_fields)

    def _check_ranges(self, insn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """SRAM_RANGE if any micro-op execution's index is past its buffer, found from the
        loop bounds (the largest index of each field), before anything executes. Returns
        the micro-ops' fields (:meth:`_uop_bases`)."""
        cfg, gemm = self.cfg, isinstance(insn, Gemm)
        checks = [("dst", 0, cfg.acc_depth)]
        if not (gemm and insn.reset):
            if gemm:
                checks += [("src", 1, cfg.inp_depth), ("wgt", 2, cfg.wgt_depth)]
            elif not insn.use_imm:
                checks.append(("src", 1, cfg.acc_depth))
        bases = self._uop_bases(insn)
        for what, k, depth in checks:
            top = uop_loop_max(insn, bases[k], k)
            if top >= depth:
                raise SimulationError(ErrorCode.SRAM_RANGE, None,
                                      f"{insn.opcode.name} {what} index {top} is past the "
                                      f"buffer ({depth} entries)", field=what, value=top)
        return bases

    def _uop_chunks(self, insn, bases, used=(True, True, True)):
        """(dst, src, wgt) index arrays of consecutive micro-op executions, in execution
        order, about :data:`UOP_CHUNK` at a time: whole outer iterations when one fits, else
        whole rounds of the micro-op range. ``bases``: :meth:`_uop_bases`; a field not
        ``used`` is None."""
        nu, n_out, n_in = bases[0].size, insn.iter_out, insn.iter_in
        factors = [f if u else None for f, u in zip(_loop_factors(insn), used)]
        total = n_out * n_in * nu
        rounds = max(1, UOP_CHUNK // nu)
        if rounds >= n_in:
            per = rounds // n_in
            i = np.arange(n_in, dtype=np.int64)[None, :, None]
            for o0 in range(0, n_out, per):
                o = np.arange(o0, min(n_out, o0 + per), dtype=np.int64)[:, None, None]
                self.executing = (insn, o0 * n_in * nu, total)
                if o0:
                    self.check_deadline()
                yield tuple(None if f is None
                            else (b[None, None, :] + o * f[0] + i * f[1]).reshape(-1)
                            for b, f in zip(bases, factors))
        else:
            for k0 in range(0, n_out * n_in, rounds):
                k = np.arange(k0, min(n_out * n_in, k0 + rounds), dtype=np.int64)
                o, i = (k // n_in)[:, None], (k % n_in)[:, None]
                self.executing = (insn, k0 * nu, total)
                if k0:
                    self.check_deadline()
                yield tuple(None if f is None
                            else (b[None, :] + o * f[0] + i * f[1]).reshape(-1)
                            for b, f in zip(bases, factors))
        self.executing = None

    def _cached_plan(self, insn, build):
        """The cached plan of ``insn`` with the micro-ops it reads now (made by ``build``;
        False: the instruction goes by chunks). Building checks the ranges, so a cached plan
        has passed them (they depend on the instruction and its micro-ops alone)."""
        key = (insn, self.uop[insn.uop_bgn:insn.uop_end].tobytes())
        plan = self._insn_plans.get(key)
        if plan is None:
            bases = self._check_ranges(insn)
            plan = False
            if insn.iter_out * insn.iter_in * bases[0].size <= UOP_CHUNK:
                plan = build(insn, bases)
            self._insn_plans.put(key, plan)
        return plan

    def _gemm(self, insn: Gemm) -> None:
        plan = self._cached_plan(insn, self._gemm_plan) if self.use_plans else False
        if plan:
            plan.run(self)
            self.counters["gemm_reset_counter" if insn.reset else "gemm_counter"] += plan.total
        else:
            self._gemm_by_chunks(insn)

    def _gemm_plan(self, insn: Gemm, bases):
        """A :class:`_GemmPlan` of a GEMM of one chunk, or False (weights moved by both loops)."""
        used = (True, not insn.reset, not insn.reset)
        [(dst, src, wgt)] = list(self._uop_chunks(insn, bases, used))
        if insn.reset:
            return _GemmPlan.reset(dst)
        columns = _weight_columns(insn, dst, src, wgt)
        return False if columns is None else _GemmPlan.of_columns(self.cfg, *columns)

    def _gemm_by_chunks(self, insn: Gemm) -> None:
        bases = self._check_ranges(insn)
        total = 0
        used = (True, not insn.reset, not insn.reset)
        for dst, src, wgt in self._uop_chunks(insn, bases, used):
            columns = None if insn.reset else _weight_columns(insn, dst, src, wgt)
            if columns is not None:
                self._gemm_columns(*columns)
            else:
                self._gemm_chunk(insn, dst, src, wgt)
            total += dst.size
        self.counters["gemm_reset_counter" if insn.reset else "gemm_counter"] += total

    def _gemm_columns(self, d, s, w) -> None:
        """Micro-op executions laid out by :func:`_weight_columns`. A column's destinations
        are its first one plus offsets common to all columns, so the columns with the same
        first destination write the same rows: their input rows side by side times their
        weight blocks stacked is one matrix product, in float32 or float64 (int8 products summed
        exactly), added to the int32 accumulators mod 2^32."""
        # Ragged groups (a convolution's edge rows skip taps) are padded to the largest with
        # copies of their first column whose weight block is zeroed below, so that one batched
        # product still covers all of them (adding exact zeros).
        g, valid = _column_groups(d[0])
        n, size = g.shape
        b, o, k = self.cfg.batch, self.cfg.block_out, self.cfg.block_in
        # float32 is exact while every partial sum is an integer below 2^24 in magnitude.
        exact = np.float32 if size * k * _INT8_PRODUCT_MAX <= 1 << 24 else np.float64
        x = self.inp[s[:, g].transpose(1, 0, 2)]                 # (n, L, G, batch, block_in)
        # Each conversion copies once, straight into the layout of the product.
        x = x.transpose(0, 1, 3, 2, 4).astype(exact, order="C").reshape(n, -1, size * k)
        wg = self.wgt[w[g]]                                      # (n, G, block_out, block_in)
        if valid is not None:
            wg = np.where(valid[:, :, None, None], wg, np.int8(0))
        wg = wg.transpose(0, 1, 3, 2).astype(exact, order="C").reshape(n, size * k, o)
        rows_of = d[:, g[:, 0]].T.reshape(-1)
        vals = np.matmul(x, wg).reshape(rows_of.size, b, o).astype(np.int64)
        self._accumulate(rows_of, vals)

    def _accumulate(self, rows_of, vals) -> None:
        """``acc[rows_of] += vals`` (int64 sums) with int32 wrap-around; rows may repeat."""
        seen = np.zeros(self.acc.shape[0], bool)
        seen[rows_of] = True
        if np.count_nonzero(seen) == rows_of.size:
            self.acc[rows_of] = (self.acc[rows_of] + vals).astype(np.int32)   # wraps mod 2^32
        else:
            np.add.at(self.acc, rows_of, vals.astype(np.int32))

    def _gemm_chunk(self, insn: Gemm, dst, src, wgt) -> None:
        """Micro-op executions of one GEMM, in order, whose indices are in range."""
        if insn.reset:
            self.acc[dst] = 0
            return
        # Accumulation is addition mod 2^32, so sequential semantics equal the sum of all
        # contributions per destination, whatever the order.
        cfg = self.cfg
        chunk = max(1, (1 << 22) // (cfg.block_out * cfg.block_in))
        for lo in range(0, dst.size, chunk):
            d, s, w = dst[lo:lo + chunk], src[lo:lo + chunk], wgt[lo:lo + chunk]
            prod = np.einsum("nbk,nok->nbo", self.inp[s].astype(np.int32),
                             self.wgt[w].astype(np.int32))
            if np.unique(d).size == d.size:
                self.acc[d] += prod
            else:
                np.add.at(self.acc, d, prod)

    def _alu(self, insn: Alu) -> None:
        plan = self._cached_plan(insn, self._alu_plan) if self.use_plans else False
        if not plan:
            return self._alu_by_chunks(insn)
        acc, op = self.acc, insn.alu_opcode
        imm = np.int64(insn.imm) if insn.use_imm else None
        for n, (lo, d, s) in enumerate(plan.segments):
            if n and not n % 4096:       # many short segments: look at the clock now and then
                self.executing = (insn, lo, plan.total)
                self.check_deadline()
            a = acc[d].astype(np.int64)
            acc[d] = alu_op(op, a, imm if s is None else acc[s].astype(np.int64))
        self.executing = None
        self.counters["alu_counter"] += plan.total

    def _alu_plan(self, insn: Alu, bases):
        """An :class:`_AluPlan` of an ALU of one chunk."""
        [(dst, src, _)] = list(self._uop_chunks(insn, bases, (True, not insn.use_imm, False)))
        return _AluPlan(dst, src)

    def _alu_by_chunks(self, insn: Alu) -> None:
        bases = self._check_ranges(insn)
        total = 0
        for dst, src, _ in self._uop_chunks(insn, bases, (True, not insn.use_imm, False)):
            self._alu_chunk(insn, dst, src)
            total += dst.size
        self.counters["alu_counter"] += total

    def _alu_chunk(self, insn: Alu, dst, src) -> None:
        """Consecutive micro-op executions of one ALU, in order (sequential semantics)."""
        for n, (lo, hi) in enumerate(_hazard_free_segments(dst, None if insn.use_imm else src)):
            if n and not n % 4096:       # many short segments: look at the clock now and then
                self.check_deadline()
            d = dst[lo:hi]
            a = self.acc[d].astype(np.int64)
            b = np.int64(insn.imm) if insn.use_imm else self.acc[src[lo:hi]].astype(np.int64)
            self.acc[d] = alu_op(insn.alu_opcode, a, b)


def _one_blas_thread():
    """A context in which numpy's BLAS runs on one thread: a GEMM instruction's products are
    small, and extra threads spin (double the CPU time) on a busy machine."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


class _Plans(dict):
    """Plans by (instruction, micro-op words); all forgotten past :data:`_PLAN_BUDGET` index
    entries, so memory stays bounded whatever runs."""

    entries = 0

    def put(self, key, plan) -> None:
        size = plan.entries if plan else 1
        if self.entries + size > _PLAN_BUDGET:
            self.clear()
            self.entries = 0
        self[key] = plan
        self.entries += size


def _as_slice(idx: np.ndarray):
    """``idx`` as a slice when it is a run of consecutive entries (a view then, not a gather)."""
    if idx.size and int(idx[-1]) - int(idx[0]) == idx.size - 1 and (
            idx.size == 1 or np.all(np.diff(idx) == 1)):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


class _AluPlan:
    """An ALU's hazard-free segments (:func:`_hazard_free_segments`) as (first execution,
    destinations, sources or None) with slices where the entries are consecutive."""

    __slots__ = ("total", "segments", "entries")

    def __init__(self, dst: np.ndarray, src: np.ndarray | None):
        self.total, self.entries = dst.size, 2 * dst.size
        self.segments = [(lo, _as_slice(dst[lo:hi]), None if src is None else _as_slice(src[lo:hi]))
                         for lo, hi in _hazard_free_segments(dst, src)]


class _GemmPlan:
    """A GEMM as matrix products, its index arrays made once.

    A *reset* plan zeroes ``rows``. Otherwise the micro-op executions (the columns of
    :func:`_weight_columns`) are grouped by destination rows: the columns of a group sum into
    the same rows, so its input rows side by side times its weight blocks stacked is one
    matrix product. Three ways (``mode``) to run the groups' products:

    * ``inputs``: every group reads the same input rows (a convolution's output-channel
      blocks): one input matrix times the groups' weights side by side (one wide product);
    * ``weights``: the groups fall in a few classes, each with one sequence of weight blocks
      (taps), some missing at a ragged group (a row of output pixels, the edge ones skipping
      taps): per class, its groups' input rows stacked, a missing tap reading a zero row,
      times the class's weight matrix (a tall product);
    * ``batched``: a product per group, ragged groups padded with zeroed weight blocks.

    The products run in float32 on at most :data:`_EXACT_TERMS` terms at a time (exact), and
    are added to the int32 accumulators mod 2^32.
    """

    __slots__ = ("total", "entries", "rows", "unique", "x_rows", "w_rows", "valid", "mode",
                 "shape", "zero_row")

    @classmethod
    def reset(cls, dst: np.ndarray) -> "_GemmPlan":
        plan = cls()
        plan.total, plan.entries, plan.x_rows, plan.mode = dst.size, dst.size, None, "reset"
        plan.rows = _as_slice(np.unique(dst))
        return plan

    @classmethod
    def of_columns(cls, cfg, d, s, w) -> "_GemmPlan":
        plan = cls()
        b = cfg.batch
        zero_row = cfg.inp_depth * b            # a row of zeros after the input buffer's rows
        g, valid = _column_groups(d[0])
        n, size = g.shape
        L = d.shape[0]
        rows = d[:, g[:, 0]]                                     # (L, n): a group's rows
        sg = s[:, g]                                             # (L, n, size)
        batch = np.arange(b, dtype=np.intp)[:, None]
        classes = _tap_classes(w, g, valid)
        plan.zero_row = False
        if valid is None and bool(np.all(sg == sg[:, :1])):
            # Input matrix (L·batch, size·block_in); weights (size, n): one wide product.
            plan.mode = "inputs"
            plan.x_rows = (sg[:, 0, None, :] * b + batch).reshape(-1, size)
            plan.w_rows = w[g].T
            rows = rows.reshape(-1)                              # (L, n) order
        elif classes is not None:
            # Per class: input (groups·L·batch, taps·block_in), weights (taps,): tall products.
            plan.mode = "weights"
            plan.x_rows, plan.w_rows, order = [], [], []
            for groups, taps, col in classes:                    # col: (groups, taps), -1 missing
                xs = s[:, np.maximum(col, 0)].transpose(1, 0, 2)     # (groups, L, taps)
                x = xs[:, :, None, :] * b + batch                    # (groups, L, batch, taps)
                missing = np.broadcast_to((col < 0)[:, None, None, :], x.shape)
                plan.zero_row |= bool(missing.any())
                x[missing] = zero_row
                plan.x_rows.append(x.reshape(-1, taps.size).astype(np.intp))
                plan.w_rows.append(taps.astype(np.intp))
                order.append(groups)
            rows = rows[:, np.concatenate(order)].T.reshape(-1)  # (class, group, L) order
        else:
            # Per group: input (L·batch, size·block_in), weights (size,): batched products.
            plan.mode = "batched"
            plan.x_rows = (sg.transpose(1, 0, 2)[:, :, None, :] * b
                           + batch).reshape(n, -1, size)
            plan.w_rows = w[g]
            rows = rows.T.reshape(-1)                            # (n, L) order
        if plan.mode != "weights":
            plan.x_rows = plan.x_rows.astype(np.intp)
            plan.w_rows = plan.w_rows.astype(np.intp)
        plan.valid = valid
        plan.shape = (L, n)
        plan.total = d.size
        plan.unique = np.unique(rows).size == rows.size
        plan.rows = _as_slice(rows) if plan.unique else rows
        plan.entries = rows.size + sum(a.size for a in (
            plan.x_rows + plan.w_rows if plan.mode == "weights" else (plan.x_rows, plan.w_rows)))
        return plan

    def run(self, sim) -> None:
        acc = sim.acc
        if self.x_rows is None:
            acc[self.rows] = 0
            return
        cfg = sim.cfg
        b, o, k = cfg.batch, cfg.block_out, cfg.block_in
        inp = sim.inp.reshape(-1, k)
        if self.zero_row:
            inp = np.concatenate((inp, np.zeros((1, k), np.int8)))
        if self.mode == "weights":
            vals = np.concatenate([_exact_product(inp, x_rows, sim.wgt[taps].transpose(0, 2, 1))
                                   for x_rows, taps in zip(self.x_rows, self.w_rows)])
        elif self.mode == "inputs":
            vals = _exact_product(inp, self.x_rows, sim.wgt[self.w_rows].transpose(0, 3, 1, 2))
        else:
            w = sim.wgt[self.w_rows]                             # (n, size, out, in)
            if self.valid is not None:
                w = np.where(self.valid[:, :, None, None], w, np.int8(0))
            vals = _exact_product(inp, self.x_rows, w.transpose(0, 1, 3, 2))
        L, n = self.shape
        if self.mode == "inputs":
            vals = vals.reshape(L, b, n, o).transpose(0, 2, 1, 3)
        vals = vals.reshape(-1, b, o)
        if self.unique:
            acc[self.rows] += vals                               # int32: wraps mod 2^32
        else:
            np.add.at(acc, self.rows, vals)


def _exact_product(inp: np.ndarray, x_rows: np.ndarray, w: np.ndarray) -> np.ndarray:
    """int32 ``X @ W`` where X's rows are ``inp`` rows ``x_rows`` (..., M, size) side by side
    and W is ``w`` (size, block_in, ...) or batched (B, size, block_in, out) stacked, in
    float32 on at most :data:`_EXACT_TERMS` terms at a time (each product exact), summed mod
    2^32 like the hardware."""
    k = inp.shape[1]
    size = x_rows.shape[-1]
    x = inp.take(x_rows, axis=0)
    x = x.reshape(x.shape[:-2] + (size * k,)).astype(np.float32)
    batched = x.ndim == 3
    w = np.ascontiguousarray(w, np.float32)
    w = w.reshape(w.shape[0], size * k, -1) if batched else w.reshape(size * k, -1)
    span = _EXACT_TERMS // k * k
    if size * k <= span:
        return np.matmul(x, w).astype(np.int32)
    vals = np.zeros(x.shape[:-1] + w.shape[-1:], np.int32)
    for lo in range(0, size * k, span):                 # int32 sums wrap like the hardware
        vals += np.matmul(x[..., lo:lo + span], w[..., lo:lo + span, :]).astype(np.int32)
    return vals


def _tap_classes(w: np.ndarray, g: np.ndarray, valid, most: int = 8):
    """The groups in at most ``most`` classes whose weight rows are each one sequence (the
    class's taps): ``[(groups, taps, col)]``, ``col[j, t]`` the column of the class's ``j``-th
    group using tap ``t`` (-1 where it skips it); None if a group repeats a weight row or more
    classes are needed."""
    wg = w[g]                                                    # (n, size) weight rows
    ok = np.ones(g.shape, bool) if valid is None else valid
    classes = []                                                 # [taps, {row: tap}, groups]
    for j in np.argsort(-ok.sum(1), kind="stable"):              # largest groups first
        mine = wg[j][ok[j]]
        if np.unique(mine).size != mine.size:
            return None
        for taps, where, groups in classes:
            if all(int(r) in where for r in mine):
                groups.append(j)
                break
        else:
            if len(classes) == most:
                return None
            classes.append([mine, {int(r): t for t, r in enumerate(mine)}, [j]])
    out = []
    for taps, where, groups in classes:
        groups = np.array(sorted(groups))
        col = np.full((groups.size, taps.size), -1, np.int64)
        for i, j in enumerate(groups):
            for c in np.flatnonzero(ok[j]):
                col[i, where[int(wg[j, c])]] = g[j, c]
        out.append((groups, taps, col))
    return out


def _column_groups(first: np.ndarray):
    """Columns grouped by their first destination: ``(g, valid)``, ``g`` (groups, size) column
    numbers; ragged groups are padded with copies of their first column, ``valid`` False there
    (None when all groups have one size)."""
    order = np.argsort(first, kind="stable")
    f = first[order]
    starts = np.flatnonzero(f[1:] != f[:-1]) + 1
    n = starts.size + 1
    size = order.size // n
    if n * size == order.size and (n == 1 or np.all(starts == np.arange(1, n) * size)):
        return order.reshape(n, size), None
    starts = np.concatenate(([0], starts))
    sizes = np.diff(starts, append=order.size)
    size = int(sizes.max())
    group = np.repeat(np.arange(n), sizes)
    pos = np.arange(order.size) - starts[group]
    g = np.repeat(order[starts][:, None], size, axis=1)
    g[group, pos] = order
    valid = np.zeros((n, size), bool)
    valid[group, pos] = True
    return g, valid


def _plan(insn: Instruction) -> tuple:
    """``(insn, module, (pop queues, (push flag, queue) pairs))``: what dispatch and the token
    accounting need of a decoded instruction, looked up once."""
    module = module_of(insn)
    dq = DEP_QUEUES[module]
    pops = tuple(dq[f] for f in ("pop_prev", "pop_next") if getattr(insn, f))
    pushes = tuple((f, dq[f]) for f in ("push_prev", "push_next") if getattr(insn, f))
    return insn, module, (pops, pushes)


def _weight_columns(insn, dst, src, wgt):
    """A chunk of GEMM executions (whole rounds of the micro-ops, in loop order) as
    ``(dst, src)`` of shape (L, C) and the weight row of each of the C columns, where the weight
    row is fixed down a column and the destinations of every column move by the same offsets;
    None if the loops move the weights both ways (or the chunk splits an outer iteration)."""
    nu, n_in = insn.uop_end - insn.uop_bgn, insn.iter_in
    fo, fi = insn.wgt_factor_out, insn.wgt_factor_in
    if fo == 0 and fi == 0:         # a convolution's taps: a column per micro-op
        d, s = dst.reshape(-1, nu), src.reshape(-1, nu)
        return d, s, wgt[:nu]
    if dst.size % (n_in * nu):
        return None
    shape = (dst.size // (n_in * nu), n_in, nu)
    if fo == 0:                     # a column per (inner iteration, micro-op)
        d, s, w = (a.reshape(shape[0], n_in * nu) for a in (dst, src, wgt))
    elif fi == 0:                   # a column per (outer iteration, micro-op)
        d, s, w = (a.reshape(shape).transpose(1, 0, 2).reshape(n_in, -1) for a in (dst, src, wgt))
    else:
        return None
    return d, s, w[0]


def _loop_factors(insn) -> tuple[tuple[int, int], ...]:
    """(out, in) loop factors of the dst, src and wgt indices."""
    return ((insn.dst_factor_out, insn.dst_factor_in),
            (insn.src_factor_out, insn.src_factor_in),
            (getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0)))


def uop_loop_max(insn, base: np.ndarray, k: int) -> int:
    """The largest index field ``k`` (0 dst, 1 src, 2 wgt) takes over the loops: the factors
    are unsigned, so it is the largest base plus both loops' last step."""
    f_out, f_in = _loop_factors(insn)[k]
    return int(base.max()) + (insn.iter_out - 1) * f_out + (insn.iter_in - 1) * f_in


def first_bad_uop(insn, bases, limits) -> int | None:
    """Position (in execution order: outer loop, inner loop, micro-op) of the first micro-op
    execution whose field ``k`` reaches ``limits[k]`` (None: not checked), or None.

    Computed per micro-op from the loop bounds, without listing the executions: index
    ``b + o·f_out + i·f_in`` grows with ``o`` and ``i``, so the first bad outer iteration is
    the first whose largest index (at the last ``i``) is bad, and within it the first bad
    inner one.
    """
    n_out, n_in = insn.iter_out, insn.iter_in
    nu = bases[0].size
    best = None
    for k, limit in enumerate(limits):
        if limit is None:
            continue
        f_out, f_in = _loop_factors(insn)[k]
        b = bases[k]
        top = b + (n_out - 1) * f_out + (n_in - 1) * f_in
        bad = np.flatnonzero(top >= limit)
        if not bad.size:
            continue
        b = b[bad]
        # First outer iteration o with b + o·f_out + (n_in - 1)·f_in >= limit.
        need = limit - b - (n_in - 1) * f_in
        o = np.where(need <= 0, 0, -(-need // max(f_out, 1)))
        # Within it, the first inner iteration i with b + o·f_out + i·f_in >= limit.
        need = limit - b - o * f_out
        i = np.where(need <= 0, 0, -(-need // max(f_in, 1)))
        pos = (o * n_in + i) * nu + bad
        first = int(pos.min())
        best = first if best is None else min(best, first)
    return best


def check_fields(insn: Instruction) -> None:
    """Raise the SimulationError that an instruction's fields alone reveal."""
    if isinstance(insn, Load):
        if insn.memory_type not in (MemType.UOP, MemType.WGT, MemType.INP, MemType.ACC,
                                    MemType.ACC_8BIT):
            raise SimulationError(ErrorCode.ILLEGAL_MEMORY_TYPE, None,
                                  f"LOAD of memory_type {insn.memory_type} (legal: 0 UOP, "
                                  f"1 WGT, 2 INP, 3 ACC, 5 ACC_8BIT)",
                                  field="memory_type", value=insn.memory_type)
    elif isinstance(insn, Store):
        if insn.x_size == 0:
            return
        if insn.memory_type != MemType.OUT:
            raise SimulationError(ErrorCode.ILLEGAL_MEMORY_TYPE, None,
                                  f"STORE of memory_type {insn.memory_type} (only 4 OUT can "
                                  f"be stored)", field="memory_type",
                                  value=insn.memory_type)
        for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            if getattr(insn, pad):
                raise SimulationError(ErrorCode.STORE_PADDING, None,
                                      f"STORE cannot pad: {pad} = {getattr(insn, pad)}",
                                      field=pad, value=getattr(insn, pad))
    elif isinstance(insn, (Gemm, Alu)):
        if isinstance(insn, Alu) and insn.alu_opcode not in AluOp.__members__.values():
            raise SimulationError(ErrorCode.ILLEGAL_ALU_OPCODE, None,
                                  f"illegal alu_opcode {insn.alu_opcode} (legal: 0 MIN, "
                                  f"1 MAX, 2 ADD, 3 SHR, 4 MUL)", field="alu_opcode",
                                  value=insn.alu_opcode)
        for name in ("iter_out", "iter_in"):
            if getattr(insn, name) == 0:
                raise SimulationError(ErrorCode.EMPTY_LOOP, None,
                                      f"{insn.opcode.name} with {name} = 0 (an empty loop)",
                                      field=name, value=0)
        if insn.uop_end <= insn.uop_bgn:
            raise SimulationError(ErrorCode.EMPTY_LOOP, None,
                                  f"{insn.opcode.name} with uop_end = {insn.uop_end} <= "
                                  f"uop_bgn = {insn.uop_bgn} (an empty micro-op range)",
                                  field="uop_end", value=insn.uop_end)



def alu_op(opcode: int, a: np.ndarray, b) -> np.ndarray:
    """SPEC §4.4 on int64 operands holding int32 values; returns int32 (wrapping)."""
    if opcode == AluOp.MIN:
        r = np.minimum(a, b)
    elif opcode == AluOp.MAX:
        r = np.maximum(a, b)
    elif opcode == AluOp.ADD:
        r = a + b
    elif opcode == AluOp.MUL:
        r = a * b
    elif np.ndim(b) == 0:  # SHR by one amount (requantisation): the rule below, for a scalar
        b = int(b)
        r = a >> min(b, 31) if b >= 0 else (np.zeros_like(a) if b <= -32 else a << -b)
    else:  # SHR: right for b >= 0 (sign fill from 32 on), left for b < 0 (zero from 32 on)
        b = np.broadcast_to(b, a.shape)
        right = a >> np.minimum(b, 31).clip(0)
        left = np.where(-b >= 32, 0, a << np.clip(-b, 0, 31))
        r = np.where(b >= 0, right, left)
    return r.astype(np.int32)


def _hazard_free_segments(dst: np.ndarray, src: np.ndarray | None):
    """Split micro-op executions into runs that may be evaluated all at once.

    A run is hazard free when no destination repeats (WAW) and no source reads a destination
    written earlier in the run (RAW). Reads of entries written *later* are fine: vectorised
    evaluation reads the old value, as sequential execution does.
    """
    n = dst.size
    size = int(dst.max()) + 1 if n else 1
    seen = np.zeros(size, bool)
    seen[dst] = True
    clean = np.count_nonzero(seen) == n          # no destination repeats
    if clean and src is not None:
        order = np.arange(n)
        first_write = np.full(size, n, np.int64)
        first_write[dst] = order                  # each written once: its only write
        in_range = src < size
        clean = not np.any(first_write[src[in_range]] < order[in_range])
    if clean:
        yield 0, n
        return
    lo, written = 0, set()
    for j in range(n):
        d = int(dst[j])
        if d in written or (src is not None and int(src[j]) in written):
            yield lo, j
            lo, written = j, set()
        written.add(d)
    yield lo, n


def run_image(image: ProgramImage, *, schedule: str = "in-order", seed: int = 0,
              deadline: float | None = None) -> FunctionalResult:
    """Run an image; returns the DRAM after FINISH and the counters. ``deadline``: a
    ``time.monotonic()`` value after which :class:`SimulationTimeout` is raised."""
    dram = image.dram.copy()
    sim = FunctionalSimulator(image.config, dram, deadline=deadline)
    sim.run(image.insn_addr, image.insn_count, schedule=schedule, seed=seed)
    return FunctionalResult(dram, dict(sim.counters))


def find_race(image: ProgramImage, *, schedules: int = 8, seed: int = 0,
              deadline: float | None = None) -> None:
    """Re-run ``image`` under other legal schedules; raise :class:`RaceError` if DRAM differs."""
    reference = run_image(image, deadline=deadline).dram
    trials = [(s, 0) for s in SCHEDULES if s not in ("in-order", "random")]
    trials += [("random", seed + k) for k in range(max(0, schedules - len(trials)))]
    for schedule, s in trials:
        other = run_image(image, schedule=schedule, seed=s, deadline=deadline).dram
        if not np.array_equal(reference, other):
            diff = np.flatnonzero(reference != other)
            raise RaceError(f"the program is racy: schedule {schedule!r} (seed {s}) leaves "
                            f"different DRAM than in-order execution at {diff.size} bytes, "
                            f"first at byte {int(diff[0])}")
