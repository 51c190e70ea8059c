"""The compute module's registered head decode (``ComputeModule._head_decode``) against its
combinational definition, in Amaranth's simulator."""

import random

from amaranth.hdl import Cat, Elaboratable, Module, Signal
from amaranth.sim import Simulator

from hw.compute import ComputeModule
from hw.fields import alu_insn, gemm_insn, mem_insn
from isa.arch import HEAD_SETTLE
from isa.config import load_config
from isa.encoding import MemType, Opcode

KINDS = (MemType.UOP, MemType.ACC, MemType.ACC_8BIT)


class _Decode(Elaboratable):
    """The decode of a head word and free range-check flags, beside the definition of every
    flag straight from them (``want``)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.word = Signal(len(Signal(mem_insn()).as_value()))
        self.checks = {t: (Signal(name=f"s_{t.name}"), Signal(name=f"d_{t.name}"))
                       for t in KINDS}
        self.units, self.want = {}, {}

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        head, hg, ha = Signal(mem_insn()), Signal(gemm_insn(cfg)), Signal(alu_insn(cfg))
        m.d.comb += [head.eq(self.word), hg.eq(self.word), ha.eq(self.word)]
        comp = ComputeModule(cfg)
        comp._MustUse__silence = True       # only its head decode is used
        self.units.update(comp._head_decode(m, head, hg, ha, self.checks))
        op = head.opcode
        is_load = op == Opcode.LOAD
        load = is_load & (head.x_size != 0)
        gemm_ok = (op == Opcode.GEMM) & (hg.uop_end <= cfg.uop_depth)
        alu_ok = (op == Opcode.ALU) & (ha.uop_end <= cfg.uop_depth)
        other = (op != Opcode.LOAD) & (op != Opcode.GEMM) & (op != Opcode.ALU)
        mt = {t: head.memory_type == t for t in KINDS}
        ok = {t: mt[t] & ~s & ~d for t, (s, d) in self.checks.items()}
        sram_bad = Cat(*[mt[t] & s for t, (s, _d) in self.checks.items()]).any()
        dram_bad = Cat(*[mt[t] & ~s & d for t, (s, d) in self.checks.items()]).any()
        want = {"ld_uop": load & ok[MemType.UOP], "ld_acc": load & ok[MemType.ACC],
                "ld_acc8": load & ok[MemType.ACC_8BIT], "gemm": gemm_ok, "alu": alu_ok,
                "run": gemm_ok | alu_ok, "retire": (is_load & (head.x_size == 0)) | other,
                "loading": load & ~sram_bad & ~dram_bad,
                "sram_bad": (load & sram_bad) | (~is_load & ~other & ~gemm_ok & ~alu_ok),
                "dram_bad": load & dram_bad}
        for name, value in want.items():
            self.want[name] = Signal(name=f"want_{name}")
            m.d.comb += self.want[name].eq(value)
        return m


def test_head_decode_registers_equal_their_definition_once_the_head_settled():
    cfg = load_config("ecp5-small")
    dut = _Decode(cfg)
    layout = mem_insn()
    width = len(dut.word)
    rng = random.Random(9)

    def field(word, name, value):
        f = layout[name]
        mask = ((1 << f.shape.width) - 1) << f.offset
        return (word & ~mask) | ((value << f.offset) & mask)

    words = []
    for _ in range(600):
        w = rng.getrandbits(width)
        w = field(w, "opcode", rng.choice([Opcode.LOAD, Opcode.LOAD, Opcode.GEMM, Opcode.ALU,
                                           Opcode.FINISH, rng.getrandbits(3)]))
        w = field(w, "memory_type", rng.choice([*KINDS, rng.getrandbits(3)]))
        if rng.random() < 0.3:
            w = field(w, "x_size", 0)
        words.append(w)

    async def bench(ctx):
        for w in words:
            ctx.set(dut.word, w)
            for s, d in dut.checks.values():
                ctx.set(s, rng.getrandbits(1))
                ctx.set(d, rng.getrandbits(1))
            # the decode's two stages; the head sits HEAD_SETTLE cycles before a start
            for _ in range(HEAD_SETTLE - 1):
                await ctx.tick()
            for name, sig in dut.units.items():
                assert ctx.get(sig) == ctx.get(dut.want[name]), (name, hex(w))
            assert sum(ctx.get(dut.units[n]) for n in
                       ("retire", "loading", "run", "sram_bad", "dram_bad")) == 1, hex(w)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
