"""The operator registry: each operator has a name, an attribute schema, a type relation,
an op pattern (used by fusion) and a numpy compute function."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Callable, Optional

from ..ir import Attrs

__all__ = ["OpPattern", "OpDef", "REQUIRED", "RelationError", "NotReady", "register_op", "get_op",
           "list_ops", "relation", "get_relation", "backward", "get_backward", "register_op_attr", "get_op_attr"]


class OpPattern(IntEnum):
    """How an operator may be fused (the order matters: lower fuses more freely)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()


class RelationError(Exception):
    """A type relation does not hold; the message says why."""


class NotReady(Exception):
    """A type relation needs more information about its inputs before it can decide."""


_RELATIONS: dict = {}


def relation(name):
    """Register a type relation ``fn(arg_types, attrs) -> out_type`` under ``name``.

    The function sees its argument types with every solved hole substituted.  It raises
    ``NotReady`` when an argument type is still unknown and ``RelationError`` when the relation
    cannot hold.
    """
    def deco(fn):
        if name in _RELATIONS:
            raise ValueError(f"relation {name} is already registered")
        fn.relation_name = name
        _RELATIONS[name] = fn
        return fn
    return deco


def get_relation(name):
    return _RELATIONS[name]


_BACKWARD: dict = {}


def backward(name):
    """Register the backward half of relation ``name``: ``fn(arg_types, out_type, attrs)`` returns
    ``{index: type}`` for arguments whose types follow from what is known (e.g. a conv2d weight
    from ``channels`` and ``kernel_size``, an identity's input from its output), as TVM's
    relations assign their inputs.  It runs while the forward relation is not ready, and may
    raise ``NotReady`` or ``RelationError`` too."""
    def deco(fn):
        if name not in _RELATIONS:
            raise ValueError(f"backward rule for unknown relation {name}")
        _BACKWARD[name] = fn
        return fn
    return deco


def get_backward(name):
    return _BACKWARD.get(name)


@dataclass(frozen=True)
class OpDef:
    """Everything the compiler knows about one primitive operator.

    ``num_inputs`` is the number of arguments (``None``: variable).  ``attrs`` maps each attribute
    name to its default (``REQUIRED`` if it must be given).  ``relation`` names a registered type
    relation.  ``compute(args, attrs)`` takes numpy arrays and normalised ``Attrs`` and returns an
    array (or a tuple of arrays when the relation returns a tuple type).
    """

    name: str
    num_inputs: Optional[int]
    relation: str
    pattern: OpPattern
    compute: Callable
    attrs: dict = field(default_factory=dict)
    min_inputs: Optional[int] = None
    description: str = ""

    def __post_init__(self):
        if self.relation not in _RELATIONS:
            raise ValueError(f"op {self.name}: unknown type relation {self.relation!r}")

    def normalize_attrs(self, attrs) -> Attrs:
        """Fill in defaults; raise ``ValueError`` for unknown or missing attributes."""
        attrs = attrs or {}
        for k in attrs:
            if k not in self.attrs:
                known = ", ".join(self.attrs) or "none"
                raise ValueError(f"{self.name} has no attribute {k!r} (known: {known})")
        out = {}
        for k, default in self.attrs.items():
            if k in attrs:
                _check_attr_kind(self.name, k, attrs[k], default)
                out[k] = attrs[k]
            elif default is REQUIRED:
                raise ValueError(f"{self.name} requires attribute {k!r}")
            else:
                out[k] = default
        return Attrs(out)

    def check_arity(self, n):
        lo = self.num_inputs if self.min_inputs is None else self.min_inputs
        hi = self.num_inputs
        if n < lo or (hi is not None and n > hi):
            want = str(hi) if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"{self.name} takes {want} argument(s), got {n}")


def _check_attr_kind(op, key, value, default):
    """An attribute has the kind of its default: a number, a string, or a list (a number
    where a list is expected is accepted, as for ``strides=2``); None is always allowed."""
    if value is None or default is None or default is REQUIRED:
        return
    if isinstance(default, numbers.Number):
        ok = isinstance(value, numbers.Number)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    elif isinstance(default, (tuple, list)):
        ok = isinstance(value, (numbers.Number, tuple, list)) and all(
            isinstance(v, numbers.Number) for v in (value if isinstance(value, (tuple, list)) else [value]))
    else:
        ok = True
    if not ok:
        raise ValueError(f"{op} attribute {key}={value!r} must be "
                         f"{'a number' if isinstance(default, numbers.Number) else 'a string' if isinstance(default, str) else 'a list of numbers'}")


_OPS: dict = {}
_OP_ATTRS: dict = {}


def register_op(name, *, num_inputs, relation, pattern, attrs=None, min_inputs=None, description=""):
    """Decorator registering ``compute`` as the numpy implementation of a new operator."""
    def deco(compute):
        if name in _OPS:
            raise ValueError(f"operator {name} is already registered")
        _OPS[name] = OpDef(name, num_inputs, relation, OpPattern(pattern), compute, dict(attrs or {}),
                           min_inputs, description or (compute.__doc__ or "").strip())
        return compute
    return deco


def get_op(name) -> OpDef:
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}") from None


def list_ops():
    return sorted(_OPS)


def register_op_attr(name, key, value):
    """Attach an extra attribute (e.g. a gradient or quantisation rule) to an operator."""
    get_op(name)
    _OP_ATTRS.setdefault(key, {})
    if name in _OP_ATTRS[key]:
        raise ValueError(f"{key} of {name} is already registered")
    _OP_ATTRS[key][name] = value


def get_op_attr(name, key, default=None):
    return _OP_ATTRS.get(key, {}).get(name, default)
