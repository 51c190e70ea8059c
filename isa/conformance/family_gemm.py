"""GEMM: single tiles, micro-op ranges, both loop levels with all six factors, reset, signed
extremes, int32 wrap, back-to-back accumulation, test_lib's gemm and blocked-GEMM tests (one
and two virtual threads), a padded 3x3 convolution (reference §7.4 item 4, §7.1)."""

from __future__ import annotations

import numpy as np

from ..encoding import MemType, Uop
from .builder import ProgramBuilder
from .common import (INT32_MAX, INT32_MIN, expect32, rand_i8, rand_i32, readback32, rng_for,
                     store_out)
from .tiles import acc_tiles, inp_tiles, narrow, wgt_tiles, wrap32


def _mm(a, w):
    """int64 product of INP tiles (..., B, BI) and WGT tiles (..., BO, BI) -> (..., B, BO)."""
    return np.einsum("...bk,...ok->...bo", np.asarray(a, np.int64), np.asarray(w, np.int64))


def loop_reference(uops, iters, factors, X, W, acc, *, reset=False):
    """Reference for a GEMM's index arithmetic: every (dst, src, wgt) triple of the two loops
    over the micro-ops, in order (reference §3.4), applied to int64 ``acc`` (wrapped after)."""
    (io, ii), ((do, di), (so, si), (wo, wi)) = iters, factors
    for o in range(io):
        for i in range(ii):
            for d, s, w in uops:
                dd, ss, ww = d + o * do + i * di, s + o * so + i * si, w + o * wo + i * wi
                if reset:
                    acc[dd] = 0
                else:
                    acc[dd] = acc[dd] + _mm(X[ss], W[ww])
    return acc


def single_tile_program(cfg, seed):
    name = "gemm-single-tile"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    b = ProgramBuilder(cfg, name)
    X, W, bias = rand_i8(rng, (B, BI)), rand_i8(rng, (BO, BI)), rand_i32(rng, (B, BO))
    xr, wr, ar = b.put_inp(X[None], "x"), b.put_wgt(W[None], "w"), b.put_acc(bias[None], "b")
    ur = b.put_uops([Uop(0, 0, 0)], "u")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, 1)
    b.load(MemType.INP, 0, xr, 1)
    b.load(MemType.WGT, 0, wr, 1)
    b.sync("load", "compute")
    b.gemm(0, 1)
    want = wrap32(bias.astype(np.int64) + X.astype(np.int64) @ W.T.astype(np.int64))[None]
    store_out(b, 0, 1, "y")
    b.sync("store", "compute")
    readback32(b, 0, 1, "full")
    return b.program({"y": narrow(want), "full": expect32(want)}, tags=("gemm",))


def gemm_test_program(cfg, seed, compressed: bool):
    """test_lib ``gemm_test``: the 7-instruction program with its token pattern (§4.4)."""
    name = f"gemm-testlib-{'compressed' if compressed else 'uncompressed'}"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    nb, ni, no = 2, 3, 2
    A = rand_i8(rng, (nb * B, ni * BI))
    Wm = rand_i8(rng, (no * BO, ni * BI))
    bias = rand_i32(rng, (nb * B, no * BO))
    b = ProgramBuilder(cfg, name)
    if compressed:
        uops = [Uop(i * no, i * ni, 0) for i in range(nb)]
    else:
        uops = [Uop(i * no + k, i * ni + j, k * ni + j)
                for i in range(nb) for j in range(ni) for k in range(no)]
    ur = b.put_uops(uops, "uops")
    xr = b.put_inp(inp_tiles(cfg, A).reshape(-1, B, BI), "x")
    wr = b.put_wgt(wgt_tiles(cfg, Wm).reshape(-1, BO, BI), "w")
    ar = b.put_acc(acc_tiles(cfg, bias).reshape(-1, B, BO), "bias")
    out = b.output("y", (nb, no))
    b.load(MemType.UOP, 0, ur, len(uops))
    b.load(MemType.ACC, 0, ar, nb * no, push_prev=True)
    b.load(MemType.WGT, 0, wr, no * ni, pop_next=True)
    b.load(MemType.INP, 0, xr, nb * ni, push_next=True)
    if compressed:
        b.gemm(0, nb, (ni, no), dst=(0, 1), src=(1, 0), wgt=(1, ni), pop_prev=True,
               push_next=True)
    else:
        b.gemm(0, len(uops), pop_prev=True, push_next=True)
    b.store(0, out, nb * no, pop_prev=True, push_prev=True)
    want = acc_tiles(cfg, narrow(bias.astype(np.int64) + A.astype(np.int64)
                                 @ Wm.T.astype(np.int64)), np.int8)
    b.finish(pop_next=True)                 # test_lib's FINISH pops the last s2g token
    return b.program({"y": want}, tags=("gemm", "testlib", "tokens"), epilogue=False,
                     finish=False)


