"""Relay expressions, patterns, ADT definitions and the module of global functions.

Every node is immutable.  Expression nodes compare by identity (two ``Var`` nodes with the
same name are different variables); ``GlobalVar`` compares by name.  ``checked_type`` is filled
in only by constructing a node with it, which is what ``transform.InferType`` does.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Optional

import numpy as np

from . import ty as _ty
from .ty import Type, GlobalTypeVar

__all__ = [
    "Span", "Attrs", "Expr", "Var", "GlobalVar", "Constant", "Op", "Call", "Function", "Let", "If",
    "Tuple", "TupleGetItem", "RefCreate", "RefRead", "RefWrite", "Constructor", "Match", "Clause",
    "Pattern", "PatternWildcard", "PatternVar", "PatternConstructor", "PatternTuple", "TypeData",
    "IRModule", "const", "op_call", "with_fields",
]


@dataclass(frozen=True)
class Span:
    """Where a node came from in a source text (1-based line and column)."""

    line: int
    column: int
    source: str = "<string>"

    def __str__(self):
        return f"{self.source}:{self.line}:{self.column}"


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


class Attrs(Mapping):
    """Immutable, hashable operator attributes (lists are stored as tuples)."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items=None, **kw):
        d = dict(items or {})
        d.update(kw)
        object.__setattr__(self, "_items", MappingProxyType({k: _freeze(v) for k, v in d.items()}))
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, k, v):
        raise AttributeError("Attrs is immutable")

    def __getitem__(self, k):
        return self._items[k]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __getattr__(self, k):
        try:
            return self._items[k]
        except KeyError:
            raise AttributeError(k) from None

    def __hash__(self):
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(sorted(self._items.items(), key=lambda kv: kv[0]))))
        return self._hash

    def __eq__(self, other):
        return isinstance(other, Attrs) and dict(self._items) == dict(other._items)

    def updated(self, **kw):
        d = dict(self._items)
        d.update(kw)
        return Attrs(d)

    def __repr__(self):
        return f"Attrs({dict(self._items)!r})"


class Expr:
    """Base class of expressions."""

    __slots__ = ()

    def __str__(self):
        from .printer import expr_to_text
        return expr_to_text(self)

    # Small conveniences for building programs in Python.
    def __add__(self, o):
        return op_call("add", self, o)

    def __sub__(self, o):
        return op_call("subtract", self, o)

    def __mul__(self, o):
        return op_call("multiply", self, o)

    def __truediv__(self, o):
        return op_call("divide", self, o)

    def __getitem__(self, i):
        return TupleGetItem(self, i)


def _node(cls):
    return dataclass(frozen=True, eq=False, repr=False)(cls)


def _meta():
    return field(default=None, compare=False, kw_only=True)


@_node
class Var(Expr):
    """A local variable ``%name``; identity, not the name, distinguishes variables."""

    name_hint: str
    type_annotation: Optional[Type] = None
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()

    def __repr__(self):
        return f"Var(%{self.name_hint})"


@dataclass(frozen=True, repr=False)
class GlobalVar(Expr):
    """A global function ``@name`` of the module."""

    name_hint: str
    checked_type: Optional[Type] = field(default=None, compare=False, kw_only=True)
    span: Optional[Span] = field(default=None, compare=False, kw_only=True)

    def __repr__(self):
        return f"GlobalVar(@{self.name_hint})"

    def __hash__(self):
        return hash(self.name_hint)


@_node
class Constant(Expr):
    """A constant tensor (a numpy array; scalars are rank-0 tensors)."""

    data: np.ndarray
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()

    def __post_init__(self):
        a = self.data
        if not (isinstance(a, np.ndarray) and not a.flags.writeable):
            a = np.array(a)
            a.setflags(write=False)
            object.__setattr__(self, "data", a)

    @property
    def tensor_type(self):
        return _ty.TensorType(self.data.shape, str(self.data.dtype))

    def __repr__(self):
        return f"Constant({self.data.dtype}{list(self.data.shape)})"


@dataclass(frozen=True, repr=False)
class Op(Expr):
    """A primitive operator, named in the registry (``relay.op.registry``)."""

    name: str
    checked_type: Optional[Type] = field(default=None, compare=False, kw_only=True)
    span: Optional[Span] = field(default=None, compare=False, kw_only=True)

    def __hash__(self):
        return hash(("Op", self.name))

    def __repr__(self):
        return f"Op({self.name})"


