"""BindParams: turn named parameters of a function into constants."""
from __future__ import annotations

from ..ir import Constant, IRModule, with_fields
from ..visitor import ExprMutator

__all__ = ["bind_params"]


class _Subst(ExprMutator):
    def __init__(self, mapping):
        super().__init__()
        self.mapping = mapping

    def visit_var(self, e):
        return self.mapping.get(e, e)


def bind_params(mod: IRModule, params: dict, name: str = "main") -> IRModule:
    """Replace the parameters of ``@name`` whose names are keys of ``params`` by constants.

    Guarantees: the bound parameters are removed from the parameter list (the others keep their
    order); every use of a bound parameter becomes the same ``Constant`` node.
    """
    fn = mod[name]
    mapping = {}
    for p in fn.params:
        if p.name_hint in params:
            mapping[p] = Constant(params[p.name_hint])
    unknown = set(params) - {p.name_hint for p in fn.params}
    if unknown:
        raise ValueError(f"@{name} has no parameter(s) {', '.join(sorted(unknown))}")
    body = _Subst(mapping).visit(fn.body)
    new = with_fields(fn, params=tuple(p for p in fn.params if p not in mapping), body=body)
    return mod.with_function(name, new)
