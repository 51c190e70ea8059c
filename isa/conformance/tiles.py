"""Packing of matrices into VTA tile layouts, and the narrowing/ALU arithmetic of numpy references.

VTA moves whole *elements* (tiles). A matrix of shape (rows, cols) tiled by (tr, tc) becomes an
array of shape (rows/tr, cols/tc, tr, tc): tile (i, j) holds ``mat[i*tr:(i+1)*tr, j*tc:(j+1)*tc]``
and the tiles lie in DRAM in row-major tile order (reference §7.1 ``packBuffer``). The element
shapes of a configuration are

* INP: (BATCH, BLOCK_IN) int8      * WGT: (BLOCK_OUT, BLOCK_IN) int8
* ACC: (BATCH, BLOCK_OUT) int32    * OUT / ACC_8BIT: (BATCH, BLOCK_OUT) int8
"""

from __future__ import annotations

import numpy as np

__all__ = ["tile", "untile", "inp_tiles", "wgt_tiles", "acc_tiles", "untile_acc", "narrow",
           "wrap32", "alu_ref", "shr_ref", "bytes_of_acc", "elem_shape"]


def tile(mat: np.ndarray, tr: int, tc: int) -> np.ndarray:
    """(rows, cols) -> (rows/tr, cols/tc, tr, tc)."""
    rows, cols = mat.shape
    assert rows % tr == 0 and cols % tc == 0, (mat.shape, tr, tc)
    return np.ascontiguousarray(mat.reshape(rows // tr, tr, cols // tc, tc).transpose(0, 2, 1, 3))


def untile(tiles: np.ndarray) -> np.ndarray:
    """(R, C, tr, tc) -> (R*tr, C*tc)."""
    r, c, tr, tc = tiles.shape
    return np.ascontiguousarray(tiles.transpose(0, 2, 1, 3).reshape(r * tr, c * tc))


def elem_shape(cfg, kind: str) -> tuple[int, int]:
    return {"inp": (cfg.batch, cfg.block_in), "wgt": (cfg.block_out, cfg.block_in),
            "acc": (cfg.batch, cfg.block_out), "out": (cfg.batch, cfg.block_out),
            "acc8": (cfg.batch, cfg.block_out)}[kind]


def inp_tiles(cfg, mat: np.ndarray) -> np.ndarray:
    """Activations (N, K) int8 -> (N/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN)."""
    return tile(np.asarray(mat, np.int8), cfg.batch, cfg.block_in)


def wgt_tiles(cfg, mat: np.ndarray) -> np.ndarray:
    """Weights (O, K) int8 -> (O/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN)."""
    return tile(np.asarray(mat, np.int8), cfg.block_out, cfg.block_in)


def acc_tiles(cfg, mat: np.ndarray, dtype=np.int32) -> np.ndarray:
    """Accumulators / outputs (N, O) -> (N/BATCH, O/BLOCK_OUT, BATCH, BLOCK_OUT)."""
    return tile(np.asarray(mat, dtype), cfg.batch, cfg.block_out)


def untile_acc(tiles: np.ndarray) -> np.ndarray:
    return untile(tiles)


def wrap32(x) -> np.ndarray:
    """Two's-complement wrap of (int64) values to int32."""
    return ((np.asarray(x, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def narrow(x) -> np.ndarray:
    """STORE narrowing: the low 8 bits of each accumulator, as int8 (no saturation)."""
    return (np.asarray(x, np.int64) & 0xFF).astype(np.uint8).view(np.int8)


def shr_ref(a, b) -> np.ndarray:
    """SPEC §4.4: B >= 0 arithmetic right shift (>= 32 gives the sign fill), B < 0 left shift by
    -B (>= 32 gives 0), low 32 bits kept."""
    a = np.asarray(a, np.int64)
    b = np.broadcast_to(np.asarray(b, np.int64), a.shape)
    right = a >> np.minimum(b, 63).clip(0)
    left_amount = np.minimum(-b, 63).clip(0)
    left = np.where(-b >= 32, 0, (a << left_amount))
    return wrap32(np.where(b >= 0, right, left))


def alu_ref(op: str, a, b) -> np.ndarray:
    """One ALU operation on int32 tensors (operand B already sign-extended)."""
    a = np.asarray(a, np.int64)
    b = np.broadcast_to(np.asarray(b, np.int64), a.shape)
    if op == "MIN":
        return wrap32(np.minimum(a, b))
    if op == "MAX":
        return wrap32(np.maximum(a, b))
    if op == "ADD":
        return wrap32(a + b)
    if op == "MUL":
        return wrap32(a * b)
    if op == "SHR":
        return shr_ref(a, b)
    raise ValueError(op)


def bytes_of_acc(x) -> np.ndarray:
    """The four byte planes of int32 values as int8, shape (4, *x.shape): what a '32-bit
    readback' (STORE, SHR 8, STORE, ...) leaves in DRAM."""
    u = np.asarray(x, np.int64) & 0xFFFFFFFF
    return np.stack([((u >> (8 * k)) & 0xFF).astype(np.uint8).view(np.int8) for k in range(4)])