@_node
class Call(Expr):
    """Call of an operator, a function value, a global function or a constructor."""

    op: Expr
    args: tuple
    attrs: Attrs = field(default_factory=Attrs)
    type_args: tuple = ()
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        if not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(self.attrs))
        object.__setattr__(self, "type_args", tuple(self.type_args))

    def __repr__(self):
        return f"Call({self.op!r}, {list(self.args)!r})"


@_node
class Function(Expr):
    """``fn[type_params](params) -> ret_type { body }``; evaluates to a closure."""

    params: tuple
    body: Expr
    ret_type: Optional[Type] = None
    type_params: tuple = ()
    attrs: Attrs = field(default_factory=Attrs)
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "type_params", tuple(self.type_params))
        if not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(self.attrs))

    @property
    def is_primitive(self):
        return bool(self.attrs.get("Primitive", 0))

    def __repr__(self):
        return f"Function({list(self.params)!r})"


@_node
class Let(Expr):
    """``let %var = value; body`` (a let-bound function may refer to itself)."""

    var: Var
    value: Expr
    body: Expr
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()


@_node
class If(Expr):
    """``if (cond) { true_branch } else { false_branch }``; ``cond`` is a rank-0 bool tensor."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()


@_node
class Tuple(Expr):
    fields: tuple
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


@_node
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()


@_node
class RefCreate(Expr):
    value: Expr
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()


@_node
class RefRead(Expr):
    ref: Expr
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()


@_node
class RefWrite(Expr):
    """Store ``value`` in ``ref``; evaluates to the empty tuple."""

    ref: Expr
    value: Expr
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()


@dataclass(frozen=True, repr=False)
class Constructor(Expr):
    """A constructor of an ADT; ``inputs`` are its field types over the ADT's type variables."""

    name: str
    inputs: tuple
    belongs_to: GlobalTypeVar
    tag: int = 0
    checked_type: Optional[Type] = field(default=None, compare=False, kw_only=True)
    span: Optional[Span] = field(default=None, compare=False, kw_only=True)

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))

    def __hash__(self):
        return hash((self.belongs_to.name, self.name))

    def __repr__(self):
        return f"Constructor({self.name})"


class Pattern:
    __slots__ = ()


@dataclass(frozen=True, eq=False)
class PatternWildcard(Pattern):
    pass


@dataclass(frozen=True, eq=False)
class PatternVar(Pattern):
    var: Var


@dataclass(frozen=True, eq=False)
class PatternConstructor(Pattern):
    constructor: Constructor
    patterns: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "patterns", tuple(self.patterns))


@dataclass(frozen=True, eq=False)
class PatternTuple(Pattern):
    patterns: tuple

    def __post_init__(self):
        object.__setattr__(self, "patterns", tuple(self.patterns))


@dataclass(frozen=True, eq=False)
class Clause:
    lhs: Pattern
    rhs: Expr


@_node
class Match(Expr):
    """Evaluate the first clause whose pattern matches ``data`` (``complete=False`` is ``match?``)."""

    data: Expr
    clauses: tuple
    complete: bool = True
    checked_type: Optional[Type] = _meta()
    span: Optional[Span] = _meta()

    def __post_init__(self):
        object.__setattr__(self, "clauses", tuple(self.clauses))


@dataclass(frozen=True, eq=False)
class TypeData:
    """An ADT definition: ``type header[type_vars] { constructors }``."""

    header: GlobalTypeVar
    type_vars: tuple
    constructors: tuple

    def __post_init__(self):
        object.__setattr__(self, "type_vars", tuple(self.type_vars))
        object.__setattr__(self, "constructors", tuple(self.constructors))

    def constructor(self, name):
        for c in self.constructors:
            if c.name == name:
                return c
        raise KeyError(name)


