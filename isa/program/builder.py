"""The program builder: the command-stream API of the original runtime (reference §8), on
symbolic regions, without a device.

The one implementation of the token rules (a pop waits for the next instruction of its
stage; a push lands on the last instruction if it belongs to the pushing stage, otherwise on
a no-op), of the micro-op cache (:class:`~isa.program.kernel.UopResidency`, each kernel
staged once per launch at an offset that never moves) and of launch splitting: when the
instruction stream or the micro-op staging area would overflow, the builder seals the launch
(outstanding tokens drained, the epilogue, FINISH) and pushes the drained tokens again at the
start of the next one. Calls grouped in ``with b.unit(): ...`` stay in one launch: the unit
is taken back and replayed in the next launch instead of being split.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Hashable

import numpy as np

from ..arch import (DEP_FLAGS, POP_FLAGS, QUEUES, STAGE_NUMBERS, STAGES, MemType, elem_bytes,
                    module_of, pop_flag, push_flag, queue_between, stage_of_load)
from ..config import VTAConfig, load_config
from ..encoding import Alu, Finish, Gemm, Instruction, IsaError, Load, Store, encode_uops
from .kernel import KernelError, KernelRegistry, UopKernel, UopResidency
from .program import Launch, Program, ProgramError, Region, default_align

__all__ = ["StreamBuilder", "DEFAULT_INSN_CAPACITY", "noop"]

DEFAULT_INSN_CAPACITY = 1 << 13
# An API call appends at most this many instructions (a pop commit or LOAD UOP, then one).
_MAX_INSNS_PER_CALL = 3
# Worst case of the launch tail beyond the drains: three pending-pop commits, the epilogue's
# store, load and compute no-ops, and FINISH.
_TAIL_INSNS = 8

# The regions the builder makes for each launch.
GENERATED_KINDS = ("uops", "instructions")
_GENERATED_NAME = re.compile(r"(uops|insns)\.\d+")

_STAGE_NAMES = {**{n: s for s, n in STAGE_NUMBERS.items()}, **{s: s for s in STAGES}}


def with_fields(insn, **fields):
    """``insn.replace(**fields)`` for known fields, without re-running the dataclass
    constructor: token flags and addresses are set on every instruction of a stream."""
    new = object.__new__(type(insn))
    new.__dict__.update(insn.__dict__)      # frozen dataclasses keep their fields there
    new.__dict__.update(fields)
    return new


def noop(stage: str) -> Instruction:
    """The token-only instruction (x_size = 0) the original runtime uses for ``stage``: a
    LOAD INP on load, a LOAD UOP on compute, a STORE (memory type UOP) on store."""
    return _NOOPS[stage]


_NOOPS = {"load": Load(memory_type=MemType.INP, y_size=0, x_size=0, x_stride=0),
          "compute": Load(memory_type=MemType.UOP, y_size=0, x_size=0, x_stride=0),
          "store": Store(memory_type=MemType.UOP, y_size=0, x_size=0, x_stride=0)}


def _stage(name) -> str:
    try:
        return _STAGE_NAMES[name]
    except (KeyError, TypeError):
        raise ProgramError(f"unknown stage {name!r}: use 'load', 'compute', 'store' "
                           f"(or 1, 2, 3)") from None


def _queue(src: str, dst: str) -> str:
    q = queue_between(src, dst)
    if q is None:
        raise ProgramError(f"no token queue from {src} to {dst}: tokens flow only between "
                           f"load and compute and between compute and store")
    return q


def _logged(method):
    """Record the call while a unit is open, so that a split can replay it."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        if self._log is not None:
            self._log.append((method.__name__, args, kwargs))
        return result
    return wrapper


@dataclass
class _Snapshot:
    """The open launch at the start of a unit."""

    count: int
    last: object
    relocs: int
    pending: dict
    balance: dict
    residency: tuple
    staged: dict
    uop_chunks: int
    uops_used: int


