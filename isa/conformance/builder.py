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

Token helpers follow the TVM runtime (reference §8.4): :meth:`push` sets the push bit on the
last instruction if it belongs to the producing module (else appends a no-op carrying it),
:meth:`pop` attaches the pop to the next instruction of the consuming module (committing a
no-op first when one of that kind is already pending). Explicit ``pop_prev=...`` etc. keyword
arguments on the instruction methods give full control, as in the original test_lib.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..encoding import (Alu, AluOp, Finish, Gemm, Load, MemType, Store, Uop, encode,
                        encode_uops, module_of)
from ..errors import ErrorCode
from ..image import OutputRegion, ProgramImage

__all__ = ["ProgramBuilder", "Region", "MODULES", "elem_bytes"]

MODULES = ("load", "compute", "store")
_ORDER = {m: i for i, m in enumerate(MODULES)}
_DEP_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


def elem_bytes(cfg, memory_type: int) -> int:
    """Bytes of one DRAM element of ``memory_type`` (reference §3.1)."""
    return {MemType.UOP: cfg.uop_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes,
            MemType.INP: cfg.inp_elem_bytes, MemType.ACC: cfg.acc_elem_bytes,
            MemType.OUT: cfg.out_elem_bytes,
            MemType.ACC_8BIT: cfg.batch * cfg.block_out}[MemType(memory_type)]


def _push_flag(frm: str, to: str) -> str:
    return "push_next" if _ORDER[to] > _ORDER[frm] else "push_prev"


