"""Command streams: the instruction stream of one or more launches, built like the original
runtime's command queue (reference §8).

Loads and stores are appended with their stage; GEMM and ALU take a :class:`UopKernel`,
which is made resident in the micro-op buffer first (a LOAD UOP when it is not). Dependency
tokens go through :meth:`CommandStream.dep_push` / :meth:`CommandStream.dep_pop` with the
original's rules (a pop waits for the next instruction of its stage; a push lands on the last
instruction if it belongs to the pushing stage, otherwise on a no-op).

Two weak spots of the original are closed here. A kernel's micro-ops are written to DRAM
the moment its LOAD UOP is emitted, at an address that never changes within the launch, so a
ring wrap of the micro-op buffer cannot leave a stale offset. And the registry of recorded
kernels is bounded (:class:`~driver.kernel.KernelRegistry`).

When the instruction or micro-op staging buffer fills, the stream flushes: it runs what it
has (with the epilogue) and continues. Tokens still outstanding at that point are drained
before the epilogue and pushed again at the start of the next launch, so every launch is
balanced. On-chip buffers are not part of a program image: data loaded into SRAM before a
flush is gone after it. Group the calls that share on-chip data in
``with stream.unit(): ...``; a flush then falls before or after the unit, never inside it
(the unit's calls are taken back and replayed in the next launch).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Hashable

from isa.encoding import (Alu, Finish, Gemm, Instruction, IsaError, Load, MemType, Store,
                          encode_program, encode_uops)
from isa.image import OutputRegion, ProgramImage

from .kernel import KernelError, UopKernel, UopResidency
from .memory import Buffer, elem_bytes

if TYPE_CHECKING:
    from .backends.base import RunResult
    from .device import Device

__all__ = ["CommandStream", "StreamError", "STAGES", "QUEUES", "DEFAULT_INSN_CAPACITY"]

STAGES = ("load", "compute", "store")
# Stage numbers of the original runtime (1 load, 2 compute, 3 store) are accepted too.
_STAGE_NAMES = {1: "load", 2: "compute", 3: "store", **{s: s for s in STAGES}}
_ORDER = {"load": 1, "compute": 2, "store": 3}
# Token queue -> (producer, consumer).
QUEUES = {"l2g": ("load", "compute"), "g2l": ("compute", "load"),
          "g2s": ("compute", "store"), "s2g": ("store", "compute")}
_QUEUE_OF = {pc: q for q, pc in QUEUES.items()}

DEFAULT_INSN_CAPACITY = 1 << 13
# An API call appends at most this many instructions (a pop commit or LOAD UOP, then one).
_MAX_INSNS_PER_CALL = 3
# Worst case of the launch tail beyond the drains: three pending-pop commits, the epilogue's
# store, load and compute no-ops, and FINISH.
_TAIL_INSNS = 8


class StreamError(RuntimeError):
    """A command stream that cannot be built or launched; the message says why."""


def _logged(method):
    """Record the call while a unit is open, so that a flush can replay it."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        if self._log is not None:
            self._log.append((method.__name__, args, kwargs))
        return result
    return wrapper


@dataclass
class _Snapshot:
    """The stream's state at the start of a unit."""

    count: int
    last: Instruction | None
    pending: dict
    balance: dict
    residency: tuple
    staged: dict
    uops_used: int
    outputs: dict


def _stage(name) -> str:
    try:
        return _STAGE_NAMES[name]
    except (KeyError, TypeError):
        raise StreamError(f"unknown stage {name!r}: use 'load', 'compute', 'store' "
                          f"(or 1, 2, 3)") from None


def _queue(src: str, dst: str) -> str:
    try:
        return _QUEUE_OF[(src, dst)]
    except KeyError:
        raise StreamError(f"no token queue from {src} to {dst}: tokens flow only between "
                          f"load and compute and between compute and store") from None


def _pop_flag(src: str, dst: str) -> str:
    """The flag of an instruction on ``dst`` that pops the queue from ``src``."""
    return "pop_prev" if _ORDER[src] < _ORDER[dst] else "pop_next"


def _push_flag(src: str, dst: str) -> str:
    """The flag of an instruction on ``src`` that pushes to ``dst``."""
    return "push_next" if _ORDER[src] < _ORDER[dst] else "push_prev"


