"""FoldScaleAxis: fold per-channel scales into the weights of conv2d and dense."""
from __future__ import annotations

import numpy as np

from ..ir import Call, Constant, IRModule, Op, with_fields
from ..visitor import ExprMutator
from ._util import map_functions, use_counts

__all__ = ["fold_scale_axis"]


def _is(e, name):
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _channel_vector(scale, channels, ndim_out):
    """The per-channel vector of a constant scale that only varies along axis 1 (NCHW) or the last
    axis (dense), else None."""
    if not isinstance(scale, Constant):
        return None
    s = scale.data
    if s.ndim == 0:
        return np.full(channels, s, dtype=s.dtype)
    shape = list(s.shape)
    if ndim_out == 4:   # conv2d NCHW: (C, 1, 1) or (1, C, 1, 1)
        if len(shape) == 3 and shape[1:] == [1, 1] and shape[0] in (channels, 1):
            return np.broadcast_to(s.reshape(-1), (channels,)).copy()
        if len(shape) == 4 and shape[0] == 1 and shape[2:] == [1, 1] and shape[1] in (channels, 1):
            return np.broadcast_to(s.reshape(-1), (channels,)).copy()
        return None
    if ndim_out == 2 and (shape == [channels] or shape == [1, channels]):   # dense
        return s.reshape(-1).copy()
    return None


def _plain_conv(c):
    a = c.attrs
    return (a.get("data_layout", "NCHW") == "NCHW" and a.get("kernel_layout", "OIHW") == "OIHW"
            and a.get("out_layout", "") in ("", "NCHW")   # conv2d honours out_layout
            and not a.get("out_dtype", "") and isinstance(c.args[1], Constant))


class _Fold(ExprMutator):
    def __init__(self, uses):
        super().__init__()
        self.uses = uses

    def visit_call(self, e):
        new = super().visit_call(e)
        if not _is(new, "multiply"):
            return new
        for i in (0, 1):
            prod, scale = new.args[i], new.args[1 - i]
            orig = e.args[i]
            if self.uses.get(id(orig), 0) != 1:
                continue
            # backward: multiply(conv2d(x, W), s[c]) -> conv2d(x, W * s[c])
            if _is(prod, "nn.conv2d") and _plain_conv(prod):
                w = prod.args[1].data
                s = _channel_vector(scale, w.shape[0], 4)
                if s is not None and s.dtype == w.dtype:
                    w2 = Constant((w * s.reshape(-1, 1, 1, 1)).astype(w.dtype))
                    return with_fields(prod, args=(prod.args[0], w2))
            if _is(prod, "nn.dense") and isinstance(prod.args[1], Constant) and not prod.attrs.get("out_dtype"):
                w = prod.args[1].data
                s = _channel_vector(scale, w.shape[0], 2)
                if s is not None and s.dtype == w.dtype:
                    w2 = Constant((w * s.reshape(-1, 1)).astype(w.dtype))
                    return with_fields(prod, args=(prod.args[0], w2))
        return new


class _FoldForward(ExprMutator):
    """conv2d(multiply(x, s[c_in]), W) -> conv2d(x, W * s[c_in]) (groups = 1)."""

    def __init__(self, uses):
        super().__init__()
        self.uses = uses

    def visit_call(self, e):
        new = super().visit_call(e)
        if not (_is(new, "nn.conv2d") and _plain_conv(new) and new.attrs.get("groups", 1) == 1):
            return new
        inp = new.args[0]
        if not _is(inp, "multiply") or self.uses.get(id(e.args[0]), 0) != 1:
            return new
        w = new.args[1].data
        for i in (0, 1):
            x, scale = inp.args[i], inp.args[1 - i]
            s = _channel_vector(scale, w.shape[1], 4)
            if s is not None and s.dtype == w.dtype and not isinstance(x, Constant):
                w2 = Constant((w * s.reshape(1, -1, 1, 1)).astype(w.dtype))
                return with_fields(new, args=(x, w2))
        return new


def fold_scale_axis(mod: IRModule) -> IRModule:
    """Fold constant per-channel scales into constant convolution and dense weights.

    Backward: ``multiply(conv2d(x, W), s)`` with ``s`` constant over the output channels becomes
    ``conv2d(x, W * s)``; likewise for ``nn.dense``.  Forward: ``conv2d(multiply(x, s), W)`` with
    ``s`` constant over the input channels becomes ``conv2d(x, W * s)``.  Only applied when the
    scaled value has no other use, the layout is NCHW/OIHW and the weights are constants.

    Guarantees: results are unchanged up to floating-point rounding; after
    ``simplify_inference`` and ``fold_constant``, batch-norm scales vanish into the weights.
    """
    def run(f):
        f = _Fold(use_counts(f)).visit(f)
        return _FoldForward(use_counts(f)).visit(f)
    return map_functions(mod, run)
