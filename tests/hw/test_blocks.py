"""Fast unit tests of single hardware blocks in Amaranth's simulator."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.alu import AluLane
from hw.dma import DmaReader, DmaWriter
from isa.bursts import span_beats
from hw.memmodel import MemoryModel
from hw.memport import MemArbiter
from hw.queues import TokenQueues
from hw.uop_loop import UopLoop
from isa.config import load_config
from isa.encoding import AluOp
from sim.functional import alu_op


def run(dut, bench, *, clock=True):
    sim = Simulator(dut)
    if clock:
        sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


EXTREMES = [0, 1, -1, 2, -2, 7, 31, 32, 33, -31, -32, -33, 127, -128, 255, 1 << 30,
            (1 << 31) - 1, -(1 << 31), 12345, -98765]


def test_alu_lane_matches_the_functional_simulator():
    dut = AluLane(32)
    rng = random.Random(1)
    cases = [(op, a, b) for op in AluOp for a in EXTREMES for b in EXTREMES]
    cases += [(rng.choice(list(AluOp)), rng.randint(-(1 << 31), (1 << 31) - 1),
               rng.randint(-(1 << 31), (1 << 31) - 1)) for _ in range(500)]
    cases += [(AluOp.SHR, rng.randint(-(1 << 31), (1 << 31) - 1), rng.randint(-40, 40))
              for _ in range(300)]

    async def bench(ctx):
        for op, a, b in cases:
            ctx.set(dut.op, op)
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            want = int(alu_op(op, np.array([a], np.int64), np.int64(b))[0])
            assert ctx.get(dut.r) == want, (op.name, a, b)
    run(dut, bench, clock=False)


def test_token_queues_count_and_overflow():
    cfg = load_config("tiny").replace(token_queue_depth=3)
    dut = TokenQueues(cfg)

    async def bench(ctx):
        for _ in range(3):
            ctx.set(dut.push[0], 1)
            assert not ctx.get(dut.overflow[0])
            await ctx.tick()
        assert ctx.get(dut.count[0]) == 3
        assert ctx.get(dut.overflow[0])            # a fourth push overflows
        ctx.set(dut.pop[0], 1)                     # ... unless a pop happens in the same cycle
        assert not ctx.get(dut.overflow[0])
        await ctx.tick()
        assert ctx.get(dut.count[0]) == 3
        ctx.set(dut.push[0], 0)
        await ctx.tick()
        assert ctx.get(dut.count[0]) == 2
        assert ctx.get(dut.count[1]) == 0
    run(dut, bench)


def test_uop_loop_walks_both_loops_one_step_per_cycle():
    cfg = load_config("small")
    dut = UopLoop(cfg)
    bgn, end, n_out, n_in = 3, 6, 2, 3
    fac = dict(dst_factor_out=5, dst_factor_in=1, src_factor_out=7, src_factor_in=2,
               wgt_factor_out=11, wgt_factor_in=3)
    want = [(u, o * 5 + i * 1, o * 7 + i * 2, o * 11 + i * 3)
            for o in range(n_out) for i in range(n_in) for u in range(bgn, end)]

    async def bench(ctx):
        for k, v in dict(uop_bgn=bgn, uop_end=end, iter_out=n_out, iter_in=n_in, **fac).items():
            ctx.set(getattr(dut, k), v)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        got = []
        while ctx.get(dut.valid):
            got.append((ctx.get(dut.uop_idx), ctx.get(dut.dst_off), ctx.get(dut.src_off),
                        ctx.get(dut.wgt_off)))
            last = ctx.get(dut.last)
            await ctx.tick()
        assert last
        assert got == want
    run(dut, bench)


def _port_step(ctx, port, model):
    o = model.out
    ctx.set(port.cmd.ready, o.cmd_ready)
    ctx.set(port.rd.valid, o.rd_valid)
    ctx.set(port.rd.payload, {"data": o.rd_data, "last": o.rd_last})
    ctx.set(port.wr.ready, o.wr_ready)
    ctx.set(port.wr_ack, o.wr_ack)
    cmd = ctx.get(port.cmd.payload)
    wr = ctx.get(port.wr.payload)
    return (ctx.get(port.cmd.valid), cmd.addr, cmd.len, cmd.write, ctx.get(port.rd.ready),
            ctx.get(port.wr.valid), wr.data, wr.strb)


@pytest.mark.parametrize("elem_bytes", [2, 8, 32])
@pytest.mark.parametrize("backpressure", [None, 3])
def test_dma_reader_streams_elements_in_bursts(elem_bytes, backpressure):
    cfg = load_config("tiny").replace(max_burst_beats=4)
    dram = np.random.default_rng(elem_bytes).integers(0, 256, 8192, dtype=np.uint8)
    model = MemoryModel(cfg, dram, backpressure=backpressure)
    dut = DmaReader(cfg, elem_bytes=elem_bytes)
    addr, count = 3 * elem_bytes + 96, 37

    async def bench(ctx):
        ctx.set(dut.addr, addr)
        ctx.set(dut.count, count)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        got = []
        for _ in range(2000):
            inputs = _port_step(ctx, dut.port, model)
            if ctx.get(dut.out.valid):
                got.append(ctx.get(dut.out.payload))
            if not ctx.get(dut.busy) and len(got) == count:
                break
            model.step(*inputs)
            await ctx.tick()
        want = [int.from_bytes(dram[addr + i * elem_bytes:addr + (i + 1) * elem_bytes].tobytes(),
                               "little") for i in range(count)]
        assert got == want
        assert [(a, n) for _, _, a, n in model.bursts] == span_beats(cfg, addr, count * elem_bytes)
    run(dut, bench)


@pytest.mark.parametrize("elem_bytes", [2, 8, 32])
@pytest.mark.parametrize("backpressure", [None, 5])
def test_dma_writer_writes_elements_with_strobes(elem_bytes, backpressure):
    cfg = load_config("tiny").replace(max_burst_beats=4)
    dram = np.zeros(8192, np.uint8)
    model = MemoryModel(cfg, dram, backpressure=backpressure)
    dut = DmaWriter(cfg, elem_bytes=elem_bytes)
    addr, count = 5 * elem_bytes + 64, 29
    rng = random.Random(elem_bytes)
    elems = [rng.getrandbits(8 * elem_bytes) for _ in range(count)]

    async def bench(ctx):
        ctx.set(dut.addr, addr)
        ctx.set(dut.count, count)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        i = 0
        for _ in range(3000):
            inputs = _port_step(ctx, dut.port, model)
            ctx.set(dut.inp.valid, i < count)
            ctx.set(dut.inp.payload, elems[i] if i < count else 0)
            if i < count and ctx.get(dut.inp.ready):
                i += 1
            if not ctx.get(dut.busy) and i == count:
                break
            inputs = _port_step(ctx, dut.port, model)
            model.step(*inputs)
            await ctx.tick()
        want = b"".join(e.to_bytes(elem_bytes, "little") for e in elems)
        assert dram[addr:addr + len(want)].tobytes() == want
        assert not dram[:addr].any() and not dram[addr + len(want):].any()
        assert [(a, n) for _, _, a, n in model.bursts] == span_beats(cfg, addr, len(want))
    run(dut, bench)


def test_arbiter_grants_by_priority_and_holds_until_the_burst_ends():
    cfg = load_config("tiny")
    dut = MemArbiter(cfg)

    async def bench(ctx):
        ctx.set(dut.mem.cmd.ready, 1)
        for i in (1, 3):
            ctx.set(dut.clients[i].cmd.valid, 1)
            ctx.set(dut.clients[i].cmd.payload, {"addr": 8 * i, "len": 1, "write": 0})
        assert ctx.get(dut.mem.cmd.payload.addr) == 8      # load (1) beats store (3)
        assert ctx.get(dut.clients[1].cmd.ready) and not ctx.get(dut.clients[3].cmd.ready)
        await ctx.tick()
        ctx.set(dut.clients[1].cmd.valid, 0)
        assert ctx.get(dut.owner) == 1 and not ctx.get(dut.mem.cmd.valid)
        ctx.set(dut.mem.rd.valid, 1)
        ctx.set(dut.clients[1].rd.ready, 1)
        ctx.set(dut.mem.rd.payload, {"data": 0, "last": 0})
        assert ctx.get(dut.clients[1].rd.valid) and not ctx.get(dut.clients[3].rd.valid)
        await ctx.tick()
        ctx.set(dut.mem.rd.payload, {"data": 0, "last": 1})
        await ctx.tick()
        ctx.set(dut.mem.rd.valid, 0)
        assert ctx.get(dut.idle)
        assert ctx.get(dut.mem.cmd.payload.addr) == 24     # now the store
    run(dut, bench)
