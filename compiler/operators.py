"""VTA operators: a conv2d or dense anchor with its element-wise tail, as immutable values,
and their blocked geometry on a configuration."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from isa.config import MEMOP_PAD_BITS, VTAConfig

from .errors import CompileError
from .packing import ceil_div, expand_groups, pack_channel_const, pack_weight

__all__ = ["TailOp", "simplify_tail", "merge_constant_adds", "tail_ranges", "stored_range",
           "acc_init_step", "offset_for_init", "sink_max",
           "accumulator_bounds", "ColumnFold", "fold_columns",
           "unfold_columns", "ConvOp", "ConvGeometry", "geometry", "ALU_OPS"]

ALU_OPS = ("MIN", "MAX", "ADD", "SHR", "MUL")
_MAX_PAD = (1 << MEMOP_PAD_BITS) - 1


@dataclass(frozen=True)
class TailOp:
    """One element-wise step on the int32 accumulator: ``alu`` with an immediate ``imm``, with the
    per-channel constant vector ``const`` (an index into ``ConvOp.consts``), or (``residual``)
    ADD of the operator's int8 residual input widened to int32."""

    alu: str
    imm: int | None = None
    const: int | None = None
    residual: bool = False

    def __post_init__(self):
        if self.alu not in ALU_OPS:
            raise ValueError(f"unknown ALU op {self.alu!r}")
        if sum((self.imm is not None, self.const is not None, self.residual)) != 1:
            raise ValueError("a tail step has exactly one operand: imm, const or residual")

    def describe(self) -> str:
        operand = ("residual" if self.residual else f"const{self.const}" if self.const is not None
                   else str(self.imm))
        return f"{self.alu} {operand}"


def simplify_tail(steps: tuple) -> tuple:
    """Peephole pass over a tail. Guarantees the same int32 results with no more ALU passes:
    ``ADD 0``, ``SHR 0``, ``MUL 1`` are dropped; consecutive immediate ``MAX a, MAX b`` become
    ``MAX max(a, b)`` and ``MIN a, MIN b`` become ``MIN min(a, b)`` (so ``relu`` then
    ``clip(-128, 127)`` costs two passes, not three)."""
    out: list[TailOp] = []
    for t in steps:
        if t.imm is not None and (t.alu, t.imm) in (("ADD", 0), ("SHR", 0), ("MUL", 1)):
            continue
        if out and t.imm is not None and out[-1].imm is not None and t.alu == out[-1].alu \
                and t.alu in ("MAX", "MIN"):
            pick = max if t.alu == "MAX" else min
            out[-1] = TailOp(t.alu, imm=pick(out[-1].imm, t.imm))
            continue
        out.append(t)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class ConvOp:
    """``nn.conv2d`` (NCHW/OIHW) or ``nn.dense`` (as a 1x1 conv on N x K x 1 x 1) on int8, then
    ``tail`` in int32; the result is int8 (the narrowing STORE) or int32."""

    name: str
    kind: str
    data_shape: tuple
    weight: np.ndarray
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    tail: tuple = ()
    consts: tuple = ()
    out_dtype: str = "int8"

    def __post_init__(self):
        if self.out_dtype not in ("int8", "int32"):
            raise ValueError(f"out_dtype must be int8 or int32, got {self.out_dtype}")
        n, c, h, w = self.data_shape
        o, ig, kh, kw = self.weight.shape
        if c != ig * self.groups or o % self.groups:
            raise ValueError(f"{self.name}: weight {self.weight.shape} does not match {c} input "
                             f"channels in {self.groups} groups")

    @cached_property
    def residual(self) -> bool:
        return any(t.residual for t in self.tail)

    @property
    def out_shape(self) -> tuple:
        n, c, h, w = self.data_shape
        o, _, kh, kw = self.weight.shape
        (sh, sw), (dh, dw) = self.strides, self.dilation
        pt, pl, pb, pr = self.padding
        oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
        ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
        return (n, o, oh, ow)

    @property
    def macs(self) -> int:
        n, o, oh, ow = self.out_shape
        _, ig, kh, kw = self.weight.shape
        return n * o * oh * ow * ig * kh * kw

    def describe(self) -> str:
        n, c, h, w = self.data_shape
        o, _, kh, kw = self.weight.shape
        core = (f"dense {c}->{o}" if self.kind == "dense" else
                f"conv2d {c}->{o} {kh}x{kw}/{self.strides[0]} on {h}x{w}"
                + (f" groups={self.groups}" if self.groups > 1 else ""))
        tail = ", ".join(t.describe() for t in self.tail)
        return f"{core} [{tail}] -> {self.out_dtype}" if tail else f"{core} -> {self.out_dtype}"