class IRModule:
    """An immutable set of mutually recursive global functions and ADT definitions.

    ``functions`` maps global names to ``Function`` nodes; ``type_definitions`` maps ADT names
    to ``TypeData``.  Updates return a new module.
    """

    __slots__ = ("_functions", "_types")

    def __init__(self, functions=None, type_definitions=None):
        fns = {}
        for k, v in (functions or {}).items():
            name = k.name_hint if isinstance(k, GlobalVar) else k
            if not isinstance(v, Function):
                raise TypeError(f"global @{name} must be a Function, not {type(v).__name__}")
            fns[name] = v
        tys = {}
        for k, v in (type_definitions or {}).items():
            name = k.name if isinstance(k, GlobalTypeVar) else k
            if not isinstance(v, TypeData):
                raise TypeError(f"type {name} must be a TypeData, not {type(v).__name__}")
            tys[name] = v
        object.__setattr__(self, "_functions", MappingProxyType(fns))
        object.__setattr__(self, "_types", MappingProxyType(tys))

    def __setattr__(self, k, v):
        raise AttributeError("IRModule is immutable; use with_function / with_type")

    @classmethod
    def from_expr(cls, expr, functions=None, type_definitions=None):
        """A module whose ``@main`` is ``expr`` (wrapped in a function of its free variables)."""
        if not isinstance(expr, Function):
            from .analysis import free_vars
            expr = Function(free_vars(expr), expr)
        fns = dict(functions or {})
        fns["main"] = expr
        return cls(fns, type_definitions)

    @property
    def functions(self):
        return self._functions

    @property
    def type_definitions(self):
        return self._types

    def __getitem__(self, name):
        if isinstance(name, GlobalVar):
            name = name.name_hint
        if isinstance(name, GlobalTypeVar):
            return self._types[name.name]
        if name in self._functions:
            return self._functions[name]
        if name in self._types:
            return self._types[name]
        raise KeyError(f"no global @{name} in module")

    def __contains__(self, name):
        if isinstance(name, GlobalVar):
            name = name.name_hint
        return name in self._functions or name in self._types

    def get_global_var(self, name):
        if name not in self._functions:
            raise KeyError(f"no global @{name} in module")
        return GlobalVar(name)

    def with_function(self, name, fn):
        if isinstance(name, GlobalVar):
            name = name.name_hint
        fns = dict(self._functions)
        fns[name] = fn
        return IRModule(fns, self._types)

    def with_functions(self, functions):
        fns = dict(self._functions)
        for k, v in functions.items():
            fns[k.name_hint if isinstance(k, GlobalVar) else k] = v
        return IRModule(fns, self._types)

    def without_function(self, name):
        fns = dict(self._functions)
        del fns[name]
        return IRModule(fns, self._types)

    def with_type(self, data: TypeData):
        tys = dict(self._types)
        tys[data.header.name] = data
        return IRModule(self._functions, tys)

    def update(self, other: "IRModule"):
        fns = dict(self._functions)
        fns.update(other.functions)
        tys = dict(self._types)
        tys.update(other.type_definitions)
        return IRModule(fns, tys)

    def constructor(self, name):
        for td in self._types.values():
            for c in td.constructors:
                if c.name == name:
                    return c
        raise KeyError(f"no constructor {name} in module")

    def astext(self, show_meta_data=True):
        from .printer import module_to_text
        return module_to_text(self, show_meta_data=show_meta_data)

    def __str__(self):
        return self.astext()

    def __repr__(self):
        return f"IRModule(functions={list(self._functions)}, types={list(self._types)})"


def with_fields(node, **changes):
    """A copy of ``node`` with some fields replaced (``checked_type`` is dropped unless given)."""
    changes.setdefault("checked_type", None)
    return replace(node, **changes)


def const(value, dtype=None) -> Constant:
    """A constant tensor; Python floats default to float32 and ints to int32."""
    if isinstance(value, np.ndarray):
        a = value if dtype is None else value.astype(dtype)
    else:
        if dtype is None:
            if isinstance(value, bool):
                dtype = "bool"
            elif isinstance(value, int):
                dtype = "int32"
            elif isinstance(value, float):
                dtype = "float32"
            else:
                arr = np.asarray(value)
                dtype = {"float64": "float32", "int64": "int32"}.get(str(arr.dtype), str(arr.dtype))
        a = np.asarray(value, dtype=dtype)
    return Constant(a)


def op_call(name, *args, **attrs) -> Call:
    """``Call(Op(name), args, attrs)``, checking that ``name`` is registered."""
    from .op.registry import get_op
    get_op(name)
    return Call(Op(name), args, Attrs(attrs))
