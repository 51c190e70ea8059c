"""Neural-network operators: convolution, dense, bias, batch norm, pooling, softmax, pad, dropout."""
from __future__ import annotations


import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..ty import ANY, TensorType, TupleType, check_dtype
from ._common import (accum_dtype, as_tensor, dim_str, known, layout_array_transform, layout_shape_transform,
                      norm_axis, pair, padding4, parse_layout)
from .registry import REQUIRED, NotReady, OpPattern, RelationError, backward, register_op, relation



def _div(a, b):
    return a // b if known(a) else ANY


def _out_dim(size, pad, dil, k, stride, ceil=False):
    if not (known(size) and known(k)):
        return ANY
    eff = dil * (k - 1) + 1
    span = size + pad - eff
    if span < 0:
        raise RelationError(f"window of extent {eff} does not fit an input of size {size} with padding {pad}")
    return (span + (stride - 1 if ceil else 0)) // stride + 1


def _shape_str(s):
    return "(" + ", ".join(map(dim_str, s)) + ")"


# ---------------------------------------------------------------- conv2d


def _conv_layouts(attrs, kernel_shape=None):
    """The data, kernel and output layouts of a conv2d.  The output defaults to the data layout;
    with a packed data layout whose channel block differs from the kernel's output block, the
    output is packed by the kernel's output block (the VTA packing)."""
    dl, kl = attrs["data_layout"], attrs["kernel_layout"]
    ol = attrs["out_layout"] or dl
    if not attrs["out_layout"]:
        dsub = dict((a, f) for a, f in parse_layout(dl) if f is not None)
        ksub = dict((a, f) for a, f in parse_layout(kl) if f is not None)
        if "c" in dsub and "o" in ksub and dsub["c"] != ksub["o"]:
            ol = dl.replace(f"{dsub['c']}c", f"{ksub['o']}c")
    for what, layout, primal in (("data", dl, "NCHW"), ("kernel", kl, "OIHW"), ("output", ol, "NCHW")):
        axes = sorted(a for a, f in parse_layout(layout) if f is None)
        if axes != sorted(primal):
            raise RelationError(f"conv2d supports {what} layouts convertible from {primal}; got {layout!r}")
    return dl, kl, ol


def _conv_weight_from_attrs(data_nchw, attrs):
    """The OIHW weight shape TVM's Conv2D relation derives from ``channels`` and ``kernel_size``."""
    kh, kw = pair(attrs["kernel_size"], "kernel_size")
    return (attrs["channels"], _div(data_nchw[1], attrs["groups"]), kh, kw)


def _check_weight_attrs(attrs, o, kh, kw, verb):
    """conv2d and conv2d_transpose: the optional ``channels`` and ``kernel_size`` attributes
    must agree with the weight's ``o`` output channels and ``(kh, kw)`` kernel (the message
    says the weight ``verb`` them: "has" for OIHW, "gives" where groups multiply them)."""
    if attrs["channels"] is not None and known(o) and attrs["channels"] != o:
        raise RelationError(f"attribute channels={attrs['channels']} but weight {verb} {o} output channels")
    if attrs["kernel_size"] is not None:
        ks = pair(attrs["kernel_size"], "kernel_size")
        if known(kh) and known(kw) and ks != (kh, kw):
            raise RelationError(f"attribute kernel_size={list(ks)} but weight kernel is ({kh}, {kw})")