def merge_constant_adds(steps: tuple, consts: tuple) -> tuple[tuple, tuple]:
    """Pass: an ``ADD`` of a per-channel constant next to an immediate ``ADD`` or another
    per-channel ``ADD`` (a bias and the rounding term of a shift) becomes one ``ADD`` of their
    sum. Guarantees the same int32 results (both adds wrap, so they commute) with one ALU pass
    less; constants are renumbered in order of use, unused ones dropped."""
    steps, consts = list(steps), [np.asarray(c, np.int32) for c in consts]
    i = 0
    while i + 1 < len(steps):
        a, b = steps[i], steps[i + 1]
        adds = a.alu == b.alu == "ADD" and not (a.residual or b.residual)
        if adds and (a.const is not None or b.const is not None):
            va, vb = (consts[t.const].astype(np.int64) if t.const is not None else t.imm for t in (a, b))
            consts.append((va + vb).astype(np.int32))   # wraps
            steps[i:i + 2] = [TailOp("ADD", const=len(consts) - 1)]
        else:
            i += 1
    used = list(dict.fromkeys(t.const for t in steps if t.const is not None))
    renumber = {old: new for new, old in enumerate(used)}
    steps = [TailOp(t.alu, const=renumber[t.const]) if t.const is not None else t for t in steps]
    return tuple(steps), tuple(consts[k] for k in used)


_I32 = (-(1 << 31), (1 << 31) - 1)


