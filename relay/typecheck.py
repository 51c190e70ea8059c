"""Type inference: unification plus a solver that runs every operator's type relation.

``check_module`` infers the type of every expression of every global function.  Holes
(``IncompleteType``) are introduced for unannotated variables and call results and are solved by
unification; each operator call adds its relation, which is re-run whenever it could not yet
decide (and whose backward rule, if any, meanwhile assigns argument types from what is known),
until everything is solved, a relation fails (a ``RelayTypeError`` that points at the call and
names the relation), or a fixpoint is reached with an expression whose whole type is unknown
(an error asking for an annotation).

Type parameters are rigid inside their definition; every use of a polymorphic global,
constructor or function value is instantiated with fresh holes, and unifying a polymorphic
function type with a less polymorphic one instantiates the extra parameters, as TVM's unifier
does.  Globals without a full signature are inferred on first use, before their users.
"""
from __future__ import annotations

from dataclasses import dataclass

from .ir import (Call, Constant, Constructor, Expr, Function, GlobalVar, If, IRModule, Let, Match, Op,
                 PatternConstructor, PatternTuple, PatternVar, PatternWildcard, RefCreate, RefRead,
                 RefWrite, Tuple, TupleGetItem, Var)
from .depth import deep
from .op.registry import NotReady, RelationError, get_backward, get_op, get_relation
from .ty import (Any, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType, Type,
                 TypeCall, UNIT, substitute)

__all__ = ["RelayTypeError", "TypeInfo", "check_module", "infer_expr", "short_text"]


class RelayTypeError(Exception):
    """A type error, pointing at the offending sub-expression."""

    exit_code = 1   # the `vta` command's code for a rejected program

    def __init__(self, message, expr=None):
        self.message = message
        self.expr = expr
        where = ""
        if expr is not None:
            span = getattr(expr, "span", None)
            where = (f"{span}: " if span is not None else "") + f"in `{short_text(expr)}`: "
        super().__init__(where + message)


def short_text(e, depth=0):
    """A one-line rendering of ``e`` for error messages (arguments abbreviated)."""
    if isinstance(e, Var):
        return "%" + e.name_hint
    if isinstance(e, GlobalVar):
        return "@" + e.name_hint
    if isinstance(e, Op):
        return e.name
    if isinstance(e, Constructor):
        return e.name
    if isinstance(e, Constant):
        if e.data.ndim == 0:
            from .printer import scalar_text
            return scalar_text(e.data)
        return f"meta[relay.Constant]<{e.data.dtype}{list(e.data.shape)}>"
    if depth > 0:
        if isinstance(e, Call):
            return f"{short_text(e.op, 1)}(...)"
        return { Tuple: "(tuple)", Function: "fn", Let: "let", If: "if", Match: "match"}.get(
            type(e), type(e).__name__)
    if isinstance(e, Call):
        args = [short_text(a, 1) for a in e.args]
        args += [f"{k}={v!r}" for k, v in e.attrs.items()]
        return f"{short_text(e.op, 1)}({', '.join(args)})"
    if isinstance(e, Tuple):
        return "(" + ", ".join(short_text(f, 1) for f in e.fields) + ("," if len(e.fields) == 1 else "") + ")"
    if isinstance(e, TupleGetItem):
        return f"{short_text(e.tuple_value, 1)}.{e.index}"
    if isinstance(e, Function):
        return "fn (" + ", ".join("%" + p.name_hint for p in e.params) + ") { ... }"
    if isinstance(e, Let):
        return f"let %{e.var.name_hint} = {short_text(e.value, 1)}; ..."
    if isinstance(e, If):
        return f"if ({short_text(e.cond, 1)}) {{ ... }} else {{ ... }}"
    if isinstance(e, Match):
        return f"match ({short_text(e.data, 1)}) {{ ... }}"
    if isinstance(e, RefCreate):
        return f"ref({short_text(e.value, 1)})"
    if isinstance(e, RefRead):
        return f"ref_read({short_text(e.ref, 1)})"
    if isinstance(e, RefWrite):
        return f"ref_write({short_text(e.ref, 1)}, {short_text(e.value, 1)})"
    return type(e).__name__


class _Mismatch(Exception):
    pass


