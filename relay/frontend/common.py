"""What the frontends share: their errors, and a builder that makes a typed Relay graph while
folding whatever is known at import time.

A value during import is either a ``Const`` (a numpy array known at import time: weights, shapes,
anything computed only from them) or a Relay expression whose type the builder knows.  Calls
whose arguments are all ``Const`` are evaluated at once with the operator's own numpy kernel, so
shape arithmetic and weight transposes never reach the program.  A named ``Const`` used by the
program becomes a parameter of ``@main`` (its array goes to ``params``); an unnamed one (a scalar
the frontend made up) becomes a Relay constant.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..ir import Constant, Function, IRModule, Tuple, TupleGetItem, Var, op_call
from ..op.registry import NotReady, RelationError, get_op, get_relation
from ..ty import TensorType, TupleType

__all__ = ["FrontendError", "UnsupportedOperator", "MissingPackage", "Const", "GraphBuilder", "relay_name"]


class FrontendError(Exception):
    """A model cannot be imported (unreadable, malformed, or an input shape is missing)."""

    exit_code = 2   # the `vta` command's code for an invalid input file


class UnsupportedOperator(FrontendError):
    """The model uses an operator or attribute the frontend does not support."""

    exit_code = 1   # the `vta` command's code for a rejected model


class MissingPackage(FrontendError):
    """An optional package the frontend needs (onnx, torch) is not installed."""

    exit_code = 5   # the `vta` command's code for what is not available on this machine


@dataclass(frozen=True, eq=False)
class Const:
    """A tensor known at import time; ``name`` is its name in the model (``None``: made up)."""

    array: np.ndarray
    name: Optional[str] = None

    def renamed(self, name):
        return Const(self.array, name)


_BAD = re.compile(r"[^A-Za-z0-9_]")


def relay_name(name):
    """A Relay local name for a model's tensor name (``gpu_0/data_0`` -> ``gpu_0_data_0``)."""
    s = _BAD.sub("_", name) or "v"
    return s if s[0].isalpha() or s[0] == "_" else "v" + s


class GraphBuilder:
    """Builds ``@main`` from calls; tracks every expression's type through the op relations."""

    def __init__(self):
        self._types = {}
        self.inputs = []
        self._param_vars = {}     # relay name -> Var
        self.params = {}          # relay name -> array
        self._names = set()

    # -- names
    def _fresh(self, name):
        base = relay_name(name)
        s, i = base, 1
        while s in self._names:
            s, i = f"{base}_{i}", i + 1
        self._names.add(s)
        return s

    def add_input(self, name, shape, dtype):
        v = Var(self._fresh(name), TensorType(tuple(shape), dtype))
        self._types[v] = v.type_annotation
        self.inputs.append(v)
        return v

    # -- values
    def typeof(self, x):
        if x is None:           # an ONNX input left empty where the operator needs one
            raise FrontendError("a required input is missing (its name is empty)")
        if isinstance(x, Const):
            return TensorType(x.array.shape, str(x.array.dtype))
        return self._types[x]

    def expr(self, x):
        """The Relay expression of a value: named constants become parameters of ``@main``."""
        if not isinstance(x, Const):
            return x
        if x.name is None:
            c = Constant(x.array)
            self._types[c] = c.tensor_type
            return c
        key = ("param", x.name)
        if key not in self._param_vars:
            v = Var(self._fresh(x.name), TensorType(x.array.shape, str(x.array.dtype)))
            self._types[v] = v.type_annotation
            self._param_vars[key] = v
            self.params[v.name_hint] = np.ascontiguousarray(x.array)
        return self._param_vars[key]

    def call(self, name, *args, **attrs):
        """``name(*args, **attrs)``: evaluated now if every argument is a ``Const``."""
        opdef = get_op(name)
        flat = [a for t in args for a in (t if isinstance(t, (list, tuple)) else [t])]
        if any(a is None for a in flat):
            raise FrontendError(f"{name}: a required input is missing (its name is empty)")
        if flat and all(isinstance(a, Const) for a in flat):
            vals = [tuple(a.array for a in t) if isinstance(t, (list, tuple)) else t.array for t in args]
            norm = opdef.normalize_attrs(attrs)
            # The relation first: a kernel given arguments its relation rejects (a 2-D "image"
            # for conv2d in a malformed model) fails with numpy's words, or not at all.
            types = [TupleType(tuple(self.typeof(f) for f in t)) if isinstance(t, (list, tuple))
                     else self.typeof(t) for t in args]
            try:
                get_relation(opdef.relation)(types, norm)
            except NotReady:
                pass
            except (RelationError, ValueError) as e:
                raise FrontendError(f"{name}: {e}") from None
            out = opdef.compute(vals, norm)
            named = next((a.name for a in flat if a.name), None)
            return Const(np.asarray(out), f"{named}_{name.split('.')[-1]}" if named else None)
        exprs, types = [], []
        for a in args:
            if isinstance(a, (list, tuple)):
                fields = [self.expr(f) for f in a]
                exprs.append(Tuple(tuple(fields)))
                types.append(TupleType(tuple(self._types[f] for f in fields)))
            else:
                e = self.expr(a)
                exprs.append(e)
                types.append(self._types[e])
        try:
            out_t = get_relation(opdef.relation)(types, opdef.normalize_attrs(attrs))
        except (RelationError, NotReady, ValueError) as e:
            raise FrontendError(f"{name}: {e}") from None
        call = op_call(name, *exprs, **attrs)
        self._types[call] = out_t
        return call

    def item(self, x, i):
        e = TupleGetItem(x, i)
        self._types[e] = self._types[x].fields[i]
        return e

    def const(self, value, dtype):
        """An unnamed constant (a scalar or small tensor the frontend makes up)."""
        return Const(np.asarray(value, dtype=dtype))

    def module(self, outputs):
        """``(IRModule, params)``: ``@main(inputs..., weights...)`` returning ``outputs``."""
        exprs = [self.expr(o) for o in outputs]
        body = exprs[0] if len(exprs) == 1 else Tuple(tuple(exprs))
        params = list(self.inputs) + list(self._param_vars.values())
        return IRModule({"main": Function(params, body)}), dict(self.params)
