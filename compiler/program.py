"""Relocatable VTA programs: the value the lowering produces for one VTA operator.

A :class:`VtaProgram` names its DRAM regions symbolically (the operator's input, residual,
weights, constants and output), lists micro-op kernels once, and holds the command list (loads,
stores, GEMM/ALU over a kernel, dependency-token pushes and pops, units that must stay in one
launch). Nothing in it refers to a device: :meth:`VtaProgram.replay` binds the regions to device
buffers and feeds the commands to a :class:`driver.CommandStream`, which applies the token
rules, keeps kernels resident in the micro-op buffer, adds the epilogue and splits launches.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from isa.arch import STAGE_NUMBERS
from isa.encoding import AluOp, MemType

__all__ = ["Kernel", "Region", "VtaProgram", "ProgramBuilder", "STAGE_IDS", "Op"]

class Op:
    """Command opcodes: one row of 12 int64 per command, column 0 the opcode."""

    LOAD, STORE, GEMM, ALU, PUSH, POP, UNIT_BEGIN, UNIT_END = range(8)


STAGE_IDS = STAGE_NUMBERS   # the original runtime's stage numbers (isa.arch)
_STAGE_NAMES = {v: k for k, v in STAGE_IDS.items()}
_WIDTH = 12


@dataclass(frozen=True)
class Kernel:
    """A micro-op kernel: ``uops`` (dst, src, wgt) inside at most two ``loops``
    (extent, dst, src, wgt), outer first; GEMM (``reset``) or ALU (``alu_op``, ``imm``)."""

    mode: str
    uops: tuple
    loops: tuple = ()
    reset: bool = False
    alu_op: int | None = None
    imm: int | None = None

    @property
    def executions(self) -> int:
        n = len(self.uops)
        for loop in self.loops:
            n *= loop[0]
        return n

    def to_json(self) -> dict:
        return {"mode": self.mode, "uops": [list(u) for u in self.uops],
                "loops": [list(lp) for lp in self.loops], "reset": self.reset,
                "alu_op": self.alu_op, "imm": self.imm}

    @classmethod
    def from_json(cls, d: dict) -> "Kernel":
        return cls(d["mode"], tuple(tuple(int(x) for x in u) for u in d["uops"]),
                   tuple(tuple(int(x) for x in lp) for lp in d["loops"]), bool(d["reset"]),
                   None if d["alu_op"] is None else int(d["alu_op"]),
                   None if d["imm"] is None else int(d["imm"]))

    def driver_kernel(self):
        from driver.kernel import UopKernel
        return UopKernel(self.mode, self.uops, self.loops, reset=self.reset,
                         alu_op=self.alu_op, imm=self.imm)


@dataclass(frozen=True)
class Region:
    """A DRAM region of the program: ``role`` is input, output or param."""

    name: str
    nbytes: int
    role: str


@dataclass(frozen=True, eq=False)
class VtaProgram:
    """Regions, kernels and the command array (n x 12 int64) of one VTA operator."""

    regions: tuple
    kernels: tuple
    commands: np.ndarray

    def __post_init__(self):
        cmds = np.ascontiguousarray(self.commands, dtype=np.int64).reshape(-1, _WIDTH)
        cmds.setflags(write=False)
        object.__setattr__(self, "commands", cmds)

    def region(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def replay(self, stream, buffers: dict) -> None:
        """Emit the program on a :class:`driver.CommandStream`; ``buffers`` maps region names
        to device buffers."""
        regions = [buffers[r.name] for r in self.regions]
        kernels = [k.driver_kernel() for k in self.kernels]
        with ExitStack() as units:
            for row in self.commands.tolist():
                op = row[0]
                if op == Op.LOAD:
                    _, mem, sram, reg, off, xs, ys, xst, yp0, yp1, xp0, xp1 = row
                    stream.load_2d(mem, sram, regions[reg], off, x_size=xs, y_size=ys,
                                   x_stride=xst, y_pad=(yp0, yp1), x_pad=(xp0, xp1))
                elif op == Op.STORE:
                    _, _, sram, reg, off, xs, ys, xst = row[:8]
                    stream.store_2d(sram, regions[reg], off, x_size=xs, y_size=ys, x_stride=xst)
                elif op == Op.GEMM:
                    stream.gemm(kernels[row[1]])
                elif op == Op.ALU:
                    stream.alu(kernels[row[1]])
                elif op == Op.PUSH:
                    stream.dep_push(_STAGE_NAMES[row[1]], _STAGE_NAMES[row[2]])
                elif op == Op.POP:
                    stream.dep_pop(_STAGE_NAMES[row[1]], _STAGE_NAMES[row[2]])
                elif op == Op.UNIT_BEGIN:
                    units.enter_context(stream.unit())
                elif op == Op.UNIT_END:
                    units.close()


class ProgramBuilder:
    """Collects regions, kernels (deduplicated) and commands into a :class:`VtaProgram`."""

    def __init__(self):
        self._regions: list[Region] = []
        self._kernels: dict[Kernel, int] = {}
        self._rows: list[list[int]] = []
        self._unit_kernels: set[int] = set()
        self.unit_uops = 0          # micro-ops of the distinct kernels used in the open unit

    def region(self, name: str, nbytes: int, role: str) -> int:
        self._regions.append(Region(name, int(nbytes), role))
        return len(self._regions) - 1

    def _row(self, *values) -> None:
        row = [int(v) for v in values]
        self._rows.append(row + [0] * (_WIDTH - len(row)))

    def load(self, mem: MemType, sram: int, region: int, offset: int, *, x_size: int,
             y_size: int = 1, x_stride: int | None = None, y_pad=(0, 0), x_pad=(0, 0)) -> None:
        self._row(Op.LOAD, mem, sram, region, offset, x_size, y_size,
                  x_size if x_stride is None else x_stride, *y_pad, *x_pad)

    def store(self, sram: int, region: int, offset: int, *, x_size: int, y_size: int = 1,
              x_stride: int | None = None) -> None:
        self._row(Op.STORE, MemType.OUT, sram, region, offset, x_size, y_size,
                  x_size if x_stride is None else x_stride)

    def _kernel(self, kernel: Kernel) -> int:
        k = self._kernels.setdefault(kernel, len(self._kernels))
        if k not in self._unit_kernels:
            self._unit_kernels.add(k)
            self.unit_uops += len(kernel.uops)
        return k

    def gemm(self, uops, loops=(), *, reset: bool = False) -> None:
        self._row(Op.GEMM, self._kernel(Kernel("gemm", tuple(map(tuple, uops)),
                                               tuple(map(tuple, loops)), reset=reset)))

    def alu(self, op: AluOp, uops, loops=(), *, imm: int | None = None) -> None:
        self._row(Op.ALU, self._kernel(Kernel("alu", tuple(map(tuple, uops)),
                                              tuple(map(tuple, loops)), alu_op=int(op),
                                              imm=imm)))

    def push(self, src: str, dst: str) -> None:
        self._row(Op.PUSH, STAGE_IDS[src], STAGE_IDS[dst])

    def pop(self, src: str, dst: str) -> None:
        self._row(Op.POP, STAGE_IDS[src], STAGE_IDS[dst])

    def __len__(self) -> int:
        return len(self._rows)

    def unit_begin(self) -> None:
        self._row(Op.UNIT_BEGIN)
        self._unit_kernels.clear()
        self.unit_uops = 0

    def unit_end(self) -> None:
        self._row(Op.UNIT_END)

    def build(self) -> VtaProgram:
        kernels = sorted(self._kernels, key=self._kernels.get)
        cmds = np.array(self._rows, dtype=np.int64).reshape(-1, _WIDTH)
        return VtaProgram(tuple(self._regions), tuple(kernels), cmds)
