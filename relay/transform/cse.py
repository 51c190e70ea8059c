"""EliminateCommonSubexpr: share identical operator calls."""
from __future__ import annotations

from ..ir import Constant, IRModule, Op
from ..visitor import ExprMutator
from ._util import map_functions

__all__ = ["eliminate_common_subexpr"]


def _key(a):
    if isinstance(a, Constant) and a.data.size <= 16:
        return ("const", str(a.data.dtype), a.data.shape, a.data.tobytes())
    return id(a)


class _CSE(ExprMutator):
    def __init__(self, skip):
        super().__init__()
        self.table = {}
        self.skip = skip

    def visit_call(self, e):
        e = super().visit_call(e)
        if not isinstance(e.op, Op) or (self.skip and self.skip(e)):
            return e
        key = (e.op.name, e.attrs, tuple(_key(a) for a in e.args))
        found = self.table.get(key)
        if found is not None:
            return found[1]
        self.table[key] = (e.args, e)   # keep args alive so ids stay unique
        return e

    def visit_tuplegetitem(self, e):
        e = super().visit_tuplegetitem(e)
        key = ("proj", id(e.tuple_value), e.index)
        if key in self.table:
            return self.table[key][1]
        self.table[key] = (e.tuple_value, e)
        return e


def eliminate_common_subexpr(mod: IRModule, skip=None) -> IRModule:
    """Replace each operator call that repeats an earlier one (same operator, attributes and
    arguments) by the earlier node, so it is computed once.

    Guarantees: results are unchanged (operators are pure); ``skip(call)`` returning True keeps a
    call out of the sharing.  Small constants compare by value, other arguments by identity
    (after their own elimination).
    """
    return map_functions(mod, lambda f: _CSE(skip).visit(f))
