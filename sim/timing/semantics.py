"""The functional semantics the cycle model applies, with a faster GEMM datapath.

:class:`FastSemantics` is :class:`sim.functional.FunctionalSimulator` with the same checks and
the same results; only the arithmetic of a GEMM differs. The products are computed in float32,
which is exact while at most 2^10 products of int8 pairs (each at most 2^14 in magnitude) are
summed (below 2^24), and added to the int32 accumulators with wrap-around like the hardware:

* when each micro-op's weight row depends on the micro-op only (convolution taps), or the input
  row on (outer iteration, micro-op) and the weight row on (inner iteration, micro-op) (blocked
  matrix products), the micro-ops writing the same accumulator entry form one matrix product
  over (micro-op × ``block_in``);
* otherwise, if there are few distinct (input row, weight row) pairs, each pair is multiplied
  once and the micro-ops gather their products;
* anything else (and GEMM with ``reset``) is the reference's arithmetic.
"""

from __future__ import annotations

import numpy as np

from isa.encoding import Gemm
from sim.functional import FunctionalSimulator, alu_op, first_bad_uop

__all__ = ["FastSemantics"]

#: m·n·k below which OpenBLAS multiplies on one thread.
_SINGLE_THREAD = 1 << 17
#: Products of int8 pairs summed in float32 stay exact up to 2^24 / 2^14 terms.
_EXACT_TERMS = 1 << 10


