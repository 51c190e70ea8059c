"""Packing between NCHW and the configuration's blocked layouts (numpy, exact).

Activations: NCHW -> (N/B, C/BI, H, W, B, BI), batch and channels zero-padded up to whole
blocks. Weights: OIHW -> (O/BO, I/BI, KH, KW, BO, BI). Per-channel int32 constants:
(C,) -> (C/BO, B, BO), the same value in every batch lane, so that one accumulator row holds
the constant of a channel block.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ceil_div", "pack_activation", "unpack_activation", "pack_weight", "pack_channel_const",
           "expand_groups", "planes_to_int32"]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pack_activation(x: np.ndarray, batch: int, block: int) -> np.ndarray:
    """NCHW -> (N/B, C/BI, H, W, B, BI) with zero padding of N and C."""
    n, c, h, w = x.shape
    nb, cb = ceil_div(n, batch), ceil_div(c, block)
    x = np.pad(x, ((0, nb * batch - n), (0, cb * block - c), (0, 0), (0, 0)))
    return np.ascontiguousarray(x.reshape(nb, batch, cb, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def unpack_activation(x: np.ndarray, n: int, c: int) -> np.ndarray:
    """(N/B, C/BI, H, W, B, BI) -> NCHW, dropping the padding of N and C."""
    nb, cb, h, w, b, bi = x.shape
    full = x.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * bi, h, w)
    return np.ascontiguousarray(full[:n, :c])


def pack_weight(w: np.ndarray, block_out: int, block_in: int) -> np.ndarray:
    """OIHW -> (O/BO, I/BI, KH, KW, BO, BI) with zero padding of O and I."""
    o, i, kh, kw = w.shape
    ob, ib = ceil_div(o, block_out), ceil_div(i, block_in)
    w = np.pad(w, ((0, ob * block_out - o), (0, ib * block_in - i), (0, 0), (0, 0)))
    return np.ascontiguousarray(w.reshape(ob, block_out, ib, block_in, kh, kw)
                                .transpose(0, 2, 4, 5, 1, 3))


def pack_channel_const(v: np.ndarray, batch: int, block_out: int) -> np.ndarray:
    """(C,) int32 -> (C/BO, B, BO), replicated over the batch lanes."""
    c = v.shape[0]
    ob = ceil_div(c, block_out)
    v = np.pad(v.astype(np.int32), (0, ob * block_out - c)).reshape(ob, 1, block_out)
    return np.ascontiguousarray(np.broadcast_to(v, (ob, batch, block_out)))


def expand_groups(w: np.ndarray, groups: int, new_groups: int) -> np.ndarray:
    """A grouped OIHW weight (O, C/groups, KH, KW) rewritten for ``new_groups`` (a divisor of
    ``groups``): block-diagonal, zero where a group's outputs do not see an input channel."""
    o, ig, kh, kw = w.shape
    if new_groups == groups:
        return w
    per = groups // new_groups          # old groups per new group
    og = o // groups
    out = np.zeros((o, ig * per, kh, kw), w.dtype)
    for g in range(groups):
        local = g % per
        out[g * og:(g + 1) * og, local * ig:(local + 1) * ig] = w[g * og:(g + 1) * og]
    return out


def planes_to_int32(planes: np.ndarray) -> np.ndarray:
    """Four int8 byte planes (low byte first) -> int32: the inverse of storing y, y >> 8, ...
    through the narrowing STORE."""
    b = planes.astype(np.uint8).astype(np.uint32)
    return (b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)).view(np.int32)