def _neighbour(stage: str, flag: str) -> str:
    """The stage at the other end of ``flag`` on an instruction of ``stage``."""
    idx = _ORDER[stage] + (-1 if flag.endswith("prev") else 1)
    return STAGES[idx - 1]


def _nop(stage: str) -> Instruction:
    """The no-op the original runtime uses for each stage (x_size = 0)."""
    if stage == "store":
        return Store(memory_type=MemType.OUT, y_size=0, x_size=0, x_stride=0)
    mem = MemType.INP if stage == "load" else MemType.UOP
    return Load(memory_type=mem, y_size=0, x_size=0, x_stride=0)


class CommandStream:
    """An instruction stream for one :class:`~driver.device.Device`.

    Parameters
    ----------
    device : the device whose memory holds the instruction and micro-op buffers.
    insn_capacity : instructions per launch; the stream flushes before it would overflow.
    uop_capacity : micro-ops staged in DRAM per launch (default 4 x the micro-op buffer).
    portable_kernels : also reject kernels with the original's read-after-write hazards.
    timeout : seconds each launch may take (None: the device's default).
    """

    def __init__(self, device: "Device", *, insn_capacity: int = DEFAULT_INSN_CAPACITY,
                 uop_capacity: int | None = None, portable_kernels: bool = False,
                 timeout: float | None = None):
        self.device, self.cfg = device, device.config
        if insn_capacity < _TAIL_INSNS + 4 * _MAX_INSNS_PER_CALL:
            raise StreamError(f"insn_capacity = {insn_capacity} is too small: a launch needs "
                              f"at least {_TAIL_INSNS + 4 * _MAX_INSNS_PER_CALL} instructions")
        self.insn_capacity = insn_capacity
        self.uop_capacity = 4 * self.cfg.uop_depth if uop_capacity is None else uop_capacity
        if self.uop_capacity < 1:
            raise StreamError(f"uop_capacity must be positive, got {uop_capacity}")
        self.portable_kernels, self.timeout = portable_kernels, timeout
        self._insn_buf = device.memory.alloc(insn_capacity * self.cfg.insn_bytes,
                                             name="instructions")
        self._uop_buf = device.memory.alloc(self.uop_capacity * self.cfg.uop_elem_bytes,
                                            name="micro-ops")
        self._residency = UopResidency(self.cfg.uop_depth)
        self.launches: list[RunResult] = []
        self.images: list[ProgramImage] = []
        self.flushes = 0
        self._closed = False
        self._log: list | None = None
        self._safe: _Snapshot | None = None
        self._replaying = False
        self._reset()

    # ------------------------------------------------------------------ state
    def _reset(self) -> None:
        self._insns: list[Instruction] = []
        self._stages: list[str] = []
        self._pending = {s: {"pop_prev": False, "pop_next": False} for s in STAGES}
        self._balance = dict.fromkeys(QUEUES, 0)
        self._uops_used = 0
        self._staged: dict[UopKernel, int] = {}
        self._outputs: dict[int, Buffer] = {}
        self._residency.clear()
        self._launch_start = 0

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(len(self._insns), self._insns[-1] if self._insns else None,
                         {s: dict(p) for s, p in self._pending.items()}, dict(self._balance),
                         self._residency.snapshot(), dict(self._staged), self._uops_used,
                         dict(self._outputs))

    def _restore(self, snap: _Snapshot) -> None:
        del self._insns[snap.count:], self._stages[snap.count:]
        if snap.count:
            self._insns[-1] = snap.last
        self._pending = {s: dict(p) for s, p in snap.pending.items()}
        self._balance = dict(snap.balance)
        self._residency.restore(snap.residency)
        self._staged, self._uops_used = dict(snap.staged), snap.uops_used
        self._outputs = dict(snap.outputs)

    @contextmanager
    def unit(self):
        """Keep the calls inside in one launch (see the module docstring). Units nest."""
        self._check_open()
        outer = self._log is None
        if outer:
            self._safe, self._log = self._snapshot(), []
        try:
            yield self
        finally:
            if outer:
                self._safe, self._log = None, None

    def __len__(self) -> int:
        return len(self._insns)

    @property
    def instructions(self) -> list[Instruction]:
        """The instructions of the current (not yet launched) launch."""
        return list(self._insns)

    @property
    def uop_loads(self) -> int:
        """LOAD UOPs emitted so far (over all launches)."""
        return self._residency.loads

    @property
    def uop_evictions(self) -> int:
        return self._residency.evictions

    def close(self) -> None:
        """Release the stream's instruction and micro-op buffers."""
        if not self._closed:
            self._insn_buf.free()
            self._uop_buf.free()
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StreamError("the stream is closed")

    # ------------------------------------------------------------------ appending
    def _append(self, stage: str, insn: Instruction) -> None:
        pending = self._pending[stage]
        pops = {f: True for f in ("pop_prev", "pop_next") if pending[f]}
        if pops:
            insn = insn.replace(**pops)
            pending.update(pop_prev=False, pop_next=False)
        for flag in ("pop_prev", "pop_next"):
            if getattr(insn, flag):
                self._balance[_queue(_neighbour(stage, flag), stage)] -= 1
        if len(self._insns) >= self.insn_capacity:
            raise StreamError(f"the launch needs more than insn_capacity = "
                              f"{self.insn_capacity} instructions")
        self._insns.append(insn)
        self._stages.append(stage)

    def _commit_pending(self, stage: str) -> None:
        if any(self._pending[stage].values()):
            self._append(stage, _nop(stage))

    def _tail_reserve(self) -> int:
        return _TAIL_INSNS + sum(max(0, n) for n in self._balance.values())

    def _fits(self, uops: int) -> bool:
        need = _MAX_INSNS_PER_CALL + 1 + self._tail_reserve()
        return (len(self._insns) + need <= self.insn_capacity
                and self._uops_used + uops <= self.uop_capacity)

    def _make_room(self, uops: int = 0) -> None:
        """Flush first if this call might not fit (instructions or staged micro-ops)."""
        self._check_open()
        if self._fits(uops):
            return
        too_big = StreamError(f"a unit does not fit in one launch (insn_capacity = "
                              f"{self.insn_capacity}, uop_capacity = {self.uop_capacity})")
        if self._replaying:
            raise too_big
        self.flushes += 1
        if self._log is None:
            self._launch(self.timeout)
        else:
            # Inside a unit: take the unit back, run what came before it, then replay it.
            log, snap = self._log, self._safe
            if snap.count == self._launch_start:
                raise too_big
            self._restore(snap)
            self._launch(self.timeout)
            self._safe, self._log, self._replaying = self._snapshot(), [], True
            try:
                for name, args, kwargs in log:
                    getattr(self, name)(*args, **kwargs)
            finally:
                self._replaying = False
        if not self._fits(uops):
            raise too_big if self._log is not None else StreamError(
                f"insn_capacity = {self.insn_capacity} cannot hold the {len(self._insns)} "
                f"token pushes carried over a flush")

    # ------------------------------------------------------------------ dependencies
    @_logged
    def dep_pop(self, src, dst) -> None:
        """The next instruction of stage ``dst`` waits for a token from ``src``."""
        src, dst = _stage(src), _stage(dst)
        _queue(src, dst)
        self._make_room()
        self._dep_pop(src, dst)

    def _dep_pop(self, src: str, dst: str) -> None:
        flag = _pop_flag(src, dst)
        if self._pending[dst][flag]:
            self._commit_pending(dst)
        self._pending[dst][flag] = True

    @_logged
    def dep_push(self, src, dst) -> None:
        """Stage ``src`` sends a token to ``dst`` once its work so far is done."""
        src, dst = _stage(src), _stage(dst)
        _queue(src, dst)
        self._make_room()
        self._dep_push(src, dst)

    def _dep_push(self, src: str, dst: str) -> None:
        flag = _push_flag(src, dst)
        self._commit_pending(src)
        if self._insns and self._stages[-1] == src and not getattr(self._insns[-1], flag):
            self._insns[-1] = self._insns[-1].replace(**{flag: True})
        else:
            self._append(src, _nop(src).replace(**{flag: True}))
        self._balance[_queue(src, dst)] += 1

    # ------------------------------------------------------------------ data movement
    def _check_transfer(self, what: str, buf: Buffer, mem_type: int, offset: int, x_size: int,
                        y_size: int, x_stride: int) -> int:
        if not isinstance(buf, Buffer):
            raise StreamError(f"{what}: expected a device Buffer, got {type(buf).__name__}")
        if min(offset, x_size, y_size, x_stride) < 0:
            raise StreamError(f"{what}: offset, sizes and stride must be non-negative")
        if x_size and x_stride < x_size:
            raise StreamError(f"{what}: x_stride = {x_stride} is smaller than x_size = {x_size}")
        eb = elem_bytes(self.cfg, mem_type)
        base = buf.elem_offset(mem_type, offset)
        if x_size and y_size:
            last = offset + (y_size - 1) * x_stride + x_size
            if last * eb > buf.nbytes:
                raise StreamError(f"{what}: elements up to {last - 1} of {eb} bytes reach past "
                                  f"the end of {buf!r}")
        return base

    @_logged
    def load_2d(self, mem_type: int, sram: int, buf: Buffer, offset: int = 0, *, x_size: int,
                y_size: int = 1, x_stride: int | None = None, y_pad: tuple = (0, 0),
                x_pad: tuple = (0, 0)) -> None:
        """LOAD ``y_size`` rows of ``x_size`` elements from ``buf`` (element ``offset``, row
        pitch ``x_stride``) into SRAM entry ``sram`` and on, with zero padding."""
        mem_type = MemType(mem_type)
        if mem_type in (MemType.UOP, MemType.OUT):
            raise StreamError(f"load_2d cannot load {mem_type.name}: micro-ops are loaded by "
                              f"gemm()/alu(), OUT is store-only")
        x_stride = x_size if x_stride is None else x_stride
        base = self._check_transfer(f"load_2d({mem_type.name})", buf, mem_type, offset, x_size,
                                    y_size, x_stride)
        self._make_room()
        stage = "load" if mem_type in (MemType.INP, MemType.WGT) else "compute"
        self._append(stage, Load(memory_type=mem_type, sram_base=sram, dram_base=base,
                                 y_size=y_size, x_size=x_size, x_stride=x_stride,
                                 y_pad_0=y_pad[0], y_pad_1=y_pad[1], x_pad_0=x_pad[0],
                                 x_pad_1=x_pad[1]))

    @_logged
    def store_2d(self, sram: int, buf: Buffer, offset: int = 0, *, x_size: int,
                 y_size: int = 1, x_stride: int | None = None) -> None:
        """STORE ``y_size`` x ``x_size`` narrowed accumulator entries from SRAM ``sram``."""
        x_stride = x_size if x_stride is None else x_stride
        base = self._check_transfer("store_2d", buf, MemType.OUT, offset, x_size, y_size,
                                    x_stride)
        self._make_room()
        self._outputs[buf.addr] = buf
        self._append("store", Store(memory_type=MemType.OUT, sram_base=sram, dram_base=base,
                                    y_size=y_size, x_size=x_size, x_stride=x_stride))

    # ------------------------------------------------------------------ compute
    def kernel(self, key: Hashable, record: Callable[[], UopKernel]) -> UopKernel:
        """The kernel recorded for ``key`` (``record()`` runs only the first time)."""
        return self.device.kernels.get(key, record)

    @_logged
    def gemm(self, kernel: UopKernel) -> None:
        """GEMM over ``kernel`` (loading its micro-ops first if they are not resident)."""
        self._push_kernel(kernel, "gemm")

    @_logged
    def alu(self, kernel: UopKernel) -> None:
        """ALU over ``kernel``."""
        self._push_kernel(kernel, "alu")

    def _push_kernel(self, kernel: UopKernel, mode: str) -> None:
        if not isinstance(kernel, UopKernel):
            raise StreamError(f"{mode}() takes a UopKernel, got {type(kernel).__name__}")
        if kernel.mode != mode:
            raise KernelError(f"{kernel} is a {kernel.mode.upper()} kernel; {mode}() needs a "
                              f"{mode.upper()} one")
        kernel.check(self.cfg, portable=self.portable_kernels)
        if len(kernel) > self.uop_capacity:
            raise StreamError(f"{kernel} has more micro-ops than uop_capacity = "
                              f"{self.uop_capacity}")
        fresh = kernel not in self._residency and kernel not in self._staged
        self._make_room(len(kernel) if fresh else 0)
        begin, loaded = self._residency.place(kernel)
        n = len(kernel)
        if loaded:
            self._append("compute", Load(memory_type=MemType.UOP, sram_base=begin,
                                         dram_base=self._stage_uops(kernel), y_size=1,
                                         x_size=n, x_stride=n))
        fields = dict(uop_bgn=begin, uop_end=begin + n, **kernel.loop_fields())
        if mode == "gemm":
            insn = Gemm(reset=kernel.reset, **fields)
        else:
            insn = Alu(alu_opcode=kernel.alu_op, use_imm=kernel.use_imm, imm=kernel.imm,
                       **fields)
        self._append("compute", insn)

    def _stage_uops(self, kernel: UopKernel) -> int:
        """Write the kernel's micro-ops to DRAM now, once per launch; their dram_base."""
        offset = self._staged.get(kernel)
        if offset is None:
            try:
                data = encode_uops(kernel.uops, self.cfg)
            except IsaError as exc:
                raise KernelError(f"{kernel}: {exc}") from None
            offset = self._uops_used
            self._uop_buf.write(data, offset * self.cfg.uop_elem_bytes)
            self._staged[kernel] = offset
            self._uops_used += len(kernel)
        return self._uop_buf.elem_offset(MemType.UOP, offset)

    # ------------------------------------------------------------------ launching
    def _close_launch(self) -> dict[str, int]:
        """Commit pops, drain outstanding tokens, add the epilogue and FINISH."""
        for stage in STAGES:
            self._commit_pending(stage)
        short = {q: -n for q, n in self._balance.items() if n < 0}
        if short:
            detail = ", ".join(f"{q} ({QUEUES[q][1]} pops {n} more token(s) than "
                               f"{QUEUES[q][0]} has pushed)" for q, n in short.items())
            raise StreamError(f"cannot launch: {detail}; the launch would deadlock")
        outstanding = dict(self._balance)
        for q, n in outstanding.items():
            producer, consumer = QUEUES[q]
            for _ in range(n):
                self._append(consumer, _nop(consumer).replace(
                    **{_pop_flag(producer, consumer): True}))
        # The original runtime's epilogue: FINISH waits for the last store and the last load.
        self._dep_push("store", "compute")
        self._dep_push("load", "compute")
        self._dep_pop("store", "compute")
        self._dep_pop("load", "compute")
        self._commit_pending("compute")
        self._append("compute", Finish())
        return outstanding

    def build_image(self) -> ProgramImage:
        """Close the current launch and return its program image without running it."""
        image, _ = self._build()
        return image

    def _build(self) -> tuple[ProgramImage, dict]:
        self._check_open()
        outstanding = self._close_launch()
        try:
            program = encode_program(self._insns, self.cfg)
        except IsaError as exc:
            raise StreamError(f"cannot encode the stream: {exc}") from None
        self._insn_buf.write(program)
        outputs = [OutputRegion(b.name or f"out@0x{b.addr:x}", b.addr, b.shape, b.dtype.str)
                   for b in self._outputs.values() if not b.freed]
        image = ProgramImage(self.device.memory.dram, self._insn_buf.addr, len(self._insns),
                             self.cfg, outputs)
        return image, outstanding

    def _launch(self, timeout: float | None) -> "RunResult":
        image, outstanding = self._build()
        if self.device.keep_images:
            self.images.append(image.copy())
        try:
            result = self.device.launch(image, timeout=timeout)
        finally:
            self._reset()
        self.launches.append(result)
        # Tokens that were in flight at a flush are pushed again for the next launch.
        for q, n in outstanding.items():
            for _ in range(n):
                self._dep_push(*QUEUES[q])
        self._launch_start = len(self._insns)
        return result

    def synchronize(self, *, timeout: float | None = None) -> "RunResult | None":
        """Run what the stream holds (with the epilogue) and wait; None if it is empty."""
        self._check_open()
        if self._log is not None:
            raise StreamError("synchronize() inside a unit: a unit runs in one launch")
        if not self._insns and not any(v for p in self._pending.values() for v in p.values()):
            return None
        return self._launch(self.timeout if timeout is None else timeout)