class FastSemantics(FunctionalSimulator):
    """``FunctionalSimulator`` with an exact float GEMM (see the module), applied to each chunk
    of micro-op executions (:meth:`FunctionalSimulator._uop_chunks`: memory stays bounded
    whatever the loop extents)."""

    def first_bad(self, insn) -> int | None:
        """The first micro-op execution (in loop order) with an index past its buffer, or
        None: where the hardware stops with SRAM_RANGE (found from the loop bounds)."""
        cfg = self.cfg
        limits = [cfg.acc_depth, None, None]
        if isinstance(insn, Gemm):
            if not insn.reset:
                limits = [cfg.acc_depth, cfg.inp_depth, cfg.wgt_depth]
        elif not insn.use_imm:
            limits[1] = cfg.acc_depth
        return first_bad_uop(insn, self._uop_bases(insn), limits)

    def _alu(self, insn) -> None:
        """A chunk of an ALU with an immediate and no repeated destination is one vectorised
        operation (what the reference does after finding a single hazard-free segment)."""
        if not insn.use_imm:
            return super()._alu(insn)
        bases = self._check_ranges(insn)
        seen = np.zeros(self.cfg.acc_depth, bool)
        total = 0
        for dst, src, _ in self._uop_chunks(insn, bases):
            seen[:] = False
            seen[dst] = True
            if np.count_nonzero(seen) != dst.size:
                self._alu_chunk(insn, dst, src)
            else:
                self.acc[dst] = alu_op(insn.alu_opcode, self.acc[dst].astype(np.int64),
                                       np.int64(insn.imm))
            total += dst.size
        self.counters["alu_counter"] += total

    def _gemm(self, insn) -> None:
        if insn.reset:
            return super()._gemm(insn)
        bases = self._check_ranges(insn)
        nu, n_in = insn.uop_end - insn.uop_bgn, insn.iter_in
        total = 0
        for dst, src, wgt in self._uop_chunks(insn, bases):
            # A chunk of whole outer iterations can go by loops (chunks hold whole ones
            # whenever one outer iteration fits; a smaller chunk is never a multiple).
            whole = dst.size % (n_in * nu) == 0
            shape = (dst.size // (n_in * nu), n_in, nu)
            if not ((whole and self._by_loops(insn, dst.reshape(shape), src.reshape(shape),
                                              wgt.reshape(shape)))
                    or self._by_pairs(dst, src, wgt)):
                self._gemm_chunk(insn, dst, src, wgt)
            total += dst.size
        self.counters["gemm_counter"] += total

    def _by_loops(self, insn, dst, src, wgt) -> bool:
        """When each micro-op's weight row depends on the micro-op only (``wgt_factor_*`` = 0:
        a convolution's taps) or the input row on (outer loop, micro-op) and the weight row on
        (inner loop, micro-op) (a blocked matrix product), the micro-ops writing the same entry
        in an iteration form one matrix product over (micro-op, ``block_in``)."""
        cfg = self.cfg
        b, o, k = cfg.batch, cfg.block_out, cfg.block_in
        O, I, U = dst.shape
        if insn.wgt_factor_out == 0 and insn.wgt_factor_in == 0:
            mode = "taps"
        elif insn.src_factor_in == 0 and insn.wgt_factor_out == 0:
            mode = "blocks"
        else:
            return False
        base = dst[0, 0]
        groups = [np.flatnonzero(base == v) for v in np.unique(base)]
        if max(g.size for g in groups) * k > _EXACT_TERMS:
            return False
        outs, dsts = [], []
        for g in groups:
            ug = g.size
            if mode == "taps":
                xg = self.inp[src[:, :, g]]                         # (O, I, Ug, b, k)
                xg = xg.transpose(0, 1, 3, 2, 4).reshape(O * I * b, ug * k)
                wg = self.wgt[wgt[0, 0, g]].transpose(0, 2, 1).reshape(ug * k, o)
                y = np.empty((O * I * b, o), np.float32)
                _matmul(xg.astype(np.float32), wg.astype(np.float32), y)
                y = y.reshape(O * I, b, o)
            else:
                xg = self.inp[src[:, 0][:, g]].transpose(0, 2, 1, 3).reshape(O * b, ug * k)
                wg = self.wgt[wgt[0][:, g]].transpose(0, 2, 1, 3)   # (I, o, Ug, k)
                wg = wg.reshape(I * o, ug * k).T
                y = np.empty((O * b, I * o), np.float32)
                _matmul(xg.astype(np.float32), wg.astype(np.float32), y)
                y = y.reshape(O, b, I, o).transpose(0, 2, 1, 3).reshape(O * I, b, o)
            outs.append(y)
            dsts.append(dst[:, :, g[0]].reshape(-1))
        d = np.concatenate(dsts)
        y = np.concatenate(outs).astype(np.int32)
        seen = np.zeros(cfg.acc_depth, bool)
        seen[d] = True
        if np.count_nonzero(seen) == d.size:
            self.acc[d] += y            # int32: wraps like the hardware's accumulators
        else:
            np.add.at(self.acc, d, y)
        return True

    def _by_pairs(self, dst, src, wgt) -> bool:
        """Every distinct (input row, weight row) pair once, then the micro-ops' pairs."""
        cfg = self.cfg
        b, o, k = cfg.batch, cfg.block_out, cfg.block_in
        if k > _EXACT_TERMS:
            return False
        us, si = _unique(src, cfg.inp_depth)
        uw, wi = _unique(wgt, cfg.wgt_depth)
        if us.size * uw.size > 2 * dst.size + 4096:
            return False
        x = self.inp[us].astype(np.float32).reshape(-1, k)          # (S·b, k)
        w = self.wgt[uw].astype(np.float32).reshape(-1, k)          # (W·o, k)
        table = np.empty((x.shape[0], w.shape[0]), np.float32)
        _matmul(x, w.T, table)
        prod = table.reshape(us.size, b, uw.size, o)[si, :, wi, :]      # (n, b, o)
        np.add.at(self.acc, dst, prod.astype(np.int32))
        return True


def _unique(idx: np.ndarray, depth: int):
    """(the sorted distinct values of ``idx`` < ``depth``, each entry's position among them)."""
    seen = np.zeros(depth, bool)
    seen[idx] = True
    vals = np.flatnonzero(seen)
    pos = np.empty(depth, np.intp)
    pos[vals] = np.arange(vals.size)
    return vals, pos[idx]


def _matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` in row blocks small enough that OpenBLAS stays on one thread (threads
    on a busy machine cost far more than these small products)."""
    step = max(1, _SINGLE_THREAD // max(1, b.shape[0] * b.shape[1]))
    for lo in range(0, a.shape[0], step):
        np.matmul(a[lo:lo + step], b, out=out[lo:lo + step])
