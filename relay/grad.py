"""Automatic differentiation: a source transformation from a Relay function to a Relay function
that returns its value and the gradients with respect to its inputs.

The transformation is reverse mode with references and closures (as Relay's higher-order
gradient): every tensor value ``x`` becomes a pair ``(x, ref(dx))``; every operator call pushes a
closure onto a back-propagator reference ``%bp`` that, when run, adds the call's input gradients
into its inputs' references and then runs the previous closure.  Because the result is an
ordinary Relay program (closures, references, tuples, ADTs, recursion and all), the interpreter
runs it and the transformation can be applied again for second derivatives.
"""
from __future__ import annotations

import numpy as np

from .ir import (Call, Clause, Constant, Constructor, Function, GlobalVar, If, IRModule, Let, Match, Op,
                 PatternConstructor, PatternTuple, PatternVar, RefCreate, RefRead, RefWrite, Tuple,
                 TupleGetItem, Var, const, op_call)
from .op.registry import get_op, get_op_attr, register_op_attr
from .transform.infer_type import infer_type
from .transform.normal_form import to_a_normal_form
from .ty import FuncType, RefType, TensorType, TupleType, TypeCall, UNIT

__all__ = ["gradient", "register_gradient", "GradientError", "dual_type"]

_KEY = "FPrimalGradient"


class GradientError(ValueError):
    """The function cannot be differentiated (an operator without a gradient rule, ...)."""


def register_gradient(op_name):
    """Decorator: ``rule(args, out, grad, attrs, arg_types) -> list`` of input gradients (``None``
    for an input that gets no gradient).  ``args`` are the primal inputs, ``out`` the primal output
    and ``grad`` the gradient of the output, all Relay expressions."""
    def deco(fn):
        register_op_attr(op_name, _KEY, fn)
        return fn
    return deco


def dual_type(t):
    """The type of a value after the transformation: tensors become ``(T, ref(T))``."""
    if isinstance(t, TensorType):
        return TupleType((t, RefType(t)))
    if isinstance(t, TupleType):
        return TupleType(tuple(dual_type(f) for f in t.fields))
    if isinstance(t, FuncType):
        return FuncType(tuple(dual_type(a) for a in t.arg_types), dual_type(t.ret_type), t.type_params)
    if isinstance(t, RefType):
        return RefType(dual_type(t.value))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(dual_type(a) for a in t.args))
    return t


_BP_TYPE = RefType(FuncType((), UNIT))


def _is_float(t):
    return isinstance(t, TensorType) and t.dtype.startswith("float")


def _seq(effects, result):
    """``let _ = e1; let _ = e2; ...; result``."""
    for e in reversed(effects):
        result = Let(Var("_"), e, result)
    return result


