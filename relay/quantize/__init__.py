"""Quantisation of float models to the integer programs VTA runs (int8 activations and weights,
int32 accumulation, power-of-two scales so that requantisation is a rounding shift and a clip).

``quantize(mod, params, calibration)`` prepares the float model (weights bound, batch norm folded
into the layer before it), calibrates the exponent of every tensor on the user's samples, rewrites
the graph (``realize``), and reports the agreement of the integer program with the float model on
those samples.  See docs/models.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..analysis import post_order
from ..interpreter import Interpreter
from ..ir import Call, Constant, Function, IRModule, Op, Tuple, TupleGetItem, Var
from ..op.registry import get_op
from ..transform import infer_type
from .errors import DoesNotQuantize, QuantizeError
from .prepare import fold_affine_into_anchor, prepare
from .realize import exponent_for, realize, round_half_away

__all__ = ["QConfig", "QuantizeError", "DoesNotQuantize", "Agreement", "Quantized", "quantize", "calibrate", "agreement",
           "load_calibration", "anchor_macs", "prepare", "fold_affine_into_anchor", "exponent_for", "round_half_away"]


@dataclass(frozen=True)
class QConfig:
    """``per_channel``: one weight exponent per output channel (requantised with per-channel
    shifts) instead of one per tensor.  ``skip_ops``: operator-name patterns (``fnmatch``, e.g.
    ``"nn.dense"``) kept in float.  ``skip_layers``: indices among the conv2d/dense layers in
    evaluation order (0 the first, -1 the last) kept in float."""

    per_channel: bool = False
    skip_ops: tuple = ()
    skip_layers: tuple = ()


@dataclass(frozen=True)
class Agreement:
    """How the integer program agrees with the float model on the calibration samples."""

    samples: int
    cosine_mean: float
    cosine_min: float
    top1: float | None          # share of samples whose top-1 class is the same
    top5: float | None          # share whose float top-1 class is in the integer top-5
    float_ops: tuple = field(default=())
    int8_mac_share: float | None = None   # share of the conv/dense multiply-accumulates done in int8

    def __str__(self):
        s = f"{self.samples} samples: cosine mean {self.cosine_mean:.4f} (min {self.cosine_min:.4f})"
        if self.int8_mac_share is not None:
            s = f"{100 * self.int8_mac_share:.1f} % of conv/dense MACs in int8; " + s
        if self.top1 is not None:
            s += f", top-1 agreement {100 * self.top1:.1f} %, top-5 {100 * self.top5:.1f} %"
        if self.float_ops:
            s += f"; left in float: {', '.join(sorted(set(self.float_ops)))}"
        return s


@dataclass(frozen=True)
class Quantized:
    """The integer program, the float model it came from (prepared), and their agreement."""

    mod: IRModule
    float_mod: IRModule
    exponents: dict
    report: Agreement


def _evaluate(fn, feed, record=None):
    """Evaluate a dataflow function with the operators' numpy kernels; ``record(node, value)`` sees
    every tensor computed."""
    env = {}
    for p in fn.params:
        env[id(p)] = feed[p.name_hint]
        if record:
            record(p, env[id(p)])
    for n in post_order(fn.body):
        if id(n) in env:
            continue
        if isinstance(n, Constant):
            env[id(n)] = n.data
        elif isinstance(n, Call) and isinstance(n.op, Op):
            opdef = get_op(n.op.name)
            args = [env[id(a)] for a in n.args]
            env[id(n)] = opdef.compute(args, opdef.normalize_attrs(n.attrs))
            if record:
                record(n, env[id(n)])
        elif isinstance(n, Tuple):
            env[id(n)] = tuple(env[id(f)] for f in n.fields)
        elif isinstance(n, TupleGetItem):
            env[id(n)] = env[id(n.tuple_value)][n.index]
        elif isinstance(n, (Var, Op)):
            continue
        else:
            raise QuantizeError(f"cannot quantise a program with {type(n).__name__} nodes (a dataflow graph is needed)")
    return env[id(fn.body)]


def calibrate(fn, samples, progress=None):
    """The exponent of every tensor of ``fn`` (by node id) from the largest magnitude it takes on
    ``samples`` (input name -> array of shape ``(S, *input shape)``); ``progress("calibrate",
    done, S)`` after each sample."""
    peak = {}

    def record(node, v):
        if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating):
            m = float(np.max(np.abs(v))) if v.size else 0.0
            peak[id(node)] = max(peak.get(id(node), 0.0), m)
    count = next(iter(samples.values())).shape[0]
    for i in range(count):
        with np.errstate(over="ignore", invalid="ignore"):
            _evaluate(fn, {k: v[i] for k, v in samples.items()}, record)
        if progress:
            progress("calibrate", i + 1, count)
    nodes = {id(n): n for n in post_order(fn)}
    for k, v in peak.items():
        if not np.isfinite(v):      # its exponent would be unbounded: no int8 scale exists
            node = nodes.get(k)
            what = getattr(node, "name_hint", None) or getattr(getattr(node, "op", None), "name",
                                                               type(node).__name__)
            raise QuantizeError(f"on the calibration data the float model's {what} reaches "
                                f"{v} in float32; no power-of-two scale represents it (scale "
                                f"the calibration data, or check the model's weights)")
    return {k: exponent_for(v) for k, v in peak.items()}


def _cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(a @ b / (na * nb))


def _first(v):
    while isinstance(v, tuple):
        v = v[0]
    return v


def _without_softmax(mod):
    fn = mod["main"]
    body = fn.body
    if isinstance(body, Call) and isinstance(body.op, Op) and body.op.name in ("nn.softmax", "nn.log_softmax"):
        return IRModule({"main": Function(fn.params, body.args[0])})
    return mod


def anchor_macs(fn):
    """(int8 MACs, all MACs) of the convolution and dense layers of a typed function."""
    done = total = 0
    for n in post_order(fn.body):
        if not (isinstance(n, Call) and isinstance(n.op, Op)):
            continue
        name = n.op.name
        if name not in ("nn.conv2d", "nn.dense", "nn.conv2d_transpose"):
            continue
        x, w, y = n.args[0].checked_type, n.args[1].checked_type, n.checked_type
        if name == "nn.conv2d":
            macs = int(np.prod(y.shape)) * int(np.prod(w.shape[1:]))
        elif name == "nn.dense":
            macs = int(np.prod(y.shape)) * int(w.shape[1])
        else:   # each input element meets (out / groups) x KH x KW weights (IOHW)
            macs = int(np.prod(x.shape)) * int(np.prod(w.shape[1:]))
        total += macs
        done += macs if x.dtype == "int8" else 0
    return done, total


def agreement(float_mod, int_mod, samples, float_ops=(), progress=None):
    """Run both programs in the Relay interpreter on every sample and compare the first output:
    cosine similarity, and for (N, classes) outputs top-1 and top-5 agreement.  A final softmax is
    left out of the comparison (it changes no ranking, and a peaked one hides score errors).
    ``progress("agreement", done, S)`` after each sample."""
    fi, ii = Interpreter(_without_softmax(float_mod)), Interpreter(_without_softmax(int_mod))
    names = [p.name_hint for p in float_mod["main"].params]
    count = next(iter(samples.values())).shape[0]
    cos, top1, top5, classify = [], [], [], True
    for i in range(count):
        args = [samples[n][i] for n in names]
        f, q = _first(fi.run_main(*args)), _first(ii.run_main(*args))
        cos.append(_cosine(f, q))
        if f.ndim > 2 and all(d == 1 for d in f.shape[2:]):     # (N, classes, 1, 1) scores
            f, q = f.reshape(f.shape[:2]), q.reshape(q.shape[:2])
        if f.ndim == 2 and f.shape[1] >= 5:
            for fr, qr in zip(f, q):
                top1.append(int(np.argmax(fr) == np.argmax(qr)))
                top5.append(int(np.argmax(fr) in np.argsort(-qr)[:5]))
        else:
            classify = False
        if progress:
            progress("agreement", i + 1, count)
    return Agreement(count, float(np.mean(cos)), float(np.min(cos)),
                     float(np.mean(top1)) if classify and top1 else None,
                     float(np.mean(top5)) if classify and top5 else None, tuple(float_ops))


def check_calibration(fn, samples):
    """``samples`` as float32 arrays, one per input of ``fn``, each ``(S, *input shape)``."""
    names = [p.name_hint for p in fn.params]
    if not isinstance(samples, dict) or not samples:
        raise QuantizeError("calibration data must map each model input name to an array of samples")
    missing, extra = [n for n in names if n not in samples], sorted(set(samples) - set(names))
    if missing or extra:
        hint = "" if extra else (f"; if {', '.join(missing)} are weights (a .rly from `vta import`), "
                                 f"give them with --params PARAMS.npz")
        raise QuantizeError(f"calibration data has inputs {sorted(samples)} but the model's inputs are "
                            f"{names}{hint}")
    out, count = {}, None
    for p in fn.params:
        a = np.asarray(samples[p.name_hint])
        shape = tuple(p.type_annotation.shape) if p.type_annotation is not None else None
        if shape is not None and tuple(a.shape[1:]) != shape:
            raise QuantizeError(f"calibration input {p.name_hint!r} has shape {a.shape}; expected (S, "
                                f"{', '.join(map(str, shape))}) with S samples stacked on a new first axis")
        if not np.issubdtype(a.dtype, np.floating):
            raise QuantizeError(f"calibration input {p.name_hint!r} is {a.dtype}; float data is needed")
        if count is not None and a.shape[0] != count:
            raise QuantizeError(f"calibration inputs have different sample counts ({count} and {a.shape[0]})")
        count = a.shape[0]
        if count == 0:
            raise QuantizeError("calibration data has no samples")
        if not np.all(np.isfinite(a)):
            raise QuantizeError(f"calibration input {p.name_hint!r} holds NaN or infinite "
                                f"values; calibration samples must be finite")
        out[p.name_hint] = a.astype(p.type_annotation.dtype if p.type_annotation is not None else np.float32)
    return out


def load_calibration(path):
    """The arrays of a calibration ``.npz`` (never unpickled)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if not hasattr(z, "files"):
                raise QuantizeError(f"{path} is a single array; calibration data is an .npz with one array per input")
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise QuantizeError(f"cannot read calibration data {path}: {e}") from None


