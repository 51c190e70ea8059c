"""Relay passes of the compiler: preparation, and the partition of ``@main`` into VTA operators.

``partition_for_vta`` is the fusion pass: every ``nn.conv2d`` / ``nn.dense`` on int8 data and
int8 constant weights with an int32 result, together with the element-wise tail that follows it
(integer-form.md), becomes a call of a function marked ``Compiler="vta"``. Whatever it does not
absorb stays as it was and later runs on the CPU; ``vta_operator`` turns one marked function
into a :class:`~compiler.operators.ConvOp`.
"""

from __future__ import annotations

import numpy as np

from relay.analysis import post_order
from relay.op import get_op
from relay.ir import Call, Constant, Function, IRModule, Op, Tuple, TupleGetItem, Var
from relay.transform import bind_params, fold_constant, infer_type
from relay.ty import TensorType
from relay.visitor import ExprMutator

from .errors import CompileError
from .operators import (ConvOp, TailOp, accumulator_bounds, merge_constant_adds, offset_for_init,
                        simplify_tail,
                        sink_max, tail_ranges)

__all__ = ["prepare", "partition_for_vta", "vta_operator", "vta_functions", "IMM_RANGE"]

IMM_RANGE = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)


def prepare(mod: IRModule, params: dict | None = None) -> IRModule:
    """Bind ``params`` (by parameter name) as constants, fold constant sub-expressions and
    infer types. Guarantees: every node of ``@main`` carries its ``checked_type``; the bound
    parameters are gone from ``@main``'s parameter list; the program means the same."""
    if "main" not in mod.functions:
        raise CompileError("the program has no @main")
    if params:
        try:
            mod = bind_params(mod, params)
        except ValueError as exc:
            raise CompileError(str(exc)) from None
    return infer_type(fold_constant(infer_type(mod)))


def _ttype(e) -> TensorType | None:
    t = e.checked_type
    return t if isinstance(t, TensorType) else None


def _attrs(call: Call):
    """The call's attributes with the operator's defaults filled in."""
    return get_op(call.op.name).normalize_attrs(call.attrs)


def _is_op(e, *names) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names


def _const_int(e) -> np.ndarray | None:
    if isinstance(e, Constant) and e.data.dtype == np.int32:
        return e.data
    return None


def _anchor_ok(e) -> bool:
    """conv2d / dense of int8 data by an int8 constant into int32 (NCHW, OIHW)."""
    if not _is_op(e, "nn.conv2d", "nn.dense"):
        return False
    x, w = e.args
    tx, tw, ty = _ttype(x), _ttype(w), _ttype(e)
    if not (tx and tw and ty) or tx.dtype != "int8" or ty.dtype != "int32":
        return False
    if not (isinstance(w, Constant) and w.data.dtype == np.int8):
        return False
    if e.op.name == "nn.conv2d":
        a = _attrs(e)
        return (a["data_layout"] == "NCHW" and a["kernel_layout"] == "OIHW"
                and a.get("out_layout", "") in ("", "NCHW") and len(tx.shape) == 4)
    return len(tx.shape) == 2


def _transpose_ok(e) -> bool:
    """conv2d_transpose of int8 data by an int8 constant IOHW weight into int32 (NCHW)."""
    if not _is_op(e, "nn.conv2d_transpose"):
        return False
    x, w = e.args
    tx, ty = _ttype(x), _ttype(e)
    a = _attrs(e)
    return (tx is not None and ty is not None and tx.dtype == "int8" and ty.dtype == "int32"
            and isinstance(w, Constant) and w.data.dtype == np.int8
            and a["data_layout"] == "NCHW" and a["kernel_layout"] == "IOHW"
            and a.get("out_layout", "") in ("", "NCHW"))


def _int8(e) -> bool:
    t = _ttype(e)
    return t is not None and t.dtype == "int8" and not isinstance(e, Constant)


def _pool_ok(e) -> bool:
    """int8 NCHW max / average (count_include_pad or no padding) / global average pooling."""
    if not (_is_op(e, "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")
            and _int8(e.args[0]) and len(_ttype(e.args[0]).shape) == 4):
        return False
    a = _attrs(e)
    if a["layout"] != "NCHW" or a.get("out_layout", "") not in ("", "NCHW"):
        return False
    if e.op.name == "nn.global_avg_pool2d":
        return True
    if a["ceil_mode"] and e.op.name != "nn.max_pool2d":
        return False        # the average's divisor would change in the extra windows
    from relay.op._common import padding4
    return e.op.name == "nn.max_pool2d" or a["count_include_pad"] or not any(
        padding4(a["padding"]))


