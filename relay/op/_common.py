"""Shared helpers for type relations and numpy kernels."""
from __future__ import annotations

import functools
import numbers
import re

import numpy as np

from ..ty import ANY, IncompleteType, TensorType
from .registry import NotReady, RelationError

__all__ = ["as_tensor", "known", "dim_str", "norm_axis", "norm_axes", "pair", "padding4",
           "parse_layout", "layout_shape_transform", "layout_array_transform", "accum_dtype"]


def as_tensor(t, what="argument"):
    """``t`` as a TensorType; ``NotReady`` if it is still a hole, ``RelationError`` if not a tensor."""
    if isinstance(t, IncompleteType):
        raise NotReady(what)
    if not isinstance(t, TensorType):
        raise RelationError(f"{what} must be a tensor, but has type {t}")
    return t


def known(d):
    return isinstance(d, int)


def dim_str(d):
    return str(d) if known(d) else "?"


def norm_axis(axis, ndim, what="axis"):
    if not -ndim <= axis < max(ndim, 1):
        raise RelationError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def norm_axes(axes, ndim):
    if axes is None:
        return list(range(ndim))
    if isinstance(axes, int):
        axes = [axes]
    out = [norm_axis(a, ndim) for a in axes]
    if len(set(out)) != len(out):
        raise RelationError(f"repeated axis in {list(axes)}")
    return out


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _ints(v, what):
    if not (_is_int(v) or isinstance(v, (tuple, list)) and all(_is_int(x) for x in v)):
        raise RelationError(f"{what} must be an integer or a list of integers, got {v!r}")


def pair(v, what):
    _ints(v, what)
    if _is_int(v):
        return (v, v)
    v = tuple(v)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) != 2:
        raise RelationError(f"{what} must have 1 or 2 values, got {list(v)}")
    return v


def padding4(p):
    """(top, left, bottom, right) from TVM's 1-, 2- or 4-value padding."""
    _ints(p, "padding")
    if _is_int(p):
        return (p, p, p, p)
    p = tuple(p)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    if len(p) == 4:
        return p
    raise RelationError(f"padding must have 1, 2 or 4 values, got {list(p)}")


_LAYOUT_RE = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout):
    """``"NCHW1n16c"`` -> ``(("N", None), ("C", None), ("H", None), ("W", None), ("n", 1), ("c", 16))``."""
    if not isinstance(layout, str):
        raise RelationError(f"a layout must be a string such as NCHW, got {layout!r}")
    return _parse_layout(layout)


@functools.lru_cache(maxsize=256)
def _parse_layout(layout):
    out = []
    pos = 0
    for m in _LAYOUT_RE.finditer(layout):
        if m.start() != pos:
            break
        pos = m.end()
        num, letter = m.groups()
        if letter.isupper():
            if num:
                raise RelationError(f"bad layout {layout!r}: a primal axis has no factor")
            out.append((letter, None))
        else:
            if not num:
                raise RelationError(f"bad layout {layout!r}: sub-axis {letter} needs a factor")
            out.append((letter, int(num)))
    if pos != len(layout) or not out:
        raise RelationError(f"bad layout {layout!r}")
    primal = [a for a, f in out if f is None]
    for a, f in out:
        if f is not None and a.upper() not in primal:
            raise RelationError(f"bad layout {layout!r}: sub-axis {a} without primal axis {a.upper()}")
    if len(set(a for a, _ in out)) != len(out):
        raise RelationError(f"bad layout {layout!r}: repeated axis")
    return tuple(out)


def _mul(a, b):
    return a * b if known(a) and known(b) else ANY


def layout_shape_transform(shape, src, dst):
    """The shape of a ``src``-layout tensor after converting it to layout ``dst``."""
    s, d = parse_layout(src), parse_layout(dst)
    if len(shape) != len(s):
        raise RelationError(f"layout {src} has {len(s)} axes but the tensor has rank {len(shape)}")
    ps = [a for a, f in s if f is None]
    pd = [a for a, f in d if f is None]
    if sorted(ps) != sorted(pd):
        raise RelationError(f"layouts {src} and {dst} have different primal axes")
    pos = {a: i for i, (a, _) in enumerate(s)}
    full = {}
    for a in ps:
        size = shape[pos[a]]
        if a.lower() in pos:
            size = _mul(size, shape[pos[a.lower()]])
        full[a] = size
    sub = {a: f for a, f in d if f is not None}
    out = []
    for a, f in d:
        if f is None:
            size = full[a]
            if a.lower() in sub:
                k = sub[a.lower()]
                if known(size):
                    if size % k:
                        raise RelationError(f"axis {a} of size {size} is not divisible by {k} (layout {dst})")
                    size //= k
                else:
                    size = ANY
            out.append(size)
        else:
            out.append(f)
    return tuple(out)


def layout_array_transform(x, src, dst):
    s, d = parse_layout(src), parse_layout(dst)
    ps = [a for a, f in s if f is None]
    pos = {a: i for i, (a, _) in enumerate(s)}
    order, sizes = [], []
    for a in ps:
        order.append(pos[a])
        size = x.shape[pos[a]]
        if a.lower() in pos:
            order.append(pos[a.lower()])
            size *= x.shape[pos[a.lower()]]
        sizes.append(size)
    prim = x.transpose(order).reshape(sizes)
    pd = [a for a, f in d if f is None]
    prim = prim.transpose([ps.index(a) for a in pd])
    sub = {a: f for a, f in d if f is not None}
    split_shape, names = [], []
    for a, size in zip(pd, prim.shape):
        if a.lower() in sub:
            k = sub[a.lower()]
            split_shape += [size // k, k]
            names += [a, a.lower()]
        else:
            split_shape.append(size)
            names.append(a)
    y = prim.reshape(split_shape)
    return np.ascontiguousarray(y.transpose([names.index(a) for a, _ in d]))


def accum_dtype(dtype):
    return np.int64 if np.issubdtype(np.dtype(dtype), np.integer) else np.dtype(dtype)