class StreamBuilder:
    """Builds a :class:`~isa.program.Program` with the API of ``driver.CommandStream``.

    Parameters
    ----------
    cfg : the configuration (a :class:`~isa.config.VTAConfig` or a shipped name).
    name : the program's name.
    insn_capacity : instructions per launch (None: unbounded, never split).
    uop_capacity : micro-ops staged per launch (default 4 x the micro-op buffer).
    portable_kernels : also reject kernels with the original's read-after-write hazards.
    kernels : a :class:`KernelRegistry` to share (default: one of the builder's own).
    on_launch : called with each :class:`Launch` as it is sealed.
    """

    def __init__(self, cfg: "VTAConfig | str", *, name: str = "program",
                 insn_capacity: int | None = DEFAULT_INSN_CAPACITY,
                 uop_capacity: int | None = None, portable_kernels: bool = False,
                 kernels: KernelRegistry | None = None,
                 on_launch: Callable[[Launch], None] | None = None):
        self.cfg = load_config(cfg)
        self.name = name
        if insn_capacity is not None and insn_capacity < _TAIL_INSNS + 4 * _MAX_INSNS_PER_CALL:
            raise ProgramError(f"insn_capacity = {insn_capacity} is too small: a launch needs "
                               f"at least {_TAIL_INSNS + 4 * _MAX_INSNS_PER_CALL} instructions")
        self.insn_capacity = insn_capacity
        self.uop_capacity = 4 * self.cfg.uop_depth if uop_capacity is None else uop_capacity
        if self.uop_capacity < 1:
            raise ProgramError(f"uop_capacity must be positive, got {uop_capacity}")
        self.portable_kernels = portable_kernels
        self.kernels = KernelRegistry() if kernels is None else kernels
        self.on_launch = on_launch
        self.align = default_align(self.cfg)
        self.regions: dict[str, Region] = {}
        self.launches: list[Launch] = []
        self.splits = 0
        self._residency = UopResidency(self.cfg.uop_depth)
        self._log: list | None = None
        self._safe: _Snapshot | None = None
        self._replaying = False
        self._built = False
        self._reset()

    # ------------------------------------------------------------------ state
    def _reset(self) -> None:
        self._insns: list = []
        self._stages: list[str] = []
        self._relocs: list[tuple[int, str]] = []
        self._pending = {s: {f: False for f in POP_FLAGS} for s in STAGES}
        self._balance = dict.fromkeys(QUEUES, 0)
        self._staged: dict[UopKernel, int] = {}
        self._uop_chunks: list[bytes] = []
        self._uops_used = 0
        self._residency.clear()
        self._launch_start = 0

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(len(self._insns), self._insns[-1] if self._insns else None,
                         len(self._relocs), {s: dict(p) for s, p in self._pending.items()},
                         dict(self._balance), self._residency.snapshot(), dict(self._staged),
                         len(self._uop_chunks), self._uops_used)

    def _restore(self, snap: _Snapshot) -> None:
        del self._insns[snap.count:], self._stages[snap.count:], self._relocs[snap.relocs:]
        if snap.count:
            self._insns[-1] = snap.last
        self._pending = {s: dict(p) for s, p in snap.pending.items()}
        self._balance = dict(snap.balance)
        self._residency.restore(snap.residency)
        self._staged = dict(snap.staged)
        del self._uop_chunks[snap.uop_chunks:]
        self._uops_used = snap.uops_used

    def _check_open(self) -> None:
        if self._built:
            raise ProgramError(f"program {self.name!r} is already built")

    def __len__(self) -> int:
        return len(self._insns)

    @property
    def instructions(self) -> list:
        """The open launch's instructions (relocated ``dram_base`` still region-relative)."""
        return list(self._insns)

    @property
    def stages(self) -> list[str]:
        return list(self._stages)

    @property
    def relocs(self) -> list[tuple[int, str]]:
        return list(self._relocs)

    @property
    def uop_loads(self) -> int:
        """LOAD UOPs emitted so far (over all launches)."""
        return self._residency.loads

    @property
    def uop_evictions(self) -> int:
        return self._residency.evictions

    @property
    def pending(self) -> bool:
        """Whether the open launch holds instructions or pending pops."""
        return bool(self._insns) or any(v for p in self._pending.values() for v in p.values())

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

    # ------------------------------------------------------------------ regions
    def region(self, name: str, nbytes: int, kind: str, *, data=None, fill: int = 0,
               align: int | None = None, shape=None, dtype=None) -> Region:
        """A new DRAM region (see :class:`Region`); names are unique, and ``uops.N`` /
        ``insns.N`` (kinds ``uops`` / ``instructions``) are the builder's own."""
        if not isinstance(name, str) or not name:
            raise ProgramError(f"a region name must be a non-empty string, got {name!r}")
        if kind in GENERATED_KINDS or _GENERATED_NAME.fullmatch(name):
            raise ProgramError(f"region {name!r} of kind {kind!r}: the builder makes the "
                               f"micro-op and instruction regions of each launch itself")
        return self._new_region(name, nbytes, kind, data=data, fill=fill, align=align,
                                shape=shape, dtype=dtype)

    def _new_region(self, name: str, nbytes: int, kind: str, *, data=None, fill: int = 0,
                    align: int | None = None, shape=None, dtype=None) -> Region:
        if name in self.regions:
            raise ProgramError(f"duplicate region name {name!r}")
        region = Region(name, kind, int(nbytes), self.align if align is None else int(align),
                        None if shape is None else tuple(shape),
                        None if dtype is None else np.dtype(dtype).name, int(fill), data)
        self.regions[name] = region
        return region

    def parameter(self, name: str, array, *, align: int | None = None) -> Region:
        """Constant data carried by the program: the little-endian bytes of ``array``."""
        arr = np.ascontiguousarray(array)
        if arr.dtype.kind not in "biuf":
            raise ProgramError(f"parameter {name!r}: {arr.dtype} is not a numeric dtype "
                               f"(DRAM holds integers and floats)")
        arr = arr.astype(arr.dtype.newbyteorder("<"))
        return self.region(name, arr.nbytes, "parameter", data=arr.view(np.uint8).reshape(-1),
                           align=align, shape=arr.shape, dtype=arr.dtype)

    def input(self, name: str, shape, dtype, *, align: int | None = None) -> Region:
        """A region filled at link time (``link(inputs={name: array})``)."""
        return self._shaped(name, shape, dtype, "input", align, 0)

    def output(self, name: str, shape, dtype, *, align: int | None = None,
               fill: int = 0) -> Region:
        """A region read back after the run (listed in every image's ``outputs``)."""
        return self._shaped(name, shape, dtype, "output", align, fill)

    def activation(self, name: str, nbytes: int, *, align: int | None = None) -> Region:
        return self.region(name, nbytes, "activation", align=align)

    def scratch(self, name: str, nbytes: int, *, align: int | None = None) -> Region:
        return self.region(name, nbytes, "scratch", align=align)

    def _shaped(self, name, shape, dtype, kind, align, fill) -> Region:
        shape = (shape,) if np.isscalar(shape) else tuple(int(d) for d in shape)
        if np.dtype(dtype).kind not in "biuf" or min(shape, default=0) < 0:
            raise ProgramError(f"{kind} {name!r}: needs a numeric dtype and a non-negative "
                               f"shape, got {shape} {np.dtype(dtype)}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return self.region(name, nbytes, kind, fill=fill, align=align, shape=shape,
                           dtype=dtype)

    def _region(self, what: str, region) -> Region:
        if isinstance(region, str):
            region = self.regions.get(region)
        if not isinstance(region, Region) or self.regions.get(region.name) is not region:
            raise ProgramError(f"{what}: expected a Region of this builder, got {region!r}")
        return region

    # ------------------------------------------------------------------ appending
    def _append(self, stage: str, insn, region: str | None = None) -> int:
        if not isinstance(insn, int):
            pending = self._pending[stage]
            pops = {f: True for f in POP_FLAGS if pending[f]}
            if pops:
                insn = with_fields(insn, **pops)
                pending.update(dict.fromkeys(POP_FLAGS, False))
            for flag, queue in DEP_FLAGS[stage].items():
                if queue is not None and getattr(insn, flag):
                    self._balance[queue] += -1 if flag in POP_FLAGS else 1
        if self.insn_capacity is not None and len(self._insns) >= self.insn_capacity:
            raise ProgramError(f"the launch needs more than insn_capacity = "
                               f"{self.insn_capacity} instructions")
        if region is not None:
            self._relocs.append((len(self._insns), region))
        self._insns.append(insn)
        self._stages.append(stage)
        return len(self._insns) - 1

    def emit(self, insn, *, region=None) -> int:
        """Append an instruction of any kind as it is (pending pops of its stage attached,
        its own token flags counted); with ``region``, its ``dram_base`` is an element offset
        inside that region. Returns its index in the open launch."""
        self._check_open()
        name = None if region is None else self._region("emit", region).name
        if name is not None and not isinstance(insn, (Load, Store)):
            raise ProgramError(f"emit: only LOAD and STORE address a region, not {insn!r}")
        return self._append(module_of(insn), insn, name)

    def raw(self, word: int, stage: str = "compute") -> int:
        """Append a raw 128-bit word (for programs that must be rejected) on ``stage``."""
        self._check_open()
        return self._append(_stage(stage), int(word) & ((1 << 128) - 1))

    def noop(self, stage, **flags) -> int:
        """A token-only instruction of ``stage`` carrying ``flags`` (see :func:`noop`)."""
        self._check_open()
        stage = _stage(stage)
        return self._append(stage, noop(stage).replace(**flags))

    def commit(self, stage) -> None:
        """Put the pending pops of ``stage`` on a no-op now."""
        stage = _stage(stage)
        if any(self._pending[stage].values()):
            self._append(stage, noop(stage))

    def _tail_reserve(self) -> int:
        return _TAIL_INSNS + sum([n for n in self._balance.values() if n > 0])

    def _fits(self, uops: int) -> bool:
        need = _MAX_INSNS_PER_CALL + 1 + self._tail_reserve()
        return ((self.insn_capacity is None or len(self._insns) + need <= self.insn_capacity)
                and self._uops_used + uops <= self.uop_capacity)

    def _make_room(self, uops: int = 0) -> None:
        """Split first if this call might not fit (instructions or staged micro-ops)."""
        self._check_open()
        if self._fits(uops):
            return
        too_big = ProgramError(f"a unit does not fit in one launch (insn_capacity = "
                               f"{self.insn_capacity}, uop_capacity = {self.uop_capacity})")
        if self._replaying:
            raise too_big
        self.splits += 1
        if self._log is None:
            self._seal()
        else:
            # Inside a unit: take the unit back, seal what came before it, then replay it.
            log, snap = self._log, self._safe
            if snap.count == self._launch_start:
                raise too_big
            self._restore(snap)
            self._seal()
            self._safe, self._log, self._replaying = self._snapshot(), [], True
            try:
                for name, args, kwargs in log:
                    getattr(self, name)(*args, **kwargs)
            finally:
                self._replaying = False
        if not self._fits(uops):
            raise too_big if self._log is not None else ProgramError(
                f"insn_capacity = {self.insn_capacity} cannot hold the {len(self._insns)} "
                f"token pushes carried over a split")

    # ------------------------------------------------------------------ dependencies
    @_logged
    def dep_pop(self, src, dst) -> None:
        """The next instruction of stage ``dst`` waits for a token from ``src``."""
        src, dst = _stage(src), _stage(dst)
        _queue(src, dst)
        self._make_room()
        self._pop(src, dst)

    def _pop(self, src: str, dst: str) -> None:
        flag = pop_flag(src, dst)
        if self._pending[dst][flag]:
            self.commit(dst)
        self._pending[dst][flag] = True

    @_logged
    def dep_push(self, src, dst) -> None:
        """Stage ``src`` sends a token to ``dst`` once its work so far is done."""
        src, dst = _stage(src), _stage(dst)
        _queue(src, dst)
        self._make_room()
        self._push(src, dst)

    def _push(self, src: str, dst: str) -> None:
        flag = push_flag(src, dst)
        self.commit(src)
        last = self._insns[-1] if self._insns else None
        if (last is not None and not isinstance(last, int) and self._stages[-1] == src
                and not getattr(last, flag)):
            self._insns[-1] = with_fields(last, **{flag: True})
            self._balance[_queue(src, dst)] += 1
        else:
            self._append(src, with_fields(noop(src), **{flag: True}))

    # ------------------------------------------------------------------ data movement
    def _check_transfer(self, what: str, region: Region, mem_type: int, offset: int,
                        x_size: int, y_size: int, x_stride: int) -> None:
        if min(offset, x_size, y_size, x_stride) < 0:
            raise ProgramError(f"{what}: offset, sizes and stride must be non-negative")
        if x_size and x_stride < x_size:
            raise ProgramError(f"{what}: x_stride = {x_stride} is smaller than x_size = "
                               f"{x_size}")
        eb = elem_bytes(self.cfg, mem_type)
        if x_size and y_size:
            last = offset + (y_size - 1) * x_stride + x_size
            if last * eb > region.nbytes:
                raise ProgramError(f"{what}: elements up to {last - 1} of {eb} bytes reach "
                                   f"past the end of region {region.name!r} "
                                   f"({region.nbytes} bytes)")

    @_logged
    def load_2d(self, mem_type: int, sram: int, region, offset: int = 0, *, x_size: int,
                y_size: int = 1, x_stride: int | None = None, y_pad: tuple = (0, 0),
                x_pad: tuple = (0, 0)) -> None:
        """LOAD ``y_size`` rows of ``x_size`` elements from ``region`` (element ``offset``,
        row pitch ``x_stride``) into SRAM entry ``sram`` and on, with zero padding."""
        mem_type = MemType(mem_type)
        if mem_type in (MemType.UOP, MemType.OUT):
            raise ProgramError(f"load_2d cannot load {mem_type.name}: micro-ops are loaded by "
                               f"gemm()/alu(), OUT is store-only")
        what = f"load_2d({mem_type.name})"
        region = self._region(what, region)
        x_stride = x_size if x_stride is None else x_stride
        self._check_transfer(what, region, mem_type, offset, x_size, y_size, x_stride)
        self._make_room()
        self._append(stage_of_load(mem_type),
                     Load(memory_type=mem_type, sram_base=sram, dram_base=offset,
                          y_size=y_size, x_size=x_size, x_stride=x_stride, y_pad_0=y_pad[0],
                          y_pad_1=y_pad[1], x_pad_0=x_pad[0], x_pad_1=x_pad[1]), region.name)

    @_logged
    def store_2d(self, sram: int, region, offset: int = 0, *, x_size: int, y_size: int = 1,
                 x_stride: int | None = None) -> None:
        """STORE ``y_size`` x ``x_size`` narrowed accumulator entries from SRAM ``sram``."""
        region = self._region("store_2d", region)
        x_stride = x_size if x_stride is None else x_stride
        self._check_transfer("store_2d", region, MemType.OUT, offset, x_size, y_size, x_stride)
        self._make_room()
        self._append("store", Store(memory_type=MemType.OUT, sram_base=sram, dram_base=offset,
                                    y_size=y_size, x_size=x_size, x_stride=x_stride),
                     region.name)

    # ------------------------------------------------------------------ compute
    def kernel(self, key: Hashable, record: Callable[[], UopKernel]) -> UopKernel:
        """The kernel recorded for ``key`` (``record()`` runs only the first time)."""
        return self.kernels.get(key, record)

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
            raise ProgramError(f"{mode}() takes a UopKernel, got {type(kernel).__name__}")
        if kernel.mode != mode:
            raise KernelError(f"{kernel} is a {kernel.mode.upper()} kernel; {mode}() needs a "
                              f"{mode.upper()} one")
        kernel.check(self.cfg, portable=self.portable_kernels)
        if len(kernel) > self.uop_capacity:
            raise ProgramError(f"{kernel} has more micro-ops than uop_capacity = "
                               f"{self.uop_capacity}")
        fresh = kernel not in self._residency and kernel not in self._staged
        self._make_room(len(kernel) if fresh else 0)
        begin, loaded = self._residency.place(kernel)
        n = len(kernel)
        if loaded:
            self._append("compute", Load(memory_type=MemType.UOP, sram_base=begin,
                                         dram_base=self._stage_uops(kernel), y_size=1,
                                         x_size=n, x_stride=n), self.uops_region)
        fields = dict(uop_bgn=begin, uop_end=begin + n, **kernel.loop_fields())
        if mode == "gemm":
            insn = Gemm(reset=kernel.reset, **fields)
        else:
            insn = Alu(alu_opcode=kernel.alu_op, use_imm=kernel.use_imm, imm=kernel.imm,
                       **fields)
        self._append("compute", insn)

    @property
    def uops_region(self) -> str:
        """The name the open launch's micro-op region will have (``uops.N``)."""
        return f"uops.{len(self.launches)}"

    def _stage_uops(self, kernel: UopKernel) -> int:
        """Stage the kernel's micro-ops once per launch; their element offset."""
        offset = self._staged.get(kernel)
        if offset is None:
            try:
                self._uop_chunks.append(encode_uops(kernel.uops, self.cfg))
            except IsaError as exc:
                raise KernelError(f"{kernel}: {exc}") from None
            offset = self._uops_used
            self._staged[kernel] = offset
            self._uops_used += len(kernel)
        return offset

    # ------------------------------------------------------------------ launches
    def epilogue(self) -> None:
        """The original runtime's epilogue (reference §8.4): store and load each push a token
        to compute (committing their pending pops first), a compute no-op pops both."""
        self._push("store", "compute")
        self._push("load", "compute")
        self._pop("store", "compute")
        self._pop("load", "compute")
        self.commit("compute")

    def finish(self, **flags) -> int:
        """Append FINISH (pending compute pops attached)."""
        return self._append("compute", Finish(**flags))

    def _drain(self) -> dict[str, int]:
        """Refuse a launch whose pops outnumber a queue's pushes; pop what is outstanding."""
        balance = dict(self._balance)
        for stage, flags in self._pending.items():
            for flag, on in flags.items():
                if on:
                    balance[DEP_FLAGS[stage][flag]] -= 1
        short = {q: -n for q, n in balance.items() if n < 0}
        if short:
            detail = ", ".join(f"{q} ({QUEUES[q][1]} pops {n} more token(s) than "
                               f"{QUEUES[q][0]} has pushed)" for q, n in short.items())
            raise ProgramError(f"cannot launch: {detail}; the launch would deadlock")
        if any(balance.values()):
            for stage in STAGES:
                self.commit(stage)
            for q, n in balance.items():
                producer, consumer = QUEUES[q]
                for _ in range(n):
                    self._append(consumer, noop(consumer).replace(
                        **{pop_flag(producer, consumer): True}))
        return balance

    def _seal(self, *, epilogue: bool = True, finish: bool = True,
              check_tokens: bool = True) -> Launch:
        """Close the open launch (drain, epilogue, FINISH), record it, start the next one
        with the drained tokens pushed again."""
        outstanding = self._drain() if check_tokens else {}
        if epilogue:
            self.epilogue()
        if finish:
            self.finish()
        k = len(self.launches)
        uops = None
        if self._uop_chunks:
            uops = self._new_region(f"uops.{k}", self._uops_used * self.cfg.uop_elem_bytes, "uops",
                               data=np.frombuffer(b"".join(self._uop_chunks), np.uint8)).name
        insns = self._new_region(f"insns.{k}", 16 * len(self._insns), "instructions").name
        launch = Launch(k, tuple(self._insns), tuple(self._stages), tuple(self._relocs),
                        insns, uops)
        self.launches.append(launch)
        self._reset()
        try:
            if self.on_launch is not None:
                self.on_launch(launch)
        finally:
            # Tokens that were in flight at a split are pushed again for the next launch.
            for q, n in outstanding.items():
                for _ in range(n):
                    self._push(*QUEUES[q])
            self._launch_start = len(self._insns)
        return launch

    @property
    def in_unit(self) -> bool:
        return self._log is not None

    def seal(self) -> Launch:
        """Seal the open launch now, even if it is empty (its epilogue and FINISH alone)."""
        self._check_open()
        if self._log is not None:
            raise ProgramError("seal() inside a unit: a unit stays in one launch")
        return self._seal()

    def flush(self) -> Launch | None:
        """Seal the open launch now (like ``CommandStream.synchronize()`` without running);
        None if it is empty."""
        self._check_open()
        if self._log is not None:
            raise ProgramError("flush() inside a unit: a unit stays in one launch")
        if not self.pending:
            return None
        return self._seal()

    def build(self, *, epilogue: bool = True, finish: bool = True,
              check_tokens: bool = True) -> Program:
        """Seal the last launch and return the frozen :class:`Program`. ``epilogue``,
        ``finish`` and ``check_tokens`` (refuse unbalanced pops, drain outstanding pushes)
        may be turned off for programs that must be rejected."""
        self._check_open()
        if self._log is not None:
            raise ProgramError("build() inside a unit")
        if self.pending or not self.launches or not (epilogue and finish and check_tokens):
            self._seal(epilogue=epilogue, finish=finish, check_tokens=check_tokens)
        self._built = True
        return Program(self.cfg, self.name, tuple(self.regions.values()), tuple(self.launches))