def _eltwise_ok(e) -> bool:
    """add / multiply of two int8 tensors of one 4-D shape, widened to int32."""
    if not _is_op(e, "add", "multiply") or len(e.args) != 2:
        return False
    a, b = e.args
    return (all(_is_op(x, "cast") and _attrs(x)["dtype"] == "int32" and _int8(x.args[0])
                for x in (a, b))
            and _ttype(a.args[0]) == _ttype(b.args[0]) and len(_ttype(a).shape) == 4)


def _channel_vector(c: np.ndarray, channels: int, rank: int) -> np.ndarray | None:
    """A constant that broadcasts along the channel axis only, as a (channels,) vector."""
    if c.ndim == 0:
        return np.full(channels, int(c), np.int32)
    shape = c.shape
    if rank == 4 and shape in ((channels, 1, 1), (1, channels, 1, 1)):
        return c.reshape(channels)
    if rank == 2 and shape in ((channels,), (1, channels)):
        return c.reshape(channels)
    return None


class _Tail:
    """The tail being absorbed: steps, constant vectors, the residual input."""

    def __init__(self, channels: int, rank: int, *, imm_only: bool = False,
                 residual: bool = True):
        self.channels, self.rank, self.imm_only = channels, rank, imm_only
        self.allow_residual = residual and not imm_only
        self.steps: list[TailOp] = []
        self.consts: list[np.ndarray] = []
        self.residual = None

    def operand(self, alu: str, c: np.ndarray) -> bool:
        """Add ``alu`` with the constant ``c`` (scalar: an immediate when it fits)."""
        if c.ndim == 0 and IMM_RANGE[0] <= int(c) <= IMM_RANGE[1]:
            self.steps.append(TailOp(alu, imm=int(c)))
            return True
        if self.imm_only:
            return False
        v = _channel_vector(c, self.channels, self.rank)
        if v is None:
            return False
        self.consts.append(v.astype(np.int32))
        self.steps.append(TailOp(alu, const=len(self.consts) - 1))
        return True

    def absorb(self, user: Call, cur) -> str | None:
        """Absorb ``user`` (whose operand is ``cur``); 'end' after the final cast, 'more' to go
        on, None if it cannot be absorbed."""
        name, args = user.op.name, user.args
        other = [a for a in args if a is not cur]
        if name == "cast":
            dt = _attrs(user)["dtype"]
            return "end" if dt == "int8" else ("more" if dt == "int32" else None)
        if name == "nn.relu":
            self.steps.append(TailOp("MAX", imm=0))
            return "more"
        if name == "clip":
            lo, hi = _attrs(user)["a_min"], _attrs(user)["a_max"]
            for alu, bound, active in (("MAX", np.ceil(lo), lo > _INT32[0]),
                                       ("MIN", np.floor(hi), hi < _INT32[1])):
                if active:
                    self.operand(alu, np.array(int(np.clip(bound, *_INT32)), np.int32))
            return "more"
        if len(other) != 1:
            return None
        o = other[0]
        if name == "nn.bias_add":
            axis = _attrs(user)["axis"] % self.rank
            c = _const_int(o)
            if axis != 1 or c is None or args[0] is not cur or c.shape != (self.channels,):
                return None
            return "more" if self.operand("ADD", c.reshape((-1,) + (1,) * (self.rank - 2))) \
                else None
        if name in ("add", "multiply", "maximum", "minimum"):
            alu = {"add": "ADD", "multiply": "MUL", "maximum": "MAX", "minimum": "MIN"}[name]
            c = _const_int(o)
            if c is not None:
                return "more" if self.operand(alu, c) else None
            if (name == "add" and self.residual is None and self.allow_residual
                    and _is_op(o, "cast")
                    and _attrs(o)["dtype"] == "int32" and _ttype(o.args[0]) is not None
                    and _ttype(o.args[0]).dtype == "int8" and _ttype(o) == _ttype(cur)):
                self.residual = o.args[0]
                self.steps.append(TailOp("ADD", residual=True))
                return "more"
            return None
        if name in ("right_shift", "left_shift") and args[0] is cur:
            c = _const_int(o)
            if c is None or c.size == 0 or not (0 <= c.min() and c.max() <= 31):
                return None
            if c.ndim == 0:
                self.steps.append(TailOp("SHR", imm=int(c) if name == "right_shift" else -int(c)))
                return "more"
            # A per-channel shift (per-channel requantisation): SHR by a constant vector.
            return "more" if name == "right_shift" and self.operand("SHR", c) else None
        return None


_TAIL_OPS = ("cast", "nn.relu", "clip", "nn.bias_add", "add", "multiply", "maximum", "minimum",
             "right_shift", "left_shift")