class _Ctx:
    """Transforms the body of one function; ``bp`` is the back-propagator reference in scope."""

    def __init__(self, ad, bp):
        self.ad = ad
        self.bp = bp
        self.vars = {}

    def bind(self, v, annotate=True):
        t = v.checked_type if v.checked_type is not None else v.type_annotation
        nv = Var(v.name_hint, dual_type(t) if (annotate and t is not None) else None)
        self.vars[v] = nv
        return nv

    def expr(self, e):
        if isinstance(e, Var):
            if e not in self.vars:
                raise GradientError(f"free variable %{e.name_hint}")
            return self.vars[e]
        if isinstance(e, Constant):
            return Tuple((e, RefCreate(op_call("zeros_like", e))))
        if isinstance(e, GlobalVar):
            return self.global_value(e)
        if isinstance(e, Constructor):
            self.ad.check_adt(e)
            return e
        if isinstance(e, Let):
            nv = self.bind(e.var, annotate=isinstance(e.value, Function))
            return Let(nv, self.expr(e.value), self.expr(e.body))
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Function):
            params = [self.bind(p) for p in e.params]
            ret = dual_type(e.checked_type.ret_type) if e.checked_type is not None else None
            return Function(params, self.expr(e.body), ret, e.type_params)
        if isinstance(e, If):
            return If(TupleGetItem(self.expr(e.cond), 0), self.expr(e.true_branch), self.expr(e.false_branch))
        if isinstance(e, Tuple):
            return Tuple(tuple(self.expr(f) for f in e.fields))
        if isinstance(e, TupleGetItem):
            return TupleGetItem(self.expr(e.tuple_value), e.index)
        if isinstance(e, Match):
            clauses = [Clause(self.pattern(c.lhs), self.expr(c.rhs)) for c in e.clauses]
            return Match(self.expr(e.data), clauses, e.complete)
        if isinstance(e, RefCreate):
            return RefCreate(self.expr(e.value))
        if isinstance(e, RefRead):
            return RefRead(self.expr(e.ref))
        if isinstance(e, RefWrite):
            return RefWrite(self.expr(e.ref), self.expr(e.value))
        raise GradientError(f"cannot differentiate {type(e).__name__}")

    def pattern(self, p):
        if isinstance(p, PatternVar):
            return PatternVar(self.bind(p.var, annotate=False))
        if isinstance(p, PatternConstructor):
            self.ad.check_adt(p.constructor)
            return PatternConstructor(p.constructor, tuple(self.pattern(q) for q in p.patterns))
        if isinstance(p, PatternTuple):
            return PatternTuple(tuple(self.pattern(q) for q in p.patterns))
        return p

    def global_value(self, gv):
        """A global used as a value: a closure that passes the current ``%bp`` along."""
        fn = self.ad.mod[gv.name_hint]
        params = [Var(p.name_hint) for p in fn.params]
        return Function(params, Call(GlobalVar(self.ad.global_name(gv.name_hint)), [self.bp] + params))

    def call(self, e):
        if isinstance(e.op, GlobalVar):
            return Call(GlobalVar(self.ad.global_name(e.op.name_hint)), [self.bp] + [self.expr(a) for a in e.args])
        if isinstance(e.op, Constructor):
            self.ad.check_adt(e.op)
            return Call(e.op, [self.expr(a) for a in e.args])
        if not isinstance(e.op, Op):
            return Call(self.expr(e.op), [self.expr(a) for a in e.args])
        return self.op_call(e)

    def op_call(self, e):
        duals = [Var(f"d{i}") for i in range(len(e.args))]
        prims = [Var(f"p{i}") for i in range(len(e.args))]
        v, g = Var("v"), Var("g")
        out_t = e.checked_type
        arg_types = [a.checked_type for a in e.args]
        primal = Call(e.op, prims, e.attrs)
        rule = get_op_attr(e.op.name, _KEY)
        if isinstance(out_t, TupleType):
            if rule is not None or any(_is_float(f) for f in out_t.fields):
                raise GradientError(f"no gradient for {e.op.name}, which returns a tuple "
                                    f"(run simplify_inference first for batch_norm and dropout)")
            result = Tuple(tuple(Tuple((TupleGetItem(v, i), RefCreate(op_call("zeros_like", TupleGetItem(v, i)))))
                                 for i in range(len(out_t.fields))))
            body = result
        elif not _is_float(out_t):
            body = Tuple((v, RefCreate(op_call("zeros_like", v))))
        else:
            if rule is None:
                raise GradientError(f"no gradient rule for operator {e.op.name}")
            gv = Var("grad")
            grads = rule(prims, v, gv, get_op(e.op.name).normalize_attrs(e.attrs), arg_types)
            writes = []
            for d, gi, t in zip(duals, grads, arg_types):
                if gi is not None and _is_float(t):
                    ref = TupleGetItem(d, 1)
                    writes.append(RefWrite(ref, op_call("add", RefRead(ref), gi)))
            prev = Var("prev")
            backward = Function([], Let(gv, RefRead(g), _seq(writes, Call(prev, []))), UNIT)
            body = Let(g, RefCreate(op_call("zeros_like", v)),
                       Let(prev, RefRead(self.bp),
                           _seq([RefWrite(self.bp, backward)], Tuple((v, g)))))
        body = Let(v, primal, body)
        for d, p, a in reversed(list(zip(duals, prims, e.args))):
            body = Let(d, self.expr(a), Let(p, TupleGetItem(d, 0), body))
        return body


