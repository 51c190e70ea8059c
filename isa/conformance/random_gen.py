"""Random valid programs for differential testing between backends.

A program is a sequence of random *jobs* (GEMM jobs, ALU jobs, double-buffered pipelines).
Hazards between modules are closed with runtime-style tokens whenever one module touches what
another module touched since the last token between them:

* load writes INP/WGT  -> compute reads them      : l2g before the read (RAW)
* compute reads INP/WGT -> load overwrites them    : g2l before the write (WAR)
* compute writes ACC   -> store reads it           : g2s before the STORE (RAW)
* store reads ACC      -> compute overwrites it    : s2g before the write (WAR)

Pipelines use primed token pairs instead (two tokens in flight, SRAM halves alternate).
Loads read only input regions and stores write only output regions, every computed SRAM index
is in range and only initialised entries are read, tokens balance, and the program ends with the
runtime epilogue and FINISH. So the result is schedule-independent and every backend must leave
the same DRAM.
"""

from __future__ import annotations

import numpy as np

from ..config import load_config
from ..encoding import AluOp, MemType, Uop
from ..image import ProgramImage
from .builder import ProgramBuilder

__all__ = ["random_program", "RandomProgramGenerator"]


class RandomProgramGenerator:
    def __init__(self, cfg, seed: int, *, max_jobs: int = 6):
        self.cfg = load_config(cfg)
        self.rng = np.random.default_rng([seed, 0x5EED])
        self.b = ProgramBuilder(self.cfg, f"random-{seed}")
        self.max_jobs = max_jobs
        c = self.cfg
        # which SRAM entries hold defined data
        self.init = {"inp": np.zeros(c.inp_depth, bool), "wgt": np.zeros(c.wgt_depth, bool),
                     "acc": np.zeros(c.acc_depth, bool)}
        # hazards open since the last token between the two modules
        self.load_wrote = self.compute_read = self.compute_wrote = self.store_read = False
        self.n_out = 0

    # ------------------------------------------------------------------ small helpers
    def ri(self, lo, hi):
        """Random int in [lo, hi] (inclusive)."""
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, p):
        return bool(self.rng.random() < p)

    def before_load_write(self):
        if self.compute_read:
            self.b.sync("compute", "load")
            self.compute_read = False

    def before_compute_read_lw(self):
        if self.load_wrote:
            self.b.sync("load", "compute")
            self.load_wrote = False

    def before_acc_write(self):
        if self.store_read:
            self.b.sync("store", "compute")
            self.store_read = False

    def before_store(self):
        if self.compute_wrote:
            self.b.sync("compute", "store")
            self.compute_wrote = False

    def _data(self, kind, n):
        c, rng = self.cfg, self.rng
        if kind == "inp":
            return rng.integers(-128, 128, (n, c.batch, c.block_in)).astype(np.int8)
        if kind == "wgt":
            return rng.integers(-128, 128, (n, c.block_out, c.block_in)).astype(np.int8)
        if kind == "acc8":
            return rng.integers(-128, 128, (n, c.batch, c.block_out)).astype(np.int8)
        wide = rng.integers(-(1 << 31), 1 << 31, (n, c.batch, c.block_out), dtype=np.int64)
        small = rng.integers(-3000, 3000, (n, c.batch, c.block_out))
        return np.where(rng.random(wide.shape) < 0.3, wide, small).astype(np.int32)

    # ------------------------------------------------------------------ loads
    def rand_load(self, mem, depth, *, max_elems, sram=None, pad_ok=True):
        """A random 2-D, possibly padded and strided LOAD; returns (sram_base, entries)."""
        ys = self.ri(1, 3)
        xs = self.ri(1, 4)
        stride = xs + (self.ri(0, 3) if self.chance(0.5) else 0)
        pad = [0, 0, 0, 0]
        if pad_ok and self.chance(0.5):
            pad = [self.ri(0, 2) for _ in range(4)]
            if self.chance(0.15):
                pad[self.ri(0, 3)] = self.ri(3, 15)
        while (ys + pad[0] + pad[1]) * (xs + pad[2] + pad[3]) > max_elems:
            if any(pad):
                pad = [max(0, p - 2) if p > 2 else 0 for p in pad]
            elif xs > 1:
                xs, stride = xs - 1, max(xs - 1, stride - 1)
            else:
                ys -= 1
                assert ys >= 1
        n = (ys + pad[0] + pad[1]) * (xs + pad[2] + pad[3])
        if sram is None:
            sram = self.ri(0, depth - n)
        kind = {MemType.INP: "inp", MemType.WGT: "wgt", MemType.ACC: "acc",
                MemType.ACC_8BIT: "acc8"}[mem]
        data = self._data(kind, ys * stride)
        put = {"inp": self.b.put_inp, "wgt": self.b.put_wgt, "acc": self.b.put_acc,
               "acc8": self.b.put_acc8}[kind]
        region = put(data)
        self.b.load(mem, sram, region, xs, ys, stride, tuple(pad))
        return sram, n

    def load_inp_wgt(self):
        c = self.cfg
        self.before_load_write()
        s0, ns = self.rand_load(MemType.INP, c.inp_depth, max_elems=min(24, c.inp_depth))
        w0, nw = self.rand_load(MemType.WGT, c.wgt_depth, max_elems=min(24, c.wgt_depth))
        self.init["inp"][s0:s0 + ns] = True
        self.init["wgt"][w0:w0 + nw] = True
        self.load_wrote = True
        return (s0, ns), (w0, nw)

    def init_acc(self, n_max=24):
        """LOAD ACC / ACC_8BIT (padded, strided) or a reset GEMM; returns (base, n)."""
        c = self.cfg
        self.before_acc_write()
        how = self.ri(0, 2)
        if how < 2:
            mem = MemType.ACC if how == 0 else MemType.ACC_8BIT
            a0, na = self.rand_load(mem, c.acc_depth, max_elems=min(n_max, c.acc_depth))
        else:
            na = self.ri(1, min(n_max, c.acc_depth))
            a0 = self.ri(0, c.acc_depth - na)
            self.load_uops([Uop(a0, 0, 0)], at=self.ri(0, c.uop_depth - 1))
            self.b.gemm(self.uop_at, self.uop_at + 1, (1, na), dst=(0, 1), reset=True)
            self.compute_read = True
        self.init["acc"][a0:a0 + na] = True
        self.compute_wrote = True
        return a0, na

    def load_uops(self, uops, *, at=None, pad_ok=False):
        c = self.cfg
        n = len(uops)
        at = self.ri(0, c.uop_depth - n) if at is None else min(at, c.uop_depth - n)
        region = self.b.put_uops(uops)
        self.b.load(MemType.UOP, at, region, n)
        self.uop_at = at
        return n

    # ------------------------------------------------------------------ loops
    def pick_loop(self, span_total, io, ii):
        """Factors (out, in) with (io-1)*out + (ii-1)*in < span_total; returns
        (factors, room) where room is how far a base may move inside the range."""
        lim = span_total - 1
        fo = self.ri(0, lim // (io - 1)) if io > 1 else self.ri(0, 3)
        rest = lim - (io - 1) * fo
        fi = self.ri(0, rest // (ii - 1)) if ii > 1 else self.ri(0, 3)
        span = (io - 1) * fo + (ii - 1) * fi
        return (fo, fi), lim - span

    def gemm_job(self):
        c = self.cfg
        (s0, ns), (w0, nw) = self.load_inp_wgt()
        a0, na = self.init_acc()
        self.before_compute_read_lw()
        for _ in range(self.ri(1, 3)):
            io, ii = self.ri(1, 3), self.ri(1, 4)
            nu = self.ri(1, min(4, c.uop_depth))
            (df, dr), (sf, sr), (wf, wr) = (self.pick_loop(na, io, ii), self.pick_loop(ns, io, ii),
                                            self.pick_loop(nw, io, ii))
            uops = [Uop(a0 + self.ri(0, dr), s0 + self.ri(0, sr), w0 + self.ri(0, wr))
                    for _ in range(nu)]
            if io == ii == 1 and self.chance(0.3) and self._padded_uops_ok():
                count = self.padded_uop_load(uops)
            else:
                count = self.load_uops(uops)
            self.b.gemm(self.uop_at, self.uop_at + count, (io, ii),
                        dst=df, src=sf, wgt=wf, reset=self.chance(0.1))
            self.compute_read = True
        if self.chance(0.6):
            self.alu_ops(a0, na)
        self.stores(a0, na)

    def _padded_uops_ok(self):
        # padded micro-ops are (0, 0, 0): entry 0 of every buffer must hold data
        return bool(self.init["inp"][0] and self.init["wgt"][0] and self.init["acc"][0])

    def padded_uop_load(self, uops):
        """A 2-D strided, padded LOAD UOP (padding uops are all-zero micro-ops)."""
        c = self.cfg
        xs = len(uops)
        stride = xs + self.ri(0, 2)
        pad = [self.ri(0, 1) for _ in range(4)]
        total = (1 + pad[0] + pad[1]) * (xs + pad[2] + pad[3])
        if total > c.uop_depth:
            pad, total = [0, 0, 0, 0], xs
        data = list(uops) + [Uop(0, 0, 0)] * (stride - xs)
        region = self.b.put_uops(data)
        at = self.ri(0, c.uop_depth - total)
        self.b.load(MemType.UOP, at, region, xs, 1, stride, tuple(pad))
        self.uop_at = at
        return total

    def alu_ops(self, a0, na):
        c = self.cfg
        self.before_acc_write()
        for _ in range(self.ri(1, 3)):
            op = AluOp(self.ri(0, 4))
            io, ii = self.ri(1, 3), self.ri(1, 4)
            nu = self.ri(1, min(3, c.uop_depth))
            use_imm = self.chance(0.5)
            (df, dr) = self.pick_loop(na, io, ii)
            if use_imm:
                sf = df
                dsts = [a0 + self.ri(0, dr) for _ in range(nu)]
                uops = [Uop(d, d, 0) for d in dsts]
                if op == AluOp.SHR:
                    imm = self.ri(-40, 40)
                elif self.chance(0.2):
                    imm = int(self.rng.choice([-32768, 32767, -1, 0]))
                else:
                    imm = self.ri(-300, 300)
            else:
                (sf, sr) = self.pick_loop(na, io, ii)
                uops = [Uop(a0 + self.ri(0, dr), a0 + self.ri(0, sr), 0) for _ in range(nu)]
                imm = None
            self.load_uops(uops)
            self.b.alu(op, self.uop_at, self.uop_at + nu, (io, ii), dst=df, src=sf, imm=imm)
        self.compute_wrote = True

    def stores(self, a0, na):
        self.before_store()
        for _ in range(self.ri(1, 2)):
            ys = self.ri(1, min(3, na))
            xs = self.ri(1, na // ys)
            base = a0 + self.ri(0, na - ys * xs)
            stride = xs + self.ri(0, 2)
            self.n_out += 1
            out = self.b.output(f"out{self.n_out}", (ys * stride,), fill=0x77)
            self.b.store(base, out, xs, ys, stride)
        self.store_read = True

    def alu_job(self):
        a0, na = self.init_acc()
        self.alu_ops(a0, na)
        self.stores(a0, na)

    def pipeline_job(self):
        """Double-buffered INP and ACC halves with primed g2l and s2g tokens (two virtual
        threads): per step, load fills INP half h, compute resets ACC half h, runs GEMM and
        an ALU op there, store writes it out."""
        c, b = self.cfg, self.b
        m = self.ri(1, min(4, c.inp_depth // 2))
        n = self.ri(1, min(4, c.acc_depth // 2))
        T = self.ri(2, 5)
        # weights once, behind the usual hazards
        self.before_load_write()
        wd = self._data("wgt", 1)
        w_at = self.ri(0, c.wgt_depth - 1)
        b.load(MemType.WGT, w_at, b.put_wgt(wd), 1)
        self.load_wrote = True
        self.before_compute_read_lw()
        self.before_acc_write()
        self.before_store()
        i_base = self.ri(0, c.inp_depth - 2 * m)
        a_base = self.ri(0, c.acc_depth - 2 * n)
        uops = [Uop(a_base + h * n, i_base + h * m, w_at) for h in range(2)]
        uops += [Uop(a_base + h * n, a_base + h * n, 0) for h in range(2)]
        self.load_uops(uops)
        u = self.uop_at
        op = AluOp(self.ri(0, 4))
        imm = self.ri(-8, 8)
        xs = self._data("inp", T * m)
        xr = b.put_inp(xs)
        self.n_out += 1
        out = b.output(f"out{self.n_out}", (T * n,), fill=0x77)
        b.push("compute", "load")
        b.push("compute", "load")
        b.push("store", "compute")
        b.push("store", "compute")
        for t in range(T):
            h = t % 2
            b.pop("compute", "load")
            b.load(MemType.INP, i_base + h * m, xr, m, offset=t * m)
            b.push("load", "compute")
            b.pop("load", "compute")
            b.pop("store", "compute")
            b.gemm(u + h, u + h + 1, (1, n), dst=(0, 1), reset=True)
            # every ACC entry of the half gets the dot products with all m inputs
            b.gemm(u + h, u + h + 1, (n, m), dst=(1, 0), src=(0, 1))
            b.alu(op, u + 2 + h, u + 3 + h, (1, n), dst=(0, 1), src=(0, 1), imm=imm)
            b.push("compute", "load")
            b.push("compute", "store")
            b.pop("compute", "store")
            b.store(a_base + h * n, out, n, offset=t * n)
            b.push("store", "compute")
        b.pop("compute", "load")
        b.pop("compute", "load")
        b.pop("store", "compute")
        b.pop("store", "compute")
        self.init["inp"][i_base:i_base + 2 * m] = True
        self.init["acc"][a_base:a_base + 2 * n] = True

    def token_noise(self):
        """Token ping-pong with no-ops between random module pairs."""
        pairs = [("load", "compute"), ("compute", "load"), ("compute", "store"),
                 ("store", "compute")]
        for _ in range(self.ri(1, 3)):
            frm, to = pairs[self.ri(0, 3)]
            self.b.sync(frm, to)

    # ------------------------------------------------------------------ whole program
    def generate(self) -> ProgramImage:
        c, b = self.cfg, self.b
        # entry 0 of INP, WGT and ACC always holds data (padded micro-ops read it)
        b.load(MemType.INP, 0, b.put_inp(self._data("inp", 1)), 1)
        b.load(MemType.WGT, 0, b.put_wgt(self._data("wgt", 1)), 1)
        b.load(MemType.ACC, 0, b.put_acc(self._data("acc", 1)), 1)
        self.init["inp"][0] = self.init["wgt"][0] = self.init["acc"][0] = True
        self.load_wrote = self.compute_wrote = True
        jobs = [self.gemm_job, self.gemm_job, self.alu_job, self.pipeline_job, self.token_noise]
        for _ in range(self.ri(1, self.max_jobs)):
            jobs[self.ri(0, len(jobs) - 1)]()
        if not b.outputs:
            self.alu_job()
        return b.build()


def random_program(cfg, seed: int) -> ProgramImage:
    """A random valid, race-free, token-balanced program for configuration ``cfg`` (a
    VTAConfig or a shipped name), deterministic for ``seed``; its ``outputs`` name the regions
    its STOREs write. No expected result: backends are compared with each other."""
    return RandomProgramGenerator(cfg, seed).generate()
