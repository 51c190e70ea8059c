"""Print modules, expressions and types in the Relay text format (``#[version = "0.0.5"]``).

Operator calls and other compound expressions are printed in graph form: every one is bound to
a numbered temporary (``%0 = nn.relu(%x);``) in the innermost scope that needs it, and the
scope's result is printed inline.  Tensor constants that are not scalars go to a metadata
section and are referenced as ``meta[relay.Constant][i]``.
"""
from __future__ import annotations

import base64
import json
import re

import numpy as np

from .depth import deep
from .ir import (Call, Constant, Constructor, Function, GlobalVar, If, IRModule, Let, Match, Op,
                 PatternConstructor, PatternTuple, PatternVar, PatternWildcard, RefCreate, RefRead,
                 RefWrite, Tuple, TupleGetItem, TypeData, Var)
from .ty import FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType, TypeCall, TypeVar

__all__ = ["module_to_text", "expr_to_text", "type_to_text", "scalar_text", "attr_text", "VERSION"]

VERSION = "0.0.5"

_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16", "int32": "", "int64": "i64", "int8": "i8",
           "int16": "i16", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def scalar_text(a):
    """A rank-0 constant as a literal: ``1f``, ``-0.5f``, ``3``, ``7i8``, ``True``."""
    a = np.asarray(a)
    dt = str(a.dtype)
    if dt == "bool":
        return "True" if bool(a) else "False"
    if dt.startswith("float"):
        s = str(a.astype(dt)[()])
        if s.endswith(".0"):
            s = s[:-2]
        return s + _SUFFIX[dt]
    return str(int(a)) + _SUFFIX[dt]


def _scalar_printable(a):
    if a.ndim != 0 or str(a.dtype) not in _SUFFIX and str(a.dtype) != "bool":
        return False
    return not (a.dtype.kind == "f" and not np.isfinite(a))


def _dim(d):
    return str(d) if isinstance(d, int) else "?"


def type_to_text(t, names=None):
    """A type in text syntax: ``Tensor[(1, 3), float32]``, ``(float32, int32)``, ``fn (A) -> A``."""
    names = names or {}
    if isinstance(t, TensorType):
        if not t.shape:
            return t.dtype
        return f"Tensor[({', '.join(_dim(d) for d in t.shape)}), {t.dtype}]"
    if isinstance(t, TupleType):
        inner = ", ".join(type_to_text(f, names) for f in t.fields)
        return f"({inner},)" if len(t.fields) == 1 else f"({inner})"
    if isinstance(t, FuncType):
        tp = f"[{', '.join(p.name for p in t.type_params)}]" if t.type_params else ""
        args = ", ".join(type_to_text(a, names) for a in t.arg_types)
        return f"fn {tp}({args}) -> {type_to_text(t.ret_type, names)}"
    if isinstance(t, RefType):
        return f"ref({type_to_text(t.value, names)})"
    if isinstance(t, TypeVar):
        return t.name
    if isinstance(t, TypeCall):
        # TVM prints an ADT applied to no arguments as ``nat[]``
        return f"{t.func.name}[{', '.join(type_to_text(a, names) for a in t.args)}]"
    if isinstance(t, GlobalTypeVar):
        return t.name
    if isinstance(t, IncompleteType):
        return "_"
    raise TypeError(f"not a type: {t!r}")


def attr_text(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        s = repr(v)
        return (s[:-2] if s.endswith(".0") else s) + "f"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(attr_text(x) for x in v) + "]"
    raise TypeError(f"cannot print attribute value {v!r}")


_NAME_RE = re.compile(r"^[A-Za-z_/][A-Za-z0-9_/]*$")


def _use_counts(root):
    """How many parents refer to each compound node under ``root`` (iteratively: programs may be
    deep)."""
    uses, seen, stack = {}, set(), [root]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Call):
            kids = (e.op, *e.args)
        elif isinstance(e, Tuple):
            kids = e.fields
        elif isinstance(e, TupleGetItem):
            kids = (e.tuple_value,)
        elif isinstance(e, Let):
            kids = (e.value, e.body)
        elif isinstance(e, If):
            kids = (e.cond, e.true_branch, e.false_branch)
        elif isinstance(e, Function):
            kids = (e.body,)
        elif isinstance(e, Match):
            kids = (e.data, *(c.rhs for c in e.clauses))
        elif isinstance(e, RefCreate):
            kids = (e.value,)
        elif isinstance(e, RefRead):
            kids = (e.ref,)
        elif isinstance(e, RefWrite):
            kids = (e.ref, e.value)
        else:
            kids = ()
        for k in kids:
            uses[id(k)] = uses.get(id(k), 0) + 1
            stack.append(k)
    return uses