@relation("Conv2D")
def conv2d_rel(args, attrs):
    """Output H and W from padding, stride, dilation and kernel; channels checked against groups.
    Data, kernel and output may be in any layout convertible from NCHW / OIHW (NHWC, HWIO,
    OHWI, HWOI, NCHW16c, OIHW16i16o, ...), as TVM's Conv2DRel."""
    data, weight = as_tensor(args[0], "data"), as_tensor(args[1], "weight")
    dl, kl, ol = _conv_layouts(attrs)
    n, c, h, w = layout_shape_transform(data.shape, dl, "NCHW")
    o, i, kh, kw = layout_shape_transform(weight.shape, kl, "OIHW")
    groups = attrs["groups"]
    if known(c) and known(i) and c != i * groups:
        raise RelationError(f"data has {c} input channels but weight expects {i} x groups {groups} = {i * groups}")
    if known(o) and o % groups:
        raise RelationError(f"{o} output channels are not divisible by groups {groups}")
    _check_weight_attrs(attrs, o, kh, kw, "has")
    sh, sw = pair(attrs["strides"], "strides")
    dh, dw = pair(attrs["dilation"], "dilation")
    pt, pl, pb, pr = padding4(attrs["padding"])
    oh = _out_dim(h, pt + pb, dh, kh, sh)
    ow = _out_dim(w, pl + pr, dw, kw, sw)
    dtype = attrs["out_dtype"] or data.dtype
    check_dtype(dtype)
    return TensorType(layout_shape_transform((n, o, oh, ow), "NCHW", ol), dtype)


@backward("Conv2D")
def conv2d_backward(args, out, attrs):
    """The weight's type from ``channels`` and ``kernel_size`` when it is not written down."""
    data = as_tensor(args[0], "data")
    if attrs["channels"] is None or attrs["kernel_size"] is None:
        raise NotReady("weight")
    if attrs["groups"] > 1:
        raise RelationError("the weight shape must be specified when groups is greater than 1")
    dl, kl, _ = _conv_layouts(attrs)
    nchw = layout_shape_transform(data.shape, dl, "NCHW")
    wshape = layout_shape_transform(_conv_weight_from_attrs(nchw, attrs), "OIHW", kl)
    return {1: TensorType(wshape, data.dtype)}


def conv2d_nchw(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, out_dtype=None):
    """Reference NCHW/OIHW convolution with numpy (accumulates integers in int64)."""
    out_dtype = out_dtype or x.dtype
    acc = accum_dtype(out_dtype)
    x, w = x.astype(acc), w.astype(acc)
    pt, pl, pb, pr = padding
    x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, ig, kh, kw = w.shape
    dh, dw = dilation
    sh, sw = strides
    win = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]
    og = o // groups
    outs = []
    for g in range(groups):
        xg = win[:, g * ig:(g + 1) * ig]
        wg = w[g * og:(g + 1) * og]
        outs.append(np.tensordot(xg, wg, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2))
    return np.concatenate(outs, axis=1).astype(out_dtype)


@register_op("nn.conv2d", num_inputs=2, relation="Conv2D", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs={
    "strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
    "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "",
    "out_dtype": ""})
def _conv2d(args, attrs):
    """2-D convolution in any data/kernel/output layouts convertible from NCHW/OIHW."""
    x, w = args
    dl, kl, ol = _conv_layouts(attrs)
    if dl != "NCHW":
        x = layout_array_transform(x, dl, "NCHW")
    if kl != "OIHW":
        w = layout_array_transform(w, kl, "OIHW")
    y = conv2d_nchw(x, w, pair(attrs["strides"], "strides"), padding4(attrs["padding"]),
                    pair(attrs["dilation"], "dilation"), attrs["groups"], attrs["out_dtype"] or args[0].dtype)
    if ol != "NCHW":
        y = layout_array_transform(y, "NCHW", ol)
    return np.ascontiguousarray(y)


# ---------------------------------------------------------------- conv2d_transpose


