"""LOAD and STORE: every memory type, strides, padding (every side and amount), sram_base
offsets, narrowing, no-ops and SRAM edges (reference §7.4 items 2 and 3)."""

from __future__ import annotations

import numpy as np

from ..encoding import MemType, Uop
from .builder import ProgramBuilder
from .common import (INT32_MAX, INT32_MIN, expect32, rand_i8, rand_i32, readback32, rng_for,
                     store_out)
from .tiles import narrow

SIDES = ("top", "bottom", "left", "right")   # y_pad_0, y_pad_1, x_pad_0, x_pad_1
MEM_NAMES = {MemType.INP: "inp", MemType.WGT: "wgt", MemType.ACC: "acc",
             MemType.ACC_8BIT: "acc8", MemType.UOP: "uop"}


def _padded(data: np.ndarray, pad) -> np.ndarray:
    """np.pad of a (rows, cols, ...) element array with (top, bottom, left, right) zeros."""
    y0, y1, x0, x1 = pad
    widths = [(y0, y1), (x0, x1)] + [(0, 0)] * (data.ndim - 2)
    return np.pad(data, widths)


def _buffer_limit(cfg, mem) -> int:
    """How many SRAM entries a padded load of ``mem`` may fill in these programs."""
    depth = {MemType.INP: cfg.inp_depth, MemType.WGT: cfg.wgt_depth, MemType.ACC: cfg.acc_depth,
             MemType.ACC_8BIT: cfg.acc_depth, MemType.UOP: cfg.uop_depth - 1}[mem]
    # GEMM observation writes one ACC entry per loaded element.
    return min(depth, cfg.acc_depth) - 3