class _AD:
    def __init__(self, mod):
        self.mod = infer_type(to_a_normal_form(mod))
        self.names = {}
        self.todo = []
        # Fields of a concrete tensor type would change type under the transformation.
        self.concrete_adts = {td.header.name for td in self.mod.type_definitions.values()
                              for c in td.constructors for t in c.inputs
                              if any(isinstance(n, TensorType) for n in _types_in(t))}

    def check_adt(self, c):
        if c.belongs_to.name in self.concrete_adts:
            raise GradientError(f"cannot differentiate through {c.belongs_to.name}: its constructors have "
                                f"fields of a concrete tensor type (make them type parameters)")

    def global_name(self, name):
        if name not in self.names:
            if name not in self.mod.functions:
                raise GradientError(f"no global function @{name}")
            self.names[name] = f"{name}__ad"
            self.todo.append(name)
        return self.names[name]

    def transform(self, name):
        f = self.mod[name]
        bp = Var("bp", _BP_TYPE)
        ctx = _Ctx(self, bp)
        params = [ctx.bind(p) for p in f.params]
        ret = dual_type(f.checked_type.ret_type)
        return Function([bp] + params, ctx.expr(f.body), ret, f.type_params)

    def run(self):
        out = {}
        while self.todo:
            name = self.todo.pop()
            out[self.names[name]] = self.transform(name)
        return out


def _types_in(t):
    yield t
    for attr in ("fields", "arg_types", "args"):
        for s in getattr(t, attr, ()):
            yield from _types_in(s)
    for attr in ("ret_type", "value"):
        s = getattr(t, attr, None)
        if s is not None and not isinstance(s, (str, int)):
            yield from _types_in(s)


def gradient(mod: IRModule, name: str = "main", grad_name: str | None = None) -> IRModule:
    """Add ``@{name}_grad`` to ``mod``: for ``@name(x1, ..., xn) -> T`` (tensors in, a float tensor
    out) it computes ``(@name(x1, ..., xn), (dx1, ..., dxn))``, the gradients of the sum of the
    output with respect to each input.  Helper globals ``@{f}__ad`` are added for every global
    function ``@name`` reaches.

    Supported: every construct of the language (closures, recursion, references, ADTs whose
    fields are type parameters, tuples, if and match) and the operators with a gradient rule
    (``register_gradient``).  Applying ``gradient`` to a function that calls a ``_grad`` function
    gives second derivatives.
    """
    ad = _AD(mod)
    fn = ad.mod[name]
    ft = fn.checked_type
    if not _is_float(ft.ret_type):
        raise GradientError(f"@{name} must return a float tensor, not {ft.ret_type}")
    for p, t in zip(fn.params, ft.arg_types):
        if not isinstance(t, TensorType):
            raise GradientError(f"parameter %{p.name_hint} of @{name} must be a tensor, not {t}")
    inner = ad.global_name(name)
    globals_ = ad.run()
    xs = [Var(p.name_hint, t) for p, t in zip(fn.params, ft.arg_types)]
    bp = Var("bp", _BP_TYPE)
    ds = [Var(f"d_{p.name_hint}") for p in fn.params]
    r = Var("r")
    result = Tuple((TupleGetItem(r, 0), Tuple(tuple(RefRead(TupleGetItem(d, 1)) for d in ds))))
    body = _seq([RefWrite(TupleGetItem(r, 1), op_call("ones_like", TupleGetItem(r, 0))),
                 Call(RefRead(bp), [])], result)
    body = Let(r, Call(GlobalVar(inner), [bp] + ds), body)
    for x, d in reversed(list(zip(xs, ds))):
        body = Let(d, Tuple((x, RefCreate(op_call("zeros_like", x)))), body)
    body = Let(bp, RefCreate(Function([], Tuple(()), UNIT)), body)
    ret = TupleType((ft.ret_type, TupleType(tuple(ft.arg_types))))
    grad_fn = Function(xs, body, ret)
    out = mod.with_functions(globals_)
    return out.with_function(grad_name or f"{name}_grad", grad_fn)


# ---------------------------------------------------------------------------- gradient rules


def _csl(g, like):
    return op_call("collapse_sum_like", g, like)


def _zeros(x):
    return op_call("zeros_like", x)


@register_gradient("add")
def _add_grad(args, out, g, attrs, types):
    return [_csl(g, args[0]), _csl(g, args[1])]


@register_gradient("subtract")
def _sub_grad(args, out, g, attrs, types):
    return [_csl(g, args[0]), _csl(op_call("negative", g), args[1])]


