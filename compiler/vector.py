"""VTA operators that use the tensor ALU only: pooling and element-wise int8 add / multiply.

Both read packed int8 tensors into the accumulator with ``LOAD ACC_8BIT`` (widening, zero
padding by the DMA) and run on the compute module; only the store overlaps (two virtual
threads alternate halves of the accumulator).

Rounding, exactly (the Relay interpreter computes the same):

* ``max_pool2d``: the maximum of the window's valid elements (padding never wins). The
  accumulator holds ``x + 128`` (>= 0) for valid elements and 0 for the DMA's padding, so a
  ``MAX`` over the window ignores the padding; ``-128`` restores the value.
* ``avg_pool2d`` (``count_include_pad=True``, or no padding) and ``global_avg_pool2d``: the
  window sum ``v`` divided by the window size ``K`` with truncation toward zero,
  ``trunc(v / K)``. The ALU computes ``v + (K - 1) * [v < 0]`` (from ``MIN 0``, ``MAX -1``,
  ``MUL -(K - 1)`` of a copy), then a floor division: ``SHR log2 K`` for a power of two,
  otherwise ``((v + 128 K) * M) >> S`` minus 128 with ``M = ceil(2^S / K)`` and ``S`` the
  smallest shift with ``2^S > K * max(v + 128 K)``; exact because no product reaches 2^31.
* element-wise ``add`` / ``multiply`` of two int8 tensors in int32, then the immediate tail.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.config import MEMOP_PAD_BITS, VTAConfig
from isa.encoding import AluOp, MemType

from .errors import DoesNotFit
from .lower import _alu_rows
from .operators import TailOp
from .packing import ceil_div
from .partition import IMM_RANGE
from .program import ProgramBuilder, VtaProgram

__all__ = ["PoolOp", "EltwiseOp", "lower_pool", "lower_eltwise", "divider", "reference_pool",
           "reference_eltwise"]

_MAX_PAD = (1 << MEMOP_PAD_BITS) - 1


@dataclass(frozen=True, eq=False)
class PoolOp:
    name: str
    kind: str                  # "max" | "avg"
    data_shape: tuple
    pool: tuple
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    residual = False
    out_dtype = "int8"
    macs = 0

    @property
    def out_shape(self) -> tuple:
        n, c, h, w = self.data_shape
        (kh, kw), (sh, sw), (dh, dw) = self.pool, self.strides, self.dilation
        pt, pl, pb, pr = self.padding
        return (n, c, (h + pt + pb - dh * (kh - 1) - 1) // sh + 1,
                (w + pl + pr - dw * (kw - 1) - 1) // sw + 1)

    def describe(self) -> str:
        n, c, h, w = self.data_shape
        kh, kw = self.pool
        return f"{self.kind}_pool {kh}x{kw}/{self.strides[0]} on {c}x{h}x{w} -> int8"


@dataclass(frozen=True, eq=False)
class EltwiseOp:
    name: str
    alu: str                   # "ADD" | "MUL"
    shape: tuple
    tail: tuple = ()
    out_dtype: str = "int8"
    residual = False
    macs = 0

    @property
    def data_shape(self) -> tuple:
        return self.shape

    @property
    def out_shape(self) -> tuple:
        return self.shape

    def describe(self) -> str:
        tail = ", ".join(t.describe() for t in self.tail)
        return f"int8 {self.alu.lower()} on {list(self.shape)}" + (f" [{tail}]" if tail else "") \
            + f" -> {self.out_dtype}"


def divider(k: int) -> list[tuple[str, int]] | None:
    """ALU steps (op, immediate) dividing a window sum ``v`` in [-128 K, 127 K] by ``k`` with
    truncation toward zero, after the sign correction; None if no exact 32-bit scheme fits."""
    if k == 1:
        return []
    if k & (k - 1) == 0:
        return [("SHR", k.bit_length() - 1)]
    top = 256 * k                       # max of v + (k - 1)[v < 0] + 128 k
    s = (top * k).bit_length()
    m = -(-(1 << s) // k)
    if top * m >= 1 << 31 or not (128 * k <= IMM_RANGE[1] and m <= IMM_RANGE[1]):
        return None
    return [("ADD", 128 * k), ("MUL", m), ("SHR", s), ("ADD", -128)]


def _geometry(op, cfg: VTAConfig):
    n, c, h, w = op.data_shape
    return ceil_div(n, cfg.batch), ceil_div(c, cfg.block_out)


def _pool_rows(op: PoolOp, th: int, w_pad: int, ow: int) -> int:
    kh, (sh, dh) = op.pool[0], (op.strides[0], op.dilation[0])
    ih = (th - 1) * sh + (kh - 1) * dh + 1
    return ih * w_pad + th * ow * (2 if op.kind == "avg" else 1)


def pool_tile(op: PoolOp, cfg: VTAConfig) -> tuple[int, int]:
    """(output rows per tile, virtual threads): the largest tile that fits the accumulator."""
    n, c, h, w = op.data_shape
    _, _, oh, ow = op.out_shape
    w_pad = w + op.padding[1] + op.padding[3]
    for vt in (2, 1):
        for th in range(oh, 0, -1):
            if vt * _pool_rows(op, th, w_pad, ow) <= cfg.acc_depth:
                return th, vt
    raise DoesNotFit(f"{op.name}: {op.describe()}: one output row needs "
                     f"{_pool_rows(op, 1, w_pad, ow)} ACC entries but the ACC buffer of "
                     f"{cfg.key} has {cfg.acc_depth}")


def check_pool(op: PoolOp, cfg: VTAConfig) -> None:
    """Raise :class:`DoesNotFit` if VTA cannot run ``op`` (the partition then keeps it on the
    CPU)."""
    if min(op.out_shape[2:]) < 1:
        raise DoesNotFit(f"{op.name}: the window is larger than the padded input")
    if max(op.padding) > _MAX_PAD:
        raise DoesNotFit(f"{op.name}: padding {list(op.padding)} beyond the DMA's {_MAX_PAD}")
    kh, kw = op.pool
    if op.padding[0] >= kh or op.padding[2] >= kh or op.padding[1] >= kw or \
            op.padding[3] >= kw:
        raise DoesNotFit(f"{op.name}: a window lies entirely in the padding")
    if op.kind == "avg" and divider(kh * kw) is None:
        raise DoesNotFit(f"{op.name}: no exact 32-bit division by {kh * kw} on the ALU")
    pool_tile(op, cfg)


def lower_pool(op: PoolOp, cfg: VTAConfig) -> VtaProgram:
    check_pool(op, cfg)
    nb, cb = _geometry(op, cfg)
    n, c, h, w = op.data_shape
    _, _, oh, ow = op.out_shape
    (kh, kw), (sh, sw), (dh, dw) = op.pool, op.strides, op.dilation
    pt, pl, pb, pr = op.padding
    w_pad = w + pl + pr
    th_max, vt = pool_tile(op, cfg)
    half = _pool_rows(op, th_max, w_pad, ow)
    p = ProgramBuilder()
    elem = cfg.batch * cfg.block_out
    data = p.region("data", nb * cb * h * w * elem, "input")
    out = p.region("out", nb * cb * oh * ow * elem, "output")
    k = kh * kw
    tile = 0
    for plane in range(nb * cb):
        for oy0 in range(0, oh, th_max):
            th = min(th_max, oh - oy0)
            base = (tile % vt) * half
            ih = (th - 1) * sh + (kh - 1) * dh + 1
            in_base, out_base = base, base + ih * w_pad
            tmp_base = out_base + th * ow
            iy0 = oy0 * sh - pt
            ys, ye = max(iy0, 0), min(iy0 + ih, h)
            rows = th * ow
            p.unit_begin()
            if tile >= vt:
                p.pop("store", "compute")
            p.load(MemType.ACC_8BIT, in_base, data, (plane * h + ys) * w, x_size=w,
                   y_size=ye - ys, x_stride=w, y_pad=(ys - iy0, iy0 + ih - ye), x_pad=(pl, pr))
            p.gemm([(out_base, 0, 0)], [(rows, 1, 0, 0)], reset=True)
            if op.kind == "max":
                p.alu(AluOp.ADD, [(in_base + (ys - iy0) * w_pad + pl, 0, 0)],
                      [(ye - ys, w_pad, 0, 0), (w, 1, 0, 0)], imm=128)
            for y in range(kh):
                for x in range(kw):
                    p.alu(AluOp.MAX if op.kind == "max" else AluOp.ADD,
                          [(out_base, in_base + y * dh * w_pad + x * dw, 0)],
                          [(th, ow, sh * w_pad, 0), (ow, 1, sw, 0)])
            if op.kind == "max":
                _alu_rows(p, AluOp.ADD, out_base, rows, imm=-128)
            elif k > 1:
                p.gemm([(tmp_base, 0, 0)], [(rows, 1, 0, 0)], reset=True)
                _alu_rows(p, AluOp.ADD, tmp_base, rows, src=out_base, src_step=1)
                _alu_rows(p, AluOp.MIN, tmp_base, rows, imm=0)
                _alu_rows(p, AluOp.MAX, tmp_base, rows, imm=-1)
                _alu_rows(p, AluOp.MUL, tmp_base, rows, imm=-(k - 1))
                _alu_rows(p, AluOp.ADD, out_base, rows, src=tmp_base, src_step=1)
                for alu, imm in divider(k):
                    _alu_rows(p, AluOp[alu], out_base, rows, imm=imm)
            p.push("compute", "store")
            p.pop("compute", "store")
            p.store(out_base, out, (plane * oh + oy0) * ow, x_size=ow, y_size=th, x_stride=ow)
            p.push("store", "compute")
            p.unit_end()
            tile += 1
    return p.build()


def eltwise_tile(op: EltwiseOp, cfg: VTAConfig) -> tuple[int, int]:
    nb, cb = _geometry(op, cfg)
    n, c, h, w = op.shape
    rows = nb * cb * h * w
    t = 1
    while t * 2 <= min(rows, 4096) and 2 * 2 * (t * 2) <= cfg.acc_depth:
        t *= 2
    if 2 * t > cfg.acc_depth:
        raise DoesNotFit(f"{op.name}: two ACC entries needed, the ACC buffer of {cfg.key} has "
                         f"{cfg.acc_depth}")
    return t, (2 if 4 * t <= cfg.acc_depth else 1)


def lower_eltwise(op: EltwiseOp, cfg: VTAConfig) -> VtaProgram:
    nb, cb = _geometry(op, cfg)
    n, c, h, w = op.shape
    total = nb * cb * h * w
    t_max, vt = eltwise_tile(op, cfg)
    elem = cfg.batch * cfg.block_out
    p = ProgramBuilder()
    a = p.region("data", total * elem, "input")
    b = p.region("data2", total * elem, "input")
    planes = 4 if op.out_dtype == "int32" else 1
    out = p.region("out", planes * total * elem, "output")
    reuse = 1 if planes > 1 else vt     # see lower_conv: byte planes use their own tokens
    for tile, e0 in enumerate(range(0, total, t_max)):
        t = min(t_max, total - e0)
        base = (tile % vt) * 2 * t_max
        p.unit_begin()
        if tile >= reuse:
            p.pop("store", "compute")
        p.load(MemType.ACC_8BIT, base, a, e0, x_size=t)
        p.load(MemType.ACC_8BIT, base + t_max, b, e0, x_size=t)
        _alu_rows(p, AluOp[op.alu], base, t, src=base + t_max, src_step=1)
        for step in op.tail:
            _alu_rows(p, AluOp[step.alu], base, t, imm=step.imm)
        p.push("compute", "store")
        for plane in range(planes):
            if plane:
                p.pop("store", "compute")
                _alu_rows(p, AluOp.SHR, base, t, imm=8)
                p.push("compute", "store")
            p.pop("compute", "store")
            p.store(base, out, plane * total + e0, x_size=t)
            p.push("store", "compute")
        p.unit_end()
    return p.build()


def reference_pool(op: PoolOp, x: np.ndarray) -> np.ndarray:
    """Independent numpy reference: windows of valid elements, max or trunc(sum / K)."""
    n, c, h, w = op.data_shape
    _, _, oh, ow = op.out_shape
    (kh, kw), (sh, sw), (dh, dw) = op.pool, op.strides, op.dilation
    pt, pl, _, _ = op.padding
    out = np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            ys = [i * sh + a * dh - pt for a in range(kh)]
            xs = [j * sw + b * dw - pl for b in range(kw)]
            vals = [x[:, :, y, z].astype(np.int64) for y in ys for z in xs
                    if 0 <= y < h and 0 <= z < w]
            if op.kind == "max":
                out[:, :, i, j] = np.max(vals, axis=0)
            else:
                s = np.sum(vals, axis=0)
                k = kh * kw
                out[:, :, i, j] = np.sign(s) * (np.abs(s) // k)
    return out.astype(np.int8)


def reference_eltwise(op: EltwiseOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    y = a.astype(np.int64) + b if op.alu == "ADD" else a.astype(np.int64) * b
    for t in op.tail:
        v = np.int64(t.imm)
        y = {"ADD": lambda: y + v, "MUL": lambda: y * v, "SHR": lambda: y >> v,
             "MIN": lambda: np.minimum(y, v), "MAX": lambda: np.maximum(y, v)}[t.alu]()
        y = ((y + (1 << 31)) % (1 << 32)) - (1 << 31)
    out = y.astype(np.int32)
    return out.astype(np.int8) if op.out_dtype == "int8" else out