def _indent_by_braces(text):
    """Indent every line by the number of ``{`` open before it (two spaces each).  The printer
    writes blocks unindented and indents once at the end, so deep nesting costs time linear in
    the output, not in its square."""
    out, depth = [], 0
    for line in text.split("\n"):
        closers = len(line) - len(line.lstrip("}"))
        out.append("  " * max(depth - closers, 0) + line if line else line)
        if '"' not in line:
            depth += line.count("{") - line.count("}")
            continue
        in_string = escaped = False
        for ch in line:
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
    return "\n".join(out)


class _Printer:
    def __init__(self, show_meta_data=True, meta=None):
        self.show_meta_data = show_meta_data
        self.uses = {}
        self.meta = meta if meta is not None else []
        self.meta_ids = {}
        self.reset_names()

    def reset_names(self):
        self.var_names = {}
        self.taken = set()
        self.temp = 0
        self.scopes = []
        self.bound = set()
        self.frames = [[]]

    # -- names
    def fresh_name(self, v):
        base = re.sub(r"[^\w/]", "_", v.name_hint or "")   # TVM's identifiers may contain /
        if not _NAME_RE.match(base):
            base = "v" + base   # numeric names would read as graph temporaries
        name, i = base, 1
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name

    def var(self, v):
        if v not in self.var_names:
            self.var_names[v] = self.fresh_name(v)
        return "%" + self.var_names[v]

    def push_frame(self):
        self.frames.append([])

    def pop_frame(self):
        for v, old in reversed(self.frames.pop()):
            self.var_names[v] = old

    def var_decl(self, v):
        if v in self.bound:
            # A shared binder printed a second time (its node is used in two scopes): give this
            # binding its own name so that the text binds every name once.
            self.frames[-1].append((v, self.var_names[v]))
            self.var_names[v] = self.fresh_name(v)
        self.bound.add(v)
        s = self.var(v)
        if v.type_annotation is not None:
            s += ": " + type_to_text(v.type_annotation)
        return s

    # -- scopes
    def is_atom(self, e):
        return (isinstance(e, (Var, GlobalVar, Op, Constructor, Constant))
                or (isinstance(e, Call) and isinstance(e.op, Constructor) and not e.args))

    def atom(self, e):
        """A name (or literal) for ``e``, binding it to a temporary if it is compound."""
        if self.is_atom(e):
            return self.inline(e)
        for lines, memo in reversed(self.scopes):
            if id(e) in memo:
                return memo[id(e)][1]
        text = self.inline(e)
        name = f"%{self.temp}"
        self.temp += 1
        lines, memo = self.scopes[-1]
        lines.append(f"{name} = {text};")
        memo[id(e)] = (e, name)
        return name

    def value(self, e):
        for lines, memo in reversed(self.scopes):
            if id(e) in memo:
                return memo[id(e)][1]
        if self.uses.get(id(e), 0) > 1 and not isinstance(e, (Function, Let, If, Match)):
            return self.atom(e)   # a shared node is bound once, then named (as TVM prints it)
        return self.inline(e)

    def block(self, e):
        """``e`` as the lines of a new scope (graph bindings, lets, then the result)."""
        self.push_frame()
        try:
            return self._block(e)
        finally:
            self.pop_frame()

    def _block(self, e):
        self.scopes.append(([], {}))
        lines = self.scopes[-1][0]
        while isinstance(e, Let) and not any(id(e) in m for _, m in self.scopes):
            value = self.value(e.value)
            lines.append(f"let {self.var_decl(e.var)} = {value};")
            e = e.body
        result = self.value(e)
        self.scopes.pop()
        return "\n".join(lines + [result])

    def braces(self, e):
        return "{\n" + self.block(e) + "\n}"

    # -- expressions
    def inline(self, e):
        if isinstance(e, Var):
            return self.var(e)
        if isinstance(e, GlobalVar):
            return "@" + e.name_hint
        if isinstance(e, Op):
            return e.name
        if isinstance(e, Constructor):
            return e.name
        if isinstance(e, Constant):
            if _scalar_printable(e.data):
                return scalar_text(e.data)
            if id(e) not in self.meta_ids:
                self.meta_ids[id(e)] = (e, len(self.meta))
                self.meta.append(e.data)
            return f"meta[relay.Constant][{self.meta_ids[id(e)][1]}]"
        if isinstance(e, Call):
            if isinstance(e.op, Constructor) and not e.args:
                return e.op.name
            args = [self.atom(a) for a in e.args]
            args += [f"{k}={attr_text(v)}" for k, v in e.attrs.items()]
            return f"{self.atom(e.op)}({', '.join(args)})"
        if isinstance(e, Tuple):
            fields = [self.atom(f) for f in e.fields]
            return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
        if isinstance(e, TupleGetItem):
            return f"{self.atom(e.tuple_value)}.{e.index}"
        if isinstance(e, Function):
            return self.function(e, "fn ")
        if isinstance(e, Let):
            return self.braces(e)
        if isinstance(e, If):
            c = self.atom(e.cond)
            return f"if ({c}) {self.braces(e.true_branch)} else {self.braces(e.false_branch)}"
        if isinstance(e, Match):
            d = self.atom(e.data)
            clauses = []
            for c in e.clauses:
                self.push_frame()
                clauses.append(f"{self.pattern(c.lhs)} => {self.braces(c.rhs)},")
                self.pop_frame()
            kw = "match" if e.complete else "match?"
            return f"{kw} ({d}) {{\n" + "\n".join(clauses) + "\n}"
        if isinstance(e, RefCreate):
            return f"ref({self.atom(e.value)})"
        if isinstance(e, RefRead):
            return f"ref_read({self.atom(e.ref)})"
        if isinstance(e, RefWrite):
            return f"ref_write({self.atom(e.ref)}, {self.atom(e.value)})"
        raise TypeError(f"cannot print {type(e).__name__}")

    def pattern(self, p):
        if isinstance(p, PatternWildcard):
            return "_"
        if isinstance(p, PatternVar):
            return self.var_decl(p.var)
        if isinstance(p, PatternConstructor):
            if not p.patterns:
                return p.constructor.name
            return f"{p.constructor.name}({', '.join(self.pattern(q) for q in p.patterns)})"
        if isinstance(p, PatternTuple):
            ps = [self.pattern(q) for q in p.patterns]
            return f"({ps[0]},)" if len(ps) == 1 else f"({', '.join(ps)})"
        raise TypeError(f"not a pattern: {p!r}")

    def function(self, f, head):
        self.push_frame()
        tp = f"[{', '.join(p.name for p in f.type_params)}]" if f.type_params else ""
        params = [self.var_decl(p) for p in f.params]
        params += [f"{k}={attr_text(v)}" for k, v in f.attrs.items()]
        ret = f" -> {type_to_text(f.ret_type)}" if f.ret_type is not None else ""
        text = f"{head}{tp}({', '.join(params)}){ret} {self.braces(f.body)}"
        self.pop_frame()
        return text

    # -- module
    def typedef(self, td: TypeData):
        tv = f"[{', '.join(v.name for v in td.type_vars)}]" if td.type_vars else ""
        lines = [f"type {td.header.name}{tv} {{"]
        for c in td.constructors:
            if c.inputs:
                lines.append(f"{c.name}({', '.join(type_to_text(t) for t in c.inputs)}),")
            else:
                lines.append(f"{c.name},")
        lines.append("}")
        return "\n".join(lines)

    def metadata(self):
        if not self.meta or not self.show_meta_data:
            return ""
        items = [{"dtype": str(a.dtype), "shape": list(a.shape),
                  "data": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()} for a in self.meta]
        return "#[metadata]\n" + json.dumps({"relay.Constant": items}, indent=1) + "\n"


@deep(ValueError)
def module_to_text(mod: IRModule, show_meta_data=True, only=None):
    """The whole module as text (``only``: restrict to these global and type names)."""
    p = _Printer(show_meta_data)
    parts = [f'#[version = "{VERSION}"]']
    for name, td in mod.type_definitions.items():
        if only is None or name in only:
            parts.append(p.typedef(td))
    for name, fn in mod.functions.items():
        if only is None or name in only:
            p.reset_names()
            p.uses = _use_counts(fn)
            parts.append(p.function(fn, f"def @{name}"))
    text = _indent_by_braces("\n".join(parts)) + "\n"
    meta = p.metadata()
    return text + meta


@deep(ValueError)
def expr_to_text(e, show_meta_data=False):
    """An expression as text: ``free_var`` declarations of its free variables, then the
    expression (metadata omitted by default)."""
    from .analysis import free_vars
    p = _Printer(show_meta_data)
    p.uses = _use_counts(e)
    # free variables are declared first, as TVM prints them, so the text parses back alone
    decls = [f"free_var {p.var_decl(v)};" for v in free_vars(e)]
    text = _indent_by_braces("\n".join(decls + [p.block(e)]))
    return text + ("\n" + p.metadata() if show_meta_data and p.meta else "")
