"""Lowering a blocked convolution (conv2d, dense) with its tail to a :class:`VtaProgram`.

Regions: ``data`` (packed int8 input), ``residual`` (packed int8, optional), ``weights``
(packed int8), ``consts`` (packed int32, optional) and ``out`` (packed int8; four byte planes
for an int32 result, low byte first).

Per tile, in program order (tokens in brackets):

* per input-channel chunk: load stage [pop compute->load once the SRAM half was used] INP
  and WGT loads [push load->compute]; compute [pop load->compute] (first chunk: [pop
  store->compute once the ACC half was used] GEMM reset) GEMM [push compute->load];
* compute: constant and residual loads into ACC, the ALU tail [push compute->store];
* store [pop compute->store] STOREs [push store->compute]. An int32 result is stored as four
  byte planes: SHR 8 between planes, each waiting for the previous plane's store.

Every pop follows its push in program order, so the stream cannot deadlock; with two virtual
threads the halves alternate, so the load of chunk *u + 1* and the store of tile *t - 1* run
while chunk *u* computes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from isa.encoding import AluOp, MemType

from .operators import ConvGeometry, acc_init_step
from .packing import ceil_div
from .program import ProgramBuilder, VtaProgram
from .schedule import (GEMM_INSN_CYCLES, Schedule, acc_rows, check_fits, input_window,
                       skips_rows, valid_span)

__all__ = ["lower_conv", "region_bytes", "tap_rects", "gemm_groups"]


def _ranges(n: int, step: int):
    return [(i, min(step, n - i)) for i in range(0, n, step)]


def region_bytes(geo: ConvGeometry) -> dict[str, int]:
    cfg, op = geo.cfg, geo.op
    planes = 4 if op.out_dtype == "int32" else 1
    sizes = {"data": geo.in_elems * cfg.inp_elem_bytes,
             "weights": geo.packed_weight.nbytes,
             "out": planes * geo.out_elems * cfg.out_elem_bytes}
    if op.residual:
        sizes["residual"] = geo.out_elems * cfg.batch * cfg.block_out
    if op.consts:
        sizes["consts"] = geo.packed_consts.nbytes
    return sizes


def _alu_rows(p: ProgramBuilder, op: AluOp, dst: int, rows: int, *, imm=None, src=None,
              src_step: int = 0) -> None:
    """One ALU micro-op over ``rows`` consecutive accumulator entries (two loops if needed)."""
    inner = rows
    outer = 1
    while inner > (1 << 14) - 1:
        outer *= 2
        inner = ceil_div(inner, 2)
    if outer * inner != rows:
        raise AssertionError("ALU rows must split evenly")
    src0 = dst if src is None else src
    loops = [(outer, inner, inner * src_step, 0), (inner, 1, src_step, 0)] if outer > 1 else \
        [(inner, 1, src_step, 0)]
    p.alu(op, [(dst, src0, 0)], loops, imm=imm)


def lower_conv(geo: ConvGeometry, s: Schedule) -> VtaProgram:
    """The program of ``geo`` under schedule ``s`` (which must fit)."""
    check_fits(geo, s)
    p = ProgramBuilder()
    sizes = region_bytes(geo)
    reg = {name: p.region(name, sizes[name], role) for name, role in (
        ("data", "input"), ("residual", "input"), ("weights", "param"), ("consts", "param"),
        ("out", "output")) if name in sizes}
    _emit_conv(p, geo, s, reg, _Counters())
    return p.build()


class _Counters:
    """Load units and tiles emitted so far (the token pattern runs on across phases), the open
    unit of the program layer (kept in one launch) and what its SRAM holds: the weight tile
    of each WGT half, the values in each ACC half."""

    def __init__(self):
        self.unit = self.tile = 0
        self.group = None           # the weight group (output-channel tile), None: no unit
        self.group_start = 0        # commands emitted when the unit opened
        self.held: dict = {}        # WGT half -> weight tile key
        self.acc: dict = {}         # ACC half base -> rows an earlier tile's tail left there


# A unit (one launch) holds whole weight groups, so that weights loaded by an earlier tile are
# still in SRAM; a new unit starts at a group after this many commands, far below a launch's
# capacity.
_GROUP_COMMANDS = 2048


def _open_group(p: ProgramBuilder, n: _Counters, key, uop_depth: int) -> None:
    """Enter the weight group ``key`` (its tiles keep their weights in SRAM) for the next tile,
    in the open unit unless that is full. A tile adds at most two halves' kernels (each within
    the micro-op buffer), so a unit closed once its kernels pass one buffer's worth stays
    within a launch's staging capacity (isa.program: 4 x the buffer)."""
    full = len(p) - n.group_start >= _GROUP_COMMANDS or p.unit_uops > uop_depth
    if n.group is not None and not full:
        if n.group != key:
            n.group, n.held = key, {}
        return
    _close_group(p, n)
    p.unit_begin()
    # a unit may start a launch: nothing in SRAM is known from before
    n.group, n.group_start, n.held, n.acc = key, len(p), {}, {}