@register_gradient("multiply")
def _mul_grad(args, out, g, attrs, types):
    x, y = args
    return [_csl(op_call("multiply", g, y), x), _csl(op_call("multiply", g, x), y)]


@register_gradient("divide")
def _div_grad(args, out, g, attrs, types):
    x, y = args
    return [_csl(op_call("divide", g, y), x),
            _csl(op_call("negative", op_call("divide", op_call("multiply", g, out), y)), y)]


@register_gradient("negative")
def _neg_grad(args, out, g, attrs, types):
    return [op_call("negative", g)]


@register_gradient("copy")
def _copy_grad(args, out, g, attrs, types):
    return [g]


@register_gradient("exp")
def _exp_grad(args, out, g, attrs, types):
    return [op_call("multiply", g, out)]


@register_gradient("log")
def _log_grad(args, out, g, attrs, types):
    return [op_call("divide", g, args[0])]


@register_gradient("sqrt")
def _sqrt_grad(args, out, g, attrs, types):
    return [op_call("divide", g, op_call("add", out, out))]


@register_gradient("rsqrt")
def _rsqrt_grad(args, out, g, attrs, types):
    # d/dx x^(-1/2) = -1/2 * out^3
    half = const(np.asarray(-0.5, types[0].dtype))
    return [op_call("multiply", g, op_call("multiply", half, op_call("multiply", out, op_call("multiply", out, out))))]


@register_gradient("abs")
def _abs_grad(args, out, g, attrs, types):
    return [op_call("multiply", g, op_call("sign", args[0]))]


@register_gradient("power")
def _power_grad(args, out, g, attrs, types):
    x, y = args
    dx = op_call("multiply", g, op_call("multiply", y, op_call("divide", out, x)))
    dy = op_call("multiply", g, op_call("multiply", out, op_call("log", x)))
    return [_csl(dx, x), _csl(dy, y)]


@register_gradient("nn.leaky_relu")
def _leaky_relu_grad(args, out, g, attrs, types):
    x = args[0]
    alpha = const(np.asarray(attrs["alpha"], types[0].dtype))
    return [op_call("where", op_call("greater", x, _zeros(x)), g, op_call("multiply", g, alpha))]


@register_gradient("tanh")
def _tanh_grad(args, out, g, attrs, types):
    return [op_call("multiply", g, op_call("subtract", op_call("ones_like", out), op_call("multiply", out, out)))]


@register_gradient("sigmoid")
def _sigmoid_grad(args, out, g, attrs, types):
    one_minus = op_call("subtract", op_call("ones_like", out), out)
    return [op_call("multiply", g, op_call("multiply", out, one_minus))]


@register_gradient("nn.relu")
def _relu_grad(args, out, g, attrs, types):
    x = args[0]
    return [op_call("where", op_call("greater", x, _zeros(x)), g, _zeros(g))]


@register_gradient("maximum")
def _max_grad(args, out, g, attrs, types):
    x, y = args
    take_x = op_call("greater_equal", x, y)
    return [_csl(op_call("where", take_x, g, _zeros(g)), x), _csl(op_call("where", take_x, _zeros(g), g), y)]


@register_gradient("minimum")
def _min_grad(args, out, g, attrs, types):
    x, y = args
    take_x = op_call("less_equal", x, y)
    return [_csl(op_call("where", take_x, g, _zeros(g)), x), _csl(op_call("where", take_x, _zeros(g), g), y)]


@register_gradient("where")
def _where_grad(args, out, g, attrs, types):
    c, x, y = args
    return [None, _csl(op_call("where", c, g, _zeros(g)), x), _csl(op_call("where", c, _zeros(g), g), y)]


@register_gradient("clip")
def _clip_grad(args, out, g, attrs, types):
    x = args[0]
    dt = types[0].dtype
    inside = op_call("logical_and", op_call("greater_equal", x, const(np.asarray(attrs["a_min"], dt))),
                     op_call("less_equal", x, const(np.asarray(attrs["a_max"], dt))))
    return [op_call("where", inside, g, _zeros(g))]


@register_gradient("collapse_sum_like")
def _csl_grad(args, out, g, attrs, types):
    return [op_call("broadcast_to_like", g, args[0]), None]


@register_gradient("broadcast_to_like")
def _btl_grad(args, out, g, attrs, types):
    return [_csl(g, args[0]), None]


