"""Rewrite a prepared float graph into the integer program of docs/quantization (the shared
integer form): int8 activations with power-of-two scales, int32 accumulation, requantisation by
rounding shift and clip.

Every tensor ``t`` of the float graph has an exponent ``e(t)`` from calibration: its int8 code
``q`` stands for ``q * 2**e``.  While converting, a float value is one of

* ``F`` - a float32 expression (on the CPU);
* ``Q`` - an int8 expression with a scalar exponent;
* ``A`` - an int32 accumulator of a VTA operator still taking its element-wise tail, with a
  scalar exponent, or a per-channel vector of exponents right after a per-channel anchor.

A per-channel affine step on int8 data that no convolution before it can absorb (batch norm
after a concatenation, as in DenseNet) becomes a depthwise 1x1 convolution by the int8 scales
(per-channel exponents) with the shift as its bias, so it runs on VTA like any convolution: its
accumulator takes the ReLU and the requantisation that follow.  A max pool of a float tensor
(after an LRN, say) pools the quantised tensor instead: rounding and clipping are monotone, so
``max(q(x)) == q(max(x))`` exactly.

Rounding: requantisation rounds half up (``(y + 2**(s-1)) >> s``, an arithmetic shift); input
quantisation, weights and biases round half away from zero (Relay ``round``).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import numpy as np

from ..analysis import post_order
from ..ir import Call, Constant, Op, Tuple, TupleGetItem, op_call
from ..transform._util import use_counts
from .errors import DoesNotQuantize
from .prepare import ANCHORS, _channel_vector, along_axis, out_axis

__all__ = ["Rep", "realize", "exponent_for", "round_half_away", "INT8_MIN", "INT8_MAX"]

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1

CHANNEL_EXP_SPREAD = 14     # per-channel scale exponents of a depthwise step lie within this of the largest
_AFFINE = ("multiply", "divide", "add", "subtract")
_SHAPE_OPS = ("reshape", "nn.batch_flatten", "transpose", "squeeze", "expand_dims", "strided_slice")
_POOLS = ("nn.avg_pool2d", "nn.global_avg_pool2d")


def exponent_for(max_abs, levels=INT8_MAX):
    """The smallest integer ``e`` with ``max_abs / 2**e <= levels`` (0 for an all-zero tensor)."""
    m = np.asarray(max_abs, np.float64)
    safe = np.where(m > 0, m, 1.0)
    e = np.ceil(np.log2(safe / levels)).astype(np.int64)
    e = np.where(m > 0, e, 0)
    # log2 can land a hair below an exact power of two; make the bound hold exactly.
    e = np.where(m / np.exp2(e) > levels, e + 1, e)
    return e if e.ndim else int(e)


def round_half_away(x):
    """Round to nearest, ties away from zero (what Relay's ``round`` does)."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _i32(v):
    return Constant(np.asarray(v, np.int32))


def _f32(v):
    return Constant(np.asarray(v, np.float32))


@dataclass(frozen=True, eq=False)
class Rep:
    kind: str                   # "F", "Q" or "A"
    expr: object
    exp: object = None          # int, or an int vector (A right after a per-channel anchor)
    channels_shape: tuple = ()  # shape of a per-channel constant for this tensor: (C,1,1) or (C,)
    layer: tuple = ()           # an accumulator's producer, for errors: (what, how to keep it in float,
                                # its input's exponent, its weights' exponent(s))
    peak: object = None         # a bound on an accumulator's magnitude (scalar or per channel), if known


# ---------------------------------------------------------------- emitted forms


def quantize_input(x, e):
    """float32 -> int8: ``cast(clip(round(x * 2**-e), -128, 127), int8)``."""
    y = op_call("round", op_call("multiply", x, _f32(2.0 ** -e)))
    return op_call("cast", op_call("clip", y, a_min=float(INT8_MIN), a_max=float(INT8_MAX)), dtype="int8")


def dequantize(q, e):
    """int8 -> float32: ``cast(q, float32) * 2**e``."""
    return op_call("multiply", op_call("cast", q, dtype="float32"), _f32(2.0 ** e))


def shift_round(y, s, channels_shape=()):
    """int32 ``y * 2**-s`` rounded half up; ``s`` a scalar or per-channel vector (>= 0).
    A shift that int32 cannot express (calibrated ranges 2^31 apart) is a ``ValueError``."""
    if np.any(np.asarray(s) > 31) or np.any(np.asarray(s) < -30):
        raise ValueError(f"a requantisation shift of {int(np.max(np.abs(s)))} bits does not "
                         f"fit int32 arithmetic: the calibrated ranges of two adjacent tensors are too far "
                         f"apart (calibration data of a sensible magnitude, e.g. the model's "
                         f"real inputs, avoids this)")
    if np.ndim(s) == 0:
        s = int(s)
        if s == 0:
            return y
        if s < 0:
            return op_call("multiply", y, _i32(2 ** -s))
        return op_call("right_shift", op_call("add", y, _i32(1 << (s - 1))), _i32(s))
    s = np.asarray(s, np.int64)
    if np.any(s < 0):
        raise ValueError("per-channel shifts must be non-negative")
    half = np.where(s > 0, np.left_shift(1, np.maximum(s - 1, 0)), 0)
    return op_call("right_shift", op_call("add", y, _i32(half.reshape(channels_shape))),
                   _i32(s.reshape(channels_shape)))


def narrow(y):
    """int32 -> int8: ``cast(clip(y, -128, 127), int8)``."""
    return op_call("cast", op_call("clip", y, a_min=float(INT8_MIN), a_max=float(INT8_MAX)), dtype="int8")


# ---------------------------------------------------------------- the rewrite


class _Realizer:
    def __init__(self, body, exps, per_channel, skip_ops, skip_layers):
        self.exps = exps
        self.per_channel = per_channel
        self.uses = use_counts(body)
        self.values = {}
        anchors = [n for n in post_order(body) if _opname(n) in ANCHORS]
        n = len(anchors)
        skip_idx = {i % n for i in skip_layers if -n <= i < n} if n else set()
        bad = [i for i in skip_layers if not -n <= i < n]
        if bad:
            raise ValueError(f"skip_layers {bad} out of range: the model has {n} conv2d/dense layers")
        self.layer_index = {id(a): i for i, a in enumerate(anchors)}
        self.order = {id(c): i for i, c in enumerate(n_ for n_ in post_order(body) if isinstance(n_, Call))}
        self.skipped = {id(a) for i, a in enumerate(anchors)
                        if i in skip_idx or any(fnmatch.fnmatchcase(a.op.name, p) for p in skip_ops)}
        for n_ in post_order(body):
            if isinstance(n_, Call) and isinstance(n_.op, Op) and any(
                    fnmatch.fnmatchcase(n_.op.name, p) for p in skip_ops):
                self.skipped.add(id(n_))
        self.float_ops = []

    # -- conversions between representations
    def exp_of(self, node):
        return self.exps[id(node)]

    def as_float(self, rep, node):
        if rep.kind == "F":
            return rep.expr
        if rep.kind == "A":
            rep = self.to_q(rep, node)
        return dequantize(rep.expr, rep.exp)

    def uniform(self, rep):
        """An accumulator with a per-channel exponent, shifted to the coarsest of them."""
        if rep.kind != "A" or np.ndim(rep.exp) == 0:
            return rep
        e = np.asarray(rep.exp)
        top = int(e.max())
        return Rep("A", shift_round(rep.expr, top - e, rep.channels_shape), top, rep.channels_shape, rep.layer)

    def to_q(self, rep, node, e_out=None):
        """int8 with exponent ``e_out`` (default: the node's calibrated one)."""
        e_out = self.exp_of(node) if e_out is None else e_out
        if rep.kind == "F":
            return Rep("Q", quantize_input(rep.expr, e_out), e_out)
        if rep.kind == "Q":
            if rep.exp == e_out:
                return rep
            y = op_call("cast", rep.expr, dtype="int32")
            return Rep("Q", narrow(shift_round(y, e_out - rep.exp)), e_out)
        if np.ndim(rep.exp) and np.all(e_out >= np.asarray(rep.exp)):
            # One rounding shift per channel straight to the output exponent.
            s = e_out - np.asarray(rep.exp)
            return Rep("Q", narrow(shift_round(rep.expr, s, rep.channels_shape)), e_out)
        rep = self.uniform(rep)
        return Rep("Q", narrow(shift_round(rep.expr, e_out - rep.exp)), e_out)

    def q_of(self, arg):
        rep = self.values[id(arg)]
        return rep if rep.kind == "Q" else self.to_q(rep, arg)

    # -- rules
    def convert(self, n):
        name = _opname(n)
        args = n.args
        reps = [self.values.get(id(a)) for a in args]
        if id(n) in self.skipped or name is None:
            return self.float_call(n)
        if name in ANCHORS:
            return self.anchor(n)
        if name == "nn.bias_add" and reps[0].kind == "A" and isinstance(args[1], Constant):
            return self.bias(n, reps[0], args[1].data)
        if name in _AFFINE:
            rep = self.affine(n, reps)
            if rep is not None:
                return rep
        if name == "add":
            return self.add(n, reps)
        if name == "nn.relu" and reps[0].kind in ("A", "Q"):
            r = reps[0]     # the sign does not depend on the exponent: per-channel ones stay
            return Rep(r.kind, op_call("nn.relu", r.expr), r.exp, r.channels_shape, r.layer, r.peak)
        if name == "clip" and reps[0].kind in ("A", "Q"):
            return self.clip(n, self.uniform(reps[0]))
        if name == "nn.max_pool2d":
            # A float input is quantised first, to the pool's own exponent (exact: see above).
            q = self.q_of(args[0]) if reps[0].kind != "F" else self.to_q(reps[0], n)
            return Rep("Q", Call(n.op, (q.expr,), n.attrs), q.exp)
        if name in _POOLS and reps[0].kind in ("A", "Q"):
            # The average of int8 values is an int8 value (truncated toward zero).
            q = self.q_of(args[0])
            return Rep("Q", Call(n.op, (q.expr,), n.attrs), q.exp)
        if name in _SHAPE_OPS and reps[0].kind in ("A", "Q"):
            q = self.q_of(args[0])
            return Rep("Q", Call(n.op, (q.expr,), n.attrs), q.exp)
        if name == "concatenate" and isinstance(args[0], Tuple) and all(
                self.values[id(f)].kind in ("A", "Q") for f in args[0].fields):
            e = self.exp_of(n)
            fields = tuple(self.to_q(self.values[id(f)], f, e).expr for f in args[0].fields)
            return Rep("Q", Call(n.op, (Tuple(fields),), n.attrs), e)
        return self.float_call(n)

    def float_call(self, n):
        if isinstance(n.op, Op):
            self.float_ops.append(n.op.name)
        new_args = []
        for a in n.args:
            if isinstance(a, Tuple):
                new_args.append(Tuple(tuple(self.as_float(self.values[id(f)], f) for f in a.fields)))
            elif isinstance(a, Constant):
                new_args.append(a)
            else:
                new_args.append(self.as_float(self.values[id(a)], a))
        return Rep("F", Call(n.op, tuple(new_args), n.attrs))

    def anchor(self, n):
        x, w = n.args
        if not isinstance(w, Constant) or (n.op.name == "nn.dense" and len(_shape(x)) != 2):
            return self.float_call(n)
        q = self.q_of(x)
        wf = w.data.astype(np.float64)
        axis = out_axis(n)
        if self.per_channel and axis is not None:
            ew = exponent_for(np.abs(wf).max(axis=tuple(a for a in range(wf.ndim) if a != axis)))
            scale = np.exp2(along_axis(ew, axis, wf.ndim))
        else:
            ew = exponent_for(np.abs(wf).max())
            scale = 2.0 ** ew
        wq = np.clip(round_half_away(wf / scale), INT8_MIN, INT8_MAX).astype(np.int8)
        attrs = dict(n.attrs)
        attrs["out_dtype"] = "int32"
        y = Call(n.op, (q.expr, Constant(wq)), type(n.attrs)(attrs))
        channels = wf.shape[axis] if axis is not None else None
        cshape = (channels,) if n.op.name == "nn.dense" else (channels, 1, 1)
        # An int8 input is at most 128 in magnitude: this bounds every output of the channel
        # (over all taps for a transposed convolution, which sums only some of them).
        reduce = tuple(a for a in range(wq.ndim) if a != axis)
        peak = -INT8_MIN * np.abs(wq.astype(np.int64)).sum(axis=reduce)
        i = self.layer_index[id(n)]
        layer = (f"{n.op.name} layer {i}", f"--skip-layer {i} or --skip-op {n.op.name}", q.exp, ew)
        return Rep("A", y, q.exp + ew, cshape, layer, peak)

    def affine(self, n, reps):
        """``x * c``, ``x / c``, ``x + c``, ``x - c`` for int8 or accumulator ``x`` (NCHW) and a
        float per-channel or scalar constant ``c``.  A shift of a convolution's accumulator joins
        its bias; anything else becomes a depthwise 1x1 convolution of the int8 tensor (scale
        1 for a shift) with the shift as its bias.  None where the rule does not apply."""
        name = n.op.name
        x, c = n.args
        i = 0
        if isinstance(x, Constant) and name in ("add", "multiply"):
            x, c, i = c, x, 1
        rep = reps[i]
        shape = _shape(x)
        if rep is None or rep.kind == "F" or len(shape) != 4 or not isinstance(c, Constant):
            return None
        v = _channel_vector(c, int(shape[1]), 4)
        if v is None or tuple(_shape(n)) != tuple(shape):
            return None
        v = v.astype(np.float64)
        if name in ("multiply", "divide"):
            scale = v if name == "multiply" else 1.0 / v
            if not np.all(np.isfinite(scale)):
                return None
            return self.channel_scale(n, x, scale)
        shift = v if name == "add" else -v
        if rep.kind == "A" and rep.channels_shape == (int(shape[1]), 1, 1):
            return self.bias(n, rep, shift)
        a = self.channel_scale(n, x, np.ones(int(shape[1])))
        return self.bias(n, a, shift)

    def channel_scale(self, n, x, scale):
        """``x * scale`` (per channel, NCHW) as an accumulator: a depthwise 1x1 convolution of
        the int8 ``x`` by the scales in int8 with one exponent per channel."""
        q = self.q_of(x)
        channels = scale.size
        ew = exponent_for(np.abs(scale))
        # The output is requantised per tensor from the largest channel's grid (about 7 bits
        # coarser). A channel scaled 2^-14 below the largest adds less than its resolution; a
        # finer grid of its own would only push its shift and its bias out of int32 (DenseNet-121's
        # merged batch norms reach 2^-32: shifts of 35 bits, biases clipped). It shares this one.
        ew = np.maximum(ew, ew.max() - CHANNEL_EXP_SPREAD)
        wq = np.clip(round_half_away(scale / np.exp2(ew)), INT8_MIN, INT8_MAX).astype(np.int8)
        y = op_call("nn.conv2d", q.expr, Constant(wq.reshape(channels, 1, 1, 1)), groups=channels,
                    channels=channels, kernel_size=(1, 1), out_dtype="int32")
        layer = (f"the per-channel {n.op.name} (operator {self.order[id(n)]} in evaluation order, a "
                 f"depthwise 1x1 convolution on VTA)", f"--skip-op {n.op.name}", q.exp, ew)
        return Rep("A", y, q.exp + ew, (channels, 1, 1), layer, -INT8_MIN * np.abs(wq.astype(np.int64)))

    def bias(self, n, rep, b):
        """The accumulator plus the float bias ``b`` (per channel) at its scale; a bias that,
        with the accumulator before it, may leave int32 is a ``DoesNotQuantize``."""
        e = np.asarray(rep.exp)
        bq = round_half_away(b.astype(np.float64) / np.exp2(e))
        peak = np.abs(bq) + (0 if rep.peak is None else rep.peak)
        if np.any(peak > INT32_MAX):
            raise DoesNotQuantize(self.bias_message(n, rep, b, bq, peak))
        return Rep("A", op_call("nn.bias_add", rep.expr, Constant(bq.astype(np.int32).reshape(-1)), axis=1),
                   rep.exp, rep.channels_shape, rep.layer, peak)

    def bias_message(self, n, rep, b, bq, peak):
        """What does not fit, where, and how to keep that layer in float."""
        peak = np.broadcast_to(peak, np.broadcast_shapes(np.shape(peak), np.shape(bq)))
        c = int(np.argmax(peak))

        def at(v):      # the worst channel's value of a scalar or per-channel vector
            v = np.ravel(v)
            return float(v[c] if v.size > 1 else v[0])
        where, keep, e_in, e_w = rep.layer or (f"the {n.op.name} (operator {self.order[id(n)]} in "
                                               f"evaluation order)", f"--skip-op {n.op.name}", None, None)
        channel = f" of channel {c}" if peak.size > 1 else ""
        products = "" if rep.peak is None else f"with its products (up to {at(rep.peak):.3g}) "
        fix = f"keep it in float with {keep} (QConfig skip_layers / skip_ops)"
        if self.per_channel:
            fix += ", or quantise without --per-channel (one coarser weight scale per tensor)"
        scales = "" if e_in is None else f" = input 2^{e_in} x weights 2^{int(at(e_w))}"
        return (f"{where} does not fit int32: its bias{channel}, {at(b):.4g} (float, range "
                f"{float(np.min(b)):.4g} to {float(np.max(b)):.4g}), is {at(bq):.4g} at its "
                f"accumulator's scale 2^{int(at(rep.exp))}{scales}: {products}beyond int32's "
                f"{INT32_MAX} (the scales are too fine for that bias: tiny weights, or calibration "
                f"data far smaller than the model's real inputs); {fix}")

    def add(self, n, reps):
        a, b = n.args
        if isinstance(b, Constant) or isinstance(a, Constant) or all(r.kind == "F" for r in reps):
            return self.float_call(n)
        acc = [i for i, r in enumerate(reps) if r.kind == "A"]
        if acc:
            i = acc[0]
            y, other = self.uniform(reps[i]), n.args[1 - i]
            r = self.q_of(other)
            if y.exp < r.exp:       # align the accumulator to the residual's scale
                y = Rep("A", shift_round(y.expr, r.exp - y.exp), r.exp, y.channels_shape, y.layer)
            elif y.exp > r.exp:     # a finer residual is coarsened first (an int8 requantisation)
                r = self.to_q(r, other, y.exp)
            s = op_call("add", y.expr, op_call("cast", r.expr, dtype="int32"))
            return Rep("A", s, y.exp, y.channels_shape, y.layer)
        qa, qb = self.q_of(a), self.q_of(b)
        lo = min(qa.exp, qb.exp)
        ta, tb = (op_call("cast", q.expr, dtype="int32") for q in (qa, qb))
        if qa.exp > lo:
            ta = op_call("multiply", ta, _i32(2 ** (qa.exp - lo)))
        if qb.exp > lo:
            tb = op_call("multiply", tb, _i32(2 ** (qb.exp - lo)))
        return Rep("A", op_call("add", ta, tb), lo)

    def clip(self, n, rep):
        lo = round_half_away(float(n.attrs["a_min"]) / 2.0 ** rep.exp)
        hi = round_half_away(float(n.attrs["a_max"]) / 2.0 ** rep.exp)
        lim = (INT8_MIN, INT8_MAX) if rep.kind == "Q" else (INT32_MIN, INT32_MAX)
        lo, hi = float(np.clip(lo, *lim)), float(np.clip(hi, *lim))
        return Rep(rep.kind, op_call("clip", rep.expr, a_min=lo, a_max=hi), rep.exp, rep.channels_shape, rep.layer)

    def run(self, params, body):
        for p in params:
            self.values[id(p)] = Rep("F", p)
        for n in post_order(body):
            if id(n) in self.values:
                continue
            if isinstance(n, Constant):
                self.values[id(n)] = Rep("F", n)
            elif isinstance(n, Call):
                rep = self.convert(n)
                if rep.kind == "A" and self.uses.get(id(n), 0) > 1:
                    rep = self.to_q(rep, n)
                self.values[id(n)] = rep
            elif isinstance(n, Tuple):
                self.values[id(n)] = Rep("F", Tuple(tuple(self.as_float(self.values[id(f)], f) for f in n.fields)))
            elif isinstance(n, TupleGetItem):
                src = self.values[id(n.tuple_value)]
                self.values[id(n)] = Rep("F", TupleGetItem(src.expr, n.index))
        out = self.values[id(body)]
        if isinstance(body, Tuple):
            return Tuple(tuple(self.as_float(self.values[id(f)], f) for f in body.fields))
        return self.as_float(out, body)


def _opname(n):
    return n.op.name if isinstance(n, Call) and isinstance(n.op, Op) else None


def _shape(e):
    t = e.checked_type
    return tuple(t.shape) if t is not None and hasattr(t, "shape") else ()


def realize(fn, exps, per_channel=False, skip_ops=(), skip_layers=()):
    """The integer version of the prepared float function ``fn`` (its ``checked_type`` filled)
    given the calibrated exponents ``exps`` (by node id); returns ``(body, float_ops)`` where
    ``float_ops`` lists the operators left in float."""
    r = _Realizer(fn.body, exps, per_channel, tuple(skip_ops), tuple(skip_layers))
    body = r.run(fn.params, fn.body)
    return body, r.float_ops