def _close_group(p: ProgramBuilder, n: _Counters) -> None:
    if n.group is not None:
        p.unit_end()
        n.group = None


def _halves(geo: ConvGeometry, s: Schedule) -> tuple[int, int, int]:
    kh, kw = geo.kernel
    ih, iw = input_window(geo, s.th, s.tw)
    return s.tb * s.tci * ih * iw, s.tco * s.tci * kh * kw, acc_rows(geo, s)


@dataclass(frozen=True)
class _Tile:
    """One output tile: where it lies in the result and in the accumulator."""

    g: int
    nb0: int
    tb: int
    ob0: int
    tco: int
    oy0: int
    th: int
    ox0: int
    tw: int
    acc_base: int
    res_base: int
    const_base: int

    @property
    def rows(self) -> int:
        return self.tb * self.tco * self.th * self.tw


def _emit_conv(p: ProgramBuilder, geo: ConvGeometry, s: Schedule, reg: dict, n: _Counters,
               placement: tuple | None = None, halves: tuple | None = None) -> None:
    """Emit ``geo``'s tiles. ``placement`` = (OH, OW, ry, rx, sy, sx) writes output pixel
    (y, x) at (ry + sy y, rx + sx x) of an OH x OW result (the phases of a transposed
    convolution); ``halves`` fixes the SRAM half sizes (the largest of several phases)."""
    op = geo.op
    oh, ow = geo.out_hw
    inp_half, wgt_half, acc_half = halves or _halves(geo, s)
    r_max = s.tb * s.tco * s.th * s.tw
    # The byte planes of a tile consume their own store->compute tokens, so no token of an
    # earlier tile may still be waiting: with planes, each tile waits for the last store.
    reuse = 1 if op.out_dtype == "int32" else s.vt
    tiles = itertools.product(range(geo.groups), _ranges(geo.nb, s.tb), _ranges(geo.obg, s.tco),
                              _ranges(oh, s.th), _ranges(ow, s.tw))
    for g, (nb0, tb), (o0, tco), (oy0, th), (ox0, tw) in tiles:
        acc_base = (n.tile % s.vt) * acc_half
        t = _Tile(g, nb0, tb, g * geo.obg + o0, tco, oy0, th, ox0, tw, acc_base,
                  acc_base + r_max, acc_base + r_max * (2 if op.residual else 1))
        # Tiles of one output-channel tile share their weights: one group, weights kept.
        _open_group(p, n, (reg["weights"], g, t.ob0, tco), geo.cfg.uop_depth)
        rects = tap_rects(geo, oy0, th, ox0, tw)
        window = _input_rows(geo, t) if rects else None
        chunks = _ranges(geo.cbg, s.tci) if window is not None else []
        init = _acc_init(op, n.acc.get(acc_base), t.rows)
        if not chunks:          # every tap reads padding: no GEMM at all
            if n.tile >= reuse:
                p.pop("store", "compute")
            _init_rows(p, geo, reg, t, init)
        for k, (c0, tci) in enumerate(chunks):
            ihalf = n.unit % s.vt
            _load_unit(p, geo, s, reg, n, t, window, c0, tci, ihalf * inp_half,
                       ihalf * wgt_half)
            p.pop("load", "compute")
            if k == 0:
                if n.tile >= reuse:
                    p.pop("store", "compute")
                _init_rows(p, geo, reg, t, init)
            ih, iw = input_window(geo, th, tw)
            (sh, sw), (dh, dw) = op.strides, op.dilation
            row_step = 1 if skips_rows(geo) else sh     # input rows per output row in SRAM
            _gemm(p, s.layout, acc_base, ihalf * inp_half, ihalf * wgt_half, tb, tco, th, tw,
                  tci, ih, iw, *geo.kernel, row_step, sw, dh, dw, rects)
            p.push("compute", "load")
            n.unit += 1
        _tail(p, geo, reg, t, op.tail[1:] if init else op.tail,
              consts_loaded=init is not None and init.const is not None)
        _store(p, geo, reg, t, placement)
        # what the half's rows hold now, for the next tile's initialisation
        n.acc[acc_base] = t.rows
        n.tile += 1
    _close_group(p, n)