@register_gradient("cast")
def _cast_grad(args, out, g, attrs, types):
    return [op_call("cast", g, dtype=types[0].dtype)]


def _reshape_back(g, t):
    return op_call("reshape", g, newshape=list(t.shape))


for _name in ("reshape", "squeeze", "expand_dims", "nn.batch_flatten"):
    register_gradient(_name)(lambda args, out, g, attrs, types: [_reshape_back(g, types[0])])


@register_gradient("transpose")
def _transpose_grad(args, out, g, attrs, types):
    n = types[0].ndim
    axes = list(attrs.get("axes") or reversed(range(n)))
    axes = [a % n for a in axes]
    inverse = [axes.index(i) for i in range(n)]
    return [op_call("transpose", g, axes=inverse)]


def _reduced_axes(attrs, t):
    axis = attrs.get("axis")
    axes = list(range(t.ndim)) if axis is None else [a % t.ndim for a in ([axis] if isinstance(axis, int) else axis)]
    if attrs.get("exclude"):
        axes = [i for i in range(t.ndim) if i not in axes]
    return axes


def _unreduce(g, attrs, t):
    axes = _reduced_axes(attrs, t)
    keep = [1 if i in axes else d for i, d in enumerate(t.shape)]
    return op_call("reshape", g, newshape=keep), axes


@register_gradient("sum")
def _sum_grad(args, out, g, attrs, types):
    gk, _ = _unreduce(g, attrs, types[0])
    return [op_call("broadcast_to_like", gk, args[0])]


@register_gradient("mean")
def _mean_grad(args, out, g, attrs, types):
    t = types[0]
    gk, axes = _unreduce(g, attrs, t)
    count = int(np.prod([t.shape[a] for a in axes])) if axes else 1
    scaled = op_call("multiply", gk, const(np.asarray(1.0 / count, t.dtype)))
    return [op_call("broadcast_to_like", scaled, args[0])]


@register_gradient("nn.dense")
def _dense_grad(args, out, g, attrs, types):
    x, w = args
    if types[0].ndim != 2:
        raise GradientError("the nn.dense gradient needs 2-D data")
    return [op_call("nn.dense", g, op_call("transpose", w)),
            op_call("nn.dense", op_call("transpose", g), op_call("transpose", x))]


@register_gradient("nn.bias_add")
def _bias_add_grad(args, out, g, attrs, types):
    t = types[0]
    axis = attrs.get("axis", 1) % t.ndim
    return [g, op_call("sum", g, axis=[axis], exclude=True)]


@register_gradient("nn.softmax")
def _softmax_grad(args, out, g, attrs, types):
    axis = attrs.get("axis", -1)
    dot = op_call("sum", op_call("multiply", g, out), axis=[axis], keepdims=True)
    return [op_call("multiply", out, op_call("subtract", g, dot))]


@register_gradient("nn.log_softmax")
def _log_softmax_grad(args, out, g, attrs, types):
    axis = attrs.get("axis", -1)
    total = op_call("sum", g, axis=[axis], keepdims=True)
    return [op_call("subtract", g, op_call("multiply", op_call("exp", out), total))]


for _name in ("zeros_like", "ones_like", "zeros", "ones", "round", "floor", "ceil", "sign"):
    # piecewise-constant (or constant) operators: their inputs get no gradient
    register_gradient(_name)(lambda args, out, g, attrs, types: [None] * len(args))


def _conv_attrs(attrs):
    return {k: attrs.get(k, d) for k, d in (("strides", (1, 1)), ("padding", (0, 0)), ("dilation", (1, 1)),
                                            ("groups", 1))}


@register_gradient("nn.conv2d")
def _conv2d_grad(args, out, g, attrs, types):
    x, w = args
    if attrs.get("data_layout", "NCHW") != "NCHW" or attrs.get("kernel_layout", "OIHW") != "OIHW" \
            or attrs.get("out_layout", "") not in ("", "NCHW") or attrs.get("out_dtype"):
        raise GradientError("the nn.conv2d gradient supports NCHW/OIHW without out_dtype")
    a = _conv_attrs(attrs)
    return [op_call("nn.conv2d_grad_data", g, w, x, **a), op_call("nn.conv2d_grad_weight", g, x, w, **a)]


