"""``nn.matmul``: numpy's matmul with broadcast batch dimensions (ONNX MatMul, aten.matmul/bmm)."""
from __future__ import annotations

import numpy as np

from ..ty import TensorType
from ._common import accum_dtype, as_tensor, known
from .registry import OpPattern, RelationError, register_op, relation
from .tensor import broadcast_shape


@relation("MatMul")
def matmul_rel(args, attrs):
    """(..., M, K) x (..., K, N) -> (broadcast ..., M, N); 1-D operands as in numpy."""
    a, b = as_tensor(args[0], "lhs"), as_tensor(args[1], "rhs")
    if a.ndim < 1 or b.ndim < 1:
        raise RelationError("matmul operands must have rank >= 1")
    sa = a.shape if a.ndim > 1 else (1,) + a.shape
    sb = b.shape if b.ndim > 1 else b.shape + (1,)
    if known(sa[-1]) and known(sb[-2]) and sa[-1] != sb[-2]:
        raise RelationError(f"matmul inner dimensions differ: {sa[-1]} and {sb[-2]}")
    if a.dtype != b.dtype and not attrs["out_dtype"]:
        raise RelationError(f"lhs is {a.dtype} but rhs is {b.dtype}; set out_dtype to mix them")
    shape = broadcast_shape(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return TensorType(shape, attrs["out_dtype"] or a.dtype)


@register_op("nn.matmul", num_inputs=2, relation="MatMul", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
             attrs={"out_dtype": ""})
def _matmul(args, attrs):
    """Matrix product over the last two axes (integers accumulate in int64)."""
    out_dtype = attrs["out_dtype"] or args[0].dtype
    acc = accum_dtype(out_dtype)
    return np.asarray(np.matmul(args[0].astype(acc), args[1].astype(acc))).astype(out_dtype)
