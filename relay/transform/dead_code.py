"""DeadCodeElimination: drop unused pure let bindings and unreachable global functions."""
from __future__ import annotations

from ..analysis import free_vars, post_order
from ..ir import GlobalVar, IRModule, with_fields
from ..visitor import ExprMutator
from ._util import is_pure, map_functions

__all__ = ["dead_code_elimination"]


class _DCE(ExprMutator):
    def visit_let(self, e):
        body = self.visit(e.body)
        if e.var not in free_vars(body) and is_pure(e.value):
            return body
        value = self.visit(e.value)
        if value is e.value and body is e.body:
            return e
        return with_fields(e, value=value, body=body)


def _reachable(mod, roots):
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in mod.functions:
            continue
        seen.add(name)
        todo.extend(n.name_hint for n in post_order(mod.functions[name]) if isinstance(n, GlobalVar))
    return seen


def dead_code_elimination(mod: IRModule, entry="main") -> IRModule:
    """Remove let bindings whose variable is unused and whose value has no effects, and (when
    the module has ``@entry``) the global functions that ``@entry`` cannot reach.

    Guarantees: results are unchanged; effectful bindings (reference writes, calls of functions
    that may have effects) are kept even when unused.
    """
    mod = map_functions(mod, lambda f: _DCE().visit(f))
    if entry in mod.functions:
        keep = _reachable(mod, [entry])
        mod = IRModule({k: v for k, v in mod.functions.items() if k in keep}, mod.type_definitions)
    return mod
