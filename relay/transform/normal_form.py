"""ToANormalForm and ToGraphNormalForm: between nested lets and a shared dataflow graph."""
from __future__ import annotations

from ..analysis import free_vars
from ..ir import (Call, Clause, Constant, Constructor, Function, GlobalVar, If, IRModule, Let, Match, Op,
                  RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var, with_fields)
from ..visitor import ExprMutator
from ._util import is_atomic, is_pure, map_functions

__all__ = ["to_a_normal_form", "to_graph_normal_form"]


class _Scope:
    """A let scope: a function body, an if branch or a match clause."""

    __slots__ = ("parent", "depth", "memo", "binds", "closed")

    def __init__(self, parent):
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.memo, self.binds, self.closed = {}, [], False


def _lca(a, b):
    while a.depth > b.depth:
        a = a.parent
    while b.depth > a.depth:
        b = b.parent
    while a is not b:
        a, b = a.parent, b.parent
    return a


def _slots(n):
    """Children of ``n`` with the scope slot they live in (None: the scope of ``n``)."""
    if isinstance(n, Call):
        return [(n.op, None)] + [(a, None) for a in n.args]
    if isinstance(n, Tuple):
        return [(f, None) for f in n.fields]
    if isinstance(n, TupleGetItem):
        return [(n.tuple_value, None)]
    if isinstance(n, Let):
        return [(n.value, None), (n.body, None)]
    if isinstance(n, If):
        return [(n.cond, None), (n.true_branch, 0), (n.false_branch, 1)]
    if isinstance(n, Match):
        return [(n.data, None)] + [(c.rhs, i) for i, c in enumerate(n.clauses)]
    if isinstance(n, Function):
        return [(n.body, 0)]
    if isinstance(n, RefCreate):
        return [(n.value, None)]
    if isinstance(n, RefRead):
        return [(n.ref, None)]
    if isinstance(n, RefWrite):
        return [(n.ref, None), (n.value, None)]
    return []


