"""hw.fetch's two-stage instruction decode (the low half's checks, then the high half's) against
the functional simulator's decoder (the reference): the queue, "field error" and its code of
random words, biased towards the fields the checks read."""

import random
from types import SimpleNamespace

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from hw.fetch import FetchModule
from isa.arch import STAGES, module_of
from isa.config import load_config
from isa.layout import alu_layout, gemm_layout, mem_layout
from sim.functional import FunctionalSimulator, SimulationError


class _Decode(Elaboratable):
    def __init__(self, cfg):
        self.fetch = FetchModule(cfg)      # only its decode methods are used here
        self.fetch._MustUse__silence = True
        self.word = Signal(128)

    def elaborate(self, platform):
        m = Module()
        early = self.fetch._decode_early(m, self.word[:64])
        self.to, self.illegal, self.code = self.fetch._decode_late(m, early, self.word, "t")
        return m


def _reference(cfg, word):
    """(queue index, None) of a legal word, (None, ErrorCode) of one with a field error."""
    try:
        insn = FunctionalSimulator._decode(SimpleNamespace(cfg=cfg), word, 0)
    except SimulationError as exc:
        return None, exc.code
    return STAGES.index(module_of(insn)), None


def _put(word, layout, name, value):
    f = next(f for f in layout.fields if f.name == name)
    mask = ((1 << f.width) - 1) << f.offset
    return word & ~mask | (value << f.offset) & mask


def _words(cfg, rng, n):
    """Random words with opcodes 0–7, and each field the checks read often zero, one or small
    (loops empty or not, pads zero or not, memory types and ALU opcodes near the legal ones)."""
    for _ in range(n):
        word = rng.getrandbits(128)
        opcode = rng.randrange(8)
        word = _put(word, mem_layout(), "opcode", opcode)
        layout = {0: mem_layout(), 1: mem_layout(), 4: alu_layout(cfg)}.get(opcode,
                                                                            gemm_layout(cfg))
        for f in layout.fields:
            if f.name != "opcode" and rng.random() < 0.4:
                word = _put(word, layout, f.name, rng.choice((0, 0, 1, 2, 4, 5, 6)))
        yield word


@pytest.mark.parametrize("cfg_name", ["ecp5-small", "default"])
def test_decode_matches_functional_simulator(cfg_name):
    cfg = load_config(cfg_name)
    dut = _Decode(cfg)
    rng = random.Random(cfg_name)
    seen = {"legal": set(), "codes": set()}

    async def bench(ctx):
        for word in _words(cfg, rng, 3000):
            ctx.set(dut.word, word)
            queue, code = _reference(cfg, word)
            to, illegal = ctx.get(dut.to), ctx.get(dut.illegal)
            if code is None:
                assert (illegal, to) == (0, 1 << queue), hex(word)
                seen["legal"].add(queue)
            else:
                assert (illegal, to, ctx.get(dut.code)) == (1, 0, code), (hex(word), code)
                seen["codes"].add(code)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert seen["legal"] == {0, 1, 2} and len(seen["codes"]) == 6, seen
