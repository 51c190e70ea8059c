"""An image whose DRAM is not a whole number of bus beats, touched at its very end.

``tail_image()``: the ``small`` configuration with a 512-bit bus (64-byte beats) and
4 KiB + 16 bytes of DRAM. LOAD INP, WGT and ACC read the last bytes of DRAM, GEMM and ALU
work on them and STORE writes the last 12 bytes, so the core reads and writes the last,
partial beat [4096, 4160) whose 48 bytes past 4112 are the memory model's padding.
"""

import numpy as np

from isa.config import load_config
from isa.encoding import Alu, AluOp, Finish, Gemm, Load, MemType, Store, Uop, encode_program, \
    encode_uops
from isa.image import ProgramImage

DRAM_BYTES = 4096 + 16


def tail_config():
    cfg = load_config("small").replace(log_bus_width=9)
    assert cfg.bus_bytes == 64 and DRAM_BYTES % cfg.bus_bytes
    return cfg


def tail_image(seed: int = 0) -> ProgramImage:
    cfg = tail_config()
    rng = np.random.default_rng(seed)
    dram = np.zeros(DRAM_BYTES, np.uint8)
    dram[1024:] = rng.integers(0, 256, DRAM_BYTES - 1024, dtype=np.uint8)
    uop_at = 2048
    dram[uop_at:uop_at + 4] = np.frombuffer(encode_uops([Uop(0, 0, 0)], cfg), np.uint8)
    end = DRAM_BYTES
    inp, wgt = cfg.inp_elem_bytes, cfg.wgt_elem_bytes
    acc, out = cfg.acc_elem_bytes, cfg.out_elem_bytes
    n_acc, n_out = 3, 3
    insns = [
        # load module: the last INP and WGT elements of DRAM
        Load(memory_type=MemType.INP, sram_base=0, dram_base=(end - inp) // inp, x_size=1,
             x_stride=1),
        Load(memory_type=MemType.WGT, sram_base=0, dram_base=(end - wgt) // wgt, x_size=1,
             x_stride=1, push_next=True),
        # compute: micro-op, the last ACC elements, GEMM and ALU on them
        Load(memory_type=MemType.UOP, sram_base=0, dram_base=uop_at // 4, x_size=1,
             x_stride=1, pop_prev=True),
        Load(memory_type=MemType.ACC, sram_base=0, dram_base=(end - n_acc * acc) // acc,
             x_size=n_acc, x_stride=n_acc),
        Gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1),
        Alu(alu_opcode=AluOp.ADD, use_imm=True, imm=7, uop_bgn=0, uop_end=1, iter_out=1,
            iter_in=n_acc, dst_factor_in=1, src_factor_in=1, push_next=True),
        # store: the last bytes of DRAM (a partial last beat, strobes off in the padding)
        Store(sram_base=0, dram_base=(end - n_out * out) // out, x_size=n_out, x_stride=n_out,
              pop_prev=True, push_prev=True),
        Finish(pop_next=True),
    ]
    code = encode_program(insns, cfg)
    dram[:len(code)] = np.frombuffer(code, np.uint8)
    return ProgramImage(dram, 0, len(insns), cfg)
