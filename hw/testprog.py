"""Small hand-made program images used by the hw tests and the RTL benchmark."""

from __future__ import annotations

import numpy as np

from isa.config import VTAConfig, load_config
from isa.encoding import Finish, Gemm, Load, MemType, Uop, encode_program, encode_uops
from isa.image import ProgramImage

__all__ = ["long_gemm_image"]


def long_gemm_image(cfg: "VTAConfig | str", iters: int, *, same_dst: bool = True) -> ProgramImage:
    """LOAD UOP, one GEMM of ``iters`` micro-ops, FINISH.

    ``same_dst``: every micro-op accumulates into ACC[0] (back-to-back, the forwarding case);
    otherwise micro-op *i* writes ACC[i mod depth]. INP/WGT are whatever the buffers hold.
    """
    cfg = load_config(cfg)
    iter_in = min(iters, (1 << 14) - 1)
    while iters % iter_in:
        iter_in -= 1
    iter_out = iters // iter_in
    uops = encode_uops([Uop(0, 0, 0)], cfg)
    insns = [
        Load(memory_type=MemType.UOP, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1),
        Gemm(uop_bgn=0, uop_end=1, iter_out=iter_out, iter_in=iter_in,
             dst_factor_in=0 if same_dst else 1, dst_factor_out=0),
        Finish(),
    ]
    if not same_dst and iters > cfg.acc_depth:
        raise ValueError(f"{iters} distinct destinations exceed the ACC depth {cfg.acc_depth}")
    code = encode_program(insns, cfg)
    dram = np.zeros(4096, np.uint8)
    dram[:len(uops)] = np.frombuffer(uops, np.uint8)
    dram[256:256 + len(code)] = np.frombuffer(code, np.uint8)
    return ProgramImage(dram, 256, len(insns), cfg)
