"""Analyses over expressions: free variables, bound variables, use counts, post-order."""
from __future__ import annotations

from .visitor import ExprVisitor, pattern_vars

__all__ = ["free_vars", "bound_vars", "post_order", "all_vars"]


class _VarCollector(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.bound = []
        self.used = []

    def visit_var(self, e):
        if e not in self.used:
            self.used.append(e)

    def visit_function(self, e):
        self.bound.extend(e.params)
        super().visit_function(e)

    def visit_let_binding(self, e):
        self.bound.append(e.var)

    def visit_match(self, e):
        for c in e.clauses:
            self.bound.extend(pattern_vars(c.lhs))
        super().visit_match(e)


def free_vars(expr):
    """Variables used in ``expr`` and not bound inside it, in order of first use."""
    c = _VarCollector()
    c.visit(expr)
    bound = set(c.bound)
    return [v for v in c.used if v not in bound]


def bound_vars(expr):
    c = _VarCollector()
    c.visit(expr)
    return list(dict.fromkeys(c.bound))


def all_vars(expr):
    c = _VarCollector()
    c.visit(expr)
    return list(dict.fromkeys(c.bound + c.used))


class _PostOrder(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.order = []

    def visit(self, e):
        new = id(e) not in self._seen
        super().visit(e)
        if new:
            self.order.append(e)


def post_order(expr):
    """Every distinct node of ``expr``, children before parents."""
    p = _PostOrder()
    p.visit(expr)
    return p.order