@relation("Conv2DTranspose")
def conv2d_transpose_rel(args, attrs):
    """NCHW data and IOHW weight (in, out / groups, kh, kw), as TVM; the output grows by the stride:
    OH = (H - 1) * stride - pad_top - pad_bottom + dilation * (KH - 1) + 1 + output_padding."""
    data, weight = as_tensor(args[0], "data"), as_tensor(args[1], "weight")
    if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "IOHW":
        raise RelationError(f"conv2d_transpose supports data_layout NCHW and kernel_layout IOHW, got "
                            f"{attrs['data_layout']} and {attrs['kernel_layout']}")
    if data.ndim != 4 or weight.ndim != 4:
        raise RelationError(f"data and weight must be 4-D, got {_shape_str(data.shape)} and "
                            f"{_shape_str(weight.shape)}")
    n, c, h, w = data.shape
    i, og, kh, kw = weight.shape
    groups = attrs["groups"]
    if known(c) and known(i) and c != i:
        raise RelationError(f"data has {c} input channels but weight (IOHW) has {i}")
    if known(c) and c % groups:
        raise RelationError(f"{c} input channels are not divisible by groups {groups}")
    o = og * groups if known(og) else ANY
    _check_weight_attrs(attrs, o, kh, kw, "gives")
    sh, sw = pair(attrs["strides"], "strides")
    dh, dw = pair(attrs["dilation"], "dilation")
    ph, pw = pair(attrs["output_padding"], "output_padding")
    if not (0 <= ph < sh and 0 <= pw < sw):
        raise RelationError(f"output_padding {[ph, pw]} must be non-negative and smaller than the "
                            f"strides {[sh, sw]}")
    pt, pl, pb, pr = padding4(attrs["padding"])

    def out(size, s, d, k, p0, p1, op):
        if not (known(size) and known(k)):
            return ANY
        r = (size - 1) * s - p0 - p1 + d * (k - 1) + 1 + op
        if r < 1:
            raise RelationError(f"padding {[p0, p1]} leaves no output of an input of size {size}")
        return r

    if data.dtype != weight.dtype and not attrs["out_dtype"]:
        raise RelationError(f"data is {data.dtype} but weight is {weight.dtype}; set out_dtype to mix them")
    dtype = attrs["out_dtype"] or data.dtype
    check_dtype(dtype)
    return TensorType((n, o, out(h, sh, dh, kh, pt, pb, ph), out(w, sw, dw, kw, pl, pr, pw)), dtype)