def _acc_init(op, held: int | None, rows: int):
    """How a tile initialises its ``rows`` accumulator rows: None for a GEMM reset, or the
    ALU step of :func:`acc_init_step` (which also replaces the tail's leading ``ADD``) when
    the half's first ``held`` rows hold what an earlier tile of this unit stored."""
    step = acc_init_step(op)
    return None if step is None or held is None or held < rows else step


def _init_rows(p, geo, reg, t: "_Tile", init) -> None:
    """Set the tile's accumulator rows: GEMM reset, or ``init`` (after loading the constants
    when it takes one: the tail then does not load them again)."""
    if init is None:
        p.gemm([(t.acc_base, 0, 0)], [(t.rows, 1, 0, 0)], reset=True)
    elif init.imm is not None:
        _alu_rows(p, AluOp[init.alu], t.acc_base, t.rows, imm=init.imm)
    else:
        _load_consts(p, geo, reg, t)
        _alu_const(p, AluOp[init.alu], t, init.const)


def _load_consts(p, geo, reg, t: "_Tile") -> None:
    p.load(MemType.ACC, t.const_base, reg["consts"], t.ob0, x_size=t.tco,
           y_size=len(geo.op.consts), x_stride=geo.ob)


def _alu_const(p, alu: AluOp, t: "_Tile", const: int) -> None:
    """``alu`` of the per-channel constant ``const`` over the tile's rows: dst walks each
    output block's rows, src stays on the block's constant row."""
    block = t.tb * t.th * t.tw
    p.alu(alu, [(t.acc_base, t.const_base + const * t.tco, 0)],
          [(t.tco, block, 1, 0), (block, 1, 0, 0)])


def _input_rows(geo: ConvGeometry, t: _Tile):
    """(iy0, ys, ye, ix0, xs, xe): the tile's input window from (iy0, ix0) and its part
    inside the input, [ys, ye) x [xs, xe); None if that part is empty."""
    h, w = geo.hw
    (sh, sw), (pt, pl) = geo.op.strides, geo.op.padding[:2]
    ih, iw = input_window(geo, t.th, t.tw)
    iy0, ix0 = t.oy0 * sh - pt, t.ox0 * sw - pl
    ys, ye, xs, xe = max(iy0, 0), min(iy0 + ih, h), max(ix0, 0), min(ix0 + iw, w)
    if skips_rows(geo):     # th rows, every sh-th from iy0 (all inside: no vertical padding)
        ys, ye = iy0, iy0 + ih
    return None if ye <= ys or xe <= xs else (iy0, ys, ye, ix0, xs, xe)


