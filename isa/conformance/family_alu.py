"""ALU: every operation with immediate and vector operands, compressed and uncompressed
micro-ops, shift edge cases, immediate sign extension, loops, sequential semantics and
requantisation chains (reference §7.4 item 5, §7.1, §7.3)."""

from __future__ import annotations

import numpy as np

from ..encoding import MemType, Uop
from .builder import ProgramBuilder
from .common import (INT32_MAX, INT32_MIN, expect32, rand_i8, rand_i32, readback32, rng_for,
                     store_out)
from .tiles import alu_ref, narrow, wrap32

OPS = ("MIN", "MAX", "ADD", "SHR", "MUL")


def _operands(rng, op, shape):
    a = rand_i32(rng, shape, extremes=0.3)
    if op in ("MIN", "MAX"):
        choice = rng.integers(0, 4, shape)
        b = np.where(choice == 0, a, np.where(choice == 1, wrap32(a.astype(np.int64) + 1),
                     np.where(choice == 2, wrap32(a.astype(np.int64) - 1),
                              rand_i32(rng, shape))))
    elif op == "SHR":
        b = rng.integers(-40, 41, shape)
        b.reshape(-1)[:4] = [31, 32, -31, -32][:b.size]
    elif op == "MUL":
        b = np.where(rng.random(shape) < 0.5, rng.integers(-300, 300, shape),
                     rand_i32(rng, shape))
    else:
        b = rand_i32(rng, shape, extremes=0.3)
    return a, np.asarray(b).astype(np.int32)


def _imm(rng, op):
    if op == "SHR":
        return int(rng.integers(-40, 41))
    return int(rng.choice([int(rng.integers(-32768, 32768)), -32768, 32767, -1]))


def alu_test_program(cfg, seed, op, use_imm, compressed):
    """test_lib ``alu_test``: LOAD ACC (one or two operand vectors back to back), one ALU
    instruction over the vector, STORE (and a 32-bit readback)."""
    name = f"alu-{op.lower()}-{'imm' if use_imm else 'vec'}-{'compressed' if compressed else 'uncompressed'}"
    rng = rng_for(seed, name)
    B, BO = cfg.batch, cfg.block_out
    n = 4
    a, bv = _operands(rng, op, (n, B, BO))
    b = ProgramBuilder(cfg, name)
    imm = _imm(rng, op) if use_imm else None
    if compressed:
        uops = [Uop(0, 0 if use_imm else n, 0)]
    else:
        uops = [Uop(i, i if use_imm else n + i, 0) for i in range(n)]
    ur = b.put_uops(uops, "uops")
    data = a if use_imm else np.concatenate([a, bv])
    ar = b.put_acc(data, "a")
    b.load(MemType.UOP, 0, ur, len(uops))
    b.load(MemType.ACC, 0, ar, len(data))
    if compressed:
        b.alu(op, 0, 1, (1, n), dst=(0, 1), src=(0, 1), imm=imm)
    else:
        b.alu(op, 0, n, imm=imm)
    want = alu_ref(op, a, imm if use_imm else bv)
    store_out(b, 0, n, "y")
    b.sync("store", "compute")
    readback32(b, 0, n, "full")
    return b.program({"y": narrow(want), "full": expect32(want)},
                     tags=("alu", op.lower(), "imm" if use_imm else "vec"),
                     description=f"imm={imm}")


def _values_block(cfg, m):
    vals = np.array([INT32_MIN, INT32_MAX, -1, 1, 0, -2, 0x40000000, -0x40000000, 0x12345678,
                     -0x12345678, 255, -256, 7, -7, 1 << 16, -(1 << 16)], np.int64)
    lanes = cfg.batch * cfg.block_out
    return np.resize(vals, m * lanes).reshape(m, cfg.batch, cfg.block_out).astype(np.int32)