def conv2d_transpose_nchw(x, w, strides=(1, 1), padding=(0, 0, 0, 0), output_padding=(0, 0), dilation=(1, 1),
                          groups=1, out_dtype=None):
    """Reference transposed convolution: every input pixel scatters its kernel into the output
    (integers accumulate in int64), then the padding is cropped."""
    out_dtype = out_dtype or x.dtype
    acc = accum_dtype(out_dtype)
    x, w = x.astype(acc), w.astype(acc)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    pt, pl, pb, pr = padding
    fh = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    fw = (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    full = np.zeros((n, og * groups, fh, fw), acc)
    ig = c // groups
    for g in range(groups):
        xg, wg = x[:, g * ig:(g + 1) * ig], w[g * ig:(g + 1) * ig]
        for p in range(kh):
            for q in range(kw):
                contrib = np.tensordot(xg, wg[:, :, p, q], axes=([1], [0])).transpose(0, 3, 1, 2)
                full[:, g * og:(g + 1) * og, p * dh:p * dh + sh * (h - 1) + 1:sh,
                     q * dw:q * dw + sw * (wd - 1) + 1:sw] += contrib
    return full[:, :, pt:fh - pb, pl:fw - pr].astype(out_dtype)


@register_op("nn.conv2d_transpose", num_inputs=2, relation="Conv2DTranspose",
             pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs={
                 "strides": (1, 1), "padding": (0, 0), "output_padding": (0, 0), "dilation": (1, 1),
                 "groups": 1, "channels": None, "kernel_size": None, "data_layout": "NCHW",
                 "kernel_layout": "IOHW", "out_layout": "", "out_dtype": ""})
def _conv2d_transpose(args, attrs):
    """2-D transposed convolution (the adjoint of conv2d with respect to its data), NCHW / IOHW."""
    x, w = args
    y = conv2d_transpose_nchw(x, w, pair(attrs["strides"], "strides"), padding4(attrs["padding"]),
                              pair(attrs["output_padding"], "output_padding"), pair(attrs["dilation"], "dilation"),
                              attrs["groups"], attrs["out_dtype"] or x.dtype)
    return np.ascontiguousarray(y)


# ---------------------------------------------------------------- dense, bias_add, batch_norm


@relation("Dense")
def dense_rel(args, attrs):
    """(..., K) x (units, K) -> (..., units)."""
    data, weight = as_tensor(args[0], "data"), as_tensor(args[1], "weight")
    if data.ndim < 1 or weight.ndim != 2:
        raise RelationError(f"dense needs data of rank >= 1 and a 2-D weight, got {_shape_str(data.shape)} "
                            f"and {_shape_str(weight.shape)}")
    k, wk = data.shape[-1], weight.shape[1]
    if known(k) and known(wk) and k != wk:
        raise RelationError(f"data has {k} input features but weight {_shape_str(weight.shape)} expects {wk}")
    units = weight.shape[0]
    if attrs["units"] is not None and known(units) and attrs["units"] != units:
        raise RelationError(f"attribute units={attrs['units']} but weight has {units} rows")
    # as TVM's MatmulRel: the weight's dtype is not checked; the output has out_dtype or the data's
    return TensorType(data.shape[:-1] + (units,), attrs["out_dtype"] or data.dtype)


@backward("Dense")
def dense_backward(args, out, attrs):
    """The weight's type from ``units`` and the data's last dimension."""
    data = as_tensor(args[0], "data")
    if attrs["units"] is None or data.ndim < 1:
        raise NotReady("weight")
    return {1: TensorType((attrs["units"], data.shape[-1]), data.dtype)}


@register_op("nn.dense", num_inputs=2, relation="Dense", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
             attrs={"units": None, "out_dtype": ""})
def _dense(args, attrs):
    """Fully connected layer: data @ weight.T."""
    out_dtype = attrs["out_dtype"] or args[0].dtype
    acc = accum_dtype(out_dtype)
    return np.matmul(args[0].astype(acc), args[1].astype(acc).T).astype(out_dtype)


@relation("BiasAdd")
def bias_add_rel(args, attrs):
    """bias is 1-D with the size of data's ``axis``; the output has data's type."""
    data, bias = as_tensor(args[0], "data"), as_tensor(args[1], "bias")
    axis = norm_axis(attrs["axis"], data.ndim)
    if bias.ndim != 1 or (known(bias.shape[0]) and known(data.shape[axis]) and bias.shape[0] != data.shape[axis]):
        raise RelationError(f"bias must have shape ({dim_str(data.shape[axis])},) to match axis {axis} "
                            f"of data {_shape_str(data.shape)}, got {_shape_str(bias.shape)}")
    if bias.dtype != data.dtype:
        raise RelationError(f"bias is {bias.dtype} but data is {data.dtype}")
    return data


@backward("BiasAdd")
def bias_add_backward(args, out, attrs):
    """The bias's type from the data's ``axis``."""
    data = as_tensor(args[0], "data")
    return {1: TensorType((data.shape[norm_axis(attrs["axis"], data.ndim)],), data.dtype)}


def _channel_shape(ndim, axis):
    shape = [1] * ndim
    shape[axis] = -1
    return shape


@register_op("nn.bias_add", num_inputs=2, relation="BiasAdd", pattern=OpPattern.BROADCAST, attrs={"axis": 1})
def _bias_add(args, attrs):
    """Add a 1-D bias along ``axis``."""
    x, b = args
    axis = attrs["axis"] % x.ndim
    return (x + b.reshape(_channel_shape(x.ndim, axis))).astype(x.dtype)


@relation("BatchNorm")
def batch_norm_rel(args, attrs):
    """gamma, beta, moving mean and variance are 1-D over ``axis``; output (data, mean, var)."""
    data = as_tensor(args[0], "data")
    axis = norm_axis(attrs["axis"], data.ndim)
    c = data.shape[axis]
    for t, name in zip(args[1:], ("gamma", "beta", "moving_mean", "moving_var")):
        t = as_tensor(t, name)
        if t.ndim != 1 or (known(t.shape[0]) and known(c) and t.shape[0] != c):
            raise RelationError(f"{name} must have shape ({dim_str(c)},), got {_shape_str(t.shape)}")
    vec = TensorType((c,), data.dtype)
    return TupleType((data, vec, vec))


@backward("BatchNorm")
def batch_norm_backward(args, out, attrs):
    """gamma, beta, moving mean and variance from the data's ``axis`` (TVM's BatchNormRel)."""
    data = as_tensor(args[0], "data")
    vec = TensorType((data.shape[norm_axis(attrs["axis"], data.ndim)],), data.dtype)
    return {i: vec for i in range(1, 5)}


@register_op("nn.batch_norm", num_inputs=5, relation="BatchNorm", pattern=OpPattern.OPAQUE,
             attrs={"axis": 1, "epsilon": 1e-5, "center": True, "scale": True})
def _batch_norm(args, attrs):
    """Inference-mode batch normalisation; returns (out, moving_mean, moving_var)."""
    x, gamma, beta, mean, var = args
    shape = _channel_shape(x.ndim, attrs["axis"] % x.ndim)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + attrs["epsilon"])
    if attrs["scale"]:
        y = y * gamma.reshape(shape)
    if attrs["center"]:
        y = y + beta.reshape(shape)
    return (y.astype(x.dtype), mean, var)