def _users(body) -> dict[int, list]:
    users: dict[int, list] = {}
    for n in post_order(body):
        children = (list(n.args) if isinstance(n, Call) else list(n.fields)
                    if isinstance(n, Tuple) else [n.tuple_value]
                    if isinstance(n, TupleGetItem) else [])
        for c in children:
            users.setdefault(id(c), []).append(n)
    return users


def _chains(body, cfg=None) -> dict[int, tuple]:
    """id(last node) -> (anchor, last node, tail) for every VTA operator."""
    users = _users(body)
    chains = {}
    for n in post_order(body):
        if _pool_ok(n):
            if cfg is None or _pool_fits(n, cfg):
                chains[id(n)] = (n, n, _Tail(0, 4))
            continue
        if _anchor_ok(n):
            ty = _ttype(n)
            tail = _Tail(ty.shape[1], len(ty.shape))
        elif _transpose_ok(n):
            tail = _Tail(_ttype(n).shape[1], 4, residual=False)
        elif _eltwise_ok(n):
            tail = _Tail(_ttype(n).shape[1], 4, imm_only=True)
        else:
            continue
        cur = n
        while True:
            us = users.get(id(cur), [])
            if len(us) != 1 or cur is body:
                break
            u = us[0]
            if not _is_op(u, *_TAIL_OPS):
                break
            saved = (list(tail.steps), list(tail.consts), tail.residual)
            how = tail.absorb(u, cur)
            if how is None:
                tail.steps, tail.consts, tail.residual = saved
                break
            cur = u
            if how == "end":
                break
        chains[id(cur)] = (n, cur, tail)
    return chains


def _pool_fits(call, cfg) -> bool:
    from .errors import DoesNotFit
    from .vector import check_pool
    try:
        check_pool(_pool_op(call, "probe"), cfg)
        return True
    except DoesNotFit:
        return False


def _pool_op(call, name):
    from relay.op._common import pair, padding4

    from .vector import PoolOp
    shape = tuple(_ttype(call.args[0]).shape)
    if call.op.name == "nn.global_avg_pool2d":
        return PoolOp(name, "avg", shape, shape[2:])
    a = _attrs(call)
    (kh, kw), (sh, sw) = pair(a["pool_size"], "pool_size"), pair(a["strides"], "strides")
    dh, dw = pair(a["dilation"], "dilation")
    pt, pl, pb, pr = padding4(a["padding"])
    if a["ceil_mode"]:
        # A max pool's ceil_mode windows reach past the padded input; what they cover there
        # counts as padding (never wins), so it is more bottom / right padding of the DMA.
        h, w = shape[2:]
        oh, ow = _ttype(call).shape[2:]
        pb += max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + pt + pb))
        pr += max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + pl + pr))
    return PoolOp(name, "max" if call.op.name == "nn.max_pool2d" else "avg", shape,
                  (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw))


class _Partition(ExprMutator):
    def __init__(self, chains):
        super().__init__()
        self.chains = chains
        self.count = 0

    def visit_call(self, e):
        chain = self.chains.get(id(e))
        if chain is None:
            return super().visit_call(e)
        anchor, last, tail = chain
        if _eltwise_ok(anchor) and not _anchor_ok(anchor):
            inputs = [("data", anchor.args[0].args[0]), ("data2", anchor.args[1].args[0])]
        else:
            inputs = [("data", anchor.args[0])]
        params, args, subst = [], [], {}
        for pname, node in inputs:
            v = Var(pname, _ttype(node))
            params.append(v)
            args.append(self.visit(node))
            subst[id(node)] = v
        if tail.residual is not None:
            p_res = Var("residual", _ttype(tail.residual))
            params.append(p_res)
            args.append(self.visit(tail.residual))
            subst[id(tail.residual)] = p_res
        body = _Rebuild(subst).visit(last)
        fn = Function(params, body, _ttype(last),
                      attrs={"Primitive": 1, "Compiler": "vta",
                             "global_symbol": f"vta_{self.count}"})
        self.count += 1
        return Call(fn, args)


class _Rebuild(ExprMutator):
    """Copy a chain, replacing its data and residual inputs by the function's parameters."""

    def __init__(self, subst):
        super().__init__()
        self.subst = subst

    def visit(self, e):
        if id(e) in self.subst:
            return self.subst[id(e)]
        return super().visit(e)