def shift_imm_range_program(cfg, seed):
    """SHR immediates across the whole edge range: right >= 32 sign-fills, left >= 32 is 0."""
    name = "alu-shr-imm-range"
    shifts = [-32768, -100, -64, -33, -32, -31, -17, -16, -15, -8, -1, 0, 1, 7, 8, 15, 16, 17,
              31, 32, 33, 64, 100, 32767]
    lanes = cfg.batch * cfg.block_out
    m = max(1, -(-8 // lanes))
    b = ProgramBuilder(cfg, name)
    base = _values_block(cfg, m)
    data = np.concatenate([base] * len(shifts))
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(k * m, k * m, 0) for k in range(len(shifts))], "uops")
    b.load(MemType.UOP, 0, ur, len(shifts))
    b.load(MemType.ACC, 0, ar, len(data))
    want = []
    for k, s in enumerate(shifts):
        b.alu("SHR", k, k + 1, (1, m), dst=(0, 1), src=(0, 1), imm=s)
        want.append(alu_ref("SHR", base, s))
    want = np.concatenate(want)
    readback32(b, 0, len(data), "full")
    return b.program({"full": expect32(want)}, tags=("alu", "shr", "imm", "edges"))


def shift_vec_range_program(cfg, seed):
    """Vector SHR with per-lane amounts from -40 to 40 and beyond (negative = left)."""
    name = "alu-shr-vec-range"
    rng = rng_for(seed, name)
    amounts = np.concatenate([np.arange(-40, 41), [-1000, 1000, -65536, 65536, INT32_MAX,
                                                   -INT32_MAX]])
    lanes = cfg.batch * cfg.block_out
    n = -(-len(amounts) // lanes)
    sh = np.resize(amounts, n * lanes).reshape(n, cfg.batch, cfg.block_out).astype(np.int32)
    a = rand_i32(rng, sh.shape, extremes=0.4)
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(np.concatenate([a, sh]), "a")
    ur = b.put_uops([Uop(0, n, 0)], "uops")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, 2 * n)
    b.alu("SHR", 0, 1, (1, n), dst=(0, 1), src=(0, 1))
    want = alu_ref("SHR", a, sh)
    readback32(b, 0, n, "full")
    return b.program({"full": expect32(want)}, tags=("alu", "shr", "vec", "edges"))


def imm_extremes_program(cfg, seed):
    """Immediates -32768 and 32767 (sign extension) with every operation."""
    name = "alu-imm-sign-extension"
    cases = [("ADD", -32768), ("ADD", 32767), ("ADD", -1), ("MIN", -32768), ("MIN", 32767),
             ("MAX", -32768), ("MAX", 32767), ("MUL", -32768), ("MUL", 32767), ("MUL", -1),
             ("MIN", 0), ("MAX", -1)]
    lanes = cfg.batch * cfg.block_out
    m = max(1, -(-8 // lanes))
    b = ProgramBuilder(cfg, name)
    base = _values_block(cfg, m)
    data = np.concatenate([base] * len(cases))
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(k * m, k * m, 0) for k in range(len(cases))], "uops")
    b.load(MemType.UOP, 0, ur, len(cases))
    b.load(MemType.ACC, 0, ar, len(data))
    want = []
    for k, (op, imm) in enumerate(cases):
        b.alu(op, k, k + 1, (1, m), dst=(0, 1), src=(0, 1), imm=imm)
        want.append(alu_ref(op, base, imm))
    readback32(b, 0, len(data), "full")
    return b.program({"full": expect32(np.concatenate(want))}, tags=("alu", "imm", "edges"))


def sequential_reference(op, acc, uops, iters, dst, src, imm=None):
    """The ALU loop nest of reference §3.5, executed in order on int64 ``acc``."""
    for o in range(iters[0]):
        for i in range(iters[1]):
            for d, s in uops:
                dd = d + o * dst[0] + i * dst[1]
                ss = s + o * src[0] + i * src[1]
                acc[dd] = alu_ref(op, acc[dd], imm if imm is not None else acc[ss])
    return acc