@relation("Dropout")
def dropout_rel(args, attrs):
    """Output (data, mask), both of data's type."""
    t = as_tensor(args[0], "data")
    return TupleType((t, t))


@register_op("nn.dropout", num_inputs=1, relation="Dropout", pattern=OpPattern.OPAQUE, attrs={"rate": 0.5})
def _dropout(args, attrs):
    """Dropout at inference: the identity (and a mask of ones)."""
    return (args[0].copy(), np.ones_like(args[0]))


# ---------------------------------------------------------------- pooling


def _pool_axes(layout, t=None):
    """Positions of H and W in a pooling layout (NCHW, NHWC, NCHW16c, ... as TVM's Pool2DRel:
    any layout with H and W, neither of them split)."""
    axes = parse_layout(layout)
    names = [a for a, _ in axes]
    if "H" not in names or "W" not in names or "h" in names or "w" in names:
        raise RelationError(f"pooling layout {layout!r} must have H and W axes, neither split")
    if t is not None and t.ndim != len(axes):
        raise RelationError(f"data must be {len(axes)}-D in layout {layout}, got {_shape_str(t.shape)}")
    return names.index("H"), names.index("W")


@relation("Pool2D")
def pool2d_rel(args, attrs):
    """Output H and W from pool size, strides, padding, dilation and ceil_mode."""
    data = as_tensor(args[0], "data")
    hi, wi = _pool_axes(attrs["layout"], data)
    kh, kw = pair(attrs["pool_size"], "pool_size")
    sh, sw = pair(attrs["strides"], "strides")
    dh, dw = pair(attrs["dilation"], "dilation")
    pt, pl, pb, pr = padding4(attrs["padding"])
    h, w = data.shape[hi], data.shape[wi]
    ceil = bool(attrs["ceil_mode"])
    shape = list(data.shape)
    shape[hi] = _out_dim(h, pt + pb, dh, kh, sh, ceil)
    shape[wi] = _out_dim(w, pl + pr, dw, kw, sw, ceil)
    return TensorType(tuple(shape), data.dtype)


@relation("GlobalPool2D")
def global_pool2d_rel(args, attrs):
    """H and W become 1."""
    data = as_tensor(args[0], "data")
    hi, wi = _pool_axes(attrs["layout"], data)
    shape = list(data.shape)
    shape[hi] = shape[wi] = 1
    return TensorType(tuple(shape), data.dtype)