def pad_program(cfg, seed, name, mem, cases, *, ys=2, xs=3):
    """One program with a padded 2-D LOAD of ``mem`` per case (pad, sram_base); each load's
    SRAM contents are observed in an output ``padK``. DRAM rows are strided (x_stride = xs+1)."""
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    stride = xs + 1
    exp = {}
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    if mem == MemType.INP:
        data = rand_i8(rng, (ys, stride, B, BI))
        src = b.put_inp(data, "x")
        w0 = rand_i8(rng, (BO, BI))
        wr = b.put_wgt(w0[None], "w")
        ur = b.put_uops([Uop(0, s, 0) for s in range(3)], "uops")
        b.load(MemType.UOP, 0, ur, 3)
        b.load(MemType.WGT, 0, wr, 1)
    elif mem == MemType.WGT:
        data = rand_i8(rng, (ys, stride, BO, BI))
        src = b.put_wgt(data, "w")
        xv = rand_i8(rng, (B, BI))
        xr = b.put_inp(xv[None], "x")
        ur = b.put_uops([Uop(0, 0, s) for s in range(3)], "uops")
        b.load(MemType.UOP, 0, ur, 3)
        b.load(MemType.INP, 0, xr, 1)
    elif mem == MemType.ACC:
        data = rand_i32(rng, (ys, stride, B, BO))
        src = b.put_acc(data, "a")
    elif mem == MemType.ACC_8BIT:
        data = rand_i8(rng, (ys, stride, B, BO))
        src = b.put_acc8(data, "a8")
    else:  # UOP
        K = ys * xs
        ninp, nwgt = 4, 3
        X = rand_i8(rng, (ninp, B, BI))
        W = rand_i8(rng, (nwgt, BO, BI))
        xr, wr = b.put_inp(X, "x"), b.put_wgt(W, "w")
        table = np.zeros((ys, stride, 3), np.int64)
        table[:, :, 0] = K + 1                               # poison in the gap column
        table[:, :xs, 0] = 1 + np.arange(K).reshape(ys, xs)  # distinct destinations 1..K
        table[:, :xs, 1] = rng.integers(0, ninp, (ys, xs))
        table[:, :xs, 2] = rng.integers(0, nwgt, (ys, xs))
        src = b.put_uops([Uop(*map(int, t)) for t in table.reshape(-1, 3)], "uops")
        reset_slot = cfg.uop_depth - 1
        rr = b.put_uops([Uop(0, 0, 0)], "reset_uop")
        b.load(MemType.UOP, reset_slot, rr, 1)
        b.load(MemType.INP, 0, xr, ninp)
        b.load(MemType.WGT, 0, wr, nwgt)
        b.sync("load", "compute")
    for k, (pad, sram) in enumerate(cases):
        rows, rl = pad[0] + ys + pad[1], pad[2] + xs + pad[3]
        n = rows * rl
        b.load(mem, sram, src, xs, ys, stride, pad)
        if mem == MemType.INP:
            b.sync("load", "compute")
            loops = dict(iters=(rows, rl), dst=(rl, 1), src=(rl, 1))
            b.gemm(sram % 3, sram % 3 + 1, reset=True, **loops)
            b.gemm(sram % 3, sram % 3 + 1, **loops)
            b.sync("compute", "load")
            p = _padded(data[:, :xs], pad)
            want = narrow(np.einsum("rcbk,ok->rcbo", p.astype(np.int64), w0.astype(np.int64)))
        elif mem == MemType.WGT:
            b.sync("load", "compute")
            loops = dict(iters=(rows, rl), dst=(rl, 1), wgt=(rl, 1))
            b.gemm(sram % 3, sram % 3 + 1, reset=True, **loops)
            b.gemm(sram % 3, sram % 3 + 1, **loops)
            b.sync("compute", "load")
            p = _padded(data[:, :xs], pad)
            want = narrow(np.einsum("bk,rcok->rcbo", xv.astype(np.int64), p.astype(np.int64)))
        elif mem in (MemType.ACC, MemType.ACC_8BIT):
            want = narrow(_padded(data[:, :xs].astype(np.int64), pad))
        else:
            n_acc = ys * xs + 2
            b.gemm(reset_slot, reset_slot + 1, (1, n_acc), dst=(0, 1), reset=True)
            b.gemm(sram, sram + n)
            u = _padded(table[:, :xs], pad).reshape(-1, 3)
            acc = np.zeros((n_acc, B, BO), np.int64)
            for d, s, w in u:
                acc[d] += X[s].astype(np.int64) @ W[w].T.astype(np.int64)
            want = narrow(acc)
        if mem == MemType.UOP:
            out = store_out(b, 0, ys * xs + 2, f"pad{k}")
        else:
            first = sram if mem in (MemType.ACC, MemType.ACC_8BIT) else 0
            out = store_out(b, first, n, f"pad{k}")
        exp[out.name] = want.reshape((-1, B, BO))
        b.sync("store", "compute")
    return b.program(exp, tags=("memory", "padding", MEM_NAMES[mem]),
                     description=f"padded 2-D LOAD {MemType(mem).name}: {cases}")


def pad_programs(cfg, seed):
    progs = []
    for mem, mname in MEM_NAMES.items():
        limit = _buffer_limit(cfg, mem)
        for side_i, side in enumerate(SIDES):
            cases = []
            for a in range(16):
                pad = [0, 0, 0, 0]
                pad[side_i] = a
                cases.append((tuple(pad), a % 3))
            progs.append(pad_program(cfg, seed, f"pad-{mname}-{side}", mem, cases))
        # all four sides at once, random amounts that fit the buffer
        name = f"pad-{mname}-all-sides"
        rng = rng_for(seed, name + "-cases")
        cases = [((1, 1, 1, 1), 1)]
        while len(cases) < 6:
            pad = tuple(int(v) for v in rng.integers(0, 16, 4))
            if (2 + pad[0] + pad[1]) * (3 + pad[2] + pad[3]) + 2 <= limit:
                cases.append((pad, int(rng.integers(0, 3))))
        progs.append(pad_program(cfg, seed, name, mem, cases))
    return progs


