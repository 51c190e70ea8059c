"""The original hardware test suite (test_lib: ``alu_test``, ``gemm_test``,
``blocked_gemm_test``, reference §7.1) rebuilt on the driver API.

Each function builds its program on a :class:`~driver.device.Device`, runs it and returns a
:class:`Outcome` with the numpy reference and the device's result. Host data are packed
tile by tile as test_lib packs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.encoding import AluOp, MemType, Uop

from .device import Device
from .kernel import Loop, UopKernel, alu_kernel, gemm_kernel

__all__ = ["Outcome", "pack", "unpack", "alu_test", "gemm_test", "blocked_gemm_test",
           "alu_reference"]


@dataclass
class Outcome:
    expected: np.ndarray
    actual: np.ndarray

    @property
    def ok(self) -> bool:
        return np.array_equal(self.expected, self.actual)


def pack(matrix: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """[R][C] -> tiles of (rows, cols) in row-major tile order: shape (R/rows, C/cols, rows, cols)."""
    r, c = matrix.shape
    return np.ascontiguousarray(matrix.reshape(r // rows, rows, c // cols, cols)
                                .transpose(0, 2, 1, 3))


def unpack(tiles: np.ndarray) -> np.ndarray:
    ty, tx, rows, cols = tiles.shape
    return tiles.transpose(0, 2, 1, 3).reshape(ty * rows, tx * cols)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int64).astype(np.uint32).view(np.int32)


def alu_reference(op: int, a: np.ndarray, b) -> np.ndarray:
    """SPEC §4.4 for the operand ranges test_lib uses; int32 result."""
    a = a.astype(np.int64)
    b = np.broadcast_to(np.asarray(b, np.int64), a.shape)
    if op == AluOp.MIN:
        r = np.minimum(a, b)
    elif op == AluOp.MAX:
        r = np.maximum(a, b)
    elif op == AluOp.ADD:
        r = a + b
    elif op == AluOp.MUL:
        r = a * b
    elif op == AluOp.SHR:
        r = np.where(b >= 0, a >> np.clip(b, 0, 63), a << np.clip(-b, 0, 63))
    else:
        raise ValueError(f"unknown ALU op {op}")
    return _wrap32(r & 0xFFFFFFFF)


# Operand ranges of test_lib (reference §7.1), plus MUL, which SPEC §4.4 defines.
_ALU_INPUT = {AluOp.MIN: (-64, 63), AluOp.MAX: (-64, 63), AluOp.ADD: (-32, 31),
              AluOp.SHR: (-8, 7), AluOp.MUL: (-64, 63)}
_ALU_IMM = {AluOp.MIN: (-16384, 16383), AluOp.MAX: (-16384, 16383), AluOp.ADD: (-16384, 16383),
            AluOp.SHR: (-8, 7), AluOp.MUL: (-128, 127)}


def alu_test(dev: Device, op: int, use_imm: bool, batch: int, vector_size: int,
             compressed: bool, rng: np.random.Generator, **stream_options) -> Outcome:
    """Per BATCH rows: LOAD ACC, one ALU kernel over ``vector_size / BLOCK_OUT`` tiles, STORE."""
    cfg, op = dev.config, AluOp(op)
    tx, sets, groups = vector_size // cfg.block_out, 1 if use_imm else 2, batch // cfg.batch
    lo, hi = _ALU_INPUT[op]
    a = rng.integers(lo, hi + 1, (batch, vector_size), dtype=np.int32)
    b = rng.integers(*(_ALU_IMM[op] if use_imm else (lo, hi)), endpoint=True,
                     size=(groups,) if use_imm else (batch, vector_size)).astype(np.int32)
    host = a if use_imm else np.concatenate([a, b], axis=1)
    acc_buf = dev.array(pack(host, cfg.batch, cfg.block_out), name="acc")
    out_buf = dev.empty((groups, tx, cfg.batch, cfg.block_out), np.int8, name="out")

    def record(imm) -> UopKernel:
        if compressed:
            return alu_kernel(op, [Uop(0, tx)], [Loop(tx, dst=1, src=1)], imm=imm)
        return alu_kernel(op, [Uop(i, tx + i) for i in range(tx)], imm=imm)

    s = dev.stream(**stream_options)
    for g in range(groups):
        imm = int(b[g]) if use_imm else None
        kernel = s.kernel(("alu_test", op, imm, tx, compressed), lambda: record(imm))
        with s.unit():                         # the ACC data must not cross a flush
            if g > 0:
                s.dep_pop("store", "compute")
            s.load_2d(MemType.ACC, 0, acc_buf, g * tx * sets, x_size=tx * sets)
            s.alu(kernel)
            s.dep_push("compute", "store")
            s.dep_pop("compute", "store")
            s.store_2d(0, out_buf, g * tx, x_size=tx)
            if g < groups - 1:
                s.dep_push("store", "compute")
    s.synchronize()
    operand = np.repeat(b, cfg.batch)[:, None] if use_imm else b
    expected = alu_reference(op, a, operand).astype(np.int8)
    actual = unpack(out_buf.read().reshape(groups, tx, cfg.batch, cfg.block_out))
    s.close()
    return Outcome(expected, actual)


def _gemm_data(dev: Device, batch: int, in_ch: int, out_ch: int, rng):
    cfg = dev.config
    inputs = rng.integers(-128, 128, (batch, in_ch), dtype=np.int8)
    weights = rng.integers(-128, 128, (out_ch, in_ch), dtype=np.int8)
    biases = rng.integers(-(1 << 31), 1 << 31, (batch, out_ch), dtype=np.int64).astype(np.int32)
    expected = _wrap32(biases.astype(np.int64)
                       + inputs.astype(np.int64) @ weights.astype(np.int64).T).astype(np.int8)
    bufs = (dev.array(pack(inputs, cfg.batch, cfg.block_in), name="inp"),
            dev.array(pack(weights, cfg.block_out, cfg.block_in), name="wgt"),
            dev.array(pack(biases, cfg.batch, cfg.block_out), name="bias"),
            dev.empty((batch // cfg.batch, out_ch // cfg.block_out, cfg.batch, cfg.block_out),
                      np.int8, name="out"))
    return expected, bufs


def _gemm_uops(bt: int, it: int, ot: int, compressed: bool, src0: int = 0,
               wgt0: int = 0) -> UopKernel:
    """test_lib's getGEMMUops for one thread: (i, j, k) = (batch, in, out) tiles."""
    if compressed:
        return gemm_kernel([Uop(i * ot, src0 + i * it, wgt0) for i in range(bt)],
                           [Loop(it, dst=0, src=1, wgt=1), Loop(ot, dst=1, src=0, wgt=it)])
    return gemm_kernel([Uop(i * ot + k, src0 + i * it + j, wgt0 + k * it + j)
                        for i in range(bt) for j in range(it) for k in range(ot)])


