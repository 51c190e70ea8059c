"""Helpers shared by the passes."""
from __future__ import annotations

from ..ir import (Call, Constant, Constructor, Function, GlobalVar, IRModule, Op, RefCreate, RefRead, RefWrite,
                  Var)
from ..analysis import post_order

__all__ = ["map_functions", "is_pure", "use_counts", "is_atomic"]


def map_functions(mod: IRModule, fn) -> IRModule:
    """Apply ``fn(Function) -> Function`` to every global function."""
    return IRModule({name: fn(f) for name, f in mod.functions.items()}, mod.type_definitions)


def is_atomic(e):
    return isinstance(e, (Var, GlobalVar, Constant, Op, Constructor))


def is_pure(e):
    """Conservatively: no reference writes/reads and no calls except operator and constructor calls."""
    for n in post_order(e):
        if isinstance(n, (RefWrite, RefRead, RefCreate)):
            return False
        if isinstance(n, Call) and not isinstance(n.op, (Op, Constructor)):
            return False
    return True


def use_counts(expr):
    """How many times each node (by id) is used as a child in the DAG."""
    counts = {}
    for n in post_order(expr):
        for c in _children(n):
            counts[id(c)] = counts.get(id(c), 0) + 1
    return counts


def _children(n):
    from ..ir import If, Let, Match, Tuple, TupleGetItem
    if isinstance(n, Call):
        return [n.op, *n.args]
    if isinstance(n, Tuple):
        return list(n.fields)
    if isinstance(n, TupleGetItem):
        return [n.tuple_value]
    if isinstance(n, Let):
        return [n.value, n.body]
    if isinstance(n, If):
        return [n.cond, n.true_branch, n.false_branch]
    if isinstance(n, Function):
        return [n.body]
    if isinstance(n, Match):
        return [n.data] + [c.rhs for c in n.clauses]
    if isinstance(n, RefCreate):
        return [n.value]
    if isinstance(n, RefRead):
        return [n.ref]
    if isinstance(n, RefWrite):
        return [n.ref, n.value]
    return []