def loops_program(cfg, seed, name, op, uops, iters, dst, src, n_acc, imm=None, bgn=0):
    rng = rng_for(seed, name)
    B, BO = cfg.batch, cfg.block_out
    if op == "SHR" and imm is None:
        data = rng.integers(-20, 21, (n_acc, B, BO)).astype(np.int32)
    else:
        data = rand_i32(rng, (n_acc, B, BO), extremes=0.2)
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(d, s, 0) for d, s in uops], "uops")
    b.load(MemType.UOP, bgn, ur, len(uops))
    b.load(MemType.ACC, 0, ar, n_acc)
    b.alu(op, bgn, bgn + len(uops), iters, dst=dst, src=src, imm=imm)
    want = sequential_reference(op, data.astype(np.int64), uops, iters, dst, src, imm)
    readback32(b, 0, n_acc, "full")
    return b.program({"full": expect32(want)}, tags=("alu", "loops", op.lower()),
                     description=f"{op} uops {uops} iters {iters} dst {dst} src {src} imm {imm}")


def loop_programs(cfg, seed):
    return [
        # bias broadcast: src factor 0 on the inner loop's row
        loops_program(cfg, seed, "alu-loops-broadcast-src", "ADD", [(0, 12)], (3, 4), (4, 1),
                      (0, 1), 16),
        # reversed micro-op list, both loop levels, all four factors
        loops_program(cfg, seed, "alu-loops-reversed-uops", "MAX", [(3, 11), (2, 10), (1, 9),
                                                                     (0, 8)], (2, 2), (4, 0),
                      (0, 2), 16, bgn=3),
        # src == dst: x + x and x * x
        loops_program(cfg, seed, "alu-src-equals-dst-add", "ADD", [(0, 0)], (2, 3), (3, 1),
                      (3, 1), 6),
        loops_program(cfg, seed, "alu-src-equals-dst-mul", "MUL", [(0, 0)], (1, 6), (0, 1),
                      (0, 1), 6),
        # sequential semantics: each uop reads the entry the previous one just wrote
        loops_program(cfg, seed, "alu-sequential-chain", "ADD", [(1, 0), (2, 1), (3, 2), (4, 3)],
                      (1, 3), (0, 0), (0, 0), 5),
        loops_program(cfg, seed, "alu-sequential-same-dst-imm", "ADD", [(2, 2)], (3, 5), (0, 0),
                      (0, 0), 4, imm=-7),
        loops_program(cfg, seed, "alu-vec-shr-loops", "SHR", [(0, 8), (1, 9)], (2, 3), (2, 4),
                      (0, 1), 16),
        loops_program(cfg, seed, "alu-min-loops-outer", "MIN", [(1, 5)], (4, 1), (1, 0),
                      (1, 0), 10, bgn=1),
    ]


