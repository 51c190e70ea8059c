"""Generic traversals: ``ExprVisitor`` (walk once per node) and ``ExprMutator`` (rebuild)."""
from __future__ import annotations

import sys

from .ir import (Clause, Constructor, GlobalVar, Let, Op, PatternConstructor, PatternTuple, PatternVar, Var,
                 with_fields)

__all__ = ["ExprVisitor", "ExprMutator", "pattern_vars"]

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


def pattern_vars(p):
    """The variables a pattern binds, left to right."""
    if isinstance(p, PatternVar):
        return [p.var]
    if isinstance(p, (PatternConstructor, PatternTuple)):
        return [v for q in p.patterns for v in pattern_vars(q)]
    return []


class ExprVisitor:
    """Visit each distinct node of an expression DAG once, children before ``visit_*`` returns."""

    def __init__(self):
        self._seen = set()

    def visit(self, e):
        if id(e) in self._seen and not isinstance(e, (Var, GlobalVar, Op, Constructor)):
            return
        self._seen.add(id(e))
        getattr(self, "visit_" + type(e).__name__.lower())(e)

    def visit_var(self, e):
        pass

    def visit_globalvar(self, e):
        pass

    def visit_constant(self, e):
        pass

    def visit_op(self, e):
        pass

    def visit_constructor(self, e):
        pass

    def visit_call(self, e):
        self.visit(e.op)
        for a in e.args:
            self.visit(a)

    def visit_function(self, e):
        for p in e.params:
            self.visit(p)
        self.visit(e.body)

    def visit_let(self, e):
        self.visit(e.var)
        self.visit(e.value)
        self.visit_let_binding(e)
        self.visit(e.body)

    def visit_let_binding(self, e):
        pass

    def visit_if(self, e):
        self.visit(e.cond)
        self.visit(e.true_branch)
        self.visit(e.false_branch)

    def visit_tuple(self, e):
        for f in e.fields:
            self.visit(f)

    def visit_tuplegetitem(self, e):
        self.visit(e.tuple_value)

    def visit_refcreate(self, e):
        self.visit(e.value)

    def visit_refread(self, e):
        self.visit(e.ref)

    def visit_refwrite(self, e):
        self.visit(e.ref)
        self.visit(e.value)

    def visit_match(self, e):
        self.visit(e.data)
        for c in e.clauses:
            for v in pattern_vars(c.lhs):
                self.visit(v)
            self.visit(c.rhs)


class ExprMutator:
    """Rebuild an expression bottom-up, memoised so shared sub-expressions stay shared.

    Override ``visit_*`` methods; a node whose children are unchanged is returned as is.
    """

    def __init__(self):
        self.memo = {}

    def visit(self, e):
        key = id(e)
        if key in self.memo:
            return self.memo[key][1]
        out = self.post(e, getattr(self, "visit_" + type(e).__name__.lower())(e))
        self.memo[key] = (e, out)   # keep e alive so its id is not reused
        return out

    def post(self, old, new):
        """Hook called on every rebuilt node (``old`` is the original); returns the final node."""
        return new

    def visit_var(self, e):
        return e

    def visit_globalvar(self, e):
        return e

    def visit_constant(self, e):
        return e

    def visit_op(self, e):
        return e

    def visit_constructor(self, e):
        return e

    @staticmethod
    def _same(a, b):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))

    def visit_call(self, e):
        op = self.visit(e.op)
        args = tuple(self.visit(a) for a in e.args)
        if op is e.op and self._same(args, e.args):
            return e
        return with_fields(e, op=op, args=args)

    def visit_function(self, e):
        params = tuple(self.visit(p) for p in e.params)
        body = self.visit(e.body)
        if body is e.body and self._same(params, e.params):
            return e
        return with_fields(e, params=params, body=body)

    def visit_let(self, e):
        chain = []
        cur = e
        while isinstance(cur, Let) and id(cur) not in self.memo:
            chain.append(cur)
            var = self.visit(cur.var)
            value = self.visit(cur.value)
            chain[-1] = (cur, var, value)
            cur = cur.body
        body = self.visit(cur)
        for node, var, value in reversed(chain):
            if var is node.var and value is node.value and body is node.body:
                out = node
            else:
                out = with_fields(node, var=var, value=value, body=body)
            out = self.post(node, out)
            self.memo[id(node)] = (node, out)
            body = out
        return body

    def visit_if(self, e):
        c, t, f = self.visit(e.cond), self.visit(e.true_branch), self.visit(e.false_branch)
        if c is e.cond and t is e.true_branch and f is e.false_branch:
            return e
        return with_fields(e, cond=c, true_branch=t, false_branch=f)

    def visit_tuple(self, e):
        fields = tuple(self.visit(f) for f in e.fields)
        if self._same(fields, e.fields):
            return e
        return with_fields(e, fields=fields)

    def visit_tuplegetitem(self, e):
        t = self.visit(e.tuple_value)
        return e if t is e.tuple_value else with_fields(e, tuple_value=t)

    def visit_refcreate(self, e):
        v = self.visit(e.value)
        return e if v is e.value else with_fields(e, value=v)

    def visit_refread(self, e):
        r = self.visit(e.ref)
        return e if r is e.ref else with_fields(e, ref=r)

    def visit_refwrite(self, e):
        r, v = self.visit(e.ref), self.visit(e.value)
        return e if r is e.ref and v is e.value else with_fields(e, ref=r, value=v)

    def visit_pattern(self, p):
        if isinstance(p, PatternVar):
            v = self.visit(p.var)
            return p if v is p.var else PatternVar(v)
        if isinstance(p, PatternConstructor):
            ps = tuple(self.visit_pattern(q) for q in p.patterns)
            return p if self._same(ps, p.patterns) else PatternConstructor(p.constructor, ps)
        if isinstance(p, PatternTuple):
            ps = tuple(self.visit_pattern(q) for q in p.patterns)
            return p if self._same(ps, p.patterns) else PatternTuple(ps)
        return p

    def visit_match(self, e):
        data = self.visit(e.data)
        clauses = []
        changed = data is not e.data
        for c in e.clauses:
            lhs, rhs = self.visit_pattern(c.lhs), self.visit(c.rhs)
            if lhs is c.lhs and rhs is c.rhs:
                clauses.append(c)
            else:
                changed = True
                clauses.append(Clause(lhs, rhs))
        return with_fields(e, data=data, clauses=tuple(clauses)) if changed else e
