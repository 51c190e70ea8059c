"""CPU segments compiled to machine code with llvmlite: LLVM IR generated here, JIT-compiled
when a model is loaded.

Every segment becomes one function ``void f(i8** inputs, i8* out)`` looping over its output:

* ``pack`` / ``unpack``: NCHW <-> the packed layout (zero padding of batch and channels), and
  the four byte planes of an int32 VTA result recombined; ``unfold``: a shallow stem's kernel
  columns moved into its channels (``operators.fold_columns``);
* ``relay`` segments of ``nn.conv2d`` (NCHW/OIHW, groups), ``nn.dense`` and ``nn.softmax``
  (float or integer data VTA does not take, e.g. a float stem or classifier), of element-wise
  and broadcasting operators, ``concatenate`` (integer and float32:
  quantisation ``multiply``/``round``/``clip``/``cast`` and dequantisation at the edges, shifts,
  bias adds, ``where``-free arithmetic), layout operators (``reshape``, ``nn.batch_flatten``,
  ``squeeze``, ``expand_dims``, ``transpose``) and pooling (``nn.max_pool2d``,
  ``nn.avg_pool2d`` with any padding mode and ``ceil_mode``, ``nn.global_avg_pool2d`` /
  ``nn.global_max_pool2d``) that VTA does not run.

Arithmetic follows the Relay interpreter exactly (float convolution, dense and softmax to
rounding: numpy sums in another order): integers wrap, shifts are arithmetic (by an amount
outside [0, bits): the sign fill, or 0 to the left),
``cast`` truncates, ``round`` rounds half away from zero, average pools divide in float64 and
truncate. A Relay operator outside this list runs in the Relay interpreter, and the report
says so (``"interpreted": true``).
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from .packing import pack_activation, planes_to_int32, unpack_activation

__all__ = ["CpuLibrary", "run_cpu_segment", "supported"]

_LOCK = threading.Lock()
_READY = False


def _llvm():
    """llvmlite's binding and a fresh target machine (an execution engine owns the one it is
    given, so each library gets its own)."""
    global _READY
    import llvmlite.binding as llvm
    with _LOCK:
        if not _READY:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _READY = True
    return llvm, llvm.Target.from_default_triple().create_target_machine(opt=2)


def _ir():
    import llvmlite.ir as ir
    return ir


_ELEMWISE = {"add", "subtract", "multiply", "divide", "right_shift", "left_shift", "maximum",
             "minimum", "negative", "abs", "clip", "cast", "nn.relu", "round", "floor", "ceil",
             "nn.bias_add", "copy"}
_LAYOUT = {"reshape", "nn.batch_flatten", "squeeze", "expand_dims", "transpose"}
_POOLS = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d"}
# Reductions whose float results depend on the summation order: equal to the interpreter's
# for integers, to rounding for floats (numpy's BLAS sums in another order).
_REDUCTIONS = {"nn.conv2d", "nn.dense", "nn.softmax"}
_DTYPES = ("int8", "uint8", "int32", "int64", "float32", "float64")


def supported(seg) -> bool:
    """True if ``seg`` compiles to LLVM (else it runs in the Relay interpreter)."""
    if seg.kind != "relay":
        return True
    from relay.ir import Call, Constant, Op, Var
    body = seg.function.body
    if not (isinstance(body, Call) and isinstance(body.op, Op)):
        return False
    name = body.op.name
    types = [t for a in body.args for t in (
        [f.checked_type for f in a.fields] if hasattr(a, "fields") else [a.checked_type])]
    types.append(body.checked_type)
    if any(getattr(t, "dtype", None) not in _DTYPES for t in types):
        return False
    if any(not all(isinstance(d, int) for d in t.shape) for t in types):
        return False
    if name == "concatenate":
        fields = body.args[0]
        from relay.ir import Tuple
        return isinstance(fields, Tuple) and all(isinstance(f, Var) for f in fields.fields) \
            and all(f.checked_type.dtype == types[-1].dtype for f in fields.fields)
    if not all(isinstance(a, (Var, Constant)) for a in body.args):
        return False
    if name in _POOLS:
        a = _attrs(body)
        return a["layout"] == "NCHW" and len(types[0].shape) == 4
    if name == "nn.conv2d":
        a = _attrs(body)
        return (a["data_layout"] == "NCHW" and a["kernel_layout"] == "OIHW"
                and a.get("out_layout", "") in ("", "NCHW"))
    if name == "nn.dense":
        return len(types[0].shape) == 2
    if name == "nn.softmax":
        return types[0].dtype.startswith("float")
    return name in _ELEMWISE or name in _LAYOUT


def _attrs(call):
    from relay.op import get_op
    return get_op(call.op.name).normalize_attrs(call.attrs)


class _Gen:
    """Helpers over one LLVM function being generated."""

    def __init__(self, module, name: str):
        ir = _ir()
        self.ir = ir
        self.i8p = ir.PointerType(ir.IntType(8))
        fnty = ir.FunctionType(ir.VoidType(), [ir.PointerType(self.i8p), self.i8p])
        self.fn = ir.Function(module, fnty, name)
        self.module = module
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.i64 = ir.IntType(64)

    def c64(self, v: int):
        return self.ir.Constant(self.i64, int(v))

    def ty(self, dtype: str):
        ir = self.ir
        return {"int8": ir.IntType(8), "uint8": ir.IntType(8), "int32": ir.IntType(32),
                "int64": ir.IntType(64), "float32": ir.FloatType(),
                "float64": ir.DoubleType(), "bool": ir.IntType(1)}[dtype]

    def arg_ptr(self, k: int, dtype: str):
        b = self.b
        raw = b.load(b.gep(self.fn.args[0], [self.c64(k)]))
        return b.bitcast(raw, self.ir.PointerType(self.ty(dtype)))

    def out_ptr(self, dtype: str):
        return self.b.bitcast(self.fn.args[1], self.ir.PointerType(self.ty(dtype)))

    def load(self, ptr, off):
        return self.b.load(self.b.gep(ptr, [off]))

    def store(self, value, ptr, off):
        self.b.store(value, self.b.gep(ptr, [off]))

    def loop(self, n, body) -> None:
        """for i in range(n): body(i) — ``n`` a Python int or an i64 value."""
        b = self.b
        with b.goto_block(self.entry):
            b.position_at_start(self.entry)
            ptr = b.alloca(self.i64)
        b.store(self.c64(0), ptr)
        cond = self.fn.append_basic_block()
        body_bb = self.fn.append_basic_block()
        done = self.fn.append_basic_block()
        b.branch(cond)
        b.position_at_end(cond)
        i = b.load(ptr)
        limit = self.c64(n) if isinstance(n, int) else n
        b.cbranch(b.icmp_signed("<", i, limit), body_bb, done)
        b.position_at_end(body_bb)
        body(i)
        b.store(b.add(b.load(ptr), self.c64(1)), ptr)
        b.branch(cond)
        b.position_at_end(done)

    def unravel(self, i, shape):
        """Multi-index of the linear index ``i`` over ``shape`` (row-major)."""
        idx = []
        for d in reversed(shape):
            idx.append(self.b.srem(i, self.c64(d)))
            i = self.b.sdiv(i, self.c64(d))
        return idx[::-1]

    def offset(self, idx, strides):
        b = self.b
        off = self.c64(0)
        for x, s in zip(idx, strides):
            if s:
                off = b.add(off, b.mul(x, self.c64(s)))
        return off

    def convert(self, v, src: str, dst: str):
        """numpy's ``astype`` for these dtypes (wrapping / truncating)."""
        b, ir = self.b, self.ir
        if src == dst:
            return v
        ts, td = self.ty(src), self.ty(dst)
        sf, df = src.startswith("float"), dst.startswith("float")
        if sf and df:
            return b.fpext(v, td) if ts.intrinsic_name == "f32" and dst == "float64" \
                else b.fptrunc(v, td)
        if sf:
            return b.fptosi(v, td)
        if df:
            return b.uitofp(v, td) if src == "uint8" else b.sitofp(v, td)
        if ts.width > td.width:
            return b.trunc(v, td)
        if ts.width < td.width:
            return b.zext(v, td) if src == "uint8" else b.sext(v, td)
        return v


