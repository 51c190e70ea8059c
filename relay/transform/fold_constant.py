"""FoldConstant: evaluate the sub-expressions whose inputs are all constants."""
from __future__ import annotations

from ..interpreter import Interpreter
from ..ir import Constant, IRModule, Op, Tuple, with_fields
from ..visitor import ExprMutator
from ._util import map_functions

__all__ = ["fold_constant"]


def _const(e):
    return isinstance(e, Constant) or (isinstance(e, Tuple) and all(_const(f) for f in e.fields))


class _Folder(ExprMutator):
    def __init__(self, skip):
        super().__init__()
        self.interp = Interpreter()
        self.skip = skip

    def visit_call(self, e):
        e = super().visit_call(e)
        if isinstance(e.op, Op) and e.op.name not in self.skip and all(_const(a) for a in e.args):
            v = self.interp.evaluate(e)
            if isinstance(v, tuple):
                return Tuple(tuple(Constant(x) for x in v))
            return Constant(v)
        return e

    def visit_tuplegetitem(self, e):
        e = super().visit_tuplegetitem(e)
        if isinstance(e.tuple_value, Tuple):
            f = e.tuple_value.fields[e.index]
            if _const(f) or all(_const(x) for x in e.tuple_value.fields):
                return f
        return e

    def visit_let(self, e):
        value = self.visit(e.value)
        if isinstance(value, Constant):
            self.memo[id(e.var)] = (e.var, value)   # substitute the constant into the body
            return self.visit(e.body)
        body = self.visit(e.body)
        if value is e.value and body is e.body:
            return e
        return with_fields(e, value=value, body=body)


def fold_constant(mod: IRModule, skip=()) -> IRModule:
    """Replace every operator call whose arguments are constants by its value.

    Guarantees: the result computes the same values; no operator call (other than those named
    in ``skip``) has only constant arguments; projections of constant tuples are resolved; let
    bindings of constants are substituted into their bodies.
    """
    return map_functions(mod, lambda f: _Folder(set(skip)).visit(f))
