"""The reference interpreter: the meaning of every Relay construct, with numpy tensors.

Values: ``numpy.ndarray`` for tensors, Python ``tuple`` for tuples, ``Closure`` for functions,
``RefValue`` for references and ``ConstructorValue`` for ADT values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .depth import deep
from .ir import (Call, Constant, Constructor, Function, GlobalVar, If, IRModule, Let, Match, Op,
                 PatternConstructor, PatternTuple, PatternVar, PatternWildcard, RefCreate, RefRead, RefWrite,
                 Tuple, TupleGetItem, Var)
from .op.registry import get_op

__all__ = ["Closure", "RefValue", "ConstructorValue", "Interpreter", "evaluate", "run", "RelayRuntimeError",
           "to_python"]


class RelayRuntimeError(RuntimeError):
    """Evaluation failed (a non-exhaustive ``match?``, an unbound variable, a kernel error, ...)."""

    exit_code = 1   # the `vta` command's code for a rejected program


@dataclass(eq=False)
class Closure:
    """A function value: the function and the environment it captured."""

    func: Function
    env: dict

    def __repr__(self):
        return f"Closure({len(self.func.params)} params)"


@dataclass(eq=False)
class RefValue:
    """A mutable cell."""

    value: object


@dataclass(eq=False)
class ConstructorValue:
    constructor: Constructor
    fields: tuple = ()

    def __repr__(self):
        if not self.fields:
            return self.constructor.name
        return f"{self.constructor.name}({', '.join(map(repr, self.fields))})"


class Interpreter:
    """Evaluate expressions against a module of global functions.

    A node shared by several users in the graph form denotes one value: each function activation
    evaluates each node at most once.
    """

    def __init__(self, mod: IRModule | None = None):
        self.mod = mod or IRModule()
        self._globals = {}
        self._attrs = {}

    # -- entry points
    def evaluate(self, expr, env=None):
        return self._eval(expr, dict(env or {}), {})

    def call(self, fn_value, args):
        return self._apply(fn_value, list(args), None)

    def run_main(self, *args, name="main"):
        return self.call(self._global(name, None), [np.asarray(a) for a in args])

    # -- machinery
    def _global(self, name, expr):
        if name not in self._globals:
            if name not in self.mod.functions:
                raise RelayRuntimeError(f"no global function @{name}")
            self._globals[name] = Closure(self.mod.functions[name], {})
        return self._globals[name]

    def _apply(self, f, args, expr):
        if isinstance(f, Closure):
            fn = f.func
            if len(args) != len(fn.params):
                raise RelayRuntimeError(f"function expects {len(fn.params)} arguments, got {len(args)}")
            env = dict(f.env)
            env.update(zip(fn.params, args))
            return self._eval(fn.body, env, {})
        if isinstance(f, Constructor):
            return ConstructorValue(f, tuple(args))
        if isinstance(f, Op):   # an operator passed as a value, with its default attributes
            opdef = get_op(f.name)
            try:
                out = opdef.compute(args, opdef.normalize_attrs({}))
            except Exception as err:
                raise RelayRuntimeError(f"{f.name} failed: {err}") from err
            return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)
        raise RelayRuntimeError(f"cannot call {f!r}")

    def _eval(self, e, env, memo):
        key = id(e)
        if key in memo:
            return memo[key]
        v = self._eval_node(e, env, memo)
        if type(e) is not Var:
            memo[key] = v
        return v

    def _eval_node(self, e, env, memo):
        while True:   # loop instead of recursing on tail positions (let bodies, branches)
            t = type(e)
            if t is Var:
                try:
                    return env[e]
                except KeyError:
                    raise RelayRuntimeError(f"unbound variable %{e.name_hint}") from None
            if t is Let:
                v = self._eval(e.value, env, memo)
                if isinstance(v, Closure) and e.value.__class__ is Function:
                    v.env[e.var] = v   # a let-bound function may call itself
                env[e.var] = v
                e = e.body
                continue
            if t is If:
                c = self._eval(e.cond, env, memo)
                e = e.true_branch if bool(np.asarray(c)) else e.false_branch
                continue
            if t is Match:
                v = self._eval(e.data, env, memo)
                for c in e.clauses:
                    if _match(c.lhs, v, env):
                        break
                else:
                    raise RelayRuntimeError(f"no clause of the match matched {v!r}")
                e = c.rhs
                continue
            if t is Call:
                return self._eval_call(e, env, memo)
            if t is Constant:
                return e.data
            if t is Tuple:
                return tuple(self._eval(f, env, memo) for f in e.fields)
            if t is TupleGetItem:
                v = self._eval(e.tuple_value, env, memo)[e.index]
                return v
            if t is Function:
                return Closure(e, dict(env))
            if t is GlobalVar:
                return self._global(e.name_hint, e)
            if t is Constructor:
                if not e.inputs:
                    return ConstructorValue(e, ())
                return e
            if t is RefCreate:
                return RefValue(self._eval(e.value, env, memo))
            if t is RefRead:
                return self._eval(e.ref, env, memo).value
            if t is RefWrite:
                r = self._eval(e.ref, env, memo)
                r.value = self._eval(e.value, env, memo)
                return ()
            if t is Op:
                return e
            raise RelayRuntimeError(f"cannot evaluate {t.__name__}")

    def _eval_call(self, e, env, memo):
        args = [self._eval(a, env, memo) for a in e.args]
        if type(e.op) is Op:
            key = id(e)
            entry = self._attrs.get(key)
            if entry is None:
                opdef = get_op(e.op.name)
                entry = (e, opdef, opdef.normalize_attrs(e.attrs))
                self._attrs[key] = entry
            _, opdef, attrs = entry
            try:
                out = opdef.compute(args, attrs)
            except Exception as err:
                raise RelayRuntimeError(f"{e.op.name} failed: {err}") from err
            return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)
        if type(e.op) is Constructor:
            return ConstructorValue(e.op, tuple(args))
        return self._apply(self._eval(e.op, env, memo), args, e)


def _match(p, v, env):
    if isinstance(p, PatternWildcard):
        return True
    if isinstance(p, PatternVar):
        env[p.var] = v
        return True
    if isinstance(p, PatternConstructor):
        if not isinstance(v, ConstructorValue) or v.constructor.name != p.constructor.name:
            return False
        return all(_match(q, f, env) for q, f in zip(p.patterns, v.fields))
    if isinstance(p, PatternTuple):
        return all(_match(q, f, env) for q, f in zip(p.patterns, v))
    raise RelayRuntimeError(f"not a pattern: {p!r}")


@deep(RelayRuntimeError)
def evaluate(expr, mod: IRModule | None = None, env=None):
    """Evaluate a closed expression (``env`` may bind free variables to values)."""
    return Interpreter(mod).evaluate(expr, env)


@deep(RelayRuntimeError)
def run(mod: IRModule, *args, name="main"):
    """Call global ``@name`` of ``mod`` on numpy arguments."""
    return Interpreter(mod).run_main(*args, name=name)


def to_python(v):
    """ADT lists become Python lists, Options ``None`` or their value; tuples stay tuples."""
    if isinstance(v, ConstructorValue):
        if v.constructor.name in ("Cons", "Nil"):
            out = []
            while v.constructor.name == "Cons":
                out.append(to_python(v.fields[0]))
                v = v.fields[1]
            return out
        if v.constructor.name == "None":
            return None
        if v.constructor.name == "Some":
            return to_python(v.fields[0])
        return v
    if isinstance(v, tuple):
        return tuple(to_python(x) for x in v)
    return v