def fitting_block(cfg, vt: int) -> int:
    """The largest block (a power-of-two multiple of the tile) whose SRAM halves fit."""
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    block = max(B, BI, BO) * 2
    while True:
        bi, bo, bb = block // BI, block // BO, block // B
        if vt * bb * bi <= cfg.inp_depth and vt * bi * bo <= cfg.wgt_depth \
                and bb * bo <= cfg.acc_depth and vt * bb * bi * bo <= cfg.uop_depth - 1:
            return block
        block //= 2


def blocked_gemm_program(cfg, seed, vt: int, compressed: bool, *, size=None, block=None):
    """test_lib ``blocked_gemm_test`` with its token pattern for one or two virtual threads
    (SRAM halves double-buffered). By default the matrices are scaled to the configuration
    (batch = 2 blocks, channels = 2*vt blocks); ``size`` and ``block`` give the original's
    square ``size`` x ``size`` x ``size`` GEMM in blocks of ``block`` (e.g. 256 and 64)."""
    name = f"blocked-gemm-vt{vt}-{'compressed' if compressed else 'uncompressed'}"
    if size is not None:
        name += f"-{size}-block{block}"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    if block is None:
        block = fitting_block(cfg, vt)
    batch = 2 * block if size is None else size
    channels = 2 * vt * block if size is None else size
    if batch % block or channels % (block * vt) or block % max(B, BI, BO):
        raise ValueError(f"size {channels} must be a multiple of vt x block = {vt} x {block}, "
                         f"and block a multiple of the tile ({B}x{BI}x{BO})")
    in_feat = out_feat = channels
    A = rand_i8(rng, (batch, in_feat))
    Wm = rand_i8(rng, (out_feat, in_feat))
    bias = rand_i32(rng, (batch, out_feat))
    b = ProgramBuilder(cfg, name)
    bb, bi, bo = block // B, block // BI, block // BO
    uop_size = (bb if compressed else bb * bi * bo) * vt
    uops = []
    for t in range(vt):
        if compressed:
            uops += [Uop(i * bo, t * bb * bi + i * bi, t * bi * bo) for i in range(bb)]
        else:
            uops += [Uop(i * bo + k, t * bb * bi + i * bi + j, t * bi * bo + k * bi + j)
                     for i in range(bb) for j in range(bi) for k in range(bo)]
    ur = b.put_uops(uops, "uops")
    xr = b.put_inp(inp_tiles(cfg, A).reshape(-1, B, BI), "x")
    wr = b.put_wgt(wgt_tiles(cfg, Wm).reshape(-1, BO, BI), "w")
    ar = b.put_acc(acc_tiles(cfg, bias).reshape(-1, B, BO), "bias")
    out = b.output("y", (batch // B, out_feat // BO))
    b.load(MemType.UOP, 0, ur, uop_size)
    for i in range(0, batch, block):
        for j in range(0, out_feat, block):
            b.load(MemType.ACC, 0, ar, bo, bb, out_feat // BO,
                   offset=(i // B * out_feat + j) // BO,
                   pop_next=(i > 0 or j > 0), push_prev=(vt == 1))
            for k in range(0, in_feat, block * vt):
                for l in range(0, block * vt, block):
                    if vt == 1:
                        pop, push_prev = True, (k + l) != in_feat - block
                    else:
                        pop = (i > 0 or j > 0 or k > 0 or l > 0) and (k + l != block * vt - block)
                        push_prev = ((k + l) != in_feat - vt * block) and (
                            (k + l != in_feat - block) or (j != out_feat - block)
                            or (i != batch - block))
                    push_next = k + l == in_feat - block
                    b.load(MemType.WGT, l // BI * block // BO, wr, bi, bo, in_feat // BI,
                           offset=(j // BO * in_feat + k + l) // BI, pop_next=pop)
                    b.load(MemType.INP, l // BI * block // B, xr, bi, bb, in_feat // BI,
                           offset=(i // B * in_feat + k + l) // BI, push_next=True)
                    off = l // block * uop_size // vt
                    if compressed:
                        b.gemm(off, off + bb, (bi, bo), dst=(0, 1), src=(1, 0), wgt=(1, bi),
                               pop_prev=True, push_prev=push_prev, push_next=push_next)
                    else:
                        b.gemm(off, off + bb * bi * bo, pop_prev=True, push_prev=push_prev,
                               push_next=push_next)
            b.store(0, out, bo, bb, out_feat // BO, offset=(i // B * out_feat + j) // BO,
                    pop_prev=True, push_prev=True)
    b.finish(pop_next=True)
    want = acc_tiles(cfg, narrow(bias.astype(np.int64) + A.astype(np.int64)
                                 @ Wm.T.astype(np.int64)), np.int8)
    return b.program({"y": want}, tags=("gemm", "blocked", f"vt{vt}", "tokens"),
                     epilogue=False, finish=False,
                     description=f"{batch}x{in_feat}x{out_feat} GEMM in blocks of {block}")


def loops_program(cfg, seed, name, *, bgn, nuops, iters, factors, passes=1, reset_first=False):
    """GEMMs with loops and index factors; operands sized to what the loops touch."""
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    (io, ii), ((do, di), (so, si), (wo, wi)) = iters, factors
    nd0, ns0, nw0 = 3, 3, 3
    uops = [(int(rng.integers(0, nd0)), int(rng.integers(0, ns0)), int(rng.integers(0, nw0)))
            for _ in range(nuops)]
    nd = nd0 + (io - 1) * do + (ii - 1) * di
    ns = ns0 + (io - 1) * so + (ii - 1) * si
    nw = nw0 + (io - 1) * wo + (ii - 1) * wi
    assert nd <= cfg.acc_depth and ns <= cfg.inp_depth and nw <= cfg.wgt_depth, name
    X, W = rand_i8(rng, (ns, B, BI)), rand_i8(rng, (nw, BO, BI))
    bias = rand_i32(rng, (nd, B, BO))
    b = ProgramBuilder(cfg, name)
    ur = b.put_uops([Uop(*u) for u in uops], "uops")
    xr, wr, ar = b.put_inp(X, "x"), b.put_wgt(W, "w"), b.put_acc(bias, "bias")
    b.load(MemType.UOP, bgn, ur, nuops)
    b.load(MemType.ACC, 0, ar, nd)
    b.load(MemType.INP, 0, xr, ns)
    b.load(MemType.WGT, 0, wr, nw)
    b.sync("load", "compute")
    acc = bias.astype(np.int64)
    kw = dict(iters=iters, dst=factors[0], src=factors[1], wgt=factors[2])
    if reset_first:
        b.gemm(bgn, bgn + nuops, reset=True, **kw)
        acc = loop_reference(uops, iters, factors, X, W, acc, reset=True)
    for _ in range(passes):
        b.gemm(bgn, bgn + nuops, **kw)
        acc = loop_reference(uops, iters, factors, X, W, acc)
    acc = wrap32(acc)
    store_out(b, 0, nd, "y")
    return b.program({"y": narrow(acc)}, tags=("gemm", "loops"),
                     description=f"uops [{bgn},{bgn + nuops}) iters {iters} factors {factors}")


def loop_programs(cfg, seed):
    small = cfg.acc_depth < 512
    progs = [
        loops_program(cfg, seed, "gemm-uop-range-offset", bgn=5, nuops=3, iters=(1, 1),
                      factors=((0, 0), (0, 0), (0, 0))),
        loops_program(cfg, seed, "gemm-loops-all-factors", bgn=7, nuops=3, iters=(3, 2),
                      factors=((3, 1), (2, 5), (1, 2))),
        loops_program(cfg, seed, "gemm-loops-all-factors-b", bgn=2, nuops=2, iters=(2, 3),
                      factors=((1, 4), (3, 1), (2, 1))),
        loops_program(cfg, seed, "gemm-loops-outer-only", bgn=1, nuops=2, iters=(4, 1),
                      factors=((2, 0), (3, 0), (1, 0))),
        loops_program(cfg, seed, "gemm-loops-inner-only", bgn=3, nuops=1, iters=(1, 5),
                      factors=((0, 2), (0, 1), (0, 3))),
        loops_program(cfg, seed, "gemm-loops-large-factors", bgn=1, nuops=2, iters=(2, 2),
                      factors=((40 if small else 500, 7), (50 if small else 300, 9),
                               (30 if small else 200, 11))),
        loops_program(cfg, seed, "gemm-reset-loops", bgn=4, nuops=2, iters=(2, 3),
                      factors=((4, 1), (1, 2), (2, 1)), reset_first=True, passes=2),
    ]
    return progs


def backtoback_programs(cfg, seed):
    progs = []
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    # three forms: consecutive uops with one dst, inner loop dst factor 0 (TVM matmul), outer
    # loop dst factor 0
    progs.append(loops_program(cfg, seed, "gemm-b2b-same-dst-uops", bgn=1, nuops=4,
                               iters=(1, 1), factors=((0, 0), (0, 0), (0, 0))))
    progs.append(loops_program(cfg, seed, "gemm-b2b-inner-dst0", bgn=0, nuops=1, iters=(2, 6),
                               factors=((1, 0), (0, 1), (6, 1))))
    progs.append(loops_program(cfg, seed, "gemm-b2b-outer-dst0", bgn=2, nuops=1, iters=(5, 2),
                               factors=((0, 1), (1, 0), (1, 1))))

    # reference §7.2 gemm_1uop_overflow_offset: uop range [1, 2), unit input, signed weights
    name = "gemm-json-1uop-overflow-offset"
    b = ProgramBuilder(cfg, name)
    X = np.zeros((2, B, BI), np.int8)
    X[1, :, 1 % BI] = 1
    W = ((16 * np.arange(BO)[:, None] + np.arange(BI)[None, :]) & 0xFF).astype(np.uint8)
    W = W.view(np.int8)[None]
    acc0 = np.zeros((2, B, BO), np.int32)
    acc0[1] = np.arange(BO)[None, :]
    ur = b.put_uops([Uop(0, 0, 0), Uop(1, 1, 0)], "uops")
    xr, wr, ar = b.put_inp(X, "x"), b.put_wgt(W, "w"), b.put_acc(acc0, "a")
    b.load(MemType.UOP, 0, ur, 2)
    b.load(MemType.ACC, 0, ar, 2)
    b.load(MemType.INP, 0, xr, 2)
    b.load(MemType.WGT, 0, wr, 1)
    b.sync("load", "compute")
    b.gemm(1, 2)
    want = acc0.astype(np.int64)
    want[1] += _mm(X[1], W[0])
    readback32(b, 0, 2, "full")
    progs.append(b.program({"full": expect32(want)}, tags=("gemm", "json", "signed")))

    # reference §7.2 gemm_2uop_overflow_cascaded: two uops into acc 0 cancel out
    name = "gemm-json-2uop-cascaded"
    b = ProgramBuilder(cfg, name)
    X = np.zeros((2, B, BI), np.int8)
    X[0, :, 0] = 1
    X[1, :, 0] = -1
    W = ((16 * np.arange(BO)[:, None] + np.arange(BI)[None, :]) & 0xFF).astype(np.uint8)
    W = W.view(np.int8)[None]
    ur = b.put_uops([Uop(0, 0, 0), Uop(0, 1, 0)], "uops")
    xr, wr = b.put_inp(X, "x"), b.put_wgt(W, "w")
    b.load(MemType.UOP, 0, ur, 2)
    b.load(MemType.INP, 0, xr, 2)
    b.load(MemType.WGT, 0, wr, 1)
    b.sync("load", "compute")
    b.gemm(0, 1, reset=True)
    b.gemm(0, 2)
    readback32(b, 0, 1, "full")
    progs.append(b.program({"full": expect32(np.zeros((1, B, BO)))},
                           tags=("gemm", "json", "b2b")))
    return progs


def extremes_programs(cfg, seed):
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    progs = []
    # signed extremes: -128 * -128 summed over BLOCK_IN, three passes, patterns
    name = "gemm-signed-extremes"
    b = ProgramBuilder(cfg, name)
    pats = [np.full(BI, -128), np.full(BI, 127), np.where(np.arange(BI) % 2, 127, -128),
            np.where(np.arange(BI) % 2, -128, 127)]
    X = np.stack([np.stack([pats[(i + r) % 4] for r in range(B)]) for i in range(4)])
    W = np.stack([np.stack([pats[(i + o) % 4] for o in range(BO)]) for i in range(4)])
    X, W = X.astype(np.int8), W.astype(np.int8)
    uops = [Uop(i * 4 + j, i, j) for i in range(4) for j in range(4)]
    ur = b.put_uops(uops, "uops")
    xr, wr = b.put_inp(X, "x"), b.put_wgt(W, "w")
    b.load(MemType.UOP, 0, ur, 16)
    b.load(MemType.INP, 0, xr, 4)
    b.load(MemType.WGT, 0, wr, 4)
    b.sync("load", "compute")
    b.gemm(0, 16, reset=True)
    for _ in range(3):
        b.gemm(0, 16)
    acc = np.stack([3 * _mm(X[i], W[j]) for i in range(4) for j in range(4)])
    store_out(b, 0, 16, "y")
    b.sync("store", "compute")
    readback32(b, 0, 16, "full")
    progs.append(b.program({"y": narrow(acc), "full": expect32(acc)},
                           tags=("gemm", "signed", "extremes")))

    # int32 wrap: biases next to INT32_MAX / INT32_MIN, products push them over
    name = "gemm-int32-wrap"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    X = np.full((2, B, BI), 127, np.int8)
    X[1] = -128
    W = np.full((1, BO, BI), 127, np.int8)
    bias = np.zeros((4, B, BO), np.int64)
    bias[0] = INT32_MAX - rng.integers(0, 1000, (B, BO))
    bias[1] = INT32_MIN + rng.integers(0, 1000, (B, BO))
    bias[2] = INT32_MAX
    bias[3] = INT32_MIN
    uops = [Uop(0, 0, 0), Uop(1, 1, 0), Uop(2, 0, 0), Uop(3, 1, 0)]
    ur = b.put_uops(uops, "uops")
    xr, wr, ar = b.put_inp(X, "x"), b.put_wgt(W, "w"), b.put_acc(bias.astype(np.int32), "b")
    b.load(MemType.UOP, 0, ur, 4)
    b.load(MemType.ACC, 0, ar, 4)
    b.load(MemType.INP, 0, xr, 2)
    b.load(MemType.WGT, 0, wr, 1)
    b.sync("load", "compute")
    b.gemm(0, 4, (1, 3))      # three times, sequentially, into the same entries
    acc = bias.copy()
    for _ in range(3):
        for d, s, w in ((0, 0, 0), (1, 1, 0), (2, 0, 0), (3, 1, 0)):
            acc[d] += _mm(X[s], W[w])
    acc = wrap32(acc)
    readback32(b, 0, 4, "full")
    progs.append(b.program({"full": expect32(acc)}, tags=("gemm", "wrap")))

    # partial reset: accumulate, reset every other entry, accumulate again; store directly
    name = "gemm-reset-partial"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    n = 8
    X, W = rand_i8(rng, (n, B, BI)), rand_i8(rng, (1, BO, BI))
    bias = rand_i32(rng, (n, B, BO))
    ur = b.put_uops([Uop(0, 0, 0)], "uops")
    xr, wr, ar = b.put_inp(X, "x"), b.put_wgt(W, "w"), b.put_acc(bias, "b")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, n)
    b.load(MemType.INP, 0, xr, n)
    b.load(MemType.WGT, 0, wr, 1)
    b.sync("load", "compute")
    b.gemm(0, 1, (1, n), dst=(0, 1), src=(0, 1))
    b.gemm(0, 1, (n // 2, 1), dst=(2, 0), reset=True)            # entries 0, 2, 4, 6
    b.gemm(0, 1, (1, n // 4), dst=(0, 4), src=(0, 1))            # entries 0, 4 += x0, x1
    acc = bias.astype(np.int64) + _mm(X, W[0])
    acc[0::2] = 0
    for t in range(n // 4):
        acc[4 * t] += _mm(X[t], W[0])
    acc = wrap32(acc)
    store_out(b, 0, n, "y")
    progs.append(b.program({"y": narrow(acc)}, tags=("gemm", "reset")))

    # a reset result stored directly (SPEC §4.2: STORE reads the narrowed accumulator)
    name = "gemm-reset-store-direct"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    bias = rand_i32(rng, (4, B, BO))
    ar = b.put_acc(bias, "b")
    ur = b.put_uops([Uop(1, 0, 0)], "uops")
    b.load(MemType.UOP, 3, ur, 1)
    b.load(MemType.ACC, 0, ar, 4)
    b.gemm(3, 4, (1, 2), dst=(0, 2), reset=True)                 # entries 1 and 3
    acc = bias.copy()
    acc[1] = acc[3] = 0
    store_out(b, 0, 4, "y")
    progs.append(b.program({"y": narrow(acc)}, tags=("gemm", "reset", "narrowing")))
    return progs


def tvm_matmul_program(cfg, seed):
    """The TVM matrix-multiply stream shape (reference §8.6): a reset kernel, then per reduction
    step loads and a 1-uop GEMM whose inner loop accumulates into one dst every iteration."""
    name = "gemm-tvm-matmul"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    no, steps, kpb = 3, 3, 2          # output tiles, reduction steps, K tiles per step
    K = steps * kpb
    A = rand_i8(rng, (B, K * BI))
    Wm = rand_i8(rng, (no * BO, K * BI))
    b = ProgramBuilder(cfg, name)
    xr = b.put_inp(inp_tiles(cfg, A).reshape(-1, B, BI), "x")
    wr = b.put_wgt(wgt_tiles(cfg, Wm).reshape(-1, BO, BI), "w")
    ur = b.put_uops([Uop(0, 0, 0)], "uops")
    b.load(MemType.UOP, 0, ur, 1)
    b.gemm(0, 1, (1, no), dst=(0, 1), reset=True)
    for s in range(steps):
        b.load(MemType.INP, 0, xr, kpb, offset=s * kpb)
        # weights for all output tiles of this step: rows of K tiles, take kpb of each
        b.load(MemType.WGT, 0, wr, kpb, no, K, offset=s * kpb)
        b.sync("load", "compute")
        b.gemm(0, 1, (no, kpb), dst=(1, 0), src=(0, 1), wgt=(kpb, 1))
        b.sync("compute", "load")
    want = acc_tiles(cfg, narrow(A.astype(np.int64) @ Wm.T.astype(np.int64)), np.int8)
    store_out(b, 0, no, "y")
    return b.program({"y": want.reshape(no, B, BO)}, tags=("gemm", "tvm", "b2b", "tokens"))


def conv_program(cfg, seed, name="conv3x3-pad1-relu", H=4, Wd=4, ci_t=2, co_t=2):
    """A 3x3 convolution, stride 1, zero padding 1 supplied by the INP load's pads, followed
    by a requantising ReLU (SHR, MAX 0, MIN 127)."""
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    C, O = ci_t * BI, co_t * BO
    PH, PW = H + 2, Wd + 2
    x = rand_i8(rng, (B, C, H, Wd), -16, 15)
    w = rand_i8(rng, (O, C, 3, 3), -16, 15)
    shift = 3
    b = ProgramBuilder(cfg, name)
    # NCHW -> (C/BI, H, W, B, BI) elements; OIHW -> (O/BO, C/BI, 3, 3, BO, BI)
    x_el = x.reshape(B, ci_t, BI, H, Wd).transpose(1, 3, 4, 0, 2)
    w_el = w.reshape(co_t, BO, ci_t, BI, 3, 3).transpose(0, 2, 4, 5, 1, 3)
    xr = b.put_inp(x_el.reshape(-1, B, BI), "x")
    wr = b.put_wgt(w_el.reshape(-1, BO, BI), "w")
    uops = []
    for o in range(co_t):
        for c in range(ci_t):
            for kh in range(3):
                for kw in range(3):
                    uops.append(Uop(o * H * Wd, c * PH * PW + kh * PW + kw,
                                    ((o * ci_t + c) * 3 + kh) * 3 + kw))
    nu = ci_t * 9
    ur = b.put_uops(uops + [Uop(0, 0, 0)], "uops")
    b.load(MemType.UOP, 0, ur, len(uops) + 1)
    for c in range(ci_t):
        b.load(MemType.INP, c * PH * PW, xr, Wd, H, Wd, (1, 1, 1, 1), offset=c * H * Wd)
    b.load(MemType.WGT, 0, wr, co_t * ci_t * 9)
    b.sync("load", "compute")
    n_out = co_t * H * Wd
    b.gemm(len(uops), len(uops) + 1, (1, n_out), dst=(0, 1), reset=True)
    for o in range(co_t):
        b.gemm(o * nu, (o + 1) * nu, (H, Wd), dst=(Wd, 1), src=(PW, 1))
    last = len(uops)
    b.alu("SHR", last, last + 1, (1, n_out), dst=(0, 1), src=(0, 1), imm=shift)
    b.alu("MAX", last, last + 1, (1, n_out), dst=(0, 1), src=(0, 1), imm=0)
    b.alu("MIN", last, last + 1, (1, n_out), dst=(0, 1), src=(0, 1), imm=127)
    # numpy reference: direct convolution
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((B, O, H, Wd), np.int64)
    for kh in range(3):
        for kw in range(3):
            y += np.einsum("bchw,oc->bohw", xp[:, :, kh:kh + H, kw:kw + Wd],
                           w[:, :, kh, kw].astype(np.int64))
    y = np.clip(y >> shift, 0, 127)
    # -> (O/BO, H, W, B, BO)
    want = y.reshape(B, co_t, BO, H, Wd).transpose(1, 3, 4, 0, 2).astype(np.int8)
    store_out(b, 0, n_out, "y")
    return b.program({"y": want.reshape(-1, B, BO)}, tags=("gemm", "conv", "padding", "alu"))


def programs(cfg, seed):
    progs = [single_tile_program(cfg, seed)]
    progs += [gemm_test_program(cfg, seed, c) for c in (False, True)]
    progs += [blocked_gemm_program(cfg, seed, vt, c) for vt in (1, 2) for c in (False, True)]
    progs += loop_programs(cfg, seed)
    progs += backtoback_programs(cfg, seed)
    progs += extremes_programs(cfg, seed)
    progs.append(tvm_matmul_program(cfg, seed))
    progs.append(conv_program(cfg, seed))
    return progs