def _load_unit(p, geo, s, reg, n, t: _Tile, window, c0, tci, inp_base, wgt_base) -> None:
    """The load stage of one chunk: INP blocks with DMA padding, WGT unless the half holds
    them already; waits for the compute that used the half last."""
    h, w = geo.hw
    kh, kw = geo.kernel
    ih, iw = input_window(geo, t.th, t.tw)
    iy0, ys, ye, ix0, xs, xe = window
    if n.unit >= s.vt:
        p.pop("compute", "load")
    for b, c in itertools.product(range(t.tb), range(tci)):
        cb = t.g * geo.cbg + c0 + c
        pitch = geo.op.strides[0] * w if skips_rows(geo) else w
        p.load(MemType.INP, inp_base + (b * tci + c) * ih * iw, reg["data"],
               (((t.nb0 + b) * geo.cb + cb) * h + ys) * w + xs, x_size=xe - xs,
               y_size=ye - ys, x_stride=pitch, y_pad=(ys - iy0, iy0 + ih - ye),
               x_pad=(xs - ix0, ix0 + iw - xe))
    ihalf = n.unit % s.vt
    if n.held.get(ihalf) != (c0, tci):
        p.load(MemType.WGT, wgt_base, reg["weights"], (t.ob0 * geo.cbg + c0) * kh * kw,
               x_size=tci * kh * kw, y_size=t.tco, x_stride=geo.cbg * kh * kw)
        n.held[ihalf] = (c0, tci)
    p.push("load", "compute")


def _tail(p, geo, reg, t: _Tile, steps: tuple, consts_loaded: bool = False) -> None:
    """Constants (unless loaded already) and residual into ACC, then the ALU ``steps`` over
    the tile's rows."""
    op = geo.op
    oh, ow = geo.out_hw
    if op.consts and not consts_loaded:
        _load_consts(p, geo, reg, t)
    if op.residual:
        for o, b in itertools.product(range(t.tco), range(t.tb)):
            p.load(MemType.ACC_8BIT, t.res_base + (o * t.tb + b) * t.th * t.tw, reg["residual"],
                   (((t.nb0 + b) * geo.ob + t.ob0 + o) * oh + t.oy0) * ow + t.ox0, x_size=t.tw,
                   y_size=t.th, x_stride=ow)
    for step in steps:
        alu = AluOp[step.alu]
        if step.imm is not None:
            _alu_rows(p, alu, t.acc_base, t.rows, imm=step.imm)
        elif step.residual:
            _alu_rows(p, alu, t.acc_base, t.rows, src=t.res_base, src_step=1)
        else:
            _alu_const(p, alu, t, step.const)
    p.push("compute", "store")


def _store(p, geo, reg, t: _Tile, placement) -> None:
    """STORE the tile (as four byte planes with SHR 8 between them for an int32 result)."""
    oh, ow = geo.out_hw
    full_h, full_w, ry, rx, sy, sx = placement or (oh, ow, 0, 0, 1, 1)
    plane_elems = geo.nb * geo.ob * full_h * full_w
    for plane in range(4 if geo.op.out_dtype == "int32" else 1):
        if plane:
            p.pop("store", "compute")
            _alu_rows(p, AluOp.SHR, t.acc_base, t.rows, imm=8)
            p.push("compute", "store")
        p.pop("compute", "store")
        for o, b in itertools.product(range(t.tco), range(t.tb)):
            row = t.acc_base + (o * t.tb + b) * t.th * t.tw
            first = plane * plane_elems + ((t.nb0 + b) * geo.ob + t.ob0 + o) * full_h * full_w
            if placement is None:
                p.store(row, reg["out"], first + t.oy0 * ow + t.ox0, x_size=t.tw, y_size=t.th,
                        x_stride=ow)
                continue
            for y in range(t.th):     # every sx-th element of an output row
                p.store(row + y * t.tw, reg["out"], first + (ry + sy * (t.oy0 + y)) * full_w
                        + rx + sx * t.ox0, x_size=1, y_size=t.tw, x_stride=sx)
        p.push("store", "compute")