def tail_ranges(steps: tuple, consts: tuple, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Interval analysis of a tail on per-channel accumulator bounds [lo, hi]: True if no
    ADD or MUL can wrap (every intermediate stays inside int32)."""
    lo, hi = lo.astype(object), hi.astype(object)
    for t in steps:
        if t.residual:
            b_lo, b_hi = -128, 127
        elif t.const is not None:
            b_lo = b_hi = np.asarray(consts[t.const]).astype(object)
        else:
            b_lo = b_hi = t.imm
        if t.alu == "ADD":
            lo, hi = lo + b_lo, hi + b_hi
        elif t.alu == "MUL":
            cands = [lo * b_lo, lo * b_hi, hi * b_lo, hi * b_hi]
            lo = np.minimum.reduce([np.broadcast_to(c, np.shape(lo)) for c in cands])
            hi = np.maximum.reduce([np.broadcast_to(c, np.shape(lo)) for c in cands])
        elif t.alu == "SHR":
            if t.residual or np.min(b_lo) < 0:
                return False
            scale = np.left_shift(1, np.asarray(b_lo, np.int64)).astype(object)
            lo, hi = lo // scale, hi // scale
        elif t.alu == "MAX":
            lo, hi = np.maximum(lo, b_lo), np.maximum(hi, b_hi)
        elif t.alu == "MIN":
            lo, hi = np.minimum(lo, b_lo), np.minimum(hi, b_hi)
        if np.min(lo) < _I32[0] or np.max(hi) > _I32[1]:
            return False
    return True


def stored_range(op) -> tuple[int, int]:
    """The interval [lo, hi] of what ``op``'s tail leaves in the accumulator, whatever int32
    sum it starts from (``MAX``/``MIN``/``SHR`` bound it; an ``ADD`` or ``MUL`` that may wrap
    widens it to all of int32)."""
    lo, hi = _I32
    for t in op.tail:
        if t.residual:
            b_lo, b_hi = -128, 127
        elif t.const is not None:
            c = np.asarray(op.consts[t.const], np.int64)
            b_lo, b_hi = int(c.min()), int(c.max())
        else:
            b_lo = b_hi = t.imm
        if t.alu == "ADD":
            lo, hi = lo + b_lo, hi + b_hi
        elif t.alu == "MUL":
            lo, hi = min(lo * b_lo, lo * b_hi, hi * b_lo, hi * b_hi), \
                max(lo * b_lo, lo * b_hi, hi * b_lo, hi * b_hi)
        elif t.alu == "SHR":
            lo, hi = (lo >> b_lo, hi >> b_lo) if t.imm is not None and b_lo >= 0 else _I32
        elif t.alu == "MAX":
            lo, hi = max(lo, b_lo), max(hi, b_hi)
        else:
            lo, hi = min(lo, b_lo), min(hi, b_hi)
        if lo < _I32[0] or hi > _I32[1]:
            lo, hi = _I32
    return lo, hi


@functools.lru_cache(maxsize=256)      # per operator (identity): the cost model asks often
def acc_init_step(op) -> "TailOp | None":
    """The ALU step (``MAX`` or ``MIN`` of the same operand) that turns every value ``op``'s
    tail can leave in the accumulator into the operand of the tail's leading ``ADD`` (an
    immediate, or a per-channel constant), or None. Setting an accumulator row that an earlier
    tile stored by this step replaces the GEMM reset and the ``ADD``: one ALU pass less per
    tile. A constant needs every stored value <= its smallest element (or >= its largest);
    :func:`offset_for_init` makes it so."""
    first = op.tail[0] if op.tail else None
    if op.out_dtype != "int8" or first is None or first.alu != "ADD" or first.residual:
        return None
    lo, hi = stored_range(op)
    if first.imm is not None:
        c_lo = c_hi = first.imm
    else:
        c = np.asarray(op.consts[first.const], np.int64)
        c_lo, c_hi = int(c.min()), int(c.max())
    alu = "MAX" if hi <= c_lo else "MIN" if lo >= c_hi else None
    return None if alu is None else TailOp(alu, imm=first.imm, const=first.const)


def offset_for_init(op: "ConvOp") -> "ConvOp":
    """Pass for an int8 result whose tail is ``ADD bias`` (a per-channel constant), further
    ``ADD``s, ``SHR s``, then ``MAX``/``MIN``/``ADD`` immediates (the quantiser's
    requantisation): adds ``K = 256 m 2^s`` to the bias and ``256 m`` to the bounds after the
    shift, the smallest ``m`` that puts every stored value below the new bias, so that
    :func:`acc_init_step` can set the accumulator by ``MAX bias``. Guarantees the same int8
    results: ``(x + K) >> s = (x >> s) + 256 m`` exactly, the bounds move with it, and the
    narrowing STORE drops multiples of 256; applied only when the interval analysis from the
    int8 weights proves that nothing wraps, before or after. Otherwise returns ``op``."""
    steps = op.tail
    if op.out_dtype != "int8" or not steps or steps[0].alu != "ADD" or steps[0].const is None \
            or acc_init_step(op) is not None:
        return op
    shr = next((i for i, t in enumerate(steps) if t.alu != "ADD"), len(steps))
    shift = 0
    if shr < len(steps) and steps[shr].alu == "SHR" and steps[shr].imm is not None \
            and steps[shr].imm >= 0:
        shift, after = steps[shr].imm, steps[shr + 1:]
    else:
        after = steps[shr:]
    if any(t.imm is None or t.alu not in ("MAX", "MIN", "ADD") for t in after):
        return op
    lo, hi = accumulator_bounds(op.weight)
    if not tail_ranges(steps, op.consts, lo, hi):
        return op
    k = steps[0].const
    if any(t.const == k for t in steps[1:]):
        return op
    for m in (1, 2, 4, 8):
        if (m << (shift + 8)) >= 1 << 31:
            break
        d = m << 8
        moved = tuple(TailOp(t.alu, imm=t.imm + d) if t.alu in ("MAX", "MIN") else t
                      for t in after)
        if any(not -(1 << 15) <= t.imm < (1 << 15) for t in moved):
            break
        consts = list(op.consts)
        consts[k] = np.asarray(consts[k], np.int64) + (m << (shift + 8))
        if consts[k].max() > _I32[1]:
            break
        consts[k] = consts[k].astype(np.int32)
        new = replace(op, tail=steps[:len(steps) - len(after)] + moved, consts=tuple(consts))
        if not tail_ranges(new.tail, new.consts, lo, hi):
            break
        if acc_init_step(new) is not None:
            return new
    return op


def sink_max(steps: tuple, consts: tuple = ()) -> tuple:
    """Pass (valid only when the tail cannot wrap, see :func:`tail_ranges`): an immediate
    ``MAX a`` moves after the ``ADD`` and ``SHR`` steps that follow it (both monotone, so
    ``max(x, a) + c == max(x + c, a + c)`` and likewise for a shift), becoming ``MAX b`` with
    ``b`` the bound carried along, as far as ``b`` is one 16-bit number for every channel: over
    immediates always, over per-channel constants where they agree again (relu's 0 through a
    per-channel rounding ``ADD 2^(s-1)`` and ``SHR s`` is 0 in every channel). Guarantees the same
    results; relu before a rounding shift then meets the bias (``merge_constant_adds``) and the
    clip (``simplify_tail``): two ALU passes fewer for the quantiser's ``bias, relu, +r, >> s,
    clip``, with scalar or per-channel shifts."""
    steps = list(steps)
    i = 0
    while i < len(steps):
        a = steps[i]
        if a.alu != "MAX" or a.imm is None:
            i += 1
            continue
        bound, best = np.int64(a.imm), None
        for j in range(i + 1, len(steps)):
            b = steps[j]
            if b.alu not in ("ADD", "SHR") or b.residual:
                break
            operand = b.imm if b.imm is not None else np.asarray(consts[b.const], np.int64)
            if b.alu == "SHR" and np.min(operand) < 0:
                break
            bound = bound + operand if b.alu == "ADD" else bound >> operand
            values = np.unique(bound)
            if values.size == 1 and -(1 << 15) <= values[0] < (1 << 15):
                best = (j, int(values[0]))
        if best is not None:
            j, new = best
            steps[i:j + 1] = steps[i + 1:j + 1] + [TailOp("MAX", imm=new)]
        i += 1
    return tuple(steps)


def accumulator_bounds(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel, the extremes of an int8 convolution's int32 sum over int8 data."""
    w = weight.astype(np.int64).reshape(weight.shape[0], -1)
    return (np.minimum(w * 127, w * -128).sum(axis=1),
            np.maximum(w * 127, w * -128).sum(axis=1))