def requant_programs(cfg, seed):
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    progs = []
    # GEMM + bias, then ADD (rounding) -> SHR -> MAX -128 -> MIN 127
    for shift, name in ((8, "alu-requant-chain"), (5, "alu-requant-chain-b")):
        rng = rng_for(seed, name)
        n = 6
        X, W = rand_i8(rng, (n, B, BI)), rand_i8(rng, (2, BO, BI))
        bias = rng.integers(-5000, 5000, (n, B, BO)).astype(np.int32)
        b = ProgramBuilder(cfg, name)
        xr, wr, ar = b.put_inp(X, "x"), b.put_wgt(W, "w"), b.put_acc(bias, "bias")
        ur = b.put_uops([Uop(0, 0, 0), Uop(0, 0, 1), Uop(0, 0, 0)], "uops")
        b.load(MemType.UOP, 0, ur, 3)
        b.load(MemType.ACC, 0, ar, n)
        b.load(MemType.INP, 0, xr, n)
        b.load(MemType.WGT, 0, wr, 2)
        b.sync("load", "compute")
        b.gemm(0, 2, (1, n), dst=(0, 1), src=(0, 1))     # two weights into each entry
        loop = dict(iters=(1, n), dst=(0, 1), src=(0, 1))
        b.alu("ADD", 2, 3, imm=1 << (shift - 1), **loop)
        b.alu("SHR", 2, 3, imm=shift, **loop)
        b.alu("MAX", 2, 3, imm=-128, **loop)
        b.alu("MIN", 2, 3, imm=127, **loop)
        X64, W64 = X.astype(np.int64), W.astype(np.int64)
        acc = (bias.astype(np.int64) + np.einsum("nbk,ok->nbo", X64, W64[0])
               + np.einsum("nbk,ok->nbo", X64, W64[1]))
        y = np.clip((acc + (1 << (shift - 1))) >> shift, -128, 127)
        store_out(b, 0, n, "y")
        progs.append(b.program({"y": y.astype(np.int8)}, tags=("alu", "requant", "gemm")))

    # test_relu: MAX 0 then MIN 127 on values in [-256, 255]
    name = "alu-relu"
    rng = rng_for(seed, name)
    n = 5
    data = rng.integers(-256, 256, (n, B, BO)).astype(np.int32)
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(0, 0, 0)], "u")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, n)
    b.alu("MAX", 0, 1, (1, n), dst=(0, 1), src=(0, 1), imm=0)
    b.alu("MIN", 0, 1, (1, n), dst=(0, 1), src=(0, 1), imm=127)
    store_out(b, 0, n, "y")
    progs.append(b.program({"y": np.clip(data, 0, 127).astype(np.int8)}, tags=("alu", "requant")))

    # test_shift_and_scale: ADD imm then SHR imm
    name = "alu-shift-and-scale"
    rng = rng_for(seed, name)
    data = rng.integers(-100000, 100000, (n, B, BO)).astype(np.int32)
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(0, 0, 0)], "u")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, n)
    b.alu("ADD", 0, 1, (n, 1), dst=(1, 0), src=(1, 0), imm=17)
    b.alu("SHR", 0, 1, (n, 1), dst=(1, 0), src=(1, 0), imm=9)
    store_out(b, 0, n, "y")
    progs.append(b.program({"y": narrow((data.astype(np.int64) + 17) >> 9)},
                           tags=("alu", "requant")))

    # test_save_load_out: LOAD ACC -> SHR 0 -> STORE
    name = "alu-save-load-out"
    rng = rng_for(seed, name)
    data = rand_i32(rng, (n, B, BO))
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(0, 0, 0)], "u")
    b.load(MemType.UOP, 0, ur, 1)
    b.load(MemType.ACC, 0, ar, n)
    b.alu("SHR", 0, 1, (1, n), dst=(0, 1), src=(0, 1), imm=0)
    store_out(b, 0, n, "y")
    progs.append(b.program({"y": narrow(data)}, tags=("alu", "store")))

    # per-channel requantisation with vector operands: shifts, lower and upper bounds in ACC
    name = "alu-requant-vector"
    rng = rng_for(seed, name)
    n = 4
    data = rand_i32(rng, (n, B, BO), extremes=0.1)
    shifts = rng.integers(0, 24, (1, B, BO)).astype(np.int32)
    lo = rng.integers(-128, 0, (1, B, BO)).astype(np.int32)
    hi = rng.integers(0, 128, (1, B, BO)).astype(np.int32)
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(np.concatenate([data, shifts, lo, hi]), "a")
    ur = b.put_uops([Uop(0, n, 0), Uop(0, n + 1, 0), Uop(0, n + 2, 0)], "u")
    b.load(MemType.UOP, 0, ur, 3)
    b.load(MemType.ACC, 0, ar, n + 3)
    b.alu("SHR", 0, 1, (1, n), dst=(0, 1), src=(0, 0))
    b.alu("MAX", 1, 2, (1, n), dst=(0, 1), src=(0, 0))
    b.alu("MIN", 2, 3, (1, n), dst=(0, 1), src=(0, 0))
    y = np.minimum(np.maximum(data.astype(np.int64) >> shifts, lo), hi)
    store_out(b, 0, n, "y")
    progs.append(b.program({"y": y.astype(np.int8)}, tags=("alu", "requant", "vec")))
    return progs


def programs(cfg, seed):
    progs = [alu_test_program(cfg, seed, op, imm, comp)
             for op in OPS for imm in (True, False) for comp in (False, True)]
    progs += [shift_imm_range_program(cfg, seed), shift_vec_range_program(cfg, seed),
              imm_extremes_program(cfg, seed)]
    progs += loop_programs(cfg, seed)
    progs += requant_programs(cfg, seed)
    return progs
