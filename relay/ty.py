"""Relay types: tensors, tuples, functions, references, type variables and algebraic data types."""
from __future__ import annotations

from dataclasses import dataclass, field
import itertools
import re

import numpy as np

__all__ = [
    "Type", "Any", "ANY", "TensorType", "TupleType", "FuncType", "RefType", "TypeVar",
    "IncompleteType", "GlobalTypeVar", "TypeCall", "scalar_type", "UNIT", "DTYPES", "check_dtype",
    "free_type_vars", "substitute", "canonical_dtype", "is_dtype_name",
]

DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)


# TVM's dtype spellings beyond DTYPES: other bit widths and vector lanes (``int8x4``,
# ``uint1x4``, ``float16x4``).  They type-check; only DTYPES have kernels.
_DTYPE_RE = re.compile(r"^(int|uint|float|bfloat)(1|4|8|16|32|64)?(?:x([1-9][0-9]*))?$")


def is_dtype_name(name: str) -> bool:
    """Whether a type name is spelled as a dtype (as TVM's parser decides: it starts with int,
    uint, float or bool)."""
    return name.startswith(("int", "uint", "float", "bool"))


def canonical_dtype(name: str) -> str:
    """TVM's canonical spelling of a dtype name (``int`` -> ``int32``, ``int8x1`` -> ``int8``);
    ``ValueError`` if it is not one."""
    if name == "bool":
        return name
    m = _DTYPE_RE.match(name)
    if not m or m.group(1) == "float" and m.group(2) in ("1", "4", "8") or m.group(1) == "bfloat" and m.group(2) != "16":
        raise ValueError(f"unknown dtype {name!r}; expected e.g. {', '.join(DTYPES)} or a vector such as int8x4")
    kind, bits, lanes = m.group(1), m.group(2) or "32", m.group(3)
    return f"{kind}{bits}" + (f"x{lanes}" if lanes and lanes != "1" else "")


def check_dtype(dtype: str) -> str:
    """Return ``dtype`` if it names a tensor element type (canonically spelt), else raise
    ``ValueError``."""
    if dtype not in DTYPES and canonical_dtype(dtype) != dtype:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


class Type:
    """Base class of every type.  Types are immutable and compare structurally."""

    __slots__ = ()

    def __str__(self):
        from .printer import type_to_text
        return type_to_text(self)


@dataclass(frozen=True)
class Any:
    """An unknown (dynamic) tensor dimension, written ``?``."""

    def __repr__(self):
        return "?"


ANY = Any()

@dataclass(frozen=True, eq=True, repr=False)
class TensorType(Type):
    """A tensor of ``dtype`` elements; each dimension is an ``int`` or ``ANY`` (unknown)."""

    shape: tuple
    dtype: str = "float32"

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(
            int(d) if isinstance(d, (int, np.integer)) else d for d in self.shape))
        check_dtype(self.dtype)
        for d in self.shape:
            if not isinstance(d, (int, Any)):
                raise TypeError(f"tensor dimension must be an int or ANY, not {d!r}")

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def concrete(self):
        """True when every dimension is a known integer."""
        return all(isinstance(d, int) for d in self.shape)

    def __repr__(self):
        return f"TensorType({self.shape!r}, {self.dtype!r})"


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


@dataclass(frozen=True, repr=False)
class TupleType(Type):
    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __repr__(self):
        return f"TupleType({self.fields!r})"


UNIT = TupleType(())


@dataclass(frozen=True, eq=False, repr=False)
class TypeVar(Type):
    """A type parameter of a polymorphic function or ADT; compared by identity."""

    name: str
    kind: str = "Type"

    def __repr__(self):
        return f"TypeVar({self.name})"


@dataclass(frozen=True, repr=False)
class FuncType(Type):
    """``fn[type_params](arg_types) -> ret_type``."""

    arg_types: tuple
    ret_type: Type
    type_params: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "arg_types", tuple(self.arg_types))
        object.__setattr__(self, "type_params", tuple(self.type_params))

    def __repr__(self):
        return f"FuncType({self.arg_types!r}, {self.ret_type!r}, {self.type_params!r})"


@dataclass(frozen=True, repr=False)
class RefType(Type):
    value: Type

    def __repr__(self):
        return f"RefType({self.value!r})"


_hole_ids = itertools.count()


@dataclass(frozen=True, eq=False, repr=False)
class IncompleteType(Type):
    """A type hole created by inference; never appears in a checked program."""

    id: int = field(default_factory=lambda: next(_hole_ids))

    def __repr__(self):
        return f"?t{self.id}"


@dataclass(frozen=True, eq=False, repr=False)
class GlobalTypeVar(Type):
    """The name of an algebraic data type (``List``), resolved through the module."""

    name: str

    def __repr__(self):
        return f"GlobalTypeVar({self.name})"


@dataclass(frozen=True, repr=False)
class TypeCall(Type):
    """An ADT applied to type arguments: ``List[Tensor[(3), float32]]``."""

    func: GlobalTypeVar
    args: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))

    def __repr__(self):
        return f"TypeCall({self.func.name}, {self.args!r})"


def free_type_vars(t: Type) -> list:
    """Type variables occurring in ``t`` (in first-occurrence order, not under their binder)."""
    out = []

    def go(t, bound):
        if isinstance(t, TypeVar):
            if t not in bound and t not in out:
                out.append(t)
        elif isinstance(t, TupleType):
            for f in t.fields:
                go(f, bound)
        elif isinstance(t, FuncType):
            b = bound | set(t.type_params)
            for a in t.arg_types:
                go(a, b)
            go(t.ret_type, b)
        elif isinstance(t, RefType):
            go(t.value, bound)
        elif isinstance(t, TypeCall):
            for a in t.args:
                go(a, bound)
    go(t, frozenset())
    return out


def substitute(t: Type, mapping: dict) -> Type:
    """Replace type variables (and holes) by the types ``mapping`` gives them."""
    if not mapping:
        return t
    if isinstance(t, (TypeVar, IncompleteType)):
        return mapping.get(t, t)
    if isinstance(t, TupleType):
        return TupleType(tuple(substitute(f, mapping) for f in t.fields))
    if isinstance(t, FuncType):
        inner = {k: v for k, v in mapping.items() if k not in t.type_params}
        return FuncType(tuple(substitute(a, inner) for a in t.arg_types),
                        substitute(t.ret_type, inner), t.type_params)
    if isinstance(t, RefType):
        return RefType(substitute(t.value, mapping))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(substitute(a, mapping) for a in t.args))
    return t
