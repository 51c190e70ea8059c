"""Token protocol: several outstanding tokens on each queue, TVM-style primed double
buffering of INP and ACC (reference §4.4, §7.4 item 6)."""

from __future__ import annotations

import numpy as np

from ..encoding import MemType, Uop
from .builder import ProgramBuilder
from .common import rand_i8, rand_i32, rng_for
from .tiles import alu_ref, narrow


def multi_outstanding_program(cfg, seed):
    """The load module runs k loads ahead (k tokens in l2g), compute k GEMMs ahead of store
    (k tokens in g2s)."""
    name = "tokens-multi-outstanding"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    k = max(1, min(6, cfg.token_queue_depth))
    X, W = rand_i8(rng, (k, B, BI)), rand_i8(rng, (1, BO, BI))
    b = ProgramBuilder(cfg, name)
    xr, wr = b.put_inp(X, "x"), b.put_wgt(W, "w")
    ur = b.put_uops([Uop(i, i, 0) for i in range(k)], "u")
    out = b.output("y", (k,))
    b.load(MemType.WGT, 0, wr, 1)
    for i in range(k):
        b.load(MemType.INP, i, xr, 1, offset=i, push_next=True)
    b.load(MemType.UOP, 0, ur, k)
    b.gemm(0, 1, (1, k), dst=(0, 1), reset=True)
    for i in range(k):
        b.gemm(i, i + 1, pop_prev=True, push_next=True)
    for i in range(k):
        b.store(i, out, 1, offset=i, pop_prev=True)
    acc = np.einsum("nbk,ok->nbo", X.astype(np.int64), W[0].astype(np.int64))
    return b.program({"y": narrow(acc)}, tags=("tokens",))


def inp_double_buffer_program(cfg, seed):
    """TVM-style pipelining: compute primes g2l with two tokens; the load module pops one
    before filling half h of INP and pushes l2g; compute pops l2g, runs the GEMM on half h and
    pushes g2l; the leftovers are popped at the end."""
    name = "tokens-inp-double-buffer"
    rng = rng_for(seed, name)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    T, m = 5, 2                      # steps, INP elements per step
    X = rand_i8(rng, (T * m, B, BI))
    W = rand_i8(rng, (1, BO, BI))
    b = ProgramBuilder(cfg, name)
    xr, wr = b.put_inp(X, "x"), b.put_wgt(W, "w")
    ur = b.put_uops([Uop(0, 0, 0), Uop(0, m, 0)], "u")
    b.load(MemType.UOP, 0, ur, 2)
    b.gemm(0, 1, (1, T * m), dst=(0, 1), reset=True)
    b.push("compute", "load")
    b.push("compute", "load")
    b.load(MemType.WGT, 0, wr, 1)
    for t in range(T):
        h = t % 2
        b.pop("compute", "load")
        b.load(MemType.INP, h * m, xr, m, offset=t * m)
        b.push("load", "compute")
        b.pop("load", "compute")
        b.gemm(h, h + 1, (1, m), dst=(0, 1), src=(0, 1))
        b.push("compute", "load")
    b.pop("compute", "load")
    b.pop("compute", "load")
    # every step accumulated into entries 0..m-1
    acc = np.zeros((m, B, BO), np.int64)
    for t in range(T):
        acc += np.einsum("nbk,ok->nbo", X[t * m:(t + 1) * m].astype(np.int64),
                         W[0].astype(np.int64))
    out = b.output("y", (m,))
    b.sync("compute", "store")
    b.store(0, out, m)
    return b.program({"y": narrow(acc)}, tags=("tokens", "double-buffer"))


def acc_double_buffer_program(cfg, seed):
    """Store primes s2g with two tokens; compute pops one before reusing half h of ACC, loads
    it, runs an ALU op and pushes g2s; store pops, stores half h and pushes s2g."""
    name = "tokens-acc-double-buffer"
    rng = rng_for(seed, name)
    B, BO = cfg.batch, cfg.block_out
    T, n = 6, 3
    data = rand_i32(rng, (T * n, B, BO))
    b = ProgramBuilder(cfg, name)
    ar = b.put_acc(data, "a")
    ur = b.put_uops([Uop(0, 0, 0), Uop(n, n, 0)], "u")
    out = b.output("y", (T * n,))
    b.load(MemType.UOP, 0, ur, 2)
    b.push("store", "compute")
    b.push("store", "compute")
    for t in range(T):
        h = t % 2
        b.pop("store", "compute")
        b.load(MemType.ACC, h * n, ar, n, offset=t * n)
        b.alu("ADD", h, h + 1, (1, n), dst=(0, 1), src=(0, 1), imm=t - 3)
        b.push("compute", "store")
        b.pop("compute", "store")
        b.store(h * n, out, n, offset=t * n)
        b.push("store", "compute")
    b.pop("store", "compute")
    b.pop("store", "compute")
    imm = np.repeat(np.arange(T) - 3, n)[:, None, None]
    want = narrow(alu_ref("ADD", data, imm))
    return b.program({"y": want}, tags=("tokens", "double-buffer", "alu"))


def programs(cfg, seed):
    return [multi_outstanding_program(cfg, seed), inp_double_buffer_program(cfg, seed),
            acc_double_buffer_program(cfg, seed)]
