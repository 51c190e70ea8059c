"""SimplifyInference: batch_norm and dropout become plain arithmetic for inference."""
from __future__ import annotations

from ..ir import Call, Constant, IRModule, Op, Tuple, op_call
from ..visitor import ExprMutator
from ._util import map_functions
from .infer_type import infer_type

__all__ = ["simplify_inference"]


def _expand_to(v, ndim, axis):
    """Reshape a per-channel vector so it broadcasts along ``axis`` of a rank-``ndim`` tensor."""
    trailing = ndim - axis - 1
    return op_call("expand_dims", v, axis=1, num_newaxis=trailing) if trailing else v


class _Simplify(ExprMutator):
    def visit_call(self, e):
        new = super().visit_call(e)
        if not isinstance(new.op, Op):
            return new
        if new.op.name == "nn.batch_norm":
            x, gamma, beta, mean, var = new.args
            t = e.args[0].checked_type
            a = new.attrs
            axis = a.get("axis", 1) % t.ndim
            eps = Constant(_scalar(a.get("epsilon", 1e-5), t.dtype))
            scale = op_call("rsqrt", op_call("add", var, eps))
            if a.get("scale", True):
                scale = op_call("multiply", scale, gamma)
            shift = op_call("negative", op_call("multiply", mean, scale))
            if a.get("center", True):
                shift = op_call("add", shift, beta)
            out = op_call("add", op_call("multiply", x, _expand_to(scale, t.ndim, axis)),
                          _expand_to(shift, t.ndim, axis))
            return Tuple((out, mean, var))
        if new.op.name == "nn.dropout":
            return Tuple((new.args[0], op_call("ones_like", new.args[0])))
        return new

    def visit_tuplegetitem(self, e):
        new = super().visit_tuplegetitem(e)
        if isinstance(new.tuple_value, Tuple) and isinstance(e.tuple_value, Call) \
                and isinstance(e.tuple_value.op, Op) and e.tuple_value.op.name in ("nn.batch_norm", "nn.dropout"):
            return new.tuple_value.fields[new.index]
        return new


def _scalar(v, dtype):
    import numpy as np
    return np.asarray(v, dtype=dtype)


def simplify_inference(mod: IRModule) -> IRModule:
    """Rewrite ``nn.batch_norm`` into ``x * scale + shift`` with
    ``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale`` (broadcast along the
    channel axis), and ``nn.dropout`` into the identity.

    Guarantees: no batch_norm or dropout call is left; inference results are unchanged.
    """
    typed = infer_type(mod)
    return map_functions(typed, lambda f: _Simplify().visit(f))