def gemm_test(dev: Device, batch: int, in_ch: int, out_ch: int, compressed: bool,
              rng: np.random.Generator, **stream_options) -> Outcome:
    """One-shot GEMM with bias: the 7-instruction token pattern of reference §4.4."""
    cfg = dev.config
    bt, it, ot = batch // cfg.batch, in_ch // cfg.block_in, out_ch // cfg.block_out
    expected, (inp, wgt, bias, out) = _gemm_data(dev, batch, in_ch, out_ch, rng)
    s = dev.stream(**stream_options)
    kernel = s.kernel(("gemm_test", bt, it, ot, compressed),
                      lambda: _gemm_uops(bt, it, ot, compressed))
    with s.unit():
        s.load_2d(MemType.ACC, 0, bias, x_size=bt * ot)
        s.dep_push("compute", "load")
        s.dep_pop("compute", "load")
        s.load_2d(MemType.WGT, 0, wgt, x_size=it * ot)
        s.load_2d(MemType.INP, 0, inp, x_size=bt * it)
        s.dep_push("load", "compute")
        s.dep_pop("load", "compute")
        s.gemm(kernel)
        s.dep_push("compute", "store")
        s.dep_pop("compute", "store")
        s.store_2d(0, out, x_size=bt * ot)
    s.synchronize()
    s.close()
    return Outcome(expected, unpack(out.read()))


def blocked_gemm_test(dev: Device, batch: int, channels: int, block: int, compressed: bool,
                      virtual_threads: int, rng: np.random.Generator,
                      **stream_options) -> Outcome:
    """Tiled GEMM: blocks of ``block``, strided 2-D loads, ``virtual_threads`` (1 or 2) SRAM
    halves double-buffered through the load/compute token queues."""
    cfg, vt = dev.config, virtual_threads
    bt, it, ot = block // cfg.batch, block // cfg.block_in, block // cfg.block_out
    in_tiles, out_tiles = channels // cfg.block_in, channels // cfg.block_out
    inp_bs, wgt_bs = bt * it, it * ot
    expected, (inp, wgt, bias, out) = _gemm_data(dev, batch, channels, channels, rng)
    s = dev.stream(**stream_options)
    kernels = [s.kernel(("blocked_gemm", bt, it, ot, compressed, t),
                        lambda t=t: _gemm_uops(bt, it, ot, compressed, t * inp_bs, t * wgt_bs))
               for t in range(vt)]
    for _ in range(vt):
        s.dep_push("compute", "load")          # every SRAM half starts free
    blocks = [(i, j) for i in range(0, batch, block) for j in range(0, channels, block)]
    for n, (i, j) in enumerate(blocks):
        acc_at = (i // cfg.batch) * out_tiles + j // cfg.block_out
        with s.unit():                     # one output block per launch at most
            if n > 0:
                s.dep_pop("store", "compute")      # the previous block has been stored
            s.load_2d(MemType.ACC, 0, bias, acc_at, x_size=ot, y_size=bt, x_stride=out_tiles)
            for step, k in enumerate(range(0, channels, block)):
                t = step % vt
                s.dep_pop("compute", "load")       # half t is free
                s.load_2d(MemType.WGT, t * wgt_bs, wgt,
                          (j // cfg.block_out) * in_tiles + k // cfg.block_in,
                          x_size=it, y_size=ot, x_stride=in_tiles)
                s.load_2d(MemType.INP, t * inp_bs, inp,
                          (i // cfg.batch) * in_tiles + k // cfg.block_in,
                          x_size=it, y_size=bt, x_stride=in_tiles)
                s.dep_push("load", "compute")
                s.dep_pop("load", "compute")
                s.gemm(kernels[t])
                s.dep_push("compute", "load")
            s.dep_push("compute", "store")
            s.dep_pop("compute", "store")
            s.store_2d(0, out, acc_at, x_size=ot, y_size=bt, x_stride=out_tiles)
            if n < len(blocks) - 1:
                s.dep_push("store", "compute")
    for _ in range(vt):
        s.dep_pop("compute", "load")
    s.synchronize()
    s.close()
    return Outcome(expected, unpack(out.read()))
