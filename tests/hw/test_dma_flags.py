"""The DMA engines' registered flags equal their combinational definitions in every cycle
they are read (``invariants`` of hw.dma's engines: the Fmax steps' flags set a cycle ahead,
borrows for compares), over transfers with odd alignments, several rows, backpressure."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.dma import PREPARE_CYCLES, DmaReader, DmaWriter, TensorLoader
from hw.memmodel import MemoryModel
from isa.config import load_config

from .test_blocks import _port_step


def _check(ctx, dut, seen):
    for name, flag, value, when in dut.invariants:
        if ctx.get(when) if not isinstance(when, int) else when:
            assert ctx.get(flag) == ctx.get(value), name
            seen.add(name)


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


# (elem bytes, address, count, rows, stride in elements): short and long rows, rows crossing
# burst boundaries, one-beat rows
SHAPES = [(2, 6, 37, 3, 45), (8, 104, 1, 5, 3), (32, 96, 9, 4, 11), (2, 14, 1, 6, 1),
          (8, 8, 20, 1, 0)]


async def _start(ctx, dut, **transfer):
    """The transfer's inputs held ``PREPARE_CYCLES`` before a one-cycle ``start`` (§3)."""
    for k, v in transfer.items():
        ctx.set(getattr(dut, k), v)
    for _ in range(PREPARE_CYCLES):
        await ctx.tick()
    ctx.set(dut.start, 1)
    await ctx.tick()
    ctx.set(dut.start, 0)


@pytest.mark.parametrize("eb,addr,count,rows,stride", SHAPES)
@pytest.mark.parametrize("backpressure", [None, 3])
def test_reader_flags_follow_their_definitions(eb, addr, count, rows, stride, backpressure):
    cfg = load_config("tiny").replace(max_burst_beats=4, mem_latency=4, mem_outstanding=3)
    dram = np.random.default_rng(eb).integers(0, 256, 8192, dtype=np.uint8)
    model = MemoryModel(cfg, dram, backpressure=backpressure)
    dut = DmaReader(cfg, elem_bytes=eb, prepare_cycles=PREPARE_CYCLES)
    rng = random.Random(count)
    seen = set()

    async def bench(ctx):
        await _start(ctx, dut, addr=addr, count=count, rows=rows, stride=stride * eb)
        got = 0
        for _ in range(3000):
            ready = rng.random() < 0.7
            ctx.set(dut.out.ready, ready)
            inputs = _port_step(ctx, dut.port, model)
            _check(ctx, dut, seen)
            got += ctx.get(dut.out.valid) and ready
            if not ctx.get(dut.busy):
                break
            model.step(*inputs)
            await ctx.tick()
        assert got == rows * count
    _run(dut, bench)
    assert {"one", "row_end", "last", "final_row"} <= seen
    # rows longer than a burst have bursts that do not end them
    assert "one_after" in seen or count * eb <= cfg.max_burst_beats * cfg.bus_bytes
    assert "row_one" in seen or rows == 1
    assert "closing" in seen or eb <= cfg.bus_bytes


@pytest.mark.parametrize("eb,addr,count,rows,stride", SHAPES)
@pytest.mark.parametrize("backpressure", [None, 5])
def test_writer_flags_follow_their_definitions(eb, addr, count, rows, stride, backpressure):
    cfg = load_config("tiny").replace(max_burst_beats=4, mem_latency=4, mem_outstanding=2)
    model = MemoryModel(cfg, np.zeros(8192, np.uint8), backpressure=backpressure)
    dut = DmaWriter(cfg, elem_bytes=eb, prepare_cycles=PREPARE_CYCLES)
    rng = random.Random(count)
    seen = set()

    async def bench(ctx):
        await _start(ctx, dut, addr=addr, count=count, rows=rows, stride=stride * eb)
        i, n = 0, rows * count
        for _ in range(4000):
            ctx.set(dut.inp.valid, i < n and rng.random() < 0.8)
            ctx.set(dut.inp.payload, rng.getrandbits(8 * eb))
            inputs = _port_step(ctx, dut.port, model)
            _check(ctx, dut, seen)
            if ctx.get(dut.inp.valid) and ctx.get(dut.inp.ready):
                i += 1
            if not ctx.get(dut.busy) and i == n:
                break
            model.step(*inputs)
            await ctx.tick()
        assert i == n and model.idle
    _run(dut, bench)
    assert {"one", "row_end", "data_one", "data_row_end", "beat_last"} <= seen
    assert ({"one_after", "data_one_after"} <= seen
            or count * eb <= cfg.max_burst_beats * cfg.bus_bytes)
    assert {"row_one", "data_row_one"} <= seen or rows == 1
    assert "closes_last" in seen or eb >= cfg.bus_bytes


# (x_pad_0, x_size, x_pad_1, y_pad_0, y_size, y_pad_1)
PADS = [(0, 3, 0, 0, 2, 0), (1, 2, 2, 1, 3, 2), (0, 1, 0, 0, 1, 0), (2, 1, 0, 0, 2, 1),
        (0, 4, 1, 2, 1, 0), (3, 5, 3, 1, 2, 1)]


@pytest.mark.parametrize("pads", PADS)
def test_tensor_loader_flags_follow_their_definitions_and_rows_are_padded(pads):
    cfg = load_config("tiny").replace(max_burst_beats=4, mem_latency=4, mem_outstanding=3)
    eb = 8
    dram = np.random.default_rng(sum(pads)).integers(0, 256, 8192, dtype=np.uint8)
    model = MemoryModel(cfg, dram, backpressure=3)
    dut = TensorLoader(cfg, elem_bytes=eb, sram_bits=8 * eb, addr_bits=12)
    xp0, xs, xp1, yp0, ys, yp1 = pads
    base, stride, sram = 5, 7, 40
    seen = set()
    writes = {}

    rng = random.Random(sum(pads))
    bits = len(dut.insn.as_value())

    async def bench(ctx):
        # other instructions before the fields' window (a queue head that changed) and
        # random bits after the start: the loader reads ``insn`` only from
        # c − PREPARE_CYCLES to c (its own copy, then IDLE's registers)
        for _ in range(3):
            ctx.set(dut.insn.as_value(), rng.getrandbits(bits))
            await ctx.tick()
        ctx.set(dut.insn, {"dram_base": base, "sram_base": sram, "x_size": xs, "y_size": ys,
                           "x_stride": stride, "x_pad_0": xp0, "x_pad_1": xp1,
                           "y_pad_0": yp0, "y_pad_1": yp1})
        for _ in range(PREPARE_CYCLES):
            await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(3000):
            ctx.set(dut.insn.as_value(), rng.getrandbits(bits))
            inputs = _port_step(ctx, dut.port, model)
            _check(ctx, dut, seen)
            if ctx.get(dut.wr_en):
                writes[ctx.get(dut.wr_addr)] = ctx.get(dut.wr_data)
            if not ctx.get(dut.busy):
                break
            model.step(*inputs)
            await ctx.tick()
        assert not ctx.get(dut.busy)
    _run(dut, bench)
    row_len = xp0 + xs + xp1
    want = {}
    for r in range(yp0 + ys + yp1):
        for c in range(row_len):
            y, x = r - yp0, c - xp0
            a = (base + y * stride + x) * eb
            data = (int.from_bytes(dram[a:a + eb].tobytes(), "little")
                    if 0 <= y < ys and 0 <= x < xs else 0)
            want[sram + r * row_len + c] = data
    assert writes == want
    assert {"n_one", "in_data", "in_row", "busy", "ended"} <= seen
