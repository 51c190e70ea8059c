"""Independent numpy integer reference of a :class:`ConvOp` (int64 arithmetic, wrapped to
int32 where the accelerator's accumulator wraps)."""

from __future__ import annotations

import numpy as np

from .operators import ConvOp

__all__ = ["reference_conv", "apply_tail", "wrap32"]

wrap32 = None  # set below


def _conv_direct(x: np.ndarray, w: np.ndarray, strides, padding, dilation, groups) -> np.ndarray:
    """Convolution by explicit kernel-tap accumulation (not the Relay kernel)."""
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    pt, pl, pb, pr = padding
    (sh, sw), (dh, dw) = strides, dilation
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr), np.int64)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    og = o // groups
    for g in range(groups):
        for y in range(kh):
            for z in range(kw):
                patch = xp[:, g * ig:(g + 1) * ig, y * dh:y * dh + sh * (oh - 1) + 1:sh,
                           z * dw:z * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "ncij,oc->noij", patch, w[g * og:(g + 1) * og, :, y, z].astype(np.int64))
    return out


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((v + (1 << 31)) % (1 << 32)) - (1 << 31)


def reference_conv(op: ConvOp, x: np.ndarray, residual: np.ndarray | None = None) -> np.ndarray:
    """The operator's result: NCHW (or N x units for dense) in ``op.out_dtype``."""
    x4 = x.reshape(op.data_shape).astype(np.int64)
    y = _wrap32(_conv_direct(x4, op.weight, op.strides, op.padding, op.dilation, op.groups))
    out = apply_tail(op, y, residual)
    return out.reshape(op.out_shape[:2]) if op.kind == "dense" else out


def apply_tail(op, y: np.ndarray, residual: np.ndarray | None = None) -> np.ndarray:
    """The int32 tail of ``op`` on ``y`` (int64 values already wrapped to int32), then the
    narrowing to ``op.out_dtype``."""
    for t in op.tail:
        if t.residual:
            b = residual.reshape(y.shape).astype(np.int64)
        elif t.const is not None:
            b = op.consts[t.const].astype(np.int64).reshape(1, -1, 1, 1)
        else:
            b = np.int64(t.imm)
        if t.alu == "ADD":
            y = _wrap32(y + b)
        elif t.alu == "MUL":
            y = _wrap32(y * b)
        elif t.alu == "SHR":
            y = y >> b
        elif t.alu == "MIN":
            y = np.minimum(y, b)
        elif t.alu == "MAX":
            y = np.maximum(y, b)
    out = y.astype(np.int32)
    if op.out_dtype == "int8":
        out = out.astype(np.int8)    # truncation, like the narrowing STORE
    return out


wrap32 = _wrap32
