"""The cycle model's GEMM datapath (:mod:`sim.timing.semantics`) equals the functional
simulator's on full-range data, repeated destinations and accumulator wrap-around."""

from __future__ import annotations

import numpy as np
import pytest

from isa.config import load_config
from isa.encoding import Gemm
from sim.functional import FunctionalSimulator
from sim.timing.semantics import FastSemantics


@pytest.mark.parametrize("config", ["tiny", "small", "default", "batch2"])
def test_fast_gemm_equals_reference(config, monkeypatch):
    cfg = load_config(config)
    rng = np.random.default_rng(7)
    used = {"loops": 0, "pairs": 0}
    for name in ("_by_loops", "_by_pairs"):
        def spy(self, *args, _f=getattr(FastSemantics, name), _n=name[4:]):
            ok = _f(self, *args)
            used[_n] += ok
            return ok
        monkeypatch.setattr(FastSemantics, name, spy)
    for trial in range(60):
        sims = [FunctionalSimulator(cfg, np.zeros(4096, np.uint8)),
                FastSemantics(cfg, np.zeros(4096, np.uint8))]
        inp = rng.integers(-128, 128, sims[0].inp.shape)
        wgt = rng.integers(-128, 128, sims[0].wgt.shape)
        acc = rng.integers(-2**31, 2**31, sims[0].acc.shape)
        nu = int(rng.integers(1, min(cfg.uop_depth, 24) + 1))
        fields = []
        for (offset, mask), depth in zip(sims[0]._uop_fields,
                                         (cfg.acc_depth, cfg.inp_depth, cfg.wgt_depth)):
            fields.append((rng.integers(0, max(1, depth // 4), nu) & mask) << offset)
        words = fields[0] | fields[1] | fields[2]
        it_out, it_in = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        f = [int(rng.integers(0, 3)) if rng.random() < .6 else 0 for _ in range(6)]
        if trial % 4 == 0:      # every micro-op writes the same entry (a reduction)
            words = fields[1] | fields[2] | (fields[0][0] if nu else 0)
        insn = Gemm(uop_bgn=0, uop_end=nu, iter_out=it_out, iter_in=it_in,
                    dst_factor_out=f[0], dst_factor_in=f[1], src_factor_out=f[2],
                    src_factor_in=f[3], wgt_factor_out=f[4], wgt_factor_in=f[5])
        for s in sims:
            s.inp[:], s.wgt[:], s.acc[:] = inp, wgt, acc
            s.uop[:nu] = words
            if trial % 3 == 0:      # saturate: accumulate many times into few entries
                s.inp[:] = -128
                s.wgt[:] = -128
            s._gemm(insn)
        assert np.array_equal(sims[0].acc, sims[1].acc), trial
    assert used["loops"] and used["pairs"]