def _pool(x, attrs, kind):
    hi, wi = _pool_axes(attrs["layout"])
    x = np.moveaxis(x, (hi, wi), (-2, -1))
    kh, kw = pair(attrs["pool_size"], "pool_size")
    sh, sw = pair(attrs["strides"], "strides")
    dh, dw = pair(attrs["dilation"], "dilation")
    pt, pl, pb, pr = padding4(attrs["padding"])
    h, w = x.shape[-2], x.shape[-1]
    oh = _out_dim(h, pt + pb, dh, kh, sh, bool(attrs["ceil_mode"]))
    ow = _out_dim(w, pl + pr, dw, kw, sw, bool(attrs["ceil_mode"]))
    # Extra bottom/right padding so ceil_mode windows exist; they are excluded like padding.
    eb = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + pt + pb))
    er = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + pl + pr))
    pads = [(0, 0)] * (x.ndim - 2) + [(pt, pb + eb), (pl, pr + er)]
    xf = x.astype(np.float64) if kind == "avg" else x
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    xp = np.pad(xf, pads, constant_values=fill if kind == "max" else 0)
    win = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(-2, -1))
    win = win[..., :oh * sh:sh, :ow * sw:sw, ::dh, ::dw][..., :oh, :ow, :, :]
    if kind == "max":
        return np.moveaxis(win.max(axis=(-2, -1)).astype(x.dtype), (-2, -1), (hi, wi))
    total = win.sum(axis=(-2, -1))
    ones = np.zeros((h + pt + pb + eb, w + pl + pr + er))
    if attrs["count_include_pad"]:
        ones[:h + pt + pb, :w + pl + pr] = 1
    else:
        ones[pt:pt + h, pl:pl + w] = 1
    cw = sliding_window_view(ones, (dh * (kh - 1) + 1, dw * (kw - 1) + 1))[::sh, ::sw, ::dh, ::dw][:oh, :ow]
    count = cw.sum(axis=(-2, -1))
    return np.moveaxis((total / count).astype(x.dtype), (-2, -1), (hi, wi))


_POOL_ATTRS = {"pool_size": REQUIRED, "strides": (1, 1), "dilation": (1, 1), "padding": (0, 0),
               "layout": "NCHW", "out_layout": "", "ceil_mode": False}


@register_op("nn.max_pool2d", num_inputs=1, relation="Pool2D", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
             attrs=_POOL_ATTRS)
def _max_pool2d(args, attrs):
    """2-D max pooling (padding never wins)."""
    return _pool(args[0], attrs, "max")


@register_op("nn.avg_pool2d", num_inputs=1, relation="Pool2D", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
             attrs=dict(_POOL_ATTRS, count_include_pad=False))
def _avg_pool2d(args, attrs):
    """2-D average pooling."""
    return _pool(args[0], attrs, "avg")


@register_op("nn.global_avg_pool2d", num_inputs=1, relation="GlobalPool2D",
             pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs={"layout": "NCHW", "out_layout": ""})
def _global_avg_pool2d(args, attrs):
    """Mean over H and W, kept as size-1 axes."""
    x = args[0]
    return x.astype(np.float64).mean(axis=_pool_axes(attrs["layout"]), keepdims=True).astype(x.dtype)


@register_op("nn.global_max_pool2d", num_inputs=1, relation="GlobalPool2D",
             pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs={"layout": "NCHW", "out_layout": ""})
def _global_max_pool2d(args, attrs):
    """Max over H and W, kept as size-1 axes."""
    return args[0].max(axis=_pool_axes(attrs["layout"]), keepdims=True)


# ---------------------------------------------------------------- softmax


@relation("Softmax")
def softmax_rel(args, attrs):
    """Identity, with ``axis`` checked against the rank."""
    t = as_tensor(args[0], "data")
    norm_axis(attrs["axis"], t.ndim)
    return t