@register_gradient("nn.conv2d_transpose")
def _conv2d_transpose_grad(args, out, g, attrs, types):
    # conv2d_transpose is the adjoint of conv2d in its data, so its data gradient is that conv2d
    # (the IOHW weight read as OIHW), and its weight gradient is conv2d's weight gradient with
    # the roles of data and output exchanged.
    x, w = args
    if attrs.get("out_dtype"):
        raise GradientError("the nn.conv2d_transpose gradient supports no out_dtype")
    a = _conv_attrs(attrs)
    return [op_call("nn.conv2d", g, w, **a), op_call("nn.conv2d_grad_weight", x, g, w, **a)]


def _pool_grad(kind):
    def rule(args, out, g, attrs, types):
        if attrs.get("layout", "NCHW") != "NCHW":
            raise GradientError(f"the nn.{kind}_pool2d gradient supports NCHW only")
        keys = ("pool_size", "strides", "dilation", "padding", "ceil_mode") + (
            ("count_include_pad",) if kind == "avg" else ())
        a = {k: attrs[k] for k in keys if k in attrs}
        return [op_call("nn.pool2d_grad", g, out, args[0], pool_type=kind, **a)]
    return rule


register_gradient("nn.max_pool2d")(_pool_grad("max"))
register_gradient("nn.avg_pool2d")(_pool_grad("avg"))


@register_gradient("nn.global_avg_pool2d")
def _global_avg_pool_grad(args, out, g, attrs, types):
    t = types[0]
    if attrs.get("layout", "NCHW") != "NCHW":
        raise GradientError("the nn.global_avg_pool2d gradient supports NCHW only")
    scale = const(np.asarray(1.0 / (t.shape[2] * t.shape[3]), t.dtype))
    return [op_call("broadcast_to_like", op_call("multiply", g, scale), args[0])]


# ---------------------------------------------------------------- rules of the frontend operators


