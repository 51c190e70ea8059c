"""Schedules of a VTA convolution: tiles that fit every SRAM, virtual threads, the micro-op
layout, and an analytical cost model that ranks them.

A tile covers ``tb`` batch blocks x ``tco`` output-channel blocks x ``th`` x ``tw`` output
pixels; the input channels are reduced in chunks of ``tci`` blocks. With ``vt = 2`` (two virtual
threads) INP, WGT and ACC are split in halves used alternately, so that the load of one chunk
and the store of one tile overlap the GEMMs of the next. ``layout`` says which two dimensions
the GEMM kernel folds into the hardware's two loops: ``"A"`` the output rows and columns (the
micro-ops enumerate input blocks, kernel taps and output blocks), ``"B"`` the output rows and
the input blocks (the micro-ops enumerate taps, output blocks and columns).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import asdict, dataclass

from isa.arch import ALU_LATENCY, GEMM_LATENCY
from isa.config import LOOP_ITER_BITS

from .errors import DoesNotFit
from .operators import ConvGeometry, acc_init_step
from .packing import ceil_div

__all__ = ["Schedule", "sram_need", "check_fits", "candidates", "estimate", "choose",
           "hazard_free_layout", "valid_span", "valid_gemm_uops", "SMALLEST",
           "GEMM_INSN_CYCLES", "ALU_INSN_CYCLES"]

# Micro-ops the lowering adds besides the GEMM kernel (reset and ALU kernels: one each).
_EXTRA_UOPS = 16
_MAX_ITER = (1 << LOOP_ITER_BITS) - 1
# Cycles one more GEMM or ALU instruction costs on the compute module besides its micro-ops:
# the pipeline drains (its latency), then retire and the next start (sim/timing/compute.py).
GEMM_INSN_CYCLES = GEMM_LATENCY + 2
ALU_INSN_CYCLES = ALU_LATENCY + 2
# An ALU pass costs one cycle per micro-op: the hardware's wait (``isa.arch.alu_stalls``, for a
# micro-op reading what one of the two just ahead writes, the second only for MUL) never
# applies to the lowering's passes, which write each accumulator entry once per pass from other
# entries or an immediate (tests/compiler/test_lowering.py checks the kernels with it).
# What a tile costs the compute module beyond its instructions: its loads into ACC and of
# micro-op kernels wait for the memory port behind the load module's transfers, and the token
# round trips with store (100-250 cycles measured on small layers; a conservative share).
TILE_CYCLES = 80


@dataclass(frozen=True)
class Schedule:
    tb: int = 1
    tco: int = 1
    th: int = 1
    tw: int = 1
    tci: int = 1
    vt: int = 1
    layout: str = "A"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Schedule":
        return cls(**d)

    def __str__(self) -> str:
        return (f"tb={self.tb} tco={self.tco} th={self.th} tw={self.tw} tci={self.tci} "
                f"vt={self.vt} layout={self.layout}")


SMALLEST = Schedule()


def skips_rows(geo: ConvGeometry) -> bool:
    """A kernel one row high with a vertical stride and no vertical padding reads only every
    ``sh``-th input row: the load DMA's row pitch skips the others (1x1 stride-2 layers)."""
    pt, _, pb, _ = geo.op.padding
    return geo.kernel[0] == 1 and geo.op.strides[0] > 1 and pt == pb == 0


def input_window(geo: ConvGeometry, th: int, tw: int) -> tuple[int, int]:
    """Rows and columns of input in SRAM for ``th`` x ``tw`` output pixels."""
    (sh, sw), (dh, dw) = geo.op.strides, geo.op.dilation
    kh, kw = geo.kernel
    rows = th if skips_rows(geo) else (th - 1) * sh + (kh - 1) * dh + 1
    return rows, (tw - 1) * sw + (kw - 1) * dw + 1