def instantiate(ft):
    """``ft`` with its type parameters replaced by fresh holes."""
    if not isinstance(ft, FuncType) or not ft.type_params:
        return ft
    m = {p: IncompleteType() for p in ft.type_params}
    return FuncType(tuple(substitute(a, m) for a in ft.arg_types), substitute(ft.ret_type, m))


class _Solver:
    """Union-find substitution over type holes."""

    def __init__(self):
        self.sub = {}

    def find(self, t):
        path = []
        while isinstance(t, IncompleteType) and t in self.sub:
            path.append(t)
            t = self.sub[t]
        for p in path[:-1]:
            self.sub[p] = t
        if isinstance(t, GlobalTypeVar):
            return TypeCall(t, ())
        return t

    def resolve(self, t):
        t = self.find(t)
        if isinstance(t, TensorType):
            return t
        if isinstance(t, TupleType):
            return TupleType(tuple(self.resolve(f) for f in t.fields))
        if isinstance(t, FuncType):
            return FuncType(tuple(self.resolve(a) for a in t.arg_types), self.resolve(t.ret_type), t.type_params)
        if isinstance(t, RefType):
            return RefType(self.resolve(t.value))
        if isinstance(t, TypeCall):
            return TypeCall(t.func, tuple(self.resolve(a) for a in t.args))
        return t

    def _occurs(self, h, t):
        t = self.find(t)
        if t is h:
            return True
        if isinstance(t, TupleType):
            return any(self._occurs(h, f) for f in t.fields)
        if isinstance(t, FuncType):
            return any(self._occurs(h, a) for a in t.arg_types) or self._occurs(h, t.ret_type)
        if isinstance(t, RefType):
            return self._occurs(h, t.value)
        if isinstance(t, TypeCall):
            return any(self._occurs(h, a) for a in t.args)
        return False

    @staticmethod
    def unify_dim(a, b):
        if a == b or isinstance(a, Any) or isinstance(b, Any):
            return   # an unknown dimension is compatible with every dimension
        raise _Mismatch(f"dimension {a} does not match {b}")

    def unify(self, a, b):
        a, b = self.find(a), self.find(b)
        if a is b:
            return
        if isinstance(a, IncompleteType) or isinstance(b, IncompleteType):
            h, t = (a, b) if isinstance(a, IncompleteType) else (b, a)
            if self._occurs(h, t):
                raise _Mismatch("recursive type (occurs check)")
            self.sub[h] = t
            return
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            if a.dtype != b.dtype:
                raise _Mismatch(f"dtype {a.dtype} does not match {b.dtype}")
            if a.ndim != b.ndim:
                raise _Mismatch(f"rank {a.ndim} does not match rank {b.ndim}")
            for x, y in zip(a.shape, b.shape):
                self.unify_dim(x, y)
            return
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            if len(a.fields) != len(b.fields):
                raise _Mismatch(f"tuple of {len(a.fields)} fields does not match one of {len(b.fields)}")
            for x, y in zip(a.fields, b.fields):
                self.unify(x, y)
            return
        if isinstance(a, FuncType) and isinstance(b, FuncType):
            if len(a.arg_types) != len(b.arg_types):
                raise _Mismatch("function arities differ")
            if len(a.type_params) < len(b.type_params):
                a, b = b, a
            # As TVM's unifier: the first type parameters of the more polymorphic side are
            # renamed to the other side's, the rest instantiated with fresh holes (a polymorphic
            # function where a monomorphic one is expected is instantiated there).
            m = dict(zip(a.type_params, b.type_params))
            m.update({p: IncompleteType() for p in a.type_params[len(b.type_params):]})
            for x, y in zip(a.arg_types, b.arg_types):
                self.unify(substitute(x, m), y)
            self.unify(substitute(a.ret_type, m), b.ret_type)
            return
        if isinstance(a, RefType) and isinstance(b, RefType):
            self.unify(a.value, b.value)
            return
        if isinstance(a, TypeCall) and isinstance(b, TypeCall):
            if a.func.name != b.func.name or len(a.args) != len(b.args):
                raise _Mismatch(f"{a.func.name} does not match {b.func.name}")
            for x, y in zip(a.args, b.args):
                self.unify(x, y)
            return
        if a == b:
            return
        raise _Mismatch("type mismatch")

    def has_holes(self, t):
        t = self.resolve(t)
        found = []

        def go(t):
            if isinstance(t, IncompleteType):
                found.append(t)
            elif isinstance(t, TupleType):
                for f in t.fields:
                    go(f)
            elif isinstance(t, FuncType):
                for x in t.arg_types:
                    go(x)
                go(t.ret_type)
            elif isinstance(t, RefType):
                go(t.value)
            elif isinstance(t, TypeCall):
                for x in t.args:
                    go(x)
        go(t)
        return bool(found)