def acc_load_programs(cfg, seed):
    B, BO = cfg.batch, cfg.block_out
    progs = []
    # 1-D ACC load, narrowed store and 32-bit readback
    name = "load-acc-1d-readback32"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    n = min(8, cfg.acc_depth // 4)
    data = rand_i32(rng, (n, B, BO), extremes=0.4)
    a = b.put_acc(data, "a")
    b.load(MemType.ACC, 2, a, n)
    store_out(b, 2, n, "narrow")
    b.sync("store", "compute")
    readback32(b, 2, n, "full")
    progs.append(b.program({"narrow": narrow(data), "full": expect32(data)},
                           tags=("memory", "acc", "narrowing")))

    # ACC_8BIT: sign extension seen in the full 32-bit value
    name = "load-acc8-1d-readback32"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    n = min(8, cfg.acc_depth // 4)
    data = rand_i8(rng, (n, B, BO))
    data.reshape(-1)[:4] = [-128, -1, 0, 127]
    a = b.put_acc8(data, "a8")
    b.load(MemType.ACC_8BIT, 1, a, n)
    readback32(b, 1, n, "full")
    progs.append(b.program({"full": expect32(data.astype(np.int32))},
                           tags=("memory", "acc8")))

    # 2-D strided ACC load at an sram_base offset, strided 2-D store into a wider matrix
    name = "load-acc-2d-strided-store-strided"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    R, W = 5, 7
    mat = rand_i32(rng, (R, W, B, BO))
    a = b.put_acc(mat, "a")
    y, x, r0, c0, sram = 3, 4, 1, 2, 5
    b.load(MemType.ACC, sram, a, x, y, W, offset=r0 * W + c0)
    R2, W2 = 6, 9
    out = b.output("out", (R2, W2), fill=0x5A)
    b.sync("compute", "store")
    b.store(sram, out, x, y, W2, offset=1 * W2 + 3)
    # and every other element of one row, and a column (x_size 1, stride W2)
    b.store(sram, out, 1, y, W2, offset=0 * W2 + 8)
    want = np.full((R2, W2, B, BO), 0x5A, np.uint8).view(np.int8)
    block = narrow(mat[r0:r0 + y, c0:c0 + x])
    want[1:1 + y, 3:3 + x] = block
    want[0:y, 8] = block.reshape(y * x, B, BO)[:y]
    progs.append(b.program({"out": want}, tags=("memory", "stride", "acc", "store")))
    return progs


def narrowing_programs(cfg, seed):
    B, BO = cfg.batch, cfg.block_out
    name = "store-narrowing-boundaries"
    b = ProgramBuilder(cfg, name)
    vals = np.array([127, 128, -128, -129, 255, 256, -255, -256, 0, -1, 1, 383, -383, 32767,
                     32768, -32768, -32769, 65535, 65536, INT32_MAX, INT32_MIN, INT32_MAX - 127,
                     INT32_MIN + 128, 1 << 24], np.int64)
    lanes = B * BO
    n = -(-len(vals) // lanes)
    flat = np.resize(vals, n * lanes)
    data = flat.reshape(n, B, BO).astype(np.int32)
    a = b.put_acc(data, "a")
    b.load(MemType.ACC, 0, a, n)
    store_out(b, 0, n, "y")
    progs = [b.program({"y": narrow(data)}, tags=("memory", "narrowing", "store"))]

    # narrowing of values produced by ALU and GEMM (the OUT view after each writer)
    name = "store-narrowing-after-alu"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    n = 4
    base = np.resize(np.array([126, 127, -128, -129, 254, 255, -1, 0], np.int32), n * B * BO)
    base = base.reshape(n, B, BO)
    a = b.put_acc(base, "a")
    ur = b.put_uops([Uop(i, i, 0) for i in range(n)], "u")
    b.load(MemType.UOP, 0, ur, n)
    b.load(MemType.ACC, 0, a, n)
    exp = {}
    cur = base.astype(np.int64)
    for k, imm in enumerate((1, 128, -257, 32767, -32768)):
        if k:
            b.sync("store", "compute")
        b.alu("ADD", 0, n, imm=imm)
        cur = cur + imm
        store_out(b, 0, n, f"y{k}")
        exp[f"y{k}"] = narrow(cur)
    progs.append(b.program(exp, tags=("memory", "narrowing", "alu")))
    return progs


def noop_programs(cfg, seed):
    B, BO = cfg.batch, cfg.block_out
    progs = []
    # x_size = 0 no-ops carry every token kind; the data path still works around them
    name = "noop-tokens-every-queue"
    rng = rng_for(seed, name)
    b = ProgramBuilder(cfg, name)
    data = rand_i32(rng, (2, B, BO))
    a = b.put_acc(data, "a")
    b.noop("load", push_next=True)          # l2g
    b.noop("compute", pop_prev=True, push_prev=True)   # pop l2g, push g2l
    b.noop("load", pop_next=True, push_next=True)      # pop g2l, push l2g
    b.load(MemType.ACC, 0, a, 2, pop_prev=True)        # pop l2g
    b.noop("compute", push_next=True)       # g2s
    b.noop("store", pop_prev=True, push_prev=True)     # pop g2s, push s2g
    b.noop("compute", pop_next=True)        # pop s2g
    out = store_out(b, 0, 2, "y")
    progs.append(b.program({"y": narrow(data)}, tags=("memory", "noop", "tokens")))

    # no-ops whose other fields are junk: x_size = 0 means no data movement at all
    name = "noop-ignores-other-fields"
    b = ProgramBuilder(cfg, name)
    data = rand_i32(rng_for(seed, name), (1, B, BO))
    a = b.put_acc(data, "a")
    b.load(MemType.ACC, 0, a, 1)
    big = 0xFFFF
    from ..encoding import Load, Store
    b.emit(Load(memory_type=MemType.INP, sram_base=big, dram_base=0xFFFFFFF, y_size=3,
                x_size=0, x_stride=7, push_next=True))
    b.emit(Load(memory_type=MemType.ACC, sram_base=big, dram_base=0xFFFFFFF, y_size=2,
                x_size=0, x_stride=9, pop_prev=True))
    b.emit(Load(memory_type=MemType.UOP, sram_base=big, dram_base=0xFFFFFFF, y_size=1,
                x_size=0, x_stride=0, push_next=True))
    b.emit(Store(memory_type=MemType.OUT, sram_base=big, dram_base=0xFFFFFFF, y_size=4,
                 x_size=0, x_stride=3, pop_prev=True))
    out = store_out(b, 0, 1, "y")
    progs.append(b.program({"y": narrow(data)}, tags=("memory", "noop")))
    return progs


def sram_edge_program(cfg, seed):
    """Loads, GEMM, ALU and STORE on the last entry of every on-chip buffer."""
    name = "sram-edges"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    b = ProgramBuilder(cfg, name)
    ua, ui, uw, uu = cfg.acc_depth - 1, cfg.inp_depth - 1, cfg.wgt_depth - 1, cfg.uop_depth - 1
    X = rand_i8(rng, (1, B, BI))
    W = rand_i8(rng, (1, BO, BI))
    bias = rand_i32(rng, (1, B, BO))
    xr, wr, ar = b.put_inp(X, "x"), b.put_wgt(W, "w"), b.put_acc(bias, "bias")
    ur = b.put_uops([Uop(ua, ua, 0), Uop(ua, ui, uw)], "uops")
    b.load(MemType.UOP, uu - 1, ur, 2)
    b.load(MemType.ACC, ua, ar, 1)
    b.load(MemType.INP, ui, xr, 1)
    b.load(MemType.WGT, uw, wr, 1)
    b.sync("load", "compute")
    b.gemm(uu, uu + 1)                      # uop_end = depth
    b.alu("ADD", uu - 1, uu, imm=-3)
    acc = bias.astype(np.int64) + np.einsum("bk,ok->bo", X[0].astype(np.int64), W[0].astype(np.int64)) - 3
    store_out(b, ua, 1, "y")
    b.sync("store", "compute")
    readback32(b, ua, 1, "full", uop_slot=0)
    return b.program({"y": narrow(acc), "full": expect32(acc)}, tags=("memory", "edges"))


def programs(cfg, seed):
    return (pad_programs(cfg, seed) + acc_load_programs(cfg, seed)
            + narrowing_programs(cfg, seed) + noop_programs(cfg, seed)
            + [sram_edge_program(cfg, seed)])