def valid_span(o0: int, n: int, stride: int, pad: int, offset: int, size: int) -> tuple[int, int]:
    """Of the ``n`` output positions from ``o0``, the range [a, b) whose input position
    ``o * stride - pad + offset`` lies inside [0, size) (empty if b <= a)."""
    lo = -((offset - pad) // stride)                    # ceil((pad - offset) / stride)
    hi = (size - 1 + pad - offset) // stride + 1
    return max(lo - o0, 0), min(hi - o0, n)


@functools.lru_cache(maxsize=4096)
def _axis_taps(n_out: int, step: int, stride: int, pad: int, dil: int, k: int, size: int):
    """Along one axis, tiled by ``step``: (output-tap pairs that read inside the input,
    summed over the tiles the number of distinct valid spans of the taps, the number of
    distinct patterns of spans, each a micro-op kernel of its own)."""
    pairs = spans = 0
    patterns = set()
    for o0 in range(0, n_out, step):
        n = min(step, n_out - o0)
        tile = tuple(valid_span(o0, n, stride, pad, t * dil, size) for t in range(k))
        pairs += sum(max(b - a, 0) for a, b in tile)
        spans += len({(a, b) for a, b in tile if b > a})
        patterns.add((n, tile))
    return pairs, spans, len(patterns)


def valid_gemm_uops(geo: ConvGeometry) -> int:
    """GEMM micro-ops over the (output pixel, tap) pairs whose input pixel lies inside the
    image: the work left when the taps that read padding are skipped (lower.py)."""
    op = geo.op
    (oh, ow), (h, w), (kh, kw) = geo.out_hw, geo.hw, geo.kernel
    (sh, sw), (dh, dw) = op.strides, op.dilation
    vy = _axis_taps(oh, oh, sh, op.padding[0], dh, kh, h)[0]
    vx = _axis_taps(ow, ow, sw, op.padding[1], dw, kw, w)[0]
    return geo.groups * geo.nb * geo.obg * geo.cbg * vy * vx


def gemm_uops(geo: ConvGeometry, s: Schedule) -> int:
    kh, kw = geo.kernel
    if s.layout == "A":
        return s.tci * kh * kw * s.tb * s.tco
    return kh * kw * s.tco * s.tb * s.tw


def acc_rows(geo: ConvGeometry, s: Schedule) -> int:
    """Accumulator entries of one half: the tile, its residual, its constants."""
    r = s.tb * s.tco * s.th * s.tw
    return r * (2 if geo.op.residual else 1) + len(geo.op.consts) * s.tco


def sram_need(geo: ConvGeometry, s: Schedule) -> dict[str, tuple[int, int]]:
    """(entries needed, entries available) of each on-chip buffer."""
    cfg = geo.cfg
    ih, iw = input_window(geo, s.th, s.tw)
    kh, kw = geo.kernel
    return {"INP": (s.vt * s.tb * s.tci * ih * iw, cfg.inp_depth),
            "WGT": (s.vt * s.tco * s.tci * kh * kw, cfg.wgt_depth),
            "ACC": (s.vt * acc_rows(geo, s), cfg.acc_depth),
            "UOP": (gemm_uops(geo, s) + _EXTRA_UOPS, cfg.uop_depth)}


def fits(geo: ConvGeometry, s: Schedule) -> bool:
    ih, iw = input_window(geo, s.th, s.tw)
    if max(s.th, s.tw, s.tci) > _MAX_ITER or (s.layout == "A" and s.th * s.tw == 0):
        return False
    return all(need <= have for need, have in sram_need(geo, s).values())


def check_fits(geo: ConvGeometry, s: Schedule) -> None:
    """Raise :class:`DoesNotFit` naming the first buffer that ``s`` overflows."""
    for buf, (need, have) in sram_need(geo, s).items():
        if need > have:
            raise DoesNotFit(f"{geo.op.name}: {geo.op.describe()}: the tile {s} needs {need} "
                             f"{buf} entries but the {buf} buffer of {geo.cfg.key} has {have}")


def hazard_free_layout(geo: ConvGeometry, s: Schedule) -> bool:
    """True if no GEMM micro-op writes the accumulator entry of one of the two before it
    (the original hardware's read-after-write hazard rule)."""
    rows = s.tco * s.tb * (1 if s.layout == "A" else s.tw)
    return rows >= 3


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _splits(n: int) -> list[int]:
    """Tile sizes worth trying for an extent ``n``: its divisors and near-even splits."""
    return sorted(set(_divisors(n)) | {ceil_div(n, k) for k in range(1, min(n, 16) + 1)})


def candidates(geo: ConvGeometry):
    """Every schedule of the space that fits the configuration."""
    oh, ow = geo.out_hw
    for tb, tco, th, tw, tci, vt, layout in itertools.product(
            _divisors(geo.nb), _divisors(geo.obg), _splits(oh), _splits(ow), _divisors(geo.cbg),
            (1, 2), ("A", "B")):
        s = Schedule(tb, tco, th, tw, tci, vt, layout)
        if fits(geo, s):
            yield s


def estimate(geo: ConvGeometry, s: Schedule) -> dict:
    """Analytical cost: bytes per memory type, micro-ops, instructions and predicted cycles.

    Transfers stream one bus beat per cycle after ``MEM_LATENCY`` per row (each row of a 2-D
    transfer is at least one burst); GEMM and ALU issue one micro-op per cycle; with two virtual
    threads loads and stores hide behind compute, otherwise they add up.
    """
    cfg, op = geo.cfg, geo.op
    oh, ow = geo.out_hw
    kh, kw = geo.kernel
    ih, iw = input_window(geo, s.th, s.tw)
    tiles = (geo.groups * ceil_div(geo.nb, s.tb) * ceil_div(geo.obg, s.tco)
             * ceil_div(oh, s.th) * ceil_div(ow, s.tw))
    chunks = ceil_div(geo.cbg, s.tci)
    units = tiles * chunks
    lat = cfg.mem_latency + 2
    inp_rows = s.tb * s.tci * ih
    inp_bytes = units * s.tb * s.tci * ih * iw * cfg.inp_elem_bytes
    wgt_loads = units
    groups = tiles // (ceil_div(oh, s.th) * ceil_div(ow, s.tw))
    held = chunks <= s.vt and s.vt % chunks == 0
    if held:
        # the tiles of one output-channel tile keep their weights in SRAM (lower.py)
        wgt_loads = min(units, groups * max(s.vt, chunks))
    wgt_bytes = wgt_loads * s.tco * s.tci * kh * kw * cfg.wgt_elem_bytes
    r = s.tb * s.tco * s.th * s.tw
    planes = 4 if op.out_dtype == "int32" else 1
    out_bytes = tiles * r * cfg.out_elem_bytes * planes
    acc_bytes = tiles * (r * cfg.batch * cfg.block_out * op.residual
                         + len(op.consts) * s.tco * cfg.acc_elem_bytes)
    load = ((inp_bytes + wgt_bytes) / cfg.bus_bytes + units * inp_rows * lat
            + wgt_loads * s.tco * lat)
    store = out_bytes / cfg.bus_bytes + tiles * s.tb * s.tco * s.th * lat * planes
    # GEMM work over the taps that read inside the input (lower.py skips the padding), one
    # instruction per group of taps with the same valid rectangle
    (h, w), (sh, sw), (dh, dw) = geo.hw, op.strides, op.dilation
    pt, pl = op.padding[:2]
    vy, gy, py = _axis_taps(oh, s.th, sh, pt, dh, kh, h)
    vx, gx, px = _axis_taps(ow, s.tw, sw, pl, dw, kw, w)
    if s.layout == "B":
        gx = ceil_div(ow, s.tw)
    others = geo.groups * geo.nb * geo.obg
    insns = chunks * geo.groups * ceil_div(geo.nb, s.tb) * ceil_div(geo.obg, s.tco) * gy * gx
    gemm = others * geo.cbg * vy * vx + insns * GEMM_INSN_CYCLES + tiles * (r + 8)
    # micro-op kernels loaded by the compute module: once each if they all stay resident in
    # the micro-op buffer, else every chunk
    kernel = gemm_uops(geo, s)
    kernels = s.vt * py * px
    loads = kernels if kernels * kernel <= cfg.uop_depth else units
    uop_load = loads * (kernel * cfg.uop_elem_bytes / cfg.bus_bytes + lat)
    # an initialisation by the ALU saves the tail's leading ADD (not on a half's first tile)
    passes = len(op.tail) + planes - 1
    alu = tiles * (r * passes + ALU_INSN_CYCLES * len(op.tail))
    if acc_init_step(op) is not None:
        alu -= max(tiles - s.vt, 0) * (r + ALU_INSN_CYCLES)
    compute = (gemm + alu + uop_load + acc_bytes / cfg.bus_bytes
               + tiles * lat * (s.tco * op.residual + bool(op.consts)) + tiles * TILE_CYCLES)
    if s.vt == 2:
        # the first unit's loads and the last tile's store are not hidden; nor, where each
        # half keeps its weights, the part of a new weight group's load that outlasts the
        # compute of one unit (once per half)
        wgt_unit = s.tco * s.tci * kh * kw * cfg.wgt_elem_bytes / cfg.bus_bytes + s.tco * lat
        fill = (inp_bytes / units / cfg.bus_bytes + inp_rows * lat + wgt_unit
                + store / tiles)
        if held:
            fill += groups * min(chunks, s.vt) * max(0.0, wgt_unit - compute / units)
        cycles = max(load, compute, store) + fill
    else:
        cycles = load + compute + store
    return {"cycles": int(cycles), "inp_bytes": inp_bytes, "wgt_bytes": wgt_bytes,
            "out_bytes": out_bytes, "acc_bytes": acc_bytes, "gemm_uops": geo.out_elems * geo.cbg
            * kh * kw, "uop_kernel": gemm_uops(geo, s), "tiles": tiles, "units": units}


def choose(geo: ConvGeometry) -> Schedule:
    """The schedule the cost model ranks first (hazard-free ones preferred); the smallest tile
    must fit, otherwise :class:`DoesNotFit` names the buffer."""
    best, best_key = None, None
    for s in candidates(geo):
        key = (not hazard_free_layout(geo, s), estimate(geo, s)["cycles"],
               -s.th * s.tw * s.tco)
        if best_key is None or key < best_key:
            best, best_key = s, key
    if best is None:
        check_fits(geo, SMALLEST)
        check_fits(geo, Schedule(layout="B"))
        raise DoesNotFit(f"{geo.op.name}: no schedule fits {geo.cfg.key}")
    return best
