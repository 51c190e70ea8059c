"""``nn.conv2d_transpose`` on VTA by phase decomposition (exact).

Output row ``oy = s m + r`` receives exactly the taps ``p`` with ``(r + pad_top - p d) = 0
(mod s)``, from input row ``m + (r + pad_top - p d) / s``: for each phase ``r`` that is an
ordinary stride-1 convolution of the input with those taps (flipped, dilation
``d / gcd(s, d)``, padding from the smallest offset, negative padding cropping the input).
The ``s_h x s_w`` phases are convolutions sharing one program; each phase's tiles store every
``s``-th output pixel straight into the interleaved result, so no CPU step and no zero-stuffed
input exist. A phase without taps computes the tail of zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isa.config import VTAConfig

from .errors import CompileError
from .lower import _Counters, _emit_conv, _halves
from .operators import ConvOp, TailOp, geometry
from .program import ProgramBuilder, VtaProgram
from .reference import apply_tail, wrap32
from .schedule import Schedule, check_fits, choose

__all__ = ["TransposeOp", "phases", "lower_transpose", "reference_transpose"]


@dataclass(frozen=True, eq=False)
class TransposeOp:
    name: str
    data_shape: tuple
    weight: np.ndarray          # IOHW: (C, O / groups, KH, KW)
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    output_padding: tuple = (0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    tail: tuple = ()
    consts: tuple = ()
    out_dtype: str = "int8"
    kind = "conv2d_transpose"
    residual = False

    @property
    def out_shape(self) -> tuple:
        n, c, h, w = self.data_shape
        _, og, kh, kw = self.weight.shape
        (sh, sw), (dh, dw) = self.strides, self.dilation
        pt, pl, pb, pr = self.padding
        return (n, og * self.groups,
                (h - 1) * sh - pt - pb + dh * (kh - 1) + 1 + self.output_padding[0],
                (w - 1) * sw - pl - pr + dw * (kw - 1) + 1 + self.output_padding[1])

    @property
    def macs(self) -> int:
        n, c, h, w = self.data_shape
        _, og, kh, kw = self.weight.shape
        return n * h * w * c * og * kh * kw

    def describe(self) -> str:
        n, c, h, w = self.data_shape
        _, og, kh, kw = self.weight.shape
        tail = ", ".join(t.describe() for t in self.tail)
        return (f"conv2d_transpose {c}->{og * self.groups} {kh}x{kw}/{self.strides[0]} on "
                f"{h}x{w}" + (f" [{tail}]" if tail else "") + f" -> {self.out_dtype}")


def _axis_phase(r: int, s: int, d: int, k: int, pad: int, size: int, out: int):
    """Taps (in output order), sub-convolution dilation, padding (before, after) and output
    count of phase ``r`` along one axis."""
    taps = [p for p in range(k) if (r + pad - p * d) % s == 0]
    count = len(range(r, out, s))
    if not taps:
        return [], 1, (0, 0), count
    offsets = [(r + pad - p * d) // s for p in taps]
    order = sorted(range(len(taps)), key=lambda i: offsets[i])
    taps = [taps[i] for i in order]
    off0 = offsets[order[0]]
    dil = d // math.gcd(s, d)
    before = -off0
    extent = dil * (len(taps) - 1) + 1
    after = count - 1 + extent - size - before
    return taps, dil, (before, after), count


def phases(op: TransposeOp) -> list[tuple[int, int, ConvOp]]:
    """(ry, rx, stride-1 ConvOp) for every phase with at least one output pixel."""
    n, c, h, w = op.data_shape
    ci, og, kh, kw = op.weight.shape
    g = op.groups
    cg = c // g
    _, o, oh, ow = op.out_shape
    (sh, sw), (dh, dw) = op.strides, op.dilation
    pt, pl, _, _ = op.padding
    out = []
    for ry in range(min(sh, oh)):
        ty, dy, py, my = _axis_phase(ry, sh, dh, kh, pt, h, oh)
        for rx in range(min(sw, ow)):
            tx, dx, px, mx = _axis_phase(rx, sw, dw, kw, pl, w, ow)
            if ty and tx:
                sub = op.weight[:, :, ty][:, :, :, tx]          # (C, Og, |ty|, |tx|)
                wt = np.zeros((o, cg, len(ty), len(tx)), np.int8)
                for gi in range(g):
                    wt[gi * og:(gi + 1) * og] = sub[gi * cg:(gi + 1) * cg].transpose(1, 0, 2, 3)
                pad = (py[0], px[0], py[1], px[1])
                dil = (dy, dx)
            else:       # no tap reaches this phase: a zero 1x1 kernel over in-range rows
                wt = np.zeros((o, cg, 1, 1), np.int8)
                pad = (0, 0, my - h, mx - w)
                dil = (1, 1)
            sub_op = ConvOp(f"{op.name}.{ry}{rx}", "conv2d", op.data_shape, wt, (1, 1), pad,
                            dil, g, op.tail, op.consts, op.out_dtype)
            if sub_op.out_shape[2:] != (my, mx):
                raise AssertionError(f"phase ({ry}, {rx}) gives {sub_op.out_shape[2:]}, "
                                     f"expected {(my, mx)}")
            out.append((ry, rx, sub_op))
    return out


def lower_transpose(op: TransposeOp, cfg: VTAConfig, s: Schedule | None = None
                    ) -> tuple[VtaProgram, list, Schedule]:
    """One program for every phase; returns it, the phase geometries (their packed weights
    are the ``weights<k>`` parameters) and the schedule."""
    ph = phases(op)
    geos = [geometry(sub, cfg) for _, _, sub in ph]
    widest = max(geos, key=lambda g: (g.kernel[0] * g.kernel[1], g.out_hw))
    s = s or choose(widest)
    halves = tuple(max(v) for v in zip(*(_halves(g, s) for g in geos)))
    for g in geos:
        check_fits(g, s)
    _, o, oh, ow = op.out_shape
    first = geos[0]
    p = ProgramBuilder()
    reg = {"data": p.region("data", first.in_elems * cfg.inp_elem_bytes, "input")}
    weights = [p.region(f"weights{k}", g.packed_weight.nbytes, "param")
               for k, g in enumerate(geos)]
    if op.consts:
        reg["consts"] = p.region("consts", first.packed_consts.nbytes, "param")
    planes = 4 if op.out_dtype == "int32" else 1
    reg["out"] = p.region("out", planes * first.nb * first.ob * oh * ow * cfg.out_elem_bytes,
                          "output")
    counters = _Counters()
    sh, sw = op.strides
    for k, ((ry, rx, _), g) in enumerate(zip(ph, geos)):
        if g.groups != first.groups or g.cbg != first.cbg:
            raise CompileError(f"{op.name}: phases block differently")
        _emit_conv(p, g, s, dict(reg, weights=weights[k]), counters,
                   placement=(oh, ow, ry, rx, sh, sw), halves=halves)
    return p.build(), geos, s


def reference_transpose(op: TransposeOp, x: np.ndarray) -> np.ndarray:
    """Independent reference: each input pixel scatters its kernel (int64), crop, tail."""
    n, c, h, w = x.shape
    ci, og, kh, kw = op.weight.shape
    (sh, sw), (dh, dw) = op.strides, op.dilation
    pt, pl, _, _ = op.padding
    _, o, oh, ow = op.out_shape
    g = op.groups
    cg = c // g
    full = np.zeros((n, o, oh + pt + (kh + sh) * dh, ow + pl + (kw + sw) * dw), np.int64)
    for i in range(h):
        for j in range(w):
            for gi in range(g):
                contrib = np.einsum("nc,cokl->nokl", x[:, gi * cg:(gi + 1) * cg, i, j]
                                    .astype(np.int64), op.weight[gi * cg:(gi + 1) * cg]
                                    .astype(np.int64))
                for a in range(kh):
                    for b in range(kw):
                        full[:, gi * og:(gi + 1) * og, i * sh + a * dh, j * sw + b * dw] += \
                            contrib[:, :, a, b]
    y = wrap32(full[:, :, pt:pt + oh, pl:pl + ow])
    return apply_tail(op, y)
