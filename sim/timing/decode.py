"""Instruction words as the hardware sees them: fields, routing and the fetch-time checks."""

from __future__ import annotations

from isa.config import VTAConfig
from isa.encoding import AluOp, MemType, Opcode, decode
from isa.errors import ErrorCode
from isa.layout import alu_layout, gemm_layout, mem_layout

__all__ = ["Decoded", "Decoder", "LOAD_Q", "COMPUTE_Q", "STORE_Q"]

LOAD_Q, COMPUTE_Q, STORE_Q = range(3)
_MAX_ALU = max(AluOp)


class Decoded:
    """One instruction: ``target`` queue, ``illegal`` ErrorCode (or 0), raw fields ``f``."""

    __slots__ = ("word", "opcode", "target", "illegal", "f", "insn", "nuops")

    def __init__(self, word, opcode, target, illegal, f):
        self.word, self.opcode, self.target, self.illegal, self.f = (word, opcode, target,
                                                                      illegal, f)
        self.insn = None
        self.nuops = 0


class Decoder:
    """Decodes with the checks of ``hw.fetch.FetchModule``, in its order."""

    def __init__(self, cfg: VTAConfig):
        self.cfg = cfg
        self.mem = mem_layout()
        self.gemm = gemm_layout(cfg)
        self.alu = alu_layout(cfg)
        self._cache = {}

    def __call__(self, word: int) -> Decoded:
        d = self._cache.get(word)
        if d is None:
            d = self._cache[word] = self._decode(word)
        return d

    def _fields(self, layout, word):
        return {f.name: f.extract(word) for f in layout.fields}

    def _decode(self, word: int) -> Decoded:
        f = self._fields(self.mem, word)
        op = f["opcode"]
        target, bad = COMPUTE_Q, 0
        if op == Opcode.STORE:
            target = STORE_Q
            pads = f["y_pad_0"] or f["y_pad_1"] or f["x_pad_0"] or f["x_pad_1"]
            if f["pop_next"] or f["push_next"]:
                bad = ErrorCode.ILLEGAL_DEP_FLAG
            elif f["x_size"] == 0:
                pass
            elif f["memory_type"] != MemType.OUT:
                bad = ErrorCode.ILLEGAL_MEMORY_TYPE
            elif pads:
                bad = ErrorCode.STORE_PADDING
        elif op == Opcode.LOAD:
            mt = f["memory_type"]
            if mt in (MemType.INP, MemType.WGT):
                target = LOAD_Q
                if f["pop_prev"] or f["push_prev"]:
                    bad = ErrorCode.ILLEGAL_DEP_FLAG
            elif mt not in (MemType.UOP, MemType.ACC, MemType.ACC_8BIT):
                bad = ErrorCode.ILLEGAL_MEMORY_TYPE
        elif op in (Opcode.GEMM, Opcode.ALU):
            g = self._fields(self.gemm if op == Opcode.GEMM else self.alu, word)
            f.update(g)
            empty = g["iter_out"] == 0 or g["iter_in"] == 0 or g["uop_end"] <= g["uop_bgn"]
            if op == Opcode.ALU and g["alu_opcode"] > _MAX_ALU:
                bad = ErrorCode.ILLEGAL_ALU_OPCODE
            elif empty:
                bad = ErrorCode.EMPTY_LOOP
        elif op != Opcode.FINISH:
            bad = ErrorCode.ILLEGAL_OPCODE
        d = Decoded(word, op, target, int(bad), f)
        if op in (Opcode.LOAD, Opcode.STORE):
            f["rows"] = f["y_pad_0"] + f["y_size"] + f["y_pad_1"]
            f["row_len"] = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
        if not bad:
            d.insn = decode(word, self.cfg)
            if op in (Opcode.GEMM, Opcode.ALU):
                d.nuops = f["iter_out"] * f["iter_in"] * (f["uop_end"] - f["uop_bgn"])
        return d
