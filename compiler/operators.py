"""VTA operators: a conv2d or dense anchor with its element-wise tail, as immutable values,
and their blocked geometry on a configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from isa.config import MEMOP_PAD_BITS, VTAConfig

from .errors import CompileError
from .packing import ceil_div, expand_groups, pack_channel_const, pack_weight

__all__ = ["TailOp", "simplify_tail", "ConvOp", "ConvGeometry", "geometry", "ALU_OPS"]

ALU_OPS = ("MIN", "MAX", "ADD", "SHR", "MUL")
_MAX_PAD = (1 << MEMOP_PAD_BITS) - 1


@dataclass(frozen=True)
class TailOp:
    """One element-wise step on the int32 accumulator: ``alu`` with an immediate ``imm``, with the
    per-channel constant vector ``const`` (an index into ``ConvOp.consts``), or (``residual``)
    ADD of the operator's int8 residual input widened to int32."""

    alu: str
    imm: int | None = None
    const: int | None = None
    residual: bool = False

    def __post_init__(self):
        if self.alu not in ALU_OPS:
            raise ValueError(f"unknown ALU op {self.alu!r}")
        if sum((self.imm is not None, self.const is not None, self.residual)) != 1:
            raise ValueError("a tail step has exactly one operand: imm, const or residual")

    def describe(self) -> str:
        operand = ("residual" if self.residual else f"const{self.const}" if self.const is not None
                   else str(self.imm))
        return f"{self.alu} {operand}"


def simplify_tail(steps: tuple) -> tuple:
    """Peephole pass over a tail. Guarantees the same int32 results with no more ALU passes:
    ``ADD 0``, ``SHR 0``, ``MUL 1`` are dropped; consecutive immediate ``MAX a, MAX b`` become
    ``MAX max(a, b)`` and ``MIN a, MIN b`` become ``MIN min(a, b)`` (so ``relu`` then
    ``clip(-128, 127)`` costs two passes, not three)."""
    out: list[TailOp] = []
    for t in steps:
        if t.imm is not None and (t.alu, t.imm) in (("ADD", 0), ("SHR", 0), ("MUL", 1)):
            continue
        if out and t.imm is not None and out[-1].imm is not None and t.alu == out[-1].alu \
                and t.alu in ("MAX", "MIN"):
            pick = max if t.alu == "MAX" else min
            out[-1] = TailOp(t.alu, imm=pick(out[-1].imm, t.imm))
            continue
        out.append(t)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class ConvOp:
    """``nn.conv2d`` (NCHW/OIHW) or ``nn.dense`` (as a 1x1 conv on N x K x 1 x 1) on int8, then
    ``tail`` in int32; the result is int8 (the narrowing STORE) or int32."""

    name: str
    kind: str
    data_shape: tuple
    weight: np.ndarray
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    tail: tuple = ()
    consts: tuple = ()
    out_dtype: str = "int8"

    def __post_init__(self):
        if self.out_dtype not in ("int8", "int32"):
            raise ValueError(f"out_dtype must be int8 or int32, got {self.out_dtype}")
        n, c, h, w = self.data_shape
        o, ig, kh, kw = self.weight.shape
        if c != ig * self.groups or o % self.groups:
            raise ValueError(f"{self.name}: weight {self.weight.shape} does not match {c} input "
                             f"channels in {self.groups} groups")

    @property
    def residual(self) -> bool:
        return any(t.residual for t in self.tail)

    @property
    def out_shape(self) -> tuple:
        n, c, h, w = self.data_shape
        o, _, kh, kw = self.weight.shape
        (sh, sw), (dh, dw) = self.strides, self.dilation
        pt, pl, pb, pr = self.padding
        oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
        ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
        return (n, o, oh, ow)

    @property
    def macs(self) -> int:
        n, o, oh, ow = self.out_shape
        _, ig, kh, kw = self.weight.shape
        return n * o * oh * ow * ig * kh * kw

    def describe(self) -> str:
        n, c, h, w = self.data_shape
        o, _, kh, kw = self.weight.shape
        core = (f"dense {c}->{o}" if self.kind == "dense" else
                f"conv2d {c}->{o} {kh}x{kw}/{self.strides[0]} on {h}x{w}"
                + (f" groups={self.groups}" if self.groups > 1 else ""))
        tail = ", ".join(t.describe() for t in self.tail)
        return f"{core} [{tail}] -> {self.out_dtype}" if tail else f"{core} -> {self.out_dtype}"


def _effective_groups(op: ConvOp, cfg: VTAConfig) -> int:
    """The largest divisor of ``groups`` whose groups hold whole channel blocks."""
    n, c, h, w = op.data_shape
    o = op.weight.shape[0]
    for g in sorted((d for d in range(1, op.groups + 1) if op.groups % d == 0), reverse=True):
        if (c // g) % cfg.block_in == 0 and (o // g) % cfg.block_out == 0:
            return g
    return 1


@dataclass(frozen=True, eq=False)
class ConvGeometry:
    """A :class:`ConvOp` in blocks of a configuration: batch blocks ``nb``, ``groups`` (block
    granularity) of ``cbg`` input and ``obg`` output channel blocks, packed weights and
    constants in their DRAM layout."""

    op: ConvOp
    cfg: VTAConfig
    groups: int
    nb: int
    cbg: int
    obg: int

    cb = property(lambda self: self.groups * self.cbg)
    ob = property(lambda self: self.groups * self.obg)

    @property
    def hw(self):
        return self.op.data_shape[2:]

    @property
    def out_hw(self):
        return self.op.out_shape[2:]

    @property
    def kernel(self):
        return self.op.weight.shape[2:]

    @cached_property
    def packed_weight(self) -> np.ndarray:
        """(OB, CBg, KH, KW, BO, BI) int8, group after group."""
        cfg, g = self.cfg, self.groups
        w = expand_groups(self.op.weight, self.op.groups, g)
        og = w.shape[0] // g
        parts = [pack_weight(w[i * og:(i + 1) * og], cfg.block_out, cfg.block_in)
                 for i in range(g)]
        return np.ascontiguousarray(np.concatenate(parts, axis=0).astype(np.int8))

    @cached_property
    def packed_consts(self) -> np.ndarray:
        """(n_consts, OB, B, BO) int32."""
        cfg = self.cfg
        if not self.op.consts:
            return np.zeros((0, self.ob, cfg.batch, cfg.block_out), np.int32)
        return np.stack([pack_channel_const(v, cfg.batch, cfg.block_out)
                         for v in self.op.consts])

    @property
    def out_elems(self) -> int:
        oh, ow = self.out_hw
        return self.nb * self.ob * oh * ow

    @property
    def in_elems(self) -> int:
        h, w = self.hw
        return self.nb * self.cb * h * w


def geometry(op: ConvOp, cfg: VTAConfig) -> ConvGeometry:
    """Block the operator for ``cfg``; :class:`CompileError` if the DMA cannot pad it."""
    pads = op.padding
    if max(pads) > _MAX_PAD:
        raise CompileError(f"{op.name}: padding {list(pads)} exceeds the load DMA's limit of "
                           f"{_MAX_PAD} per side")
    g = _effective_groups(op, cfg)
    n, c, h, w = op.data_shape
    o = op.weight.shape[0]
    return ConvGeometry(op, cfg, g, ceil_div(n, cfg.batch), ceil_div(c // g, cfg.block_in),
                        ceil_div(o // g, cfg.block_out))
