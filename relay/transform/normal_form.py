"""ToANormalForm and ToGraphNormalForm: between nested lets and a shared dataflow graph."""
from __future__ import annotations

from ..analysis import free_vars
from ..ir import (Call, Clause, Constant, Constructor, Function, GlobalVar, If, IRModule, Let, Match, Op,
                  RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var, with_fields)
from ..visitor import ExprMutator
from ._util import is_atomic, is_pure, map_functions

__all__ = ["to_a_normal_form", "to_graph_normal_form"]


class _ANF:
    def __init__(self):
        self.scopes = []
        self.counter = 0

    def fresh(self):
        self.counter += 1
        return Var(f"x{self.counter}")

    def lookup(self, e):
        for memo, _ in reversed(self.scopes):
            if id(e) in memo:
                return memo[id(e)][1]
        return None

    def scope(self, e):
        """Convert ``e`` in a new scope: a let chain ending in an expression with atomic children."""
        self.scopes.append(({}, []))
        result = self.value(e, tail=True)
        memo, binds = self.scopes.pop()
        for var, val in reversed(binds):
            result = Let(var, val, result)
        return result

    def bind(self, value, orig, var=None):
        var = var or self.fresh()
        memo, binds = self.scopes[-1]
        binds.append((var, value))
        memo[id(orig)] = (orig, var)
        return var

    def atom(self, e):
        if is_atomic(e):
            return e
        found = self.lookup(e)
        if found is not None:
            return found
        return self.bind(self.value(e), e)

    def value(self, e, tail=False):
        """``e`` with atomic children (children bound first in the current scope)."""
        if isinstance(e, Let):
            # an existing let keeps its variable; its body continues the current scope
            memo, binds = self.scopes[-1]
            val = self.value(e.value)
            binds.append((e.var, val))
            memo[id(e.value)] = (e.value, e.var)
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
            return with_fields(e, body=self.scope(e.body))
        if isinstance(e, If):
            return with_fields(e, cond=self.atom(e.cond), true_branch=self.scope(e.true_branch),
                               false_branch=self.scope(e.false_branch))
        if isinstance(e, Match):
            return with_fields(e, data=self.atom(e.data),
                               clauses=tuple(Clause(c.lhs, self.scope(c.rhs)) for c in e.clauses))
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
    users is computed once in the innermost scope that encloses its first use (re-bound in an
    outer scope if used there too); function bodies, if branches and match clauses are themselves
    in A-normal form; results are unchanged.
    """
    return map_functions(mod, lambda f: with_fields(f, body=_ANF().scope(f.body)))


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