def _swap_last(x, ndim):
    axes = list(range(ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return op_call("transpose", x, axes=axes)


@register_gradient("nn.matmul")
def _matmul_grad(args, out, g, attrs, types):
    a, b = args
    ta, tb = types[0], types[1]
    if ta.ndim < 2 or tb.ndim < 2:
        raise GradientError("the nn.matmul gradient needs operands of rank >= 2")
    return [_csl(op_call("nn.matmul", g, _swap_last(b, tb.ndim)), a),
            _csl(op_call("nn.matmul", _swap_last(a, ta.ndim), g), b)]


@register_gradient("strided_slice")
def _strided_slice_grad(args, out, g, attrs, types):
    """Unit strides only: the gradient is the output gradient padded back to the input's shape."""
    t = types[0]
    if attrs.get("strides") and any(s != 1 for s in attrs["strides"]):
        raise GradientError("the strided_slice gradient needs unit strides")
    width = [[0, 0] for _ in range(t.ndim)]
    axes = attrs.get("axes") if attrs.get("axes") is not None else range(len(attrs["begin"]))
    for b, e, a in zip(attrs["begin"], attrs["end"], axes):
        a %= t.ndim
        lo, hi, _ = slice(b, e).indices(t.shape[a])
        width[a] = [lo, t.shape[a] - max(hi, lo)]
    return [op_call("nn.pad", g, pad_width=width)]


def _along_last(x, axis, ndim, matrix):
    """``x`` with its ``axis`` multiplied by the constant ``matrix`` (``y[..., j] = sum_i
    x[..., i] * matrix[i, j]`` along that axis), as transpose, nn.matmul, transpose."""
    perm = [a for a in range(ndim) if a != axis] + [axis]
    back = list(np.argsort(perm))
    y = op_call("nn.matmul", op_call("transpose", x, axes=perm), Constant(matrix))
    return op_call("transpose", y, axes=[int(a) for a in back])


@register_gradient("image.resize2d")
def _resize2d_grad(args, out, g, attrs, types):
    """Nearest neighbour copies input pixels: ``y = R x C^T`` with one-hot row and column
    selections (the kernel's own ``nearest_index``), so ``dx = R^T g C``."""
    from .op._common import pair
    from .op.image import nearest_index
    t = types[0]
    oh, ow = pair(attrs["size"], "size")
    sh, sw = attrs["scale"] if attrs.get("scale") is not None else (None, None)
    mode, rnd = attrs["coordinate_transformation_mode"], attrs["rounding_method"]
    rows = nearest_index(t.shape[2], oh, mode, rnd, sh)
    cols = nearest_index(t.shape[3], ow, mode, rnd, sw)
    r = np.zeros((t.shape[2], oh), t.dtype)
    r[rows, np.arange(oh)] = 1
    c = np.zeros((ow, t.shape[3]), t.dtype)
    c[np.arange(ow), cols] = 1
    return [op_call("nn.matmul", op_call("nn.matmul", Constant(r), g), Constant(c))]


@register_gradient("nn.lrn")
def _lrn_grad(args, out, g, attrs, types):
    """``y = x d^-b`` with ``d = k + a/n S(x^2)``, ``S`` the window sum over channels (a band
    matrix, the kernel's window): ``dx = g d^-b - 2 b a/n x S^T(g x d^(-b-1))``."""
    (x,), t = args, types[0]
    axis, n = attrs["axis"] % t.ndim, attrs["size"]
    lo, hi = (n - 1) // 2, n // 2
    ch = np.arange(t.shape[axis])
    band = ((ch[None, :] >= ch[:, None] - lo) & (ch[None, :] <= ch[:, None] + hi)).astype(t.dtype)

    def scalar(v):
        return Constant(np.asarray(v, t.dtype))
    # band[c, c'] = 1 where channel c's window holds c': S v = v @ band^T along the axis.
    d = op_call("add", scalar(attrs["bias"]), op_call(
        "multiply", scalar(attrs["alpha"] / n),
        _along_last(op_call("multiply", x, x), axis, t.ndim, np.ascontiguousarray(band.T))))
    direct = op_call("multiply", g, op_call("power", d, scalar(-attrs["beta"])))
    inner = op_call("multiply", op_call("multiply", g, x), op_call("power", d, scalar(-attrs["beta"] - 1)))
    through_d = op_call("multiply", scalar(2 * attrs["beta"] * attrs["alpha"] / n),
                        op_call("multiply", x, _along_last(inner, axis, t.ndim, band)))
    return [op_call("subtract", direct, through_d)]


@register_gradient("take")
def _take_grad(args, out, g, attrs, types):
    """A scatter-add of ``g`` into zeros at the indices, normalised as the kernel does (``wrap``
    takes them modulo the axis, ``clip`` and ``fast`` clamp them, negatives included): ``g`` with
    the indices' axes flattened to ``k`` times the one-hot ``onehot[k, j] = (index_k == j)``, so
    repeated indices add.  The indices get no gradient."""
    from .op._common import known
    x, idx = args
    t, it = types[0], types[1]
    if not all(known(d) for d in t.shape + it.shape):
        raise GradientError("the take gradient needs static shapes")
    if attrs["axis"] is None:
        pre, n, post = 1, int(np.prod(t.shape, dtype=np.int64)), 1
    else:
        axis = attrs["axis"] % t.ndim
        pre, n, post = (int(np.prod(s, dtype=np.int64)) for s in (t.shape[:axis], t.shape[axis], t.shape[axis + 1:]))
    k = int(np.prod(it.shape, dtype=np.int64))
    if 0 in (pre, n, post, k):
        return [_zeros(x), None]     # nothing taken (and reshape would read a 0 as "keep")
    i = op_call("reshape", op_call("cast", idx, dtype="int64"), newshape=[k, 1])   # int64 as the kernel
    if attrs["mode"] == "wrap":
        # floor modulo from the C-truncating divide: r = i - n trunc(i / n), plus n where negative
        size = const(np.asarray(n, "int64"))
        r = op_call("subtract", i, op_call("multiply", size, op_call("divide", i, size)))
        i = op_call("where", op_call("less", r, const(np.asarray(0, "int64"))), op_call("add", r, size), r)
    else:
        i = op_call("clip", i, a_min=0, a_max=n - 1)
    onehot = op_call("cast", op_call("equal", i, Constant(np.arange(n, dtype="int64"))), dtype=types[0].dtype)
    flat = op_call("transpose", op_call("reshape", g, newshape=[pre, k, post]), axes=[0, 2, 1])
    dx = op_call("transpose", op_call("nn.matmul", flat, onehot), axes=[0, 2, 1])
    return [op_call("reshape", dx, newshape=list(t.shape)), None]
