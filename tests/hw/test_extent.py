"""hw.extent.mem_range_checks in Amaranth's simulator against SPEC §4.6's ranges written out
in Python: random and edge-case fields, padded and not, several element sizes and depths, a
DRAM size that is not a multiple of the element size; the flags RANGE_CHECK_STAGES cycles
after the instruction is presented."""

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal

from hw.extent import mem_range_checks
from hw.fields import mem_insn
from isa.arch import RANGE_CHECK_STAGES

from .pipeline_bench import simulate

KINDS = {"a": (1, 2048), "b": (16, 512), "c": (64, 128)}     # (element bytes, depth)
FIELDS = ("sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1",
          "x_pad_0", "x_pad_1")


class _Bench(Elaboratable):
    def __init__(self, padded):
        self.insn = Signal(mem_insn())
        self.dram_size = Signal(32)
        self.padded = padded
        self.out = None

    def elaborate(self, platform):
        m = Module()
        self.out = mem_range_checks(m, self.insn, kinds=KINDS, dram_size=self.dram_size,
                                    padded=self.padded)
        return m


def _reference(f, dram_size, padded, elem_bytes, depth):
    rows, row_len = f["y_size"], f["x_size"]
    if padded:
        rows += f["y_pad_0"] + f["y_pad_1"]
        row_len += f["x_pad_0"] + f["x_pad_1"]
    sram_bad = f["sram_base"] + rows * row_len > depth
    end = (f["dram_base"] + (f["y_size"] - 1) * f["x_stride"] + f["x_size"]) * elem_bytes
    dram_bad = f["y_size"] >= 1 and end > dram_size
    return sram_bad, dram_bad


def _cases(rng, n):
    width = {name: len(getattr(Signal(mem_insn()), name)) for name in FIELDS}
    top = {name: (1 << w) - 1 for name, w in width.items()}
    yield {**dict.fromkeys(FIELDS, 0), "x_size": 1}, 1          # the smallest
    yield {**top}, (1 << 32) - 1                                  # every field at its top
    for _ in range(n):
        f = {name: int(rng.integers(0, top[name] + 1)) for name in FIELDS}
        f["x_size"] = max(1, f["x_size"])
        if rng.random() < 0.5:          # near the edges: small sizes and bases
            for k in ("y_size", "x_size", "x_stride", "sram_base"):
                f[k] = int(rng.integers(0, 40))
            f["x_size"] = max(1, f["x_size"])
            f["dram_base"] = int(rng.integers(0, 4096))
        dram_size = int(rng.integers(1, 1 << 32)) if rng.random() < 0.3 else \
            int(rng.integers(1, 1 << 18))
        yield f, dram_size
        # on the boundaries of one kind: the last element ends exactly at the buffer's or
        # the DRAM's end, or one past it
        eb, depth = KINDS[str(rng.choice(list(KINDS)))]
        f = dict(f, y_size=max(1, f["y_size"] % 64), x_size=max(1, f["x_size"] % 64),
                 x_stride=f["x_stride"] % 64, dram_base=f["dram_base"] % 4096, y_pad_0=0, y_pad_1=0, x_pad_0=0, x_pad_1=0)
        area = f["y_size"] * f["x_size"]
        if area <= depth:
            f["sram_base"] = depth - area + int(rng.integers(0, 2))
        end = f["dram_base"] + (f["y_size"] - 1) * f["x_stride"] + f["x_size"]
        yield f, max(1, end * eb - int(rng.integers(0, 2)))


@pytest.mark.parametrize("padded", [True, False])
def test_range_checks_match_the_spec(padded):
    dut = _Bench(padded)
    rng = np.random.default_rng(11 + padded)
    cases = list(_cases(rng, 150))

    async def bench(ctx):
        for f, dram_size in cases:
            for name, v in f.items():
                ctx.set(getattr(dut.insn, name), v)
            ctx.set(dut.dram_size, dram_size)
            await ctx.tick().repeat(RANGE_CHECK_STAGES)
            for key, (eb, depth) in KINDS.items():
                sram_bad, dram_bad = dut.out[key]
                want = _reference(f, dram_size, padded, eb, depth)
                got = (bool(ctx.get(sram_bad)), bool(ctx.get(dram_bad)))
                assert got == want, (key, f, dram_size)

    simulate(dut, bench)