@dataclass(frozen=True)
class ColumnFold:
    """How ``fold_columns`` rewrote a convolution: the input ``x`` (N, C, H, W) becomes
    ``x'[n, c * kw + q, y, j] = x[n, c, y, j * sw + q * dw - pad_left]`` (zero outside),
    of shape (N, C * kw, H, OW)."""

    kw: int
    sw: int
    dw: int
    pad_left: int
    out_w: int
    in_shape: tuple


def fold_columns(op: ConvOp, cfg: VTAConfig) -> tuple[ConvOp, ColumnFold] | None:
    """Pass for shallow convolutions (the 3-channel stem): move the kernel's columns into the
    channels. Guarantees: the returned operator applied to the unfolded input computes exactly
    ``op``; it is returned only when it needs fewer channel blocks x kernel taps (the GEMM
    work), e.g. 7x7 on 3 channels: 7 taps x 2 blocks instead of 49 x 1."""
    n, c, h, w = op.data_shape
    o, ig, kh, kw = op.weight.shape
    if op.kind != "conv2d" or op.groups != 1 or kw == 1:
        return None
    if ceil_div(c * kw, cfg.block_in) >= ceil_div(c, cfg.block_in) * kw:
        return None
    (sh, sw), (dh, dw) = op.strides, op.dilation
    pt, pl, pb, pr = op.padding
    ow = op.out_shape[3]
    weight = np.ascontiguousarray(op.weight.transpose(0, 1, 3, 2).reshape(o, c * kw, kh, 1))
    folded = ConvOp(op.name, "conv2d", (n, c * kw, h, ow), weight, (sh, 1), (pt, 0, pb, 0),
                    (dh, 1), 1, op.tail, op.consts, op.out_dtype)
    return folded, ColumnFold(kw, sw, dw, pl, ow, tuple(op.data_shape))


