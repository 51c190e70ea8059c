"""FuseOps: group operator calls into primitive functions by operator pattern."""
from __future__ import annotations

from ..ir import (Attrs, Call, Constant, Function, If, IRModule, Let, Match, Op, Tuple, TupleGetItem, Var,
                  with_fields)
from ..op.registry import OpPattern, get_op
from ..visitor import ExprMutator
from ._util import map_functions, use_counts
from .infer_type import infer_type
from .normal_form import to_graph_normal_form

__all__ = ["fuse_ops"]


def _pattern(call):
    return get_op(call.op.name).pattern


class _Group:
    __slots__ = ("nodes", "pattern", "anchor")

    def __init__(self, node, pattern):
        self.nodes = [node]
        self.pattern = pattern
        self.anchor = pattern == OpPattern.OUT_ELEMWISE_FUSABLE


def _can_join(group, p):
    """May an operator of pattern ``p`` consume the output of ``group`` inside the same group?"""
    if p <= OpPattern.BROADCAST:
        return group.pattern <= OpPattern.OUT_ELEMWISE_FUSABLE and group.pattern != OpPattern.COMM_REDUCE
    if p == OpPattern.INJECTIVE:
        return group.pattern <= OpPattern.INJECTIVE
    if p == OpPattern.COMM_REDUCE:
        return group.pattern <= OpPattern.INJECTIVE
    return False


class _Partition:
    """Assign every operator call of a function body to a group (post-order, greedy)."""

    def __init__(self, body, max_depth):
        self.uses = use_counts(body)
        self.group = {}        # id(call) -> _Group
        self.region = {}       # id(node) -> region id (function body / branch / clause)
        self.order = []
        self.max_depth = max_depth
        self._next_region = 0
        self.walk(body, self.new_region())

    def new_region(self):
        self._next_region += 1
        return self._next_region

    def walk(self, e, region):
        if id(e) in self.region:
            return
        self.region[id(e)] = region
        if isinstance(e, Call):
            for a in e.args:
                self.walk(a, region)
            if isinstance(e.op, Op):
                self.assign(e, region)
            else:
                self.walk(e.op, region)
        elif isinstance(e, Tuple):
            for f in e.fields:
                self.walk(f, region)
        elif isinstance(e, TupleGetItem):
            self.walk(e.tuple_value, region)
        elif isinstance(e, Let):
            self.walk(e.value, region)
            self.walk(e.body, region)
        elif isinstance(e, If):
            self.walk(e.cond, region)
            self.walk(e.true_branch, self.new_region())
            self.walk(e.false_branch, self.new_region())
        elif isinstance(e, Function):
            if not e.is_primitive:
                self.walk(e.body, self.new_region())
        elif isinstance(e, Match):
            self.walk(e.data, region)
            for c in e.clauses:
                self.walk(c.rhs, self.new_region())
        else:
            for attr in ("value", "ref"):
                if hasattr(e, attr):
                    self.walk(getattr(e, attr), region)

    def assign(self, call, region):
        p = _pattern(call)
        joinable = []
        if p != OpPattern.OPAQUE:
            for a in call.args:
                g = self.group.get(id(a))
                if (g is not None and self.uses.get(id(a), 0) == 1 and self.region.get(id(a)) == region
                        and g.nodes[-1] is a and g not in joinable and _can_join(g, p)):
                    joinable.append(g)
        if sum(g.anchor for g in joinable) > 1:
            first = next(g for g in joinable if g.anchor)
            joinable = [g for g in joinable if not g.anchor or g is first]
        if joinable and sum(len(g.nodes) for g in joinable) + 1 <= self.max_depth:
            g = joinable[0]
            for other in joinable[1:]:
                g.nodes.extend(other.nodes)
                g.anchor = g.anchor or other.anchor
                g.pattern = max(g.pattern, other.pattern)
                for n in other.nodes:
                    self.group[id(n)] = g
            g.nodes.append(call)
            g.pattern = max(g.pattern, p) if p != OpPattern.OUT_ELEMWISE_FUSABLE else p
            self.group[id(call)] = g
        else:
            self.group[id(call)] = _Group(call, p)


class _Fuse(ExprMutator):
    def __init__(self, part):
        super().__init__()
        self.part = part
        self.fused = {}

    def visit_call(self, e):
        g = self.part.group.get(id(e))
        if g is None:
            return super().visit_call(e)
        if g.nodes[-1] is not e:
            raise AssertionError("an inner node of a fused group is used outside it")
        if id(g) in self.fused:
            return self.fused[id(g)]
        members = {id(n) for n in g.nodes}
        params, args, pmap = [], [], {}

        def build(n, memo={}):
            if id(n) in memo:
                return memo[id(n)]
            if id(n) in members:
                out = with_fields(n, args=tuple(build(a) for a in n.args))
            elif isinstance(n, Constant):
                out = n
            else:
                if id(n) not in pmap:
                    p = Var(f"p{len(params)}", n.checked_type)
                    params.append(p)
                    args.append(self.visit(n))
                    pmap[id(n)] = p
                out = pmap[id(n)]
            memo[id(n)] = out
            return out

        body = build(e, {})
        fn = Function(tuple(params), body, e.checked_type, attrs=Attrs(Primitive=1))
        out = Call(fn, tuple(args))
        self.fused[id(g)] = out
        return out

    def visit_function(self, e):
        if e.is_primitive:
            return e
        return super().visit_function(e)


def fuse_ops(mod: IRModule, max_depth: int = 256) -> IRModule:
    """Group operator calls into primitive functions (``Primitive=1``) called in their place.

    Rules, by operator pattern: element-wise and broadcast operators join the group of their
    producer when that producer has no other use (including an anchor: conv2d, dense, pooling,
    i.e. OUT_ELEMWISE_FUSABLE); injective operators join injective groups; a reduction may
    absorb injective producers; an anchor always starts a new group; opaque operators stay alone.
    Groups never span control-flow regions and hold at most ``max_depth`` operators.

    Guarantees: every operator call lies in exactly one primitive function, which has at most
    one anchor; the parameters of primitive functions are annotated with their types; results are
    unchanged.  The input is first converted to graph normal form.
    """
    mod = infer_type(to_graph_normal_form(mod))

    def run(f):
        part = _Partition(f.body, max_depth)
        return with_fields(f, body=_Fuse(part).visit(f.body))
    return map_functions(mod, run)