def quantize(mod, params=None, calibration=None, config=QConfig(), progress=None):
    """Quantise ``@main`` of ``mod`` (weights in ``params`` or already bound) using the
    ``calibration`` samples; returns a ``Quantized`` with the integer program and its agreement
    with the float model on those samples.  ``progress(stage, done, total)``, if given, is called
    after each sample of the two long stages, ``"calibrate"`` and ``"agreement"``."""
    float_mod = prepare(mod, params)
    fn = float_mod["main"]
    samples = check_calibration(fn, calibration)
    typed = infer_type(float_mod)["main"]
    exps = calibrate(typed, samples, progress)
    try:
        body, float_ops = realize(typed, exps, config.per_channel, config.skip_ops, config.skip_layers)
    except ValueError as e:
        raise QuantizeError(str(e)) from None
    int_fn = Function(typed.params, body)
    int_mod = IRModule({"main": int_fn})
    int_mod = infer_type(int_mod)
    names = {id(p): p.name_hint for p in typed.params}
    exponents = {names.get(k, k): v for k, v in exps.items() if k in names}
    report = agreement(float_mod, int_mod, samples, float_ops, progress)
    done, total = anchor_macs(int_mod["main"])
    report = replace(report, int8_mac_share=done / total if total else None)
    return Quantized(int_mod, float_mod, exponents, report)