class _ANF:
    """Let-bind compound nodes, each in the lowest scope enclosing all of its uses."""

    def __init__(self, body):
        from ..analysis import post_order
        self.counter = 0
        self.root = _Scope(None)
        self.slot_scopes = {}
        order = post_order(body)
        users = {}
        for n in order:
            for c, slot in _slots(n):
                users.setdefault(id(c), []).append((n, slot))
        self.placement = {id(body): self.root}
        for n in reversed(order):   # users before the nodes they use
            if id(n) in self.placement or id(n) not in users:
                continue
            s = None
            for parent, slot in users[id(n)]:
                ps = self.placement.get(id(parent), self.root)
                us = ps if slot is None else self.slot_scope(parent, slot, ps)
                s = us if s is None else _lca(s, us)
            self.placement[id(n)] = s
        self.current = self.root

    def slot_scope(self, parent, slot, parent_scope):
        key = (id(parent), slot)
        if key not in self.slot_scopes:
            self.slot_scopes[key] = (parent, _Scope(parent_scope))
        return self.slot_scopes[key][1]

    def fresh(self):
        self.counter += 1
        return Var(f"x{self.counter}")

    def lookup(self, e):
        s = self.current
        while s is not None:
            if id(e) in s.memo:
                return s.memo[id(e)][1]
            s = s.parent
        return None

    def convert(self, e):
        return self.scope(e, self.root)

    def scope(self, e, scope):
        """Convert ``e`` in ``scope``: a let chain ending in an expression with atomic children."""
        saved, self.current = self.current, scope
        shared = self.lookup(e) is not None or self.placement.get(id(e), scope) is not scope
        result = self.atom(e) if shared else self.value(e, tail=True)
        scope.closed = True
        self.current = saved
        for var, val in reversed(scope.binds):
            result = Let(var, val, result)
        return result

    def branch(self, parent, slot, e):
        key = (id(parent), slot)
        sc = self.slot_scopes[key][1] if key in self.slot_scopes else _Scope(self.current)
        return self.scope(e, sc)

    def atom(self, e):
        if is_atomic(e):
            return e
        found = self.lookup(e)
        if found is not None:
            return found
        target = self.placement.get(id(e), self.current)
        if target.closed:
            target = self.current
        val = self.value(e)
        if is_atomic(val):   # e.g. a let whose body is a variable
            target.memo[id(e)] = (e, val)
            return val
        var = self.fresh()
        target.binds.append((var, val))
        target.memo[id(e)] = (e, var)
        return var

    def value(self, e, tail=False):
        """``e`` with atomic children (children bound first, in their scopes)."""
        if isinstance(e, Let):
            shared = self.lookup(e.value) is not None or isinstance(e.value, Let)
            val = self.atom(e.value) if shared else self.value(e.value)
            self.current.binds.append((e.var, val))
            self.current.memo[id(e.value)] = (e.value, e.var)
            return self.value(e.body, tail) if tail else self.atom(e.body)
        if isinstance(e, (Var, GlobalVar, Constant, Op, Constructor)):
            return e
        if isinstance(e, Call):
            return with_fields(e, op=self.atom(e.op), args=tuple(self.atom(a) for a in e.args))
        if isinstance(e, Tuple):
            return with_fields(e, fields=tuple(self.atom(f) for f in e.fields))
        if isinstance(e, TupleGetItem):
            return with_fields(e, tuple_value=self.atom(e.tuple_value))
        if isinstance(e, Function):
            return with_fields(e, body=self.branch(e, 0, e.body))
        if isinstance(e, If):
            return with_fields(e, cond=self.atom(e.cond), true_branch=self.branch(e, 0, e.true_branch),
                               false_branch=self.branch(e, 1, e.false_branch))
        if isinstance(e, Match):
            return with_fields(e, data=self.atom(e.data),
                               clauses=tuple(Clause(c.lhs, self.branch(e, i, c.rhs))
                                             for i, c in enumerate(e.clauses)))
        if isinstance(e, RefCreate):
            return with_fields(e, value=self.atom(e.value))
        if isinstance(e, RefRead):
            return with_fields(e, ref=self.atom(e.ref))
        if isinstance(e, RefWrite):
            return with_fields(e, ref=self.atom(e.ref), value=self.atom(e.value))
        raise TypeError(f"unexpected {type(e).__name__}")


def to_a_normal_form(mod: IRModule) -> IRModule:
    """Bind every compound sub-expression to a ``let`` variable, in evaluation (post-DFS) order.

    Guarantees: every operator, function and constructor call, tuple, projection and reference
    operation has only atomic arguments (variables, globals, constants); a node shared by several
    users is bound once, in the lowest scope (function body, if branch, match clause) that
    encloses all of its uses; function bodies, if branches and match clauses are themselves
    in A-normal form; results are unchanged.
    """
    return map_functions(mod, lambda f: with_fields(f, body=_ANF(f.body).convert(f.body)))


class _GNF(ExprMutator):
    def visit_let(self, e):
        value = self.visit(e.value)
        if is_pure(value) and e.var not in free_vars(value) and not isinstance(value, Function):
            self.memo[id(e.var)] = (e.var, value)   # every use of the variable becomes the value node
            return self.visit(e.body)
        body = self.visit(e.body)
        if value is e.value and body is e.body:
            return e
        return with_fields(e, value=value, body=body)


def to_graph_normal_form(mod: IRModule) -> IRModule:
    """Replace let bindings of pure values by sharing: each use of the variable becomes the bound
    node itself, so the program is a dataflow graph (printed as ``%n = ...;`` bindings).

    Guarantees: results are unchanged; lets whose values may have effects (reference operations,
    calls of functions) and let-bound functions (which may be recursive) are kept.
    """
    return map_functions(mod, lambda f: _GNF().visit(f))