def tap_rects(geo: ConvGeometry, oy0: int, th: int, ox0: int, tw: int) -> dict:
    """For each kernel tap (ky, kx), the output pixels [y0, y1) x [x0, x1) of the tile at
    (oy0, ox0) whose input pixel lies inside the image; taps that read only padding are left
    out. The GEMM skips the rest: their products are zero (the DMA's padding)."""
    (h, w), (kh, kw) = geo.hw, geo.kernel
    (sh, sw), (dh, dw) = geo.op.strides, geo.op.dilation
    pt, pl = geo.op.padding[:2]
    ys = [valid_span(oy0, th, sh, pt, ky * dh, h) for ky in range(kh)]
    xs = [valid_span(ox0, tw, sw, pl, kx * dw, w) for kx in range(kw)]
    return {(ky, kx): ys[ky] + xs[kx] for ky in range(kh) for kx in range(kw)
            if ys[ky][1] > ys[ky][0] and xs[kx][1] > xs[kx][0]}


def gemm_groups(layout: str, rects: dict, th: int, tw: int, per_tap: int = 1) -> list:
    """The GEMM instructions of one chunk: taps grouped by the output rectangle they cover,
    as [(taps, y0, y1, x0, x1)], the grouping with the fewest predicted cycles (``per_tap``
    micro-op executions per tap and pixel, plus :data:`GEMM_INSN_CYCLES` per instruction). A
    group's rectangle bounds its taps' (a tap may cover more pixels than its valid ones: those
    read the padding, zero). Layout ``B`` keeps each tap's valid columns in its micro-ops, so it
    groups by rows only. An interior tile is one group of every tap over the whole tile."""
    full = (0, th, 0, tw)
    keys = [lambda r: r[:2], lambda r: ()] if layout == "B" else \
        [lambda r: r, lambda r: r[:2], lambda r: r[2:], lambda r: ()]
    best, best_cost = None, None
    for key in keys:
        groups: dict = {}
        for tap, r in sorted(rects.items()):
            groups.setdefault(key(r), []).append(tap)
        plan, cost = [], 0
        for taps in groups.values():
            y0 = min(rects[t][0] for t in taps)
            y1 = max(rects[t][1] for t in taps)
            x0, x1 = (min(rects[t][2] for t in taps), max(rects[t][3] for t in taps)) \
                if layout == "A" else full[2:]
            cols = sum(rects[t][3] - rects[t][2] for t in taps) if layout == "B" else \
                len(taps) * (x1 - x0)
            cost += (y1 - y0) * cols * per_tap + GEMM_INSN_CYCLES
            plan.append((taps, y0, y1, x0, x1))
        if best_cost is None or cost < best_cost:
            best, best_cost = plan, cost
    return best


def _gemm(p, layout, acc_base, inp_base, wgt_base, tb, tco, th, tw, tci, ih, iw, kh, kw, sh, sw,
          dh, dw, rects) -> None:
    """The GEMM kernels of one chunk (:func:`gemm_groups`): two loops folded into each
    instruction, the rest micro-ops."""
    block = ih * iw
    taps = kh * kw
    per_tap = tco * tb * tci          # executions per tap and output pixel, both layouts
    for group, y0, y1, x0, x1 in gemm_groups(layout, rects, th, tw, per_tap):
        acc0, inp0 = acc_base + y0 * tw + x0, inp_base + y0 * sh * iw + x0 * sw
        uops = []
        if layout == "A":
            for c, (y, x), o, b in itertools.product(range(tci), group, range(tco), range(tb)):
                uops.append((acc0 + (o * tb + b) * th * tw,
                             inp0 + (b * tci + c) * block + y * dh * iw + x * dw,
                             wgt_base + (o * tci + c) * taps + y * kw + x))
            loops = [(y1 - y0, tw, sh * iw, 0), (x1 - x0, 1, sw, 0)]
        else:
            for (y, x), o, b in itertools.product(group, range(tco), range(tb)):
                for col in range(*rects[(y, x)][2:]):
                    uops.append((acc0 + (o * tb + b) * th * tw + col,
                                 inp0 + b * tci * block + y * dh * iw + x * dw + col * sw,
                                 wgt_base + o * tci * taps + y * kw + x))
            loops = [(y1 - y0, tw, sh * iw, 0), (tci, 0, block, taps)]
        p.gemm(uops, loops)