def partition_for_vta(mod: IRModule, cfg=None) -> IRModule:
    """Fusion and partition. Guarantees: every int8 x int8 -> int32 ``nn.conv2d`` (NCHW/OIHW)
    and ``nn.dense`` with a constant weight, and every int32 ``add`` / ``multiply`` of two
    widened int8 tensors, with the longest tail of absorbable element-wise steps whose
    intermediate results have no other user, and every int8 max / average / global average
    pooling (that fits ``cfg``'s accumulator when ``cfg`` is given), is replaced by a call of a
    function with ``Compiler="vta"`` taking its tensor inputs as parameters; nothing else
    changes, so the program means exactly what it meant (the Relay interpreter runs both)."""
    mod = infer_type(mod)
    main = mod["main"]
    chains = _chains(main.body, cfg)
    body = _Partition(chains).visit(main.body)
    return infer_type(mod.with_function("main", Function(main.params, body, None,
                                                         main.type_params, main.attrs)))


def vta_functions(expr) -> list[Call]:
    """The calls of ``Compiler="vta"`` functions in ``expr``, in post order."""
    return [n for n in post_order(expr) if isinstance(n, Call) and isinstance(n.op, Function)
            and n.op.attrs.get("Compiler") == "vta"]


def _finish(tail: _Tail, weight: np.ndarray | None = None) -> tuple[tuple, tuple]:
    """The tail's steps and constants after the peephole passes (``sink_max`` only when the
    interval analysis from the int8 ``weight`` proves that nothing wraps)."""
    steps, consts = tuple(tail.steps), tuple(tail.consts)
    if weight is not None and tail_ranges(steps, consts, *accumulator_bounds(weight)):
        steps = sink_max(steps, consts)
    steps, consts = merge_constant_adds(steps, consts)
    return simplify_tail(steps), consts


def vta_operator(fn: Function, name: str) -> ConvOp:
    """The :class:`ConvOp` of one partitioned function (its chain walked from the anchor; a
    convolution's tail after :func:`offset_for_init`)."""
    order = [n for n in post_order(fn.body) if isinstance(n, Call)]
    if _pool_ok(fn.body):
        return _pool_op(fn.body, name)
    anchor = next((n for n in order if _is_op(n, "nn.conv2d", "nn.dense")), None)
    transpose = next((n for n in order if _transpose_ok(n)), None)
    if transpose is not None:
        tail = _Tail(_ttype(transpose).shape[1], 4, residual=False)
        for prev, n in zip(order[order.index(transpose):], order[order.index(transpose) + 1:]):
            if tail.absorb(n, prev) is None:
                raise CompileError(f"{name}: cannot lower {n.op.name} in a VTA operator")
        from relay.op._common import pair, padding4

        from .transpose import TransposeOp
        a = _attrs(transpose)
        return TransposeOp(name, tuple(_ttype(transpose.args[0]).shape), transpose.args[1].data,
                           tuple(pair(a["strides"], "strides")), tuple(padding4(a["padding"])),
                           tuple(pair(a["output_padding"], "output_padding")),
                           tuple(pair(a["dilation"], "dilation")), a["groups"],
                           *_finish(tail), _ttype(fn.body).dtype)
    if anchor is None:
        anchor = next(n for n in order if _eltwise_ok(n))
        tail = _Tail(_ttype(anchor).shape[1], 4, imm_only=True)
        for n in order[order.index(anchor) + 1:]:
            if tail.absorb(n, order[order.index(n) - 1]) is None:
                raise CompileError(f"{name}: cannot lower {n.op.name} in a VTA operator")
        from .vector import EltwiseOp
        return EltwiseOp(name, "ADD" if anchor.op.name == "add" else "MUL",
                         tuple(_ttype(anchor).shape), simplify_tail(tuple(tail.steps)),
                         _ttype(fn.body).dtype)
    ty = _ttype(anchor)
    tail = _Tail(ty.shape[1], len(ty.shape))
    cur = anchor
    for n in order[order.index(anchor) + 1:]:
        if _is_op(n, "cast") and _attrs(n)["dtype"] == "int32" and n is not fn.body and \
                cur not in n.args:
            continue    # the residual's widening cast
        if tail.absorb(n, cur) is None:
            raise CompileError(f"{name}: cannot lower {n.op.name} in a VTA operator")
        cur = n
    out_dtype = _ttype(fn.body).dtype
    x = _ttype(anchor.args[0])
    w = anchor.args[1].data
    if anchor.op.name == "nn.dense":
        steps, consts = _finish(tail, w)
        return offset_for_init(ConvOp(name, "dense", (x.shape[0], x.shape[1], 1, 1),
                                      w.reshape(w.shape + (1, 1)), tail=steps, consts=consts,
                                      out_dtype=out_dtype))
    a = _attrs(anchor)
    from relay.op._common import pair, padding4
    return offset_for_init(ConvOp(name, "conv2d", tuple(x.shape), w,
                                  tuple(pair(a["strides"], "strides")),
                                  tuple(padding4(a["padding"])),
                                  tuple(pair(a["dilation"], "dilation")), a["groups"],
                                  *_finish(tail, w), out_dtype))