@register_op("nn.softmax", num_inputs=1, relation="Softmax", pattern=OpPattern.OPAQUE, attrs={"axis": -1})
def _softmax(args, attrs):
    """exp(x) / sum(exp(x)) along ``axis``."""
    x = args[0]
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return (e / e.sum(axis=attrs["axis"], keepdims=True)).astype(x.dtype)


@register_op("nn.log_softmax", num_inputs=1, relation="Softmax", pattern=OpPattern.OPAQUE, attrs={"axis": -1})
def _log_softmax(args, attrs):
    """x - log(sum(exp(x))) along ``axis``."""
    x = args[0]
    m = x.max(axis=attrs["axis"], keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(axis=attrs["axis"], keepdims=True))).astype(x.dtype)


# ---------------------------------------------------------------- pad


@relation("Pad")
def pad_rel(args, attrs):
    """Each axis grows by its (before, after) pad widths; an optional 2nd argument is a scalar pad value."""
    data = as_tensor(args[0], "data")
    pw = attrs["pad_width"]
    if len(pw) != data.ndim or any(len(p) != 2 for p in pw):
        raise RelationError(f"pad_width must have one (before, after) pair per axis ({data.ndim}), got {list(pw)}")
    if len(args) == 2:
        v = as_tensor(args[1], "pad_value")
        if v.ndim != 0:
            raise RelationError(f"pad_value must be a scalar, got shape {_shape_str(v.shape)}")
    if attrs["pad_mode"] not in ("constant", "edge", "reflect"):
        raise RelationError(f"pad_mode must be constant, edge or reflect, not {attrs['pad_mode']!r}")
    shape = tuple(d + a + b if known(d) else ANY for d, (a, b) in zip(data.shape, pw))
    return TensorType(shape, data.dtype)


@register_op("nn.pad", num_inputs=2, min_inputs=1, relation="Pad", pattern=OpPattern.INJECTIVE,
             attrs={"pad_width": REQUIRED, "pad_value": 0.0, "pad_mode": "constant"})
def _pad(args, attrs):
    """Pad every axis by (before, after); negative widths crop."""
    x = args[0]
    value = args[1].item() if len(args) == 2 else attrs["pad_value"]
    pw = [tuple(p) for p in attrs["pad_width"]]
    crop = tuple(slice(-min(a, 0), x.shape[i] + min(b, 0)) for i, (a, b) in enumerate(pw))
    x = x[crop]
    pw = [(max(a, 0), max(b, 0)) for a, b in pw]
    if attrs["pad_mode"] == "constant":
        return np.pad(x, pw, constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, pw, mode=attrs["pad_mode"])


# ---------------------------------------------------------------- gradients of conv2d and pooling
# Kernels used by the gradient rules in ``relay.grad`` (NCHW / OIHW only).


@relation("LikeLast")
def like_last_rel(args, attrs):
    """The output has the type of the last argument (a gradient has the type of its primal)."""
    for i, t in enumerate(args[:-1]):
        as_tensor(t, f"argument {i}")
    return as_tensor(args[-1], "like")


def _conv_geometry(attrs, w_shape):
    return (pair(attrs["strides"], "strides"), padding4(attrs["padding"]), pair(attrs["dilation"], "dilation"),
            attrs["groups"], w_shape)


_CONV_GRAD_ATTRS = {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1}


@register_op("nn.conv2d_grad_data", num_inputs=3, relation="LikeLast", pattern=OpPattern.OPAQUE,
             attrs=_CONV_GRAD_ATTRS)
def _conv2d_grad_data(args, attrs):
    """The gradient of an NCHW conv2d with respect to its data: (grad_out, weight, data)."""
    g, w, x = args
    (sh, sw), (pt, pl, pb, pr), (dh, dw), groups, _ = _conv_geometry(attrs, w.shape)
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    og = o // groups
    dx = np.zeros((n, c, h + pt + pb, wd + pl + pr), np.float64)
    for grp in range(groups):
        gg = g[:, grp * og:(grp + 1) * og].astype(np.float64)
        for p in range(kh):
            for q in range(kw):
                contrib = np.einsum("noij,oc->ncij", gg, w[grp * og:(grp + 1) * og, :, p, q].astype(np.float64))
                dx[:, grp * ig:(grp + 1) * ig, p * dh:p * dh + sh * (oh - 1) + 1:sh,
                   q * dw:q * dw + sw * (ow - 1) + 1:sw] += contrib
    return dx[:, :, pt:pt + h, pl:pl + wd].astype(x.dtype)


