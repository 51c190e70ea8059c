"""The float model the quantiser starts from: weights bound, batch norm folded into the
convolution and dense layers before it, each anchor followed by a single bias."""
from __future__ import annotations

import numpy as np

from .. import transform as T
from ..analysis import post_order
from ..ir import Call, Constant, IRModule, Op, Tuple, TupleGetItem, op_call, with_fields
from ..transform._util import use_counts

__all__ = ["prepare", "fold_affine_into_anchor", "merge_affine_chains", "rebuild"]

ANCHORS = ("nn.conv2d", "nn.dense", "nn.conv2d_transpose")


def out_axis(call):
    """The axis of a constant anchor weight that indexes output channels (IOHW for the transposed
    convolution), or None where output channels are not one axis (grouped transposed conv)."""
    if call.op.name == "nn.conv2d_transpose":
        return 1 if call.attrs.get("groups", 1) == 1 else None
    return 0


def along_axis(v, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


def _is(e, *names):
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names


def rebuild(body, rewrite):
    """Rebuild a dataflow graph children first; ``rewrite(old, new_args)`` returns the new node
    of a call (``new_args`` are the rebuilt arguments).  Shared nodes stay shared."""
    memo = {}

    def get(e):
        return memo.get(id(e), e)
    for n in post_order(body):
        if isinstance(n, Call):
            memo[id(n)] = rewrite(n, [get(a) for a in n.args])
        elif isinstance(n, Tuple):
            memo[id(n)] = Tuple(tuple(get(f) for f in n.fields))
        elif isinstance(n, TupleGetItem):
            memo[id(n)] = TupleGetItem(get(n.tuple_value), n.index)
    return get(body)


def _channel_vector(c, channels, out_ndim):
    """A constant that only varies along the channel axis (1 for NCHW, last for dense) as a
    vector of ``channels`` values, else None."""
    if not isinstance(c, Constant) or not np.issubdtype(c.data.dtype, np.floating):
        return None
    s = c.data
    if s.size == 1 and s.ndim <= out_ndim:
        return np.full(channels, s.reshape(()), s.dtype)
    shape = list(s.shape)
    if out_ndim == 4:
        ok = shape in ([channels, 1, 1], [1, channels, 1, 1])
    else:
        ok = shape in ([channels], [1, channels])
    return s.reshape(-1).copy() if ok else None


class _Anchor:
    """conv2d/dense with a constant weight, and the bias folded so far."""

    def __init__(self, call, weight, bias):
        self.call, self.weight, self.bias = call, weight, bias

    def emit(self):
        dtype = self.call.args[1].data.dtype
        y = Call(self.call.op, (self.call.args[0], Constant(self.weight.astype(dtype))), self.call.attrs)
        axis = -1 if self.call.op.name == "nn.dense" else 1
        return op_call("nn.bias_add", y, Constant(self.bias.astype(dtype)), axis=axis)


def fold_affine_into_anchor(mod: IRModule) -> IRModule:
    """Fold every per-channel affine step after a float ``nn.conv2d``/``nn.dense``/
    ``nn.conv2d_transpose`` with a constant weight (``nn.bias_add``, ``add``/``subtract``/``multiply``/``divide`` by a per-channel or scalar
    constant, as batch norm becomes after ``simplify_inference``) into the anchor's weight and one
    bias.  Guarantees: the result computes the same function; each such anchor is followed by
    exactly one ``nn.bias_add(axis=1)``; steps are folded only through values with one user."""
    fn = mod["main"]
    uses = use_counts(fn.body)
    anchors = {}        # id(new node) -> _Anchor

    def rewrite(old, args):
        name = old.op.name if isinstance(old.op, Op) else None
        if name in ANCHORS and isinstance(args[1], Constant) and not old.attrs.get("out_dtype") \
                and out_axis(old) is not None:
            w = args[1].data.astype(np.float64)
            units = w.shape[out_axis(old)]
            call = Call(old.op, tuple(args), old.attrs)
            a = _Anchor(call, w, np.zeros(units))
            new = a.emit()
            anchors[id(new)] = (a, old)
            return new
        if name in ("nn.bias_add", "add", "subtract", "multiply", "divide") and id(args[0]) in anchors:
            a, src = anchors[id(args[0])]
            if uses.get(id(old.args[0]), 0) == 1:
                out_ndim = 2 if src.op.name == "nn.dense" else 4
                axis = out_axis(src)
                units = a.weight.shape[axis]
                if name == "nn.bias_add":
                    ok = isinstance(args[1], Constant) and old.attrs.get("axis", 1) in ((1,) if out_ndim == 4 else (1, -1))
                    v = args[1].data.astype(np.float64) if ok else None
                else:
                    v = _channel_vector(args[1], units, out_ndim)
                if v is not None:
                    w, b = a.weight, a.bias
                    if name in ("nn.bias_add", "add"):
                        b = b + v
                    elif name == "subtract":
                        b = b - v
                    else:
                        f = v if name == "multiply" else 1.0 / v
                        w = w * along_axis(f, axis, w.ndim)
                        b = b * f
                    na = _Anchor(a.call, w, b)
                    new = na.emit()
                    anchors[id(new)] = (na, src)
                    return new
        return Call(old.op, tuple(args), old.attrs)

    body = rebuild(fn.body, rewrite)
    return mod.with_function("main", with_fields(fn, body=body))


def _affine_constant(c):
    """A float constant that broadcasts along the channel axis of NCHW data only: a scalar,
    (C, 1, 1) or (1, C, 1, 1); as an array of one of those shapes, else None."""
    if not isinstance(c, Constant) or not np.issubdtype(c.data.dtype, np.floating):
        return None
    s = c.data.astype(np.float64)
    if s.size == 1 and s.ndim <= 1:
        return s.reshape(())
    if s.ndim == 3 and s.shape[1:] == (1, 1) or s.ndim == 4 and s.shape[0] == 1 and s.shape[2:] == (1, 1):
        return s.reshape(-1, 1, 1)
    return None


def merge_affine_chains(mod: IRModule) -> IRModule:
    """Merge chains of per-channel affine steps (``multiply``/``divide``/``add``/``subtract`` by
    a scalar or per-channel constant, e.g. a batch norm written as Mul, Add, Mul, Add) into one
    ``multiply`` and one ``add``.  Guarantees: the result computes the same function (up to
    float rounding); steps are merged only through values with one user."""
    fn = mod["main"]
    uses = use_counts(fn.body)
    chains = {}         # id(new node) -> (data, scale, shift, dtype)

    def rewrite(old, args):
        name = old.op.name if isinstance(old.op, Op) else None
        if name in ("multiply", "divide", "add", "subtract") and len(args) == 2:
            x, c = args
            k = _affine_constant(c)
            if k is None and name in ("multiply", "add"):
                x, c = c, x
                k = _affine_constant(c)
            if k is not None and not isinstance(x, Constant):
                dtype = c.data.dtype
                inner = chains.get(id(x))
                src = old.args[0] if x is args[0] else old.args[1]
                merged = inner is not None and uses.get(id(src), 0) == 1
                if merged:
                    x, scale, shift, _ = inner
                else:
                    scale, shift = np.ones(()), np.zeros(())
                if name == "multiply":
                    scale, shift = scale * k, shift * k
                elif name == "divide":
                    scale, shift = scale / k, shift / k
                else:
                    shift = shift + (k if name == "add" else -k)
                if merged:
                    y = op_call("add", op_call("multiply", x, Constant(scale.astype(dtype))),
                                Constant(shift.astype(dtype)))
                else:       # a single step stays as it is
                    y = Call(old.op, tuple(args), old.attrs)
                chains[id(y)] = (x, scale, shift, dtype)
                return y
        return Call(old.op, tuple(args), old.attrs)

    body = rebuild(fn.body, rewrite)
    return mod.with_function("main", with_fields(fn, body=body))


def prepare(mod: IRModule, params: dict | None = None) -> IRModule:
    """Bind ``params``, turn batch norm and dropout into arithmetic, fold constants, fold
    every per-channel affine step into the preceding convolution or dense layer, and merge the
    chains of affine steps left (after a concatenation, say) into one scale and one shift."""
    passes = [T.simplify_inference, T.fold_constant, fold_affine_into_anchor, T.fold_constant,
              merge_affine_chains, T.fold_constant]
    if params:
        passes.insert(0, lambda m: T.bind_params(m, {k: v for k, v in params.items()
                                                     if k in {p.name_hint for p in m["main"].params}}))
    return T.sequential(*passes)(mod)