def _strides(shape) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


def _broadcast_strides(shape, out_shape) -> list[int]:
    """Strides of an input of ``shape`` read at the output's multi-index (numpy broadcast)."""
    st = _strides(shape)
    pad = len(out_shape) - len(shape)
    res = [0] * pad
    for d, s in zip(shape, st):
        res.append(0 if d == 1 else s)
    return res


# ---------------------------------------------------------------------------- generators

def _gen_pack(g: _Gen, seg) -> None:
    a = seg.attrs
    n, c, h, w = a["shape"]
    bt, blk = a["batch"], a["block"]
    nb, cb = -(-n // bt), -(-c // blk)
    out_shape = (nb, cb, h, w, bt, blk)
    src, dst = g.arg_ptr(0, "int8"), g.out_ptr("int8")
    b = g.b

    def body(i):
        xb, xc, y, x, ib, ic = g.unravel(i, out_shape)
        nn = b.add(b.mul(xb, g.c64(bt)), ib)
        cc = b.add(b.mul(xc, g.c64(blk)), ic)
        ok = b.and_(b.icmp_signed("<", nn, g.c64(n)), b.icmp_signed("<", cc, g.c64(c)))
        off = g.offset([nn, cc, y, x], _strides((n, c, h, w)))
        off = b.select(ok, off, g.c64(0))
        v = g.load(src, off)
        g.store(b.select(ok, v, g.ir.Constant(g.ty("int8"), 0)), dst, i)
    g.loop(int(np.prod(out_shape)), body)


def _gen_unfold(g: _Gen, seg) -> None:
    """x'[n, c kw + q, y, j] = x[n, c, y, j sw + q dw - pad_left] (0 outside)."""
    a = seg.attrs
    n, c, h, w = a["in_shape"]
    kw, ow = a["kw"], a["out_w"]
    src, dst = g.arg_ptr(0, "int8"), g.out_ptr("int8")
    b = g.b

    def body(i):
        nn, cq, y, j = g.unravel(i, (n, c * kw, h, ow))
        cc, q = b.sdiv(cq, g.c64(kw)), b.srem(cq, g.c64(kw))
        x = b.sub(b.add(b.mul(j, g.c64(a["sw"])), b.mul(q, g.c64(a["dw"]))),
                  g.c64(a["pad_left"]))
        ok = b.and_(b.icmp_signed(">=", x, g.c64(0)), b.icmp_signed("<", x, g.c64(w)))
        off = b.select(ok, g.offset([nn, cc, y, x], _strides((n, c, h, w))), g.c64(0))
        g.store(b.select(ok, g.load(src, off), g.ir.Constant(g.ty("int8"), 0)), dst, i)
    g.loop(n * c * kw * h * ow, body)


def _gen_unpack(g: _Gen, seg, in_shape) -> None:
    a = seg.attrs
    shape = a["shape"]
    n, c = shape[0], shape[1]
    planes = a["planes"]
    packed = in_shape[1:] if planes else in_shape
    nb, cb, h, w, bt, blk = packed
    plane = int(np.prod(packed))
    src = g.arg_ptr(0, "int8")
    dst = g.out_ptr("int32" if planes else "int8")
    b = g.b
    total = n * c * h * w

    def body(i):
        nn, cc, y, x = g.unravel(i, (n, c, h, w))
        idx = [b.sdiv(nn, g.c64(bt)), b.sdiv(cc, g.c64(blk)), y, x, b.srem(nn, g.c64(bt)),
               b.srem(cc, g.c64(blk))]
        off = g.offset(idx, _strides(packed))
        if not planes:
            g.store(g.load(src, off), dst, i)
            return
        i32 = g.ty("int32")
        acc = g.ir.Constant(i32, 0)
        for k in range(4):
            byte = b.zext(g.load(src, b.add(off, g.c64(k * plane))), i32)
            acc = b.or_(acc, b.shl(byte, g.ir.Constant(i32, 8 * k)))
        g.store(acc, dst, i)
    g.loop(total, body)


def _gen_layout(g: _Gen, call) -> None:
    t_in, t_out = call.args[0].checked_type, call.checked_type
    src, dst = g.arg_ptr(0, t_in.dtype), g.out_ptr(t_out.dtype)
    total = int(np.prod(t_out.shape, dtype=np.int64))
    if call.op.name != "transpose":
        g.loop(total, lambda i: g.store(g.load(src, i), dst, i))
        return
    axes = _attrs(call)["axes"]
    n = len(t_in.shape)
    axes = list(reversed(range(n))) if axes is None else [x % n for x in axes]
    st = _strides(t_in.shape)
    perm = [st[a] for a in axes]
    g.loop(total, lambda i: g.store(g.load(src, g.offset(g.unravel(i, t_out.shape), perm)),
                                   dst, i))


def _gen_concatenate(g: _Gen, call) -> None:
    """Each output element from the input that holds its coordinate along the axis."""
    b = g.b
    t_out = call.checked_type
    out_shape = tuple(t_out.shape)
    axis = _attrs(call)["axis"] % len(out_shape)
    shapes = [tuple(f.checked_type.shape) for f in call.args[0].fields]
    ptrs = [g.arg_ptr(k, t_out.dtype) for k in range(len(shapes))]
    dst = g.out_ptr(t_out.dtype)
    starts = np.cumsum([0] + [sh[axis] for sh in shapes])

    def body(i):
        idx = g.unravel(i, out_shape)
        j = idx[axis]
        ptr, off = ptrs[-1], None
        for k in reversed(range(len(shapes))):
            local = list(idx)
            local[axis] = b.sub(j, g.c64(int(starts[k])))
            off_k = g.offset(local, _strides(shapes[k]))
            if off is None:
                off = off_k
                continue
            inside = b.icmp_signed("<", j, g.c64(int(starts[k + 1])))
            ptr, off = b.select(inside, ptrs[k], ptr), b.select(inside, off_k, off)
        g.store(g.load(ptr, off), dst, i)
    g.loop(int(np.prod(out_shape, dtype=np.int64)), body)


def _shift(g: _Gen, name, vals, dtype):
    """``x >> n`` / ``x << n`` as the interpreter (numpy) computes them for every ``n``: an amount
    outside [0, bits) (negative ones too) gives the sign fill / 0. LLVM's ``ashr``/``shl`` by such
    an amount is poison (any value): the amount is clamped, the result selected."""
    b, ir = g.b, g.ir
    x, n = vals
    ty = g.ty(dtype)
    bits = ir.Constant(ty, ty.width)
    inside = b.icmp_unsigned("<", n, bits)
    safe = b.select(inside, n, ir.Constant(ty, ty.width - 1))
    if name == "left_shift":
        return b.select(inside, b.shl(x, safe), ir.Constant(ty, 0))
    if dtype == "uint8":
        return b.select(inside, b.lshr(x, safe), ir.Constant(ty, 0))
    return b.ashr(x, safe)      # by bits - 1: the sign fill


def _scalar_op(g: _Gen, name, attrs, vals, dtype):
    b, ir = g.b, g.ir
    fl = dtype.startswith("float")
    ty = g.ty(dtype)
    if name in ("add", "nn.bias_add"):
        return b.fadd(*vals) if fl else b.add(*vals)
    if name == "subtract":
        return b.fsub(*vals) if fl else b.sub(*vals)
    if name == "multiply":
        return b.fmul(*vals) if fl else b.mul(*vals)
    if name == "divide":
        return b.fdiv(*vals) if fl else b.sdiv(*vals)
    if name in ("right_shift", "left_shift"):
        return _shift(g, name, vals, dtype)
    if name in ("maximum", "minimum"):
        x, y = vals
        if fl:
            cmp = b.fcmp_ordered(">" if name == "maximum" else "<", x, y)
        else:
            cmp = b.icmp_signed(">" if name == "maximum" else "<", x, y)
        return b.select(cmp, x, y)
    x = vals[0]
    if name == "nn.relu":
        zero = ir.Constant(ty, 0.0 if fl else 0)
        return b.select(b.fcmp_ordered(">", x, zero) if fl else b.icmp_signed(">", x, zero),
                        x, zero)
    if name == "negative":
        return b.fneg(x) if fl else b.neg(x)
    if name == "abs":
        if fl:
            return b.call(g.module.declare_intrinsic("llvm.fabs", [ty]), [x])
        return b.select(b.icmp_signed("<", x, ir.Constant(ty, 0)), b.neg(x), x)
    if name in ("round", "floor", "ceil"):
        if not fl:
            return x
        return b.call(g.module.declare_intrinsic(f"llvm.{name}", [ty]), [x])
    if name == "copy":
        return x
    if name == "clip":
        lo, hi = attrs["a_min"], attrs["a_max"]
        if fl:
            lo_c, hi_c = ir.Constant(ty, float(lo)), ir.Constant(ty, float(hi))
            x = b.select(b.fcmp_ordered("<", x, lo_c), lo_c, x)
            return b.select(b.fcmp_ordered(">", x, hi_c), hi_c, x)
        bits = ty.width
        lim = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype != "uint8" else (0, 255)
        lo_i = int(max(lim[0], min(lim[1], math.ceil(lo))))
        hi_i = int(max(lim[0], min(lim[1], math.floor(hi))))
        x = b.select(b.icmp_signed("<", x, ir.Constant(ty, lo_i)), ir.Constant(ty, lo_i), x)
        return b.select(b.icmp_signed(">", x, ir.Constant(ty, hi_i)), ir.Constant(ty, hi_i), x)
    raise NotImplementedError(name)


def _gen_elemwise(g: _Gen, call, inputs) -> None:
    """One loop over the output; each operand read through broadcast strides."""
    from relay.ir import Constant
    t_out = call.checked_type
    name = call.op.name
    attrs = _attrs(call)
    out_shape = tuple(t_out.shape)
    operands = []
    k = 0
    for a in call.args:
        t = a.checked_type
        shape = tuple(t.shape)
        if name == "nn.bias_add" and a is call.args[1]:
            axis = attrs["axis"] % len(out_shape)
            shape = tuple(out_shape[d] if d == axis else 1 for d in range(len(out_shape)))
        if isinstance(a, Constant):
            data = np.ascontiguousarray(a.data)
            gv = g.ir.GlobalVariable(g.module, g.ir.ArrayType(g.ty(t.dtype), max(1, data.size)),
                                     name=f"{g.fn.name}_c{len(operands)}")
            gv.global_constant = True
            flat = data.reshape(-1).tolist() or [0]
            gv.initializer = g.ir.Constant(gv.value_type, [
                g.ir.Constant(g.ty(t.dtype), float(v) if t.dtype.startswith("float") else int(v))
                for v in flat])
            ptr = g.b.bitcast(gv, g.ir.PointerType(g.ty(t.dtype)))
        else:
            ptr = g.arg_ptr(k, t.dtype)
            k += 1
        operands.append((ptr, _broadcast_strides(shape, out_shape), t.dtype))
    dst = g.out_ptr(t_out.dtype)
    in_dtype = call.args[0].checked_type.dtype

    def body(i):
        idx = g.unravel(i, out_shape) if out_shape else []
        vals = [g.load(p, g.offset(idx, st)) for p, st, _ in operands]
        if name == "cast":
            v = g.convert(vals[0], in_dtype, t_out.dtype)
        else:
            v = _scalar_op(g, name, attrs, vals, in_dtype)
        g.store(v, dst, i)
    g.loop(int(np.prod(out_shape, dtype=np.int64)), body)


def _window_index(g: _Gen, out, k, stride: int, dilation: int, pad: int, size: int):
    """The input coordinate ``out * stride + k * dilation - pad`` of window tap ``k`` of output
    position ``out`` (pools and convolutions), and whether it lies inside [0, size)."""
    b = g.b
    i = b.sub(b.add(b.mul(out, g.c64(stride)), b.mul(k, g.c64(dilation))), g.c64(pad))
    return i, b.and_(b.icmp_signed(">=", i, g.c64(0)), b.icmp_signed("<", i, g.c64(size)))


def _gen_pool(g: _Gen, call) -> None:
    """Relay's pooling: max over valid window elements; average = float64 sum / count, cast."""
    from relay.op._common import pair, padding4
    b, ir = g.b, g.ir
    t_in, t_out = call.args[0].checked_type, call.checked_type
    n, c, h, w = t_in.shape
    _, _, oh, ow = t_out.shape
    name = call.op.name
    a = _attrs(call)
    if name.startswith("nn.global"):
        kh, kw, sh, sw, dh, dw, pt, pl, pb, pr = h, w, 1, 1, 1, 1, 0, 0, 0, 0
        include = True
    else:
        (kh, kw), (sh, sw) = pair(a["pool_size"], "pool_size"), pair(a["strides"], "strides")
        dh, dw = pair(a["dilation"], "dilation")
        pt, pl, pb, pr = padding4(a["padding"])
        include = bool(a.get("count_include_pad", False))
    is_max = "max" in name
    dt = t_in.dtype
    fl = dt.startswith("float")
    src, dst = g.arg_ptr(0, dt), g.out_ptr(dt)
    ty = g.ty(dt)
    acc_ty = ty if is_max else ir.DoubleType()
    acc_ptr = None
    with b.goto_block(g.entry):
        b.position_at_start(g.entry)
        acc_ptr = b.alloca(acc_ty)
        cnt_ptr = b.alloca(g.i64)
    if is_max:
        init = ir.Constant(ty, float("-inf")) if fl else ir.Constant(
            ty, -(1 << (ty.width - 1)) if dt != "uint8" else 0)
    else:
        init = ir.Constant(acc_ty, 0.0)

    def body(i):
        nn, cc, oy, ox = g.unravel(i, (n, c, oh, ow))
        b.store(init, acc_ptr)
        b.store(g.c64(0), cnt_ptr)
        plane = b.mul(b.add(b.mul(nn, g.c64(c)), cc), g.c64(h * w))

        def row(ky):
            y, y_in = _window_index(g, oy, ky, sh, dh, pt, h)

            def col(kx):
                x, x_in = _window_index(g, ox, kx, sw, dw, pl, w)
                inside = b.and_(y_in, x_in)
                # the count of Relay's kernel: padded area (include) or the input itself
                if include:
                    counted = b.and_(b.and_(b.icmp_signed(">=", y, g.c64(-pt)),
                                            b.icmp_signed("<", y, g.c64(h + pb))),
                                     b.and_(b.icmp_signed(">=", x, g.c64(-pl)),
                                            b.icmp_signed("<", x, g.c64(w + pr))))
                else:
                    counted = inside
                b.store(b.add(b.load(cnt_ptr), b.zext(counted, g.i64)), cnt_ptr)
                with b.if_then(inside):
                    v = g.load(src, b.add(plane, b.add(b.mul(y, g.c64(w)), x)))
                    cur = b.load(acc_ptr)
                    if is_max:
                        gt = b.fcmp_ordered(">", v, cur) if fl else (
                            b.icmp_unsigned(">", v, cur) if dt == "uint8"
                            else b.icmp_signed(">", v, cur))
                        b.store(b.select(gt, v, cur), acc_ptr)
                    else:
                        vd = g.convert(v, dt, "float64")
                        b.store(b.fadd(cur, vd), acc_ptr)
            g.loop(kw, col)
        g.loop(kh, row)
        res = b.load(acc_ptr)
        if not is_max:
            res = b.fdiv(res, b.sitofp(b.load(cnt_ptr), ir.DoubleType()))
            res = g.convert(res, "float64", dt)
        g.store(res, dst, i)
    g.loop(n * c * oh * ow, body)


def _operand_ptrs(g: _Gen, call):
    """Pointers to the call's arguments: variables in order, then constants (passed by
    :meth:`CpuLibrary.run` after the inputs)."""
    from relay.ir import Constant
    nvars = sum(not isinstance(a, Constant) for a in call.args)
    ptrs, v, c = [], 0, 0
    for a in call.args:
        if isinstance(a, Constant):
            ptrs.append(g.arg_ptr(nvars + c, a.checked_type.dtype))
            c += 1
        else:
            ptrs.append(g.arg_ptr(v, a.checked_type.dtype))
            v += 1
    return ptrs


def _acc_type(dtype: str) -> str:
    return "int64" if dtype.startswith(("int", "uint")) else dtype


def _gen_conv2d(g: _Gen, call) -> None:
    """Direct NCHW/OIHW convolution: integers accumulate in int64 (then wrap), floats in
    their own type."""
    from relay.op._common import pair, padding4
    b = g.b
    t_x, t_w, t_out = call.args[0].checked_type, call.args[1].checked_type, call.checked_type
    n, c, h, w = t_x.shape
    o, ig, kh, kw = t_w.shape
    _, _, oh, ow = t_out.shape
    a = _attrs(call)
    (sh, sw), (dh, dw) = pair(a["strides"], "strides"), pair(a["dilation"], "dilation")
    pt, pl, _, _ = padding4(a["padding"])
    og = o // a["groups"]
    xp, wp = _operand_ptrs(g, call)
    dst = g.out_ptr(t_out.dtype)
    acc_t = _acc_type(t_out.dtype)
    fl = acc_t.startswith("float")
    with b.goto_block(g.entry):
        b.position_at_start(g.entry)
        acc = b.alloca(g.ty(acc_t))
    zero = g.ir.Constant(g.ty(acc_t), 0.0 if fl else 0)

    def body(i):
        nn, oo, y, x = g.unravel(i, (n, o, oh, ow))
        grp = b.sdiv(oo, g.c64(og))
        b.store(zero, acc)

        def over_c(ci):
            cc = b.add(b.mul(grp, g.c64(ig)), ci)

            def over_ky(ky):
                iy, iy_in = _window_index(g, y, ky, sh, dh, pt, h)

                def over_kx(kx):
                    ix, ix_in = _window_index(g, x, kx, sw, dw, pl, w)
                    ok = b.and_(iy_in, ix_in)
                    with b.if_then(ok):
                        xv = g.load(xp, g.offset([nn, cc, iy, ix], _strides((n, c, h, w))))
                        wv = g.load(wp, g.offset([oo, ci, ky, kx], _strides((o, ig, kh, kw))))
                        xv = g.convert(xv, t_x.dtype, acc_t)
                        wv = g.convert(wv, t_w.dtype, acc_t)
                        prod = b.fmul(xv, wv) if fl else b.mul(xv, wv)
                        cur = b.load(acc)
                        b.store(b.fadd(cur, prod) if fl else b.add(cur, prod), acc)
                g.loop(kw, over_kx)
            g.loop(kh, over_ky)
        g.loop(ig, over_c)
        g.store(g.convert(b.load(acc), acc_t, t_out.dtype), dst, i)
    g.loop(n * o * oh * ow, body)


def _gen_dense(g: _Gen, call) -> None:
    b = g.b
    t_x, t_w, t_out = (a.checked_type for a in (call.args[0], call.args[1], call))
    n, k = t_x.shape
    units = t_w.shape[0]
    xp, wp = _operand_ptrs(g, call)
    dst = g.out_ptr(t_out.dtype)
    acc_t = _acc_type(t_out.dtype)
    fl = acc_t.startswith("float")
    with b.goto_block(g.entry):
        b.position_at_start(g.entry)
        acc = b.alloca(g.ty(acc_t))

    def body(i):
        row, u = g.unravel(i, (n, units))
        b.store(g.ir.Constant(g.ty(acc_t), 0.0 if fl else 0), acc)

        def over_k(j):
            xv = g.convert(g.load(xp, b.add(b.mul(row, g.c64(k)), j)), t_x.dtype, acc_t)
            wv = g.convert(g.load(wp, b.add(b.mul(u, g.c64(k)), j)), t_w.dtype, acc_t)
            cur = b.load(acc)
            b.store(b.fadd(cur, b.fmul(xv, wv)) if fl else b.add(cur, b.mul(xv, wv)), acc)
        g.loop(k, over_k)
        g.store(g.convert(b.load(acc), acc_t, t_out.dtype), dst, i)
    g.loop(n * units, body)


def _gen_softmax(g: _Gen, call) -> None:
    """exp(x - max) / sum along the axis, in the data's float type."""
    b, ir = g.b, g.ir
    t = call.checked_type
    shape = tuple(t.shape)
    axis = _attrs(call)["axis"] % len(shape)
    length = shape[axis]
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    ty = g.ty(t.dtype)
    src, dst = _operand_ptrs(g, call)[0], g.out_ptr(t.dtype)
    exp = g.module.declare_intrinsic("llvm.exp", [ty])
    with b.goto_block(g.entry):
        b.position_at_start(g.entry)
        mx, total = b.alloca(ty), b.alloca(ty)

    def body(i):
        base = b.add(b.mul(b.sdiv(i, g.c64(inner)), g.c64(length * inner)),
                     b.srem(i, g.c64(inner)))

        def at(j):
            return b.add(base, b.mul(j, g.c64(inner)))
        b.store(ir.Constant(ty, float("-inf")), mx)
        b.store(ir.Constant(ty, 0.0), total)

        def find_max(j):
            v, cur = g.load(src, at(j)), b.load(mx)
            b.store(b.select(b.fcmp_ordered(">", v, cur), v, cur), mx)
        g.loop(length, find_max)

        def exps(j):
            e = b.call(exp, [b.fsub(g.load(src, at(j)), b.load(mx))])
            g.store(e, dst, at(j))
            b.store(b.fadd(b.load(total), e), total)
        g.loop(length, exps)
        g.loop(length, lambda j: g.store(b.fdiv(g.load(dst, at(j)), b.load(total)), dst, at(j)))
    g.loop(outer * inner, body)


# ---------------------------------------------------------------------------- library

class CpuLibrary:
    """The machine code of a model's CPU segments (one LLVM module, JIT-compiled once)."""

    def __init__(self, segments):
        llvm, tm = _llvm()
        ir = _ir()
        module = ir.Module(name="vta_cpu_segments")
        module.triple = tm.triple
        self.names = {}
        self.out_specs = {}
        for k, seg in enumerate(segments):
            if seg.target != "cpu" or not supported(seg):
                continue
            fname = f"seg{k}_{seg.name}"
            g = _Gen(module, fname)
            self._generate(g, seg)
            g.b.ret_void()
            self.names[seg.name] = fname
        self._llvm_ir = str(module)
        mod = llvm.parse_assembly(self._llvm_ir)
        mod.verify()
        self._engine = llvm.create_mcjit_compiler(mod, tm)
        self._engine.finalize_object()
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
        self._fns = {n: proto(self._engine.get_function_address(f))
                     for n, f in self.names.items()}

    @staticmethod
    def _generate(g: _Gen, seg) -> None:
        if seg.kind == "pack":
            _gen_pack(g, seg)
        elif seg.kind == "unpack":
            _gen_unpack(g, seg, tuple(seg.attrs["in_shape"]))
        elif seg.kind == "unfold":
            _gen_unfold(g, seg)
        else:
            call = seg.function.body
            name = call.op.name
            if name in _POOLS:
                _gen_pool(g, call)
            elif name == "nn.conv2d":
                _gen_conv2d(g, call)
            elif name == "nn.dense":
                _gen_dense(g, call)
            elif name == "nn.softmax":
                _gen_softmax(g, call)
            elif name == "concatenate":
                _gen_concatenate(g, call)
            elif name in _LAYOUT:
                _gen_layout(g, call)
            else:
                _gen_elemwise(g, call, seg.inputs)

    def __contains__(self, name: str) -> bool:
        return name in self._fns

    def run(self, seg, args: list, out_shape, out_dtype) -> np.ndarray:
        arrays = [np.ascontiguousarray(a) for a in args]
        if seg.kind == "relay" and seg.function.body.op.name in _REDUCTIONS:
            from relay.ir import Constant
            arrays += [np.ascontiguousarray(a.data) for a in seg.function.body.args
                       if isinstance(a, Constant)]
        out = np.empty(out_shape, out_dtype)
        ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
        self._fns[seg.name](ctypes.addressof(ptrs), out.ctypes.data)
        return out


def run_cpu_segment(seg, args: list) -> np.ndarray:
    """Reference path (numpy / the Relay interpreter) for one CPU segment."""
    if seg.kind == "pack":
        a = seg.attrs
        return pack_activation(np.asarray(args[0]).reshape(a["shape"]), a["batch"], a["block"])
    if seg.kind == "unpack":
        a = seg.attrs
        x = args[0]
        if a["planes"]:
            x = planes_to_int32(x)
        shape = a["shape"]
        return unpack_activation(x, shape[0], shape[1]).reshape(shape)
    if seg.kind == "unfold":
        from .operators import ColumnFold, unfold_columns
        a = dict(seg.attrs)
        a["in_shape"] = tuple(a["in_shape"])
        return unfold_columns(np.asarray(args[0]).reshape(a["in_shape"]), ColumnFold(**a))
    from relay.interpreter import Interpreter
    from relay.ir import IRModule
    return np.asarray(Interpreter(IRModule({"main": seg.function})).run_main(*args))