@register_op("nn.conv2d_grad_weight", num_inputs=3, relation="LikeLast", pattern=OpPattern.OPAQUE,
             attrs=_CONV_GRAD_ATTRS)
def _conv2d_grad_weight(args, attrs):
    """The gradient of an NCHW conv2d with respect to its weight: (grad_out, data, weight)."""
    g, x, w = args
    (sh, sw), (pt, pl, pb, pr), (dh, dw), groups, _ = _conv_geometry(attrs, w.shape)
    o, ig, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    og = o // groups
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    dw_ = np.zeros(w.shape, np.float64)
    for grp in range(groups):
        gg = g[:, grp * og:(grp + 1) * og].astype(np.float64)
        for p in range(kh):
            for q in range(kw):
                xs = xp[:, grp * ig:(grp + 1) * ig, p * dh:p * dh + sh * (oh - 1) + 1:sh,
                        q * dw:q * dw + sw * (ow - 1) + 1:sw]
                dw_[grp * og:(grp + 1) * og, :, p, q] = np.einsum("noij,ncij->oc", gg, xs)
    return dw_.astype(w.dtype)


@register_op("nn.pool2d_grad", num_inputs=3, relation="LikeLast", pattern=OpPattern.OPAQUE,
             attrs=dict(_POOL_ATTRS, count_include_pad=False, pool_type="max"))
def _pool2d_grad(args, attrs):
    """The gradient of NCHW max or average pooling: (grad_out, out, data).  Max pooling sends
    each output gradient to the first maximal input of its window."""
    g, out, x = args
    kh, kw = pair(attrs["pool_size"], "pool_size")
    sh, sw = pair(attrs["strides"], "strides")
    dh, dw = pair(attrs["dilation"], "dilation")
    pt, pl, pb, pr = padding4(attrs["padding"])
    n, c, h, w = x.shape
    oh, ow = g.shape[2], g.shape[3]
    big = (oh - 1) * sh + dh * (kh - 1) + 1, (ow - 1) * sw + dw * (kw - 1) + 1
    ph, pw = max(big[0], h + pt + pb), max(big[1], w + pl + pr)
    fill = -np.inf if attrs["pool_type"] == "max" else 0.0
    xp = np.full((n, c, ph, pw), fill)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    dx = np.zeros((n, c, ph, pw))
    if attrs["pool_type"] == "avg":
        valid = np.zeros((ph, pw))
        if attrs["count_include_pad"]:
            valid[:h + pt + pb, :w + pl + pr] = 1
        else:
            valid[pt:pt + h, pl:pl + w] = 1
    taken = np.zeros((n, c, oh, ow), bool)
    for p in range(kh):
        for q in range(kw):
            rows = slice(p * dh, p * dh + sh * (oh - 1) + 1, sh)
            cols = slice(q * dw, q * dw + sw * (ow - 1) + 1, sw)
            if attrs["pool_type"] == "max":
                hit = (xp[:, :, rows, cols] == out) & ~taken
                taken |= hit
                dx[:, :, rows, cols] += np.where(hit, g, 0)
            else:
                count = np.zeros((oh, ow))
                for a in range(kh):
                    for b in range(kw):
                        count += valid[a * dh:a * dh + sh * (oh - 1) + 1:sh, b * dw:b * dw + sw * (ow - 1) + 1:sw]
                dx[:, :, rows, cols] += g / count * valid[rows, cols]
    return dx[:, :, pt:pt + h, pl:pl + w].astype(x.dtype)