def _pop_flag(frm: str, to: str) -> str:
    return "pop_prev" if _ORDER[frm] < _ORDER[to] else "pop_next"


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
        self.align = max(16, cfg.uop_elem_bytes, cfg.inp_elem_bytes, cfg.wgt_elem_bytes,
                         cfg.acc_elem_bytes, cfg.out_elem_bytes)
        self._top = self.align          # physical 0 is left unused, like the runtime does
        self._chunks: list[tuple[int, bytes]] = []
        self.regions: dict[str, Region] = {}
        self.insns: list = []           # Instruction objects, or (raw 128-bit word, module)
        self.outputs: list[OutputRegion] = []
        self._pending = {m: set() for m in MODULES}
        self.counters = dict.fromkeys(
            ("gemm_counter", "alu_counter", "inp_load_nbytes", "wgt_load_nbytes",
             "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes"), 0)

    # ================================================================== DRAM layout
    def alloc(self, nbytes: int, name: str | None = None, *, fill: int | bytes = 0,
              align: int | None = None) -> Region:
        """Reserve ``nbytes`` of DRAM (aligned to every element size) filled with ``fill``."""
        align = align or self.align
        addr = -(-self._top // align) * align
        name = name or f"r{len(self.regions)}"
        assert name not in self.regions, f"duplicate region name {name!r}"
        if isinstance(fill, (bytes, bytearray)):
            data = bytes(fill)
            assert len(data) == nbytes
        else:
            data = bytes([fill & 0xFF]) * nbytes
        self._chunks.append((addr, data))
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
        nbytes = int(np.prod(full))
        region = self.alloc(nbytes, name, fill=fill)
        self.outputs.append(OutputRegion(name, region.addr, full, "int8"))
        return region

    def dram_base(self, region: Region, memory_type: int, offset: int = 0) -> int:
        eb = elem_bytes(self.cfg, memory_type)
        assert region.addr % eb == 0, f"region {region.name} is not aligned to {eb} bytes"
        return region.addr // eb + offset

    def elements(self, region: Region, memory_type: int) -> int:
        return region.nbytes // elem_bytes(self.cfg, memory_type)

    # ================================================================== instructions
    def emit(self, insn, module: str | None = None) -> int:
        """Append an instruction (pending pops of its module attached); returns its index."""
        if isinstance(insn, int):
            assert module is not None, "a raw word needs its module"
            self.insns.append((insn, module))
            return len(self.insns) - 1
        module = module_of(insn)
        pend = self._pending[module]
        if pend:
            insn = insn.replace(**{f: True for f in pend})
            pend.clear()
        self._count(insn)
        self.insns.append(insn)
        return len(self.insns) - 1

    def _count(self, insn) -> None:
        c, cfg = self.counters, self.cfg
        if isinstance(insn, Load) and insn.x_size:
            n = insn.x_size * insn.y_size
            key = {MemType.UOP: "uop", MemType.WGT: "wgt", MemType.INP: "inp", MemType.ACC: "acc",
                   MemType.ACC_8BIT: "acc"}.get(insn.memory_type)
            if key:
                eb = (cfg.acc_elem_bytes if insn.memory_type == MemType.ACC_8BIT
                      else elem_bytes(cfg, insn.memory_type))
                c[f"{key}_load_nbytes"] += n * eb
        elif isinstance(insn, Store) and insn.x_size:
            c["out_store_nbytes"] += insn.x_size * insn.y_size * cfg.out_elem_bytes
        elif isinstance(insn, (Gemm, Alu)):
            n = insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)
            if isinstance(insn, Alu):
                c["alu_counter"] += n
            elif not insn.reset:
                c["gemm_counter"] += n

    def load(self, memory_type: int, sram: int, src: Region | None, x_size: int,
             y_size: int = 1, x_stride: int | None = None, pad=(0, 0, 0, 0), offset: int = 0,
             *, dram_base: int | None = None, **deps) -> int:
        """LOAD ``y_size`` rows of ``x_size`` elements from ``src`` (+``offset`` elements) into
        SRAM at ``sram``; ``pad`` = (top, bottom, left, right) = (y_pad_0, y_pad_1, x_pad_0,
        x_pad_1)."""
        if dram_base is None:
            dram_base = self.dram_base(src, memory_type, offset)
        y0, y1, x0, x1 = pad
        return self.emit(Load(memory_type=int(memory_type), sram_base=sram, dram_base=dram_base,
                              y_size=y_size, x_size=x_size,
                              x_stride=x_size if x_stride is None else x_stride,
                              y_pad_0=y0, y_pad_1=y1, x_pad_0=x0, x_pad_1=x1, **deps))

    def store(self, sram: int, dst: Region | None, x_size: int, y_size: int = 1,
              x_stride: int | None = None, offset: int = 0, *, dram_base: int | None = None,
              **fields) -> int:
        """STORE ``y_size`` rows of ``x_size`` OUT elements from SRAM (dense) to ``dst``."""
        if dram_base is None:
            dram_base = self.dram_base(dst, MemType.OUT, offset)
        return self.emit(Store(sram_base=sram, dram_base=dram_base, y_size=y_size, x_size=x_size,
                               x_stride=x_size if x_stride is None else x_stride, **fields))

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
        if module == "load":
            insn = Load(memory_type=MemType.INP, y_size=0, x_size=0, x_stride=0, **deps)
        elif module == "compute":
            insn = Load(memory_type=MemType.UOP, y_size=0, x_size=0, x_stride=0, **deps)
        else:
            insn = Store(memory_type=MemType.UOP, y_size=0, x_size=0, x_stride=0, **deps)
        return self.emit(insn)

    def finish(self, **deps) -> int:
        return self.emit(Finish(**deps))

    def raw(self, word: int, module: str = "compute") -> int:
        """A raw 128-bit instruction word (for programs that must be rejected)."""
        return self.emit(int(word) & ((1 << 128) - 1), module)

    # ================================================================== tokens
    def _module_at(self, i: int) -> str:
        insn = self.insns[i]
        return insn[1] if isinstance(insn, tuple) else module_of(insn)

    def push(self, frm: str, to: str) -> None:
        """Produce a token from module ``frm`` for module ``to`` (runtime ``DepPush``)."""
        flag = _push_flag(frm, to)
        if self._pending[frm]:
            self.noop(frm)
        if (self.insns and not isinstance(self.insns[-1], tuple)
                and self._module_at(-1) == frm and not getattr(self.insns[-1], flag)):
            self.insns[-1] = self.insns[-1].replace(**{flag: True})
        else:
            self.noop(frm, **{flag: True})

    def pop(self, frm: str, to: str) -> None:
        """Consume, on the next instruction of ``to``, a token from ``frm`` (``DepPop``)."""
        flag = _pop_flag(frm, to)
        if flag in self._pending[to]:
            self.noop(to)
        self._pending[to].add(flag)

    def sync(self, frm: str, to: str) -> None:
        """Everything ``frm`` has been given so far happens before what ``to`` gets next."""
        self.push(frm, to)
        self.pop(frm, to)

    def flush_pending(self) -> None:
        """Commit pending pops as no-ops."""
        for module in MODULES:
            if self._pending[module]:
                self.noop(module)

    def epilogue(self) -> None:
        """The runtime's epilogue before FINISH (reference §8.4): store and load each push a
        token to compute, and a compute no-op pops both."""
        for module in ("load", "store"):
            if self._pending[module]:
                self.noop(module)
        self.push("store", "compute")
        self.push("load", "compute")
        self.pop("store", "compute")
        self.pop("load", "compute")
        self.noop("compute")

    # ================================================================== image
    def build(self, *, epilogue: bool = True, finish: bool = True) -> ProgramImage:
        """Append the epilogue and FINISH (unless told not to) and lay out the DRAM image."""
        if epilogue:
            self.epilogue()
        if finish:
            self.finish()
        words = []
        for insn in self.insns:
            word = insn[0] if isinstance(insn, tuple) else encode(insn, self.cfg)
            words.append(word.to_bytes(16, "little"))
        code = self.alloc(16 * len(words), "insns", fill=b"".join(words))
        size = -(-self._top // self.align) * self.align
        dram = np.zeros(size, np.uint8)
        for addr, data in self._chunks:
            dram[addr:addr + len(data)] = np.frombuffer(data, np.uint8)
        return ProgramImage(dram, code.addr, len(words), self.cfg, list(self.outputs))

    def program(self, expected: dict | None = None, *, tags=(), description: str = "",
                counters: bool = True, **build):
        """Build and wrap as a :class:`ConformanceProgram` with the counters computed here."""
        from .program import ConformanceProgram
        image = self.build(**build)
        return ConformanceProgram(self.name, image, dict(expected or {}),
                                  expected_counters=dict(self.counters) if counters else None,
                                  tags=tuple(tags), description=description)

    def bad_program(self, error: ErrorCode, index: int, *, tags=(), description: str = "",
                    **build):
        from .program import ConformanceProgram
        image = self.build(**build)
        return ConformanceProgram(self.name, image, {}, expected_error=error,
                                  expected_index=index, tags=("bad",) + tuple(tags),
                                  description=description)
