"""A small assembler for hand-written VTA programs: DRAM layout, instructions, tokens.

Typical use::

    b = ProgramBuilder(cfg, "gemm-single-tile")
    x = b.put_inp(inp_tiles(cfg, X))            # data regions, aligned for their element size
    w = b.put_wgt(wgt_tiles(cfg, W))
    u = b.put_uops([Uop(0, 0, 0)])
    y = b.output("y", (1,))                      # an int8 output region of 1 OUT element
    b.load(MemType.UOP, 0, u, 1)
    b.load(MemType.INP, 0, x, 1)
    b.load(MemType.WGT, 0, w, 1)
    b.sync("load", "compute")                    # RAW on INP/WGT: l2g token
    b.gemm(0, 1, reset=True)
    b.gemm(0, 1)
    b.sync("compute", "store")                   # RAW on OUT: g2s token
    b.store(0, y, 1)
    prog = b.program(expected={"y": ...})        # runtime epilogue + FINISH, then the image

A thin layer over the program layer (:class:`isa.program.StreamBuilder`): the token rules of
the TVM runtime (reference §8.4: :meth:`push` sets the push bit on the last instruction if it
belongs to the producing module, else appends a no-op carrying it; :meth:`pop` attaches the
pop to the next instruction of the consuming module), the no-ops and the epilogue are the
program layer's. What this layer adds is eager addresses: regions are placed in the order
they are allocated (physical 0 left unused), so that a program can compute ``dram_base``
values by hand, and programs that must be rejected (no token check, raw words, explicit
``pop_prev=...`` keyword arguments, as in the original test_lib).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..arch import STAGES, AluOp, MemType, elem_bytes
from ..encoding import Alu, Gemm, Load, Store, Uop, encode_uops
from ..errors import ErrorCode
from ..image import OutputRegion, ProgramImage
from ..program import StreamBuilder, functional_counters

__all__ = ["ProgramBuilder", "Region", "MODULES", "elem_bytes"]

MODULES = STAGES


@dataclass(frozen=True)
class Region:
    """A block of DRAM: ``addr`` (bytes from physical 0), ``nbytes``."""

    name: str
    addr: int
    nbytes: int

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


class ProgramBuilder:
    """Lays out DRAM and collects instructions; :meth:`build` makes the :class:`ProgramImage`."""

    def __init__(self, cfg, name: str = "program"):
        self.cfg = cfg
        self.name = name
        self._b = StreamBuilder(cfg, name=name, insn_capacity=None)
        self.align = self._b.align
        self._top = self.align          # physical 0 is left unused, like the runtime does
        self.regions: dict[str, Region] = {}
        self.outputs: list[OutputRegion] = []
        self.built = None               # the isa.program.Program, once built

    # ================================================================== DRAM layout
    def alloc(self, nbytes: int, name: str | None = None, *, fill: int | bytes = 0,
              align: int | None = None, kind: str = "scratch", shape=None,
              dtype=None) -> Region:
        """Reserve ``nbytes`` of DRAM (aligned to every element size) filled with ``fill``."""
        align = align or self.align
        addr = -(-self._top // align) * align
        name = name or f"r{len(self.regions)}"
        assert name not in self.regions, f"duplicate region name {name!r}"
        if isinstance(fill, (bytes, bytearray)):
            assert len(fill) == nbytes
            self._b.region(name, nbytes, "parameter", data=np.frombuffer(bytes(fill), np.uint8),
                           align=align)
        else:
            self._b.region(name, nbytes, kind, fill=fill & 0xFF, align=align, shape=shape,
                           dtype=dtype)
        self._top = addr + nbytes
        region = Region(name, addr, nbytes)
        self.regions[name] = region
        return region

    def put(self, array: np.ndarray, name: str | None = None) -> Region:
        """Place the raw little-endian bytes of ``array``."""
        data = np.ascontiguousarray(array)
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
        raw = data.tobytes()
        return self.alloc(len(raw), name, fill=raw)

    def _put_tiles(self, tiles, shape, dtype, name):
        tiles = np.asarray(tiles)
        assert tiles.shape[-2:] == shape, f"element shape {tiles.shape[-2:]} != {shape}"
        info = np.iinfo(dtype)
        assert tiles.min(initial=0) >= info.min and tiles.max(initial=0) <= info.max
        return self.put(tiles.astype(dtype), name)

    def put_inp(self, tiles, name=None) -> Region:
        """INP elements, shape (..., BATCH, BLOCK_IN) int8, in element order."""
        return self._put_tiles(tiles, (self.cfg.batch, self.cfg.block_in), np.int8, name)

    def put_wgt(self, tiles, name=None) -> Region:
        """WGT elements, shape (..., BLOCK_OUT, BLOCK_IN) int8."""
        return self._put_tiles(tiles, (self.cfg.block_out, self.cfg.block_in), np.int8, name)

    def put_acc(self, tiles, name=None) -> Region:
        """ACC elements, shape (..., BATCH, BLOCK_OUT) int32."""
        return self._put_tiles(tiles, (self.cfg.batch, self.cfg.block_out), np.int32, name)

    def put_acc8(self, tiles, name=None) -> Region:
        """ACC_8BIT elements, shape (..., BATCH, BLOCK_OUT) int8."""
        return self._put_tiles(tiles, (self.cfg.batch, self.cfg.block_out), np.int8, name)

    def put_uops(self, uops: Iterable[Uop], name=None) -> Region:
        raw = encode_uops(list(uops), self.cfg)
        return self.alloc(len(raw), name, fill=raw)

    def output(self, name: str, shape: tuple[int, ...], *, fill: int = 0) -> Region:
        """An int8 output region of OUT elements, shape (*shape, BATCH, BLOCK_OUT), read back
        after the run under ``name``."""
        full = tuple(shape) + (self.cfg.batch, self.cfg.block_out)
        region = self.alloc(int(np.prod(full)), name, fill=fill, kind="output", shape=full,
                            dtype="int8")
        self.outputs.append(OutputRegion(name, region.addr, full, "int8"))
        return region

    def dram_base(self, region: Region, memory_type: int, offset: int = 0) -> int:
        eb = elem_bytes(self.cfg, memory_type)
        assert region.addr % eb == 0, f"region {region.name} is not aligned to {eb} bytes"
        return region.addr // eb + offset

    def elements(self, region: Region, memory_type: int) -> int:
        return region.nbytes // elem_bytes(self.cfg, memory_type)

    # ================================================================== instructions
    @property
    def insns(self) -> list:
        """The instructions so far (raw words as ints)."""
        return self._b.instructions

    def emit(self, insn, module: str | None = None) -> int:
        """Append an instruction (pending pops of its module attached); returns its index."""
        if isinstance(insn, int):
            assert module is not None, "a raw word needs its module"
            return self._b.raw(insn, module)
        return self._b.emit(insn)

    def _emit_in(self, insn, region: Region | None) -> int:
        if region is None:
            return self._b.emit(insn)
        return self._b.emit(insn, region=region.name)

    def load(self, memory_type: int, sram: int, src: Region | None, x_size: int,
             y_size: int = 1, x_stride: int | None = None, pad=(0, 0, 0, 0), offset: int = 0,
             *, dram_base: int | None = None, **deps) -> int:
        """LOAD ``y_size`` rows of ``x_size`` elements from ``src`` (+``offset`` elements) into
        SRAM at ``sram``; ``pad`` = (top, bottom, left, right) = (y_pad_0, y_pad_1, x_pad_0,
        x_pad_1)."""
        if dram_base is None:
            self.dram_base(src, memory_type, offset)      # the alignment check
        y0, y1, x0, x1 = pad
        insn = Load(memory_type=int(memory_type), sram_base=sram,
                    dram_base=offset if dram_base is None else dram_base, y_size=y_size,
                    x_size=x_size, x_stride=x_size if x_stride is None else x_stride,
                    y_pad_0=y0, y_pad_1=y1, x_pad_0=x0, x_pad_1=x1, **deps)
        return self._emit_in(insn, src if dram_base is None else None)

    def store(self, sram: int, dst: Region | None, x_size: int, y_size: int = 1,
              x_stride: int | None = None, offset: int = 0, *, dram_base: int | None = None,
              **fields) -> int:
        """STORE ``y_size`` rows of ``x_size`` OUT elements from SRAM (dense) to ``dst``."""
        if dram_base is None:
            self.dram_base(dst, MemType.OUT, offset)
        insn = Store(sram_base=sram, dram_base=offset if dram_base is None else dram_base,
                     y_size=y_size, x_size=x_size,
                     x_stride=x_size if x_stride is None else x_stride, **fields)
        return self._emit_in(insn, dst if dram_base is None else None)

    def gemm(self, uop_bgn: int, uop_end: int, iters=(1, 1), dst=(0, 0), src=(0, 0),
             wgt=(0, 0), *, reset: bool = False, **deps) -> int:
        """GEMM over micro-ops [uop_bgn, uop_end) with loops ``iters`` = (iter_out, iter_in) and
        index factors given as (outer, inner) pairs."""
        return self.emit(Gemm(reset=reset, uop_bgn=uop_bgn, uop_end=uop_end,
                              iter_out=iters[0], iter_in=iters[1],
                              dst_factor_out=dst[0], dst_factor_in=dst[1],
                              src_factor_out=src[0], src_factor_in=src[1],
                              wgt_factor_out=wgt[0], wgt_factor_in=wgt[1], **deps))

    def alu(self, op, uop_bgn: int, uop_end: int, iters=(1, 1), dst=(0, 0), src=(0, 0), *,
            imm: int | None = None, **deps) -> int:
        """ALU ``op`` (name or AluOp) over micro-ops [uop_bgn, uop_end); with ``imm`` the second
        operand is the immediate, otherwise ACC[src]."""
        op = AluOp[op] if isinstance(op, str) else op
        return self.emit(Alu(uop_bgn=uop_bgn, uop_end=uop_end, iter_out=iters[0],
                             iter_in=iters[1], dst_factor_out=dst[0], dst_factor_in=dst[1],
                             src_factor_out=src[0], src_factor_in=src[1], alu_opcode=int(op),
                             use_imm=imm is not None, imm=0 if imm is None else imm, **deps))

    def noop(self, module: str, **deps) -> int:
        """A token-only instruction of ``module`` (x_size = 0), encoded as the runtime does."""
        return self._b.noop(module, **deps)

    def finish(self, **deps) -> int:
        return self._b.finish(**deps)

    def raw(self, word: int, module: str = "compute") -> int:
        """A raw 128-bit instruction word (for programs that must be rejected)."""
        return self._b.raw(word, module)

    # ================================================================== tokens
    def push(self, frm: str, to: str) -> None:
        """Produce a token from module ``frm`` for module ``to`` (runtime ``DepPush``)."""
        self._b.dep_push(frm, to)

    def pop(self, frm: str, to: str) -> None:
        """Consume, on the next instruction of ``to``, a token from ``frm`` (``DepPop``)."""
        self._b.dep_pop(frm, to)

    def sync(self, frm: str, to: str) -> None:
        """Everything ``frm`` has been given so far happens before what ``to`` gets next."""
        self.push(frm, to)
        self.pop(frm, to)

    def flush_pending(self) -> None:
        """Commit pending pops as no-ops."""
        for module in MODULES:
            self._b.commit(module)

    def epilogue(self) -> None:
        """The runtime's epilogue before FINISH (reference §8.4): store and load each push a
        token to compute, and a compute no-op pops both. Pending pops of load, then store, are
        committed first (as this builder always did: the suite's images stay byte-identical)."""
        self._b.commit("load")
        self._b.commit("store")
        self._b.epilogue()

    # ================================================================== image
    def build(self, *, epilogue: bool = True, finish: bool = True) -> ProgramImage:
        """Append the epilogue and FINISH (unless told not to) and lay out the DRAM image at the
        addresses the regions were given (the instructions after them)."""
        if epilogue:
            self.epilogue()
        self.built = self._b.build(epilogue=False, finish=finish, check_tokens=False)
        linked = self.built.link({name: r.addr for name, r in self.regions.items()})
        return linked.image(0)

    @property
    def counters(self) -> dict[str, int]:
        """The functional-simulator counters of the instructions so far (all, once built)."""
        insns = self.built.launches[0].instructions if self.built else self._b.instructions
        return functional_counters(self.cfg, [i for i in insns if not isinstance(i, int)])

    def program(self, expected: dict | None = None, *, tags=(), description: str = "",
                counters: bool = True, **build):
        """Build and wrap as a :class:`ConformanceProgram` with the counters computed here."""
        from .program import ConformanceProgram
        image = self.build(**build)
        return ConformanceProgram(self.name, image, dict(expected or {}),
                                  expected_counters=self.counters if counters
                                  else None, tags=tuple(tags), description=description)

    def bad_program(self, error: ErrorCode, index: int, *, tags=(), description: str = "",
                    **build):
        from .program import ConformanceProgram
        image = self.build(**build)
        return ConformanceProgram(self.name, image, {}, expected_error=error,
                                  expected_index=index, tags=("bad",) + tuple(tags),
                                  description=description)