@dataclass
class _Rel:
    name: str
    fn: object
    args: list
    out: Type
    expr: Expr
    back: object = None
    of_value: bool = False   # the relation of an operator used as a value (dropped if never solved)


@dataclass
class TypeInfo:
    """The result of checking a module: every global's type and every expression's type."""

    global_types: dict
    _types: dict
    _solver: _Solver

    def type_of(self, expr):
        return self._solver.resolve(self._types[id(expr)][1])


class _Checker:
    def __init__(self, mod: IRModule):
        self.mod = mod
        self.s = _Solver()
        self.types = {}          # id(expr) -> (expr, type)
        self.var_types = {}
        self.global_types = {}
        self.pending = []
        self.attrs_cache = {}
        self.in_progress = {}

    # -- helpers
    def unify(self, a, b, expr, what=None):
        try:
            self.s.unify(a, b)
        except _Mismatch as m:
            ra, rb = self.s.resolve(a), self.s.resolve(b)
            msg = f"{what}: " if what else ""
            why = str(m)
            if str(ra) == str(rb):
                why = "type variables of the same name bound by different definitions are different types"
            raise RelayTypeError(f"{msg}expected {rb}, but found {ra} ({why})", expr) from None

    def instantiate(self, ft):
        return instantiate(ft)

    def check_type(self, t, expr):
        """Annotations must name known ADTs with the right number of arguments."""
        if isinstance(t, GlobalTypeVar):
            t = TypeCall(t, ())
        if isinstance(t, TypeCall):
            if t.func.name not in self.mod.type_definitions:
                raise RelayTypeError(f"unknown type {t.func.name}", expr)
            td = self.mod.type_definitions[t.func.name]
            if len(td.type_vars) != len(t.args):
                raise RelayTypeError(f"type {t.func.name} takes {len(td.type_vars)} argument(s), "
                                     f"got {len(t.args)}", expr)
            for a in t.args:
                self.check_type(a, expr)
        elif isinstance(t, TupleType):
            for f in t.fields:
                self.check_type(f, expr)
        elif isinstance(t, FuncType):
            for a in t.arg_types:
                self.check_type(a, expr)
            self.check_type(t.ret_type, expr)
        elif isinstance(t, RefType):
            self.check_type(t.value, expr)
        return t

    def bind_var(self, v: Var):
        t = self.check_type(v.type_annotation, v) if v.type_annotation is not None else IncompleteType()
        self.var_types[v] = t
        self.types[id(v)] = (v, t)
        return t

    def adt_of(self, c: Constructor):
        name = c.belongs_to.name
        if name not in self.mod.type_definitions:
            raise RelayTypeError(f"constructor {c.name} belongs to {name}, which is not defined in the module", c)
        return self.mod.type_definitions[name]

    def constructor_type(self, c: Constructor):
        td = self.adt_of(c)
        m = {v: IncompleteType() for v in td.type_vars}
        ret = TypeCall(td.header, tuple(m[v] for v in td.type_vars))
        return [substitute(t, m) for t in c.inputs], ret

    # -- relations
    def add_relation(self, name, fn, args, out, expr):
        r = _Rel(name, fn, args, out, expr)
        if not self.try_relation(r):
            self.pending.append(r)

    def try_relation(self, r):
        args = [self.s.resolve(a) for a in r.args]
        try:
            t = r.fn(args)
        except NotReady:
            if r.back is None or not self.try_backward(r, args):
                return False
            return self.try_relation(r)
        except RelationError as e:
            raise RelayTypeError(f"relation {r.name} failed: {e}", r.expr) from None
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError) as e:
            # an attribute of the wrong form that the relation did not anticipate
            raise RelayTypeError(f"relation {r.name} failed on the call's attributes: {e}", r.expr) from None
        self.unify(t, r.out, r.expr, f"relation {r.name} gives {self.s.resolve(t)}")
        return True

    def try_backward(self, r, args):
        """Assign argument types the relation's backward rule knows; whether any hole was filled."""
        try:
            found = r.back(args, self.s.resolve(r.out))
        except NotReady:
            return False
        except RelationError as e:
            raise RelayTypeError(f"relation {r.name} failed: {e}", r.expr) from None
        progress = False
        for i, t in found.items():
            before = self.s.resolve(r.args[i])
            self.unify(r.args[i], t, r.expr, f"relation {r.name} gives argument {i} the type {t}")
            progress = progress or self.s.resolve(r.args[i]) != before
        return progress

    def solve(self):
        progress = True
        while progress and self.pending:
            progress = False
            still = []
            for r in self.pending:
                if self.try_relation(r):
                    progress = True
                else:
                    still.append(r)
            self.pending = still

    # -- expressions
    def infer(self, e):
        key = id(e)
        if key in self.types and not isinstance(e, (GlobalVar, Constructor)):
            return self.types[key][1]
        t = getattr(self, "visit_" + type(e).__name__.lower())(e)
        self.types[key] = (e, t)
        return t

    def visit_var(self, e):
        if e not in self.var_types:
            raise RelayTypeError(f"variable %{e.name_hint} is not bound (free variable)", e)
        return self.var_types[e]

    def visit_globalvar(self, e):
        name = e.name_hint
        if name not in self.mod.functions:
            raise RelayTypeError(f"no global function @{name} in the module", e)
        if name not in self.global_types:
            if name in self.in_progress:
                # recursion through an unannotated global: monomorphic within its definition
                return self.in_progress[name]
            self.infer_global(name)
        return self.instantiate(self.global_types[name])

    def infer_global(self, name):
        """Infer an unannotated global, then fix its type (generalised over its declared type
        parameters) so that its users instantiate it."""
        fn = self.mod.functions[name]
        hole = self.in_progress[name] = IncompleteType()
        t = self.infer(fn)
        self.unify(FuncType(t.arg_types, t.ret_type), hole, fn, f"global @{name}")
        self.solve()
        del self.in_progress[name]
        self.global_types[name] = FuncType(tuple(self.s.resolve(a) for a in t.arg_types),
                                           self.s.resolve(t.ret_type), fn.type_params)

    def visit_constant(self, e):
        return TensorType(e.data.shape, str(e.data.dtype))

    def visit_op(self, e):
        """An operator as a value (TVM: its relation-constrained function type): a function of
        holes under its relation, which a call of the value solves; if it is never called the
        relation is dropped (the value stays polymorphic, as in TVM)."""
        try:
            opdef = get_op(e.name)
        except KeyError as err:
            raise RelayTypeError(str(err.args[0]), e) from None
        if opdef.num_inputs is None or (opdef.min_inputs is not None and opdef.min_inputs != opdef.num_inputs):
            raise RelayTypeError(f"operator {e.name} takes a variable number of arguments, so it can only be "
                                 f"called, not used as a value", e)
        try:
            attrs = opdef.normalize_attrs({})
        except ValueError as err:
            raise RelayTypeError(f"{err}, so {e.name} can only be called, not used as a value", e) from None
        args = [IncompleteType() for _ in range(opdef.num_inputs)]
        out = IncompleteType()
        rel = get_relation(opdef.relation)
        r = _Rel(opdef.relation, lambda ts, rel=rel, attrs=attrs: rel(ts, attrs), args, out, e, None, True)
        if not self.try_relation(r):
            self.pending.append(r)
        return FuncType(tuple(args), out)

    def visit_constructor(self, e):
        ins, ret = self.constructor_type(e)
        return FuncType(tuple(ins), ret)

    def visit_call(self, e):
        if isinstance(e.op, Op):
            try:
                opdef = get_op(e.op.name)
            except KeyError as err:
                raise RelayTypeError(str(err.args[0]), e) from None
            try:
                opdef.check_arity(len(e.args))
                attrs = opdef.normalize_attrs(e.attrs)
            except ValueError as err:
                raise RelayTypeError(str(err), e) from None
            args = [self.infer(a) for a in e.args]
            out = IncompleteType()
            rel = get_relation(opdef.relation)
            back = get_backward(opdef.relation)
            r = _Rel(opdef.relation, lambda ts, rel=rel, attrs=attrs: rel(ts, attrs), args, out, e,
                     back and (lambda ts, o, back=back, attrs=attrs: back(ts, o, attrs)))
            if not self.try_relation(r):
                self.pending.append(r)
            return out
        if isinstance(e.op, Constructor):
            ins, ret = self.constructor_type(e.op)
            self.types[id(e.op)] = (e.op, FuncType(tuple(ins), ret))
            if len(ins) != len(e.args):
                raise RelayTypeError(f"constructor {e.op.name} takes {len(ins)} argument(s), got {len(e.args)}", e)
            for i, (a, t) in enumerate(zip(e.args, ins)):
                self.unify(self.infer(a), t, a, f"argument {i} of {e.op.name}")
            return ret
        ft = self.s.find(self.infer(e.op))
        args = [self.infer(a) for a in e.args]
        if isinstance(ft, FuncType):
            ft = self.instantiate(ft)
            if len(ft.arg_types) != len(args):
                raise RelayTypeError(f"function takes {len(ft.arg_types)} argument(s), got {len(args)}", e)
            for i, (a, at, pt) in enumerate(zip(e.args, args, ft.arg_types)):
                self.unify(at, pt, a, f"argument {i}")
            return ft.ret_type
        if isinstance(ft, IncompleteType):
            ret = IncompleteType()
            self.unify(ft, FuncType(tuple(args), ret), e.op)
            return ret
        raise RelayTypeError(f"cannot call a value of type {self.s.resolve(ft)}", e)

    def visit_function(self, e):
        params = [self.bind_var(p) for p in e.params]
        body = self.infer(e.body)
        if e.ret_type is not None:
            self.check_type(e.ret_type, e)
            self.unify(body, e.ret_type, e.body, "function body")
            body = e.ret_type
        return FuncType(tuple(params), body, e.type_params)

    def visit_let(self, e):
        # Iterative over let chains (ANF programs are long chains).
        chain = []
        while isinstance(e, Let) and id(e) not in self.types:
            chain.append(e)
            vt = self.bind_var(e.var)
            self.unify(self.infer(e.value), vt, e.value, f"value bound to %{e.var.name_hint}")
            e = e.body
        t = self.infer(e)
        for node in chain:
            self.types[id(node)] = (node, t)
        return t

    def visit_if(self, e):
        self.unify(self.infer(e.cond), TensorType((), "bool"), e.cond, "if condition")
        t = self.infer(e.true_branch)
        f = self.infer(e.false_branch)
        self.unify(f, t, e.false_branch, "else branch (must match the then branch)")
        # the unified type is the less polymorphic branch's (TVM's unifier result)
        rt, rf = self.s.find(t), self.s.find(f)
        if isinstance(rt, FuncType) and isinstance(rf, FuncType) and len(rf.type_params) < len(rt.type_params):
            return f
        return t

    def visit_tuple(self, e):
        return TupleType(tuple(self.infer(f) for f in e.fields))

    def visit_tuplegetitem(self, e):
        out = IncompleteType()
        i = e.index

        def rel(ts):
            t = ts[0]
            if isinstance(t, IncompleteType):
                raise NotReady("tuple")
            if not isinstance(t, TupleType):
                raise RelationError(f"projection .{i} of a non-tuple of type {t}")
            if not 0 <= i < len(t.fields):
                raise RelationError(f"index {i} is out of range for a tuple of {len(t.fields)} fields")
            return t.fields[i]
        self.add_relation("TupleGetItem", rel, [self.infer(e.tuple_value)], out, e)
        return out

    def visit_refcreate(self, e):
        return RefType(self.infer(e.value))

    def visit_refread(self, e):
        t = IncompleteType()
        self.unify(self.infer(e.ref), RefType(t), e.ref, "ref_read")
        return t

    def visit_refwrite(self, e):
        t = IncompleteType()
        self.unify(self.infer(e.ref), RefType(t), e.ref, "ref_write")
        self.unify(self.infer(e.value), t, e.value, "value written to the reference")
        return UNIT

    def visit_match(self, e):
        dt = self.infer(e.data)
        out = IncompleteType()
        for c in e.clauses:
            self.bind_pattern(c.lhs, dt, e)
            self.unify(self.infer(c.rhs), out, c.rhs, "match clause")
        if e.complete and not _exhaustive([[c.lhs] for c in e.clauses], self.mod):
            raise RelayTypeError("match is not exhaustive (use match? for a partial match)", e)
        return out

    def bind_pattern(self, p, t, where):
        if isinstance(p, PatternWildcard):
            return
        if isinstance(p, PatternVar):
            self.unify(t, self.bind_var(p.var), p.var, f"pattern variable %{p.var.name_hint}")
            return
        if isinstance(p, PatternConstructor):
            ins, ret = self.constructor_type(p.constructor)
            self.unify(t, ret, where, f"pattern {p.constructor.name}")
            if len(ins) != len(p.patterns):
                raise RelayTypeError(f"pattern {p.constructor.name} needs {len(ins)} sub-pattern(s), "
                                     f"got {len(p.patterns)}", where)
            for q, qt in zip(p.patterns, ins):
                self.bind_pattern(q, qt, where)
            return
        if isinstance(p, PatternTuple):
            ts = tuple(IncompleteType() for _ in p.patterns)
            self.unify(t, TupleType(ts), where, "tuple pattern")
            for q, qt in zip(p.patterns, ts):
                self.bind_pattern(q, qt, where)
            return
        raise TypeError(f"not a pattern: {p!r}")