def unfold_columns(x: np.ndarray, f: ColumnFold) -> np.ndarray:
    """The input of a column-folded convolution (numpy reference)."""
    n, c, h, w = f.in_shape
    out = np.zeros((n, c, f.kw, h, f.out_w), x.dtype)
    for q in range(f.kw):
        for j in range(f.out_w):
            src = j * f.sw + q * f.dw - f.pad_left
            if 0 <= src < w:
                out[:, :, q, :, j] = x[:, :, :, src]
    return out.reshape(n, c * f.kw, h, f.out_w)


def _effective_groups(op: ConvOp, cfg: VTAConfig) -> int:
    """The largest divisor of ``groups`` whose groups hold whole channel blocks."""
    n, c, h, w = op.data_shape
    o = op.weight.shape[0]
    for g in sorted((d for d in range(1, op.groups + 1) if op.groups % d == 0), reverse=True):
        if (c // g) % cfg.block_in == 0 and (o // g) % cfg.block_out == 0:
            return g
    return 1


@dataclass(frozen=True, eq=False)
class ConvGeometry:
    """A :class:`ConvOp` in blocks of a configuration: batch blocks ``nb``, ``groups`` (block
    granularity) of ``cbg`` input and ``obg`` output channel blocks, packed weights and
    constants in their DRAM layout."""

    op: ConvOp
    cfg: VTAConfig
    groups: int
    nb: int
    cbg: int
    obg: int

    cb = property(lambda self: self.groups * self.cbg)
    ob = property(lambda self: self.groups * self.obg)

    @property
    def hw(self):
        return self.op.data_shape[2:]

    @property
    def out_hw(self):
        return self.op.out_shape[2:]

    @property
    def kernel(self):
        return self.op.weight.shape[2:]

    @cached_property
    def packed_weight(self) -> np.ndarray:
        """(OB, CBg, KH, KW, BO, BI) int8, group after group."""
        cfg, g = self.cfg, self.groups
        w = expand_groups(self.op.weight, self.op.groups, g)
        og = w.shape[0] // g
        parts = [pack_weight(w[i * og:(i + 1) * og], cfg.block_out, cfg.block_in)
                 for i in range(g)]
        return np.ascontiguousarray(np.concatenate(parts, axis=0).astype(np.int8))

    @cached_property
    def packed_consts(self) -> np.ndarray:
        """(n_consts, OB, B, BO) int32."""
        cfg = self.cfg
        if not self.op.consts:
            return np.zeros((0, self.ob, cfg.batch, cfg.block_out), np.int32)
        return np.stack([pack_channel_const(v, cfg.batch, cfg.block_out)
                         for v in self.op.consts])

    @property
    def out_elems(self) -> int:
        oh, ow = self.out_hw
        return self.nb * self.ob * oh * ow

    @property
    def in_elems(self) -> int:
        h, w = self.hw
        return self.nb * self.cb * h * w


def geometry(op: ConvOp, cfg: VTAConfig) -> ConvGeometry:
    """Block the operator for ``cfg``; :class:`CompileError` if the DMA cannot pad it."""
    pads = op.padding
    if max(pads) > _MAX_PAD:
        raise CompileError(f"{op.name}: padding {list(pads)} exceeds the load DMA's limit of "
                           f"{_MAX_PAD} per side")
    g = _effective_groups(op, cfg)
    n, c, h, w = op.data_shape
    o = op.weight.shape[0]
    return ConvGeometry(op, cfg, g, ceil_div(n, cfg.batch), ceil_div(c // g, cfg.block_in),
                        ceil_div(o // g, cfg.block_out))
