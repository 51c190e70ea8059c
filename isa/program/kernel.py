"""Micro-op kernels: recorded once, validated, and kept resident in the micro-op buffer.

The one implementation of the micro-op cache: the program builder, the driver's streams and
the compiler all use it.

A kernel is a list of micro-ops inside at most two loops (reference §8.3). Kernels are
immutable and compared by identity; :class:`KernelRegistry` records a kernel once per key
(the original's per-call-site handle) and keeps a bounded number of them;
:class:`UopResidency` places kernels in the micro-op SRAM as a ring and evicts what a new
kernel overwrites.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

from ..arch import AluOp
from ..config import LOOP_ITER_BITS, VTAConfig
from ..encoding import Uop

__all__ = ["Loop", "UopKernel", "KernelError", "gemm_kernel", "alu_kernel", "KernelRegistry",
           "UopResidency"]

MAX_LOOPS = 2


class KernelError(ValueError):
    """A micro-op kernel that cannot run: the message names the micro-op or loop and why."""


@dataclass(frozen=True)
class Loop:
    """One kernel loop: ``extent`` iterations adding the factors to the micro-op indices."""

    extent: int
    dst: int = 0
    src: int = 0
    wgt: int = 0


def _as_loop(loop) -> Loop:
    return loop if isinstance(loop, Loop) else Loop(*loop)


def _as_uop(uop) -> Uop:
    return uop if isinstance(uop, Uop) else Uop(*uop)


class UopKernel:
    """An immutable micro-op kernel of mode ``"gemm"`` or ``"alu"``; hashed by identity.

    Loops are given outer first. Use :func:`gemm_kernel` and :func:`alu_kernel`.
    """

    __slots__ = ("mode", "uops", "loops", "reset", "alu_op", "use_imm", "imm", "name",
                 "_checked")

    def __init__(self, mode: str, uops: Sequence, loops: Sequence = (), *, reset: bool = False,
                 alu_op: int | None = None, imm: int | None = None, name: str = ""):
        if mode not in ("gemm", "alu"):
            raise KernelError(f"kernel mode must be 'gemm' or 'alu', got {mode!r}")
        self.mode, self.name = mode, name
        self.uops = tuple(_as_uop(u) for u in uops)
        self.loops = tuple(_as_loop(lp) for lp in loops)
        self.reset = bool(reset)
        self.alu_op = None if alu_op is None else AluOp(alu_op)
        self.use_imm = imm is not None
        self.imm = 0 if imm is None else int(imm)
        self._checked: set = set()
        if not self.uops:
            raise KernelError(f"{self}: a kernel needs at least one micro-op")
        if len(self.loops) > MAX_LOOPS:
            raise KernelError(f"{self}: {len(self.loops)} loops; the hardware has {MAX_LOOPS}")
        for n, lp in enumerate(self.loops):
            if not 1 <= lp.extent < (1 << LOOP_ITER_BITS):
                raise KernelError(f"{self}: loop {n} extent {lp.extent} must be in "
                                  f"[1, {(1 << LOOP_ITER_BITS) - 1}]")
            for f in ("dst", "src", "wgt"):
                if getattr(lp, f) < 0:
                    raise KernelError(f"{self}: loop {n} {f} factor {getattr(lp, f)} is negative")
        for n, u in enumerate(self.uops):
            if min(u.dst, u.src, u.wgt) < 0:
                raise KernelError(f"{self}: micro-op {n} {u} has a negative index")
        if mode == "alu":
            if self.alu_op is None:
                raise KernelError(f"{self}: an ALU kernel needs alu_op")
            if self.reset:
                raise KernelError(f"{self}: reset applies to GEMM kernels only")
            if self.use_imm and not -(1 << 15) <= self.imm < (1 << 15):
                raise KernelError(f"{self}: immediate {self.imm} does not fit in 16 bits "
                                  f"(signed)")
        elif self.alu_op is not None or self.use_imm:
            raise KernelError(f"{self}: alu_op and imm apply to ALU kernels only")

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        what = self.mode.upper() + (f" {self.alu_op.name}" if self.alu_op is not None else "")
        return f"<UopKernel{label} {what} {len(self.uops)} uops>"

    __str__ = __repr__

    def __len__(self) -> int:
        return len(self.uops)

    @property
    def executions(self) -> int:
        n = len(self.uops)
        for lp in self.loops:
            n *= lp.extent
        return n

    def loop_fields(self) -> dict:
        """iter_out/iter_in and factor fields of the GEMM or ALU instruction.

        Like the original runtime: a single GEMM loop is the outer loop, a single ALU loop
        the inner one.
        """
        loops = list(self.loops)
        if len(loops) == 1:
            loops = loops + [Loop(1)] if self.mode == "gemm" else [Loop(1)] + loops
        while len(loops) < 2:
            loops.append(Loop(1))
        out, inner = loops
        fields = dict(iter_out=out.extent, iter_in=inner.extent, dst_factor_out=out.dst,
                      dst_factor_in=inner.dst, src_factor_out=out.src, src_factor_in=inner.src)
        if self.mode == "gemm":
            fields.update(wgt_factor_out=out.wgt, wgt_factor_in=inner.wgt)
        return fields

    def check(self, cfg: VTAConfig, *, portable: bool = False) -> None:
        """Raise :class:`KernelError` if the kernel cannot run on ``cfg``.

        Every index the loops reach must lie inside its buffer. With ``portable``, also
        apply the original runtime's hazard rule (a micro-op's destination differs from the
        two before it), which hardware without forwarding needs; this project's hardware has
        sequential semantics (SPEC §4.3) and does not.
        """
        key = (cfg, portable)
        if key in self._checked:
            return
        if len(self.uops) > cfg.uop_depth:
            raise KernelError(f"{self}: {len(self.uops)} micro-ops do not fit in the micro-op "
                              f"buffer ({cfg.uop_depth} entries)")
        reach = {f: sum((lp.extent - 1) * getattr(lp, f) for lp in self.loops)
                 for f in ("dst", "src", "wgt")}
        limits = {"dst": ("ACC", cfg.acc_depth)}
        if self.mode == "gemm" and not self.reset:
            limits.update(src=("INP", cfg.inp_depth), wgt=("WGT", cfg.wgt_depth))
        elif self.mode == "alu" and not self.use_imm:
            limits.update(src=("ACC", cfg.acc_depth))
        for n, u in enumerate(self.uops):
            for f, (buf, depth) in limits.items():
                top = getattr(u, f) + reach[f]
                if top >= depth:
                    raise KernelError(f"{self}: micro-op {n} {u} reaches {buf} index {top} "
                                      f"through its loops; the {buf} buffer has {depth} entries")
        if portable:
            for n in range(1, len(self.uops)):
                for back in (1, 2):
                    if n - back >= 0 and self.uops[n].dst == self.uops[n - back].dst:
                        raise KernelError(
                            f"{self}: micro-op {n} writes dst {self.uops[n].dst} like micro-op "
                            f"{n - back} just before it (a read-after-write hazard on hardware "
                            f"without forwarding)")
        self._checked.add(key)


def gemm_kernel(uops: Sequence, loops: Sequence = (), *, reset: bool = False,
                name: str = "") -> UopKernel:
    """A GEMM kernel; ``uops`` are :class:`~isa.encoding.Uop` or (dst, src, wgt) tuples,
    ``loops`` are :class:`Loop` or (extent, dst, src, wgt) tuples, outer first."""
    return UopKernel("gemm", uops, loops, reset=reset, name=name)


def alu_kernel(op: int, uops: Sequence, loops: Sequence = (), *, imm: int | None = None,
               name: str = "") -> UopKernel:
    """An ALU kernel of ``op`` (:class:`~isa.encoding.AluOp`); ``imm`` selects immediate mode."""
    return UopKernel("alu", uops, loops, alu_op=op, imm=imm, name=name)


class KernelRegistry:
    """Kernels recorded once per key and kept in least-recently-used order, at most ``limit``.

    The original's kernel cache grew without bound; here the oldest kernel is dropped (and
    recorded again if its key comes back).
    """

    def __init__(self, limit: int = 1024):
        if limit < 1:
            raise ValueError(f"kernel registry limit must be at least 1, got {limit}")
        self.limit = limit
        self._kernels: OrderedDict[Hashable, UopKernel] = OrderedDict()
        self.recorded = 0

    def __len__(self) -> int:
        return len(self._kernels)

    def get(self, key: Hashable, record: Callable[[], UopKernel]) -> UopKernel:
        kernel = self._kernels.get(key)
        if kernel is not None:
            self._kernels.move_to_end(key)
            return kernel
        kernel = record()
        if not isinstance(kernel, UopKernel):
            raise KernelError(f"the recorder of kernel {key!r} returned {kernel!r}, "
                              f"not a UopKernel")
        self.recorded += 1
        self._kernels[key] = kernel
        if len(self._kernels) > self.limit:
            self._kernels.popitem(last=False)
        return kernel


class UopResidency:
    """Which kernels occupy which range of the micro-op SRAM, placed as a ring.

    :meth:`place` returns ``(begin, loaded)``: where the kernel lies and whether it had to be
    loaded (the caller then emits the LOAD UOP). Kernels that the new range overlaps are
    evicted. The map holds at most ``depth`` kernels, so it is bounded.
    """

    def __init__(self, depth: int):
        self.depth = depth
        self._resident: dict[UopKernel, tuple[int, int]] = {}
        self._cursor = 0
        self.loads = 0
        self.evictions = 0

    def __contains__(self, kernel: UopKernel) -> bool:
        return kernel in self._resident

    def place(self, kernel: UopKernel) -> tuple[int, bool]:
        if kernel in self._resident:
            return self._resident[kernel][0], False
        size = len(kernel)
        if size > self.depth:
            raise KernelError(f"{kernel}: {size} micro-ops do not fit in the micro-op buffer "
                              f"({self.depth} entries)")
        if self._cursor + size > self.depth:
            self._cursor = 0
        begin, end = self._cursor, self._cursor + size
        for other, (b, e) in list(self._resident.items()):
            if b < end and begin < e:
                del self._resident[other]
                self.evictions += 1
        self._resident[kernel] = (begin, end)
        self._cursor = end
        self.loads += 1
        return begin, True

    def snapshot(self) -> tuple:
        return dict(self._resident), self._cursor, self.loads, self.evictions

    def restore(self, state: tuple) -> None:
        resident, self._cursor, self.loads, self.evictions = state
        self._resident = dict(resident)

    def clear(self) -> None:
        """Forget every kernel (after a launch the next one starts with an unknown SRAM)."""
        self._resident.clear()
        self._cursor = 0