def _exhaustive(rows, mod):
    """Whether the pattern matrix ``rows`` covers every value (classic usefulness check)."""
    if not rows:
        return False
    if not rows[0]:
        return True
    col = [r[0] for r in rows]
    heads = [p for p in col if isinstance(p, (PatternConstructor, PatternTuple))]
    if not heads:
        return _exhaustive([r[1:] for r in rows], mod)
    if isinstance(heads[0], PatternTuple):
        k = len(heads[0].patterns)
        spec = []
        for r in rows:
            if isinstance(r[0], PatternTuple):
                spec.append(list(r[0].patterns) + r[1:])
            else:
                spec.append([PatternWildcard()] * k + r[1:])
        return _exhaustive(spec, mod)
    td = mod.type_definitions.get(heads[0].constructor.belongs_to.name)
    ctors = td.constructors if td is not None else [h.constructor for h in heads]
    for c in ctors:
        k = len(c.inputs)
        spec = []
        for r in rows:
            p = r[0]
            if isinstance(p, PatternConstructor):
                if p.constructor.name == c.name:
                    spec.append(list(p.patterns) + r[1:])
            else:
                spec.append([PatternWildcard()] * k + r[1:])
        if not _exhaustive(spec, mod):
            return False
    return True


@deep(RelayTypeError)
def check_module(mod: IRModule) -> TypeInfo:
    """Infer the types of every global function of ``mod``; raise ``RelayTypeError`` on failure."""
    ck = _Checker(mod)
    for name, fn in mod.functions.items():
        if fn.ret_type is not None and all(p.type_annotation is not None for p in fn.params):
            for p in fn.params:
                ck.check_type(p.type_annotation, p)
            ck.check_type(fn.ret_type, fn)
            ck.global_types[name] = FuncType(tuple(p.type_annotation for p in fn.params), fn.ret_type,
                                             fn.type_params)
    for name, fn in mod.functions.items():
        if name not in ck.global_types:
            ck.infer_global(name)
        elif id(fn) not in ck.types:
            ck.infer(fn)
        ck.solve()
    ck.solve()
    ck.pending = [r for r in ck.pending if not r.of_value]
    if ck.pending:
        r = ck.pending[0]
        raise RelayTypeError(f"relation {r.name} cannot be solved: the types of its arguments are unknown "
                             f"({', '.join(str(ck.s.resolve(a)) for a in r.args)}); add type annotations", r.expr)
    for key, (expr, t) in ck.types.items():
        if t is not None and isinstance(ck.s.find(t), IncompleteType):
            raise RelayTypeError(f"cannot infer the type (got {ck.s.resolve(t)}); add a type annotation", expr)
    gts = {}
    for name, gt in ck.global_types.items():
        gts[name] = ck.s.resolve(gt)
    return TypeInfo(gts, ck.types, ck.s)


@deep(RelayTypeError)
def infer_expr(expr, mod: IRModule | None = None) -> Type:
    """The type of ``expr`` (checked as the body of a fresh global whose parameters are its free
    variables)."""
    from .analysis import free_vars
    mod = mod or IRModule()
    fn = expr if isinstance(expr, Function) else Function(tuple(free_vars(expr)), expr)
    info = check_module(mod.with_function("__expr__", fn))
    t = info.global_types["__expr__"]
    return t if isinstance(expr, Function) else t.ret_type
