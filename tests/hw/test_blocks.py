"""Fast unit tests of single hardware blocks in Amaranth's simulator."""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from hw.alu import AluLane, lane_result, op_flags
from hw.dma import PREPARE_CYCLES, DmaReader, DmaWriter
from isa.bursts import span_beats
from hw.memmodel import MemoryModel
from hw.memport import MemArbiter, StreamSlice
from hw.queues import CommandQueue, TokenQueues
from sim.timing.queues import CommandQueue as TimingCommandQueue
from isa.arch import HEAD_SETTLE
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


class _LaneWithJoin(Elaboratable):
    """The lane with its second stage (MUL's join, the pick of MIN/MAX, ADD, SHR) joined
    combinationally (the pipeline registers between them), from a 3-bit opcode."""

    def __init__(self):
        self.lane = AluLane(32)
        self.op, self.a, self.b = Signal(3), self.lane.a, self.lane.b
        self.r = Signal(32)

    def elaborate(self, platform):
        m = Module()
        m.submodules.lane = lane = self.lane
        m.d.comb += lane.ops.eq(op_flags(self.op))
        m.d.comb += self.r.eq(lane_result(self.op == AluOp.MUL, lane.a.as_unsigned(),
                                          lane.b.as_unsigned(), lane.total, lane.shifted,
                                          lane.pick, lane.p_lo, lane.p_hl, lane.p_lh, 32))
        return m


def test_alu_lane_matches_the_functional_simulator():
    dut = _LaneWithJoin()
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
            assert ctx.get(dut.r) == want & 0xFFFFFFFF, (op.name, a, b)
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


@settings(derandomize=True, max_examples=25, deadline=None)
@given(depth=st.sampled_from([1, 2, 3, 5]),
       steps=st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15)), min_size=1,
                      max_size=60))
def test_token_queues_registered_avail_follows_a_counter_model(depth, steps):
    """``count``, ``overflow``, the registered ``avail`` (count ≠ 0) and ``avail_next`` (the
    count is nonzero next cycle unless the consumer pops) against a Python counter under
    random pushes and pops (a pop only takes an available token, as the consumer's start
    decision guarantees)."""
    cfg = load_config("tiny").replace(token_queue_depth=depth)
    dut = TokenQueues(cfg)
    n = len(dut.push)

    async def bench(ctx):
        model = [0] * n
        for push_bits, pop_bits in steps:
            pushes = [(push_bits >> i) & 1 for i in range(n)]
            pops = [(pop_bits >> i) & 1 and model[i] > 0 for i in range(n)]
            for i in range(n):
                ctx.set(dut.push[i], pushes[i])
                ctx.set(dut.pop[i], pops[i])
            for i in range(n):
                assert ctx.get(dut.count[i]) == model[i]
                assert ctx.get(dut.avail[i]) == (model[i] != 0)
                assert ctx.get(dut.overflow[i]) == (pushes[i] and not pops[i]
                                                    and model[i] == depth)
                after_push = min(model[i] + pushes[i], depth)
                assert ctx.get(dut.avail_next[i]) == (after_push != 0)
            await ctx.tick()
            for i in range(n):
                model[i] = min(model[i] + pushes[i] - pops[i], depth)
        for i in range(n):
            assert ctx.get(dut.count[i]) == model[i]
            assert ctx.get(dut.avail[i]) == (model[i] != 0)
    run(dut, bench)


def test_command_queue_shows_an_entry_after_it_settled_at_the_head():
    """Written in t into an empty queue → seen in t + 2 + HEAD_SETTLE; after a read in s the
    next entry is seen in s + 1 + HEAD_SETTLE (docs/hardware.md §4)."""
    dut = CommandQueue(load_config("tiny"))

    async def bench(ctx):
        seen = []
        for t in range(40):
            ctx.set(dut.w_en, t in (0, 1))
            ctx.set(dut.w_data.index, 100 + t)
            rdy = ctx.get(dut.r_rdy)
            ctx.set(dut.r_en, rdy)                 # read each entry as soon as it is seen
            if rdy:
                seen.append((t, ctx.get(dut.r_data.index)))
            await ctx.tick()
        first = 2 + HEAD_SETTLE
        assert seen == [(first, 100), (first + 1 + HEAD_SETTLE, 101)]
    run(dut, bench)


@pytest.mark.parametrize("depth", [2, 3, 6])
def test_command_queue_announces_its_head_a_cycle_ahead(depth):
    """``r_rdy_next`` in t is ``r_rdy`` in t + 1, and the head then is the entry of t (what
    a module's start decision computed a cycle ahead relies on); the registered ``empty`` is
    ``level == 0``; the registered ``w_rdy``, ``r_rdy`` and ``level`` equal the cycle
    simulator's queue; under random writes and reads."""
    cfg = load_config("tiny").replace(cmd_queue_depth=depth)
    dut = CommandQueue(cfg)
    model = TimingCommandQueue(cfg)
    rng = random.Random(5)

    async def bench(ctx):
        prev = None         # (r_rdy_next, r_data.index) of the cycle before
        reads = 0
        for t in range(400):
            w_en = rng.random() < 0.5
            ctx.set(dut.w_en, w_en)
            ctx.set(dut.w_data.index, t)
            rdy = ctx.get(dut.r_rdy)
            r_en = rdy and rng.random() < 0.4
            ctx.set(dut.r_en, r_en)
            reads += r_en
            index = ctx.get(dut.r_data.index)
            assert ctx.get(dut.empty) == (ctx.get(dut.level) == 0), t
            assert (ctx.get(dut.w_rdy), rdy, ctx.get(dut.level)) == \
                (model.w_rdy, model.ready, model.level), t
            if rdy:
                assert index == model.head, t
            model.update(w_en, t, r_en)
            if prev is not None:
                assert prev[0] == rdy, t
                if prev[0]:
                    assert prev[1] == index, t
            prev = (ctx.get(dut.r_rdy_next), index)
            await ctx.tick()
        assert reads > 20
    run(dut, bench)


@pytest.mark.parametrize("shape", [(3, 6, 2, 3), (0, 1, 3, 1), (2, 3, 1, 4), (5, 7, 1, 1)])
@pytest.mark.parametrize("width", [4, 12])
def test_uop_loop_walks_both_loops_one_step_per_cycle(shape, width):
    """Every step in order, one per cycle; each offset's low bits and its "≥ 2^w" flag."""
    cfg = load_config("small")
    dut = UopLoop(cfg, {n: width for n in ("dst", "src", "wgt")})
    bgn, end, n_out, n_in = shape
    fac = dict(dst_factor_out=5, dst_factor_in=1, src_factor_out=7, src_factor_in=2,
               wgt_factor_out=17, wgt_factor_in=3)

    def off(o, i, n):
        v = o * fac[f"{n}_factor_out"] + i * fac[f"{n}_factor_in"]
        return v % (1 << width), int(v >= 1 << width)
    want = [(u, *(off(o, i, n) for n in ("dst", "src", "wgt")))
            for o in range(n_out) for i in range(n_in) for u in range(bgn, end)]

    async def bench(ctx):
        for k, v in dict(uop_bgn=bgn, uop_end=end, iter_out=n_out, iter_in=n_in, **fac).items():
            ctx.set(getattr(dut, k), v)
        await ctx.tick()                           # the fields sit there a cycle before start
        ctx.set(dut.start, 1)
        assert ctx.get(dut.uop_next) == bgn        # idle: the first step's, read a cycle ahead
        await ctx.tick()
        ctx.set(dut.start, 0)
        got, lasts, nexts = [], [], []
        while ctx.get(dut.valid):
            got.append((ctx.get(dut.uop_idx),
                        *((ctx.get(getattr(dut, f"{n}_off")), ctx.get(getattr(dut, f"{n}_over")))
                          for n in ("dst", "src", "wgt"))))
            lasts.append(ctx.get(dut.last))
            nexts.append(ctx.get(dut.uop_next))
            await ctx.tick()
        assert lasts == [0] * (len(want) - 1) + [1]
        assert nexts[:-1] == [g[0] for g in got[1:]]
        assert got == want
    run(dut, bench)


def _port_step(ctx, port, model):
    o = model.out
    ctx.set(port.rcmd.ready, o.rcmd_ready)
    ctx.set(port.wcmd.ready, o.wcmd_ready)
    ctx.set(port.rd.valid, o.rd_valid)
    ctx.set(port.rd.payload, {"data": o.rd_data, "last": o.rd_last})
    ctx.set(port.wr.ready, o.wr_ready)
    ctx.set(port.wr_ack, o.wr_ack)
    rc, wc = ctx.get(port.rcmd.payload), ctx.get(port.wcmd.payload)
    wr = ctx.get(port.wr.payload)
    return (ctx.get(port.rcmd.valid), rc.addr, rc.len, ctx.get(port.wcmd.valid), wc.addr,
            wc.len, ctx.get(port.rd.ready), ctx.get(port.wr.valid), wr.data, wr.strb)


def _bursts(cfg, addr, count, rows, stride, eb):
    """The bursts of a 2-D transfer: each row split by :func:`isa.bursts.span_beats`."""
    return [b for y in range(rows) for b in span_beats(cfg, addr + y * stride, count * eb)]


# (rows, stride in elements): one row, rows with gaps, rows sharing a beat
SHAPES = [(1, 0), (3, 45), (4, 38)]


@pytest.mark.parametrize("elem_bytes", [2, 8, 32])
@pytest.mark.parametrize("backpressure", [None, 3])
@pytest.mark.parametrize("rows,stride", SHAPES)
@pytest.mark.parametrize("prepare", [0, PREPARE_CYCLES])
def test_dma_reader_streams_rows_with_bursts_in_flight(elem_bytes, backpressure, rows, stride,
                                                    prepare):
    cfg = load_config("tiny").replace(max_burst_beats=4, mem_latency=6, mem_outstanding=3)
    dram = np.random.default_rng(elem_bytes).integers(0, 256, 8192, dtype=np.uint8)
    model = MemoryModel(cfg, dram, backpressure=backpressure)
    dut = DmaReader(cfg, elem_bytes=elem_bytes, prepare_cycles=prepare)
    addr, count = 3 * elem_bytes + 96, 37
    stride *= elem_bytes
    rng = random.Random(rows)
    most = [0]

    async def bench(ctx):
        ctx.set(dut.addr, addr)
        ctx.set(dut.count, count)
        ctx.set(dut.rows, rows)
        ctx.set(dut.stride, stride)
        for _ in range(prepare):        # the inputs are held that long before start
            await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        got = []
        for _ in range(4000):
            ready = rng.random() < 0.7          # the consumer stalls too
            ctx.set(dut.out.ready, ready)
            inputs = _port_step(ctx, dut.port, model)
            if ctx.get(dut.out.valid) and ready:
                got.append(ctx.get(dut.out.payload))
            if not ctx.get(dut.busy) and len(got) == rows * count:
                break
            model.step(*inputs)
            most[0] = max(most[0], len(model._reads))
            await ctx.tick()
        want = [int.from_bytes(dram[a:a + elem_bytes].tobytes(), "little")
                for y in range(rows) for i in range(count)
                for a in (addr + y * stride + i * elem_bytes,)]
        assert got == want
        assert [(a, n) for _, _, a, n in model.bursts] == \
            _bursts(cfg, addr, count, rows, stride, elem_bytes)
    run(dut, bench)
    assert most[0] == 3         # several bursts were in flight, never more than the limit


@pytest.mark.parametrize("elem_bytes", [2, 8, 32])
@pytest.mark.parametrize("backpressure", [None, 5])
@pytest.mark.parametrize("rows,stride", SHAPES)
@pytest.mark.parametrize("prepare", [0, PREPARE_CYCLES])
def test_dma_writer_writes_rows_with_strobes(elem_bytes, backpressure, rows, stride, prepare):
    cfg = load_config("tiny").replace(max_burst_beats=4, mem_latency=5, mem_outstanding=2)
    dram = np.zeros(8192, np.uint8)
    model = MemoryModel(cfg, dram, backpressure=backpressure)
    dut = DmaWriter(cfg, elem_bytes=elem_bytes, prepare_cycles=prepare)
    addr, count = 5 * elem_bytes + 64, 29
    stride *= elem_bytes
    rng = random.Random(elem_bytes)
    elems = [rng.getrandbits(8 * elem_bytes) for _ in range(rows * count)]
    most = [0]

    async def bench(ctx):
        ctx.set(dut.addr, addr)
        ctx.set(dut.count, count)
        ctx.set(dut.rows, rows)
        ctx.set(dut.stride, stride)
        for _ in range(prepare):        # the inputs are held that long before start
            await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        i = 0
        n = len(elems)
        for _ in range(6000):
            ctx.set(dut.inp.valid, i < n)
            ctx.set(dut.inp.payload, elems[i] if i < n else 0)
            inputs = _port_step(ctx, dut.port, model)
            if i < n and ctx.get(dut.inp.ready):
                i += 1
            if not ctx.get(dut.busy) and i == n:
                break
            model.step(*inputs)
            most[0] = max(most[0], len(model._writes) + len(model._acks))
            await ctx.tick()
        want = np.zeros(8192, np.uint8)
        for y in range(rows):
            row = b"".join(e.to_bytes(elem_bytes, "little")
                           for e in elems[y * count:(y + 1) * count])
            a = addr + y * stride
            want[a:a + len(row)] = np.frombuffer(row, np.uint8)
        assert np.array_equal(dram, want)
        assert [(a, n) for _, _, a, n in model.bursts] == \
            _bursts(cfg, addr, count, rows, stride, elem_bytes)
        assert model.idle
    run(dut, bench)
    assert most[0] == 2 or len(model.bursts) == 1


def test_arbiter_round_robin_per_command_and_routes_data_in_order():
    cfg = load_config("tiny").replace(mem_outstanding=3)
    dut = MemArbiter(cfg)

    async def bench(ctx):
        ctx.set(dut.mem.rcmd.ready, 1)
        for i in range(3):
            ctx.set(dut.clients[i].rcmd.valid, 1)
            ctx.set(dut.clients[i].rcmd.payload, {"addr": 8 * i, "len": 0})
            ctx.set(dut.clients[i].rd.ready, 1)
        order = []
        # each client's command slice takes its command (the client's ready is the slice's,
        # a register); nothing reaches the memory in this cycle
        assert not ctx.get(dut.mem.rcmd.valid)
        assert all(ctx.get(dut.clients[i].rcmd.ready) for i in range(3))
        await ctx.tick()
        for i in range(3):
            ctx.set(dut.clients[i].rcmd.valid, 0)
        # the commands are at the arbiter now; the grant is a register: this cycle picks
        assert not ctx.get(dut.mem.rcmd.valid)
        await ctx.tick()
        for _ in range(3):                  # all three asked: fetch, load, compute back to back
            assert ctx.get(dut.mem.rcmd.valid)
            order.append(ctx.get(dut.mem.rcmd.payload.addr) // 8)
            await ctx.tick()
        assert order == [0, 1, 2]
        assert not ctx.get(dut.mem.rcmd.valid)      # three in flight: the limit
        assert not ctx.get(dut.idle)
        # the answers go back in order: first to fetch, then load, then compute, each through
        # its client's slice (offered one cycle after the memory's beat)
        ctx.set(dut.mem.rd.valid, 1)
        for k in range(4):          # the memory's beat k is for client k; client k − 1 sees its
            if k < 3:
                ctx.set(dut.mem.rd.payload, {"data": 10 + k, "last": 1})
            else:
                ctx.set(dut.mem.rd.valid, 0)
            assert [ctx.get(dut.clients[i].rd.valid) for i in range(3)] == \
                [i == k - 1 for i in range(3)]
            if k:
                assert ctx.get(dut.clients[k - 1].rd.payload.data) == 10 + k - 1
            await ctx.tick()
        assert ctx.get(dut.idle)
        assert not any(ctx.get(dut.clients[i].rd.valid) for i in range(3))
        # the round robin goes on after the last grant (compute): fetch, then load
        ctx.set(dut.clients[1].rcmd.valid, 1)
        ctx.set(dut.clients[0].rcmd.valid, 1)
        assert not ctx.get(dut.mem.rcmd.valid)      # into the slices in this cycle
        await ctx.tick()
        ctx.set(dut.clients[0].rcmd.valid, 0)
        ctx.set(dut.clients[1].rcmd.valid, 0)
        assert not ctx.get(dut.mem.rcmd.valid)      # picked in this cycle, granted in the next
        await ctx.tick()
        assert ctx.get(dut.mem.rcmd.valid) and ctx.get(dut.mem.rcmd.payload.addr) == 0
        await ctx.tick()
        assert ctx.get(dut.mem.rcmd.valid) and ctx.get(dut.mem.rcmd.payload.addr) == 8
        await ctx.tick()
        assert not ctx.get(dut.mem.rcmd.valid)
        # the store's writes pass straight through, counted until their acknowledgement
        ctx.set(dut.clients[3].wcmd.valid, 1)
        ctx.set(dut.clients[3].wcmd.payload, {"addr": 64, "len": 0})
        ctx.set(dut.mem.wcmd.ready, 1)
        assert ctx.get(dut.mem.wcmd.valid) and ctx.get(dut.mem.wcmd.payload.addr) == 64
        await ctx.tick()
        ctx.set(dut.clients[3].wcmd.valid, 0)
        ctx.set(dut.mem.rd.valid, 1)                # the reads in flight end
        ctx.set(dut.mem.rd.payload, {"data": 0, "last": 1})
        await ctx.tick()
        await ctx.tick()
        ctx.set(dut.mem.rd.valid, 0)
        assert not ctx.get(dut.idle)                # the write is not acknowledged
        ctx.set(dut.mem.wr_ack, 1)
        assert ctx.get(dut.clients[3].wr_ack)
        await ctx.tick()
        ctx.set(dut.mem.wr_ack, 0)
        assert ctx.get(dut.idle)
        # halted: nothing is granted
        ctx.set(dut.halt, 1)
        ctx.set(dut.clients[1].rcmd.valid, 1)
        ctx.set(dut.clients[3].wcmd.valid, 1)
        assert not ctx.get(dut.mem.rcmd.valid) and not ctx.get(dut.mem.wcmd.valid)
    run(dut, bench)


@pytest.mark.parametrize("p_valid,p_ready", [(1.0, 1.0), (0.7, 0.5), (0.3, 0.9), (1.0, 0.2)])
def test_stream_slice_delays_by_one_cycle_without_reordering_or_bubbles(p_valid, p_ready):
    """Against a list model: the beats come out in order, each at least a cycle after it went
    in; ``i.ready`` is a register (it does not follow ``o.ready`` within a cycle); and with a
    source always valid and a sink always ready one beat passes per cycle."""
    dut = StreamSlice(8)
    rng = random.Random(f"{p_valid}-{p_ready}")
    sent, got, entered = [], [], {}

    async def bench(ctx):
        nxt = 0
        for cyc in range(400):
            valid = rng.random() < p_valid
            ctx.set(dut.i.valid, valid)
            ctx.set(dut.i.payload, nxt & 0xFF)
            ctx.set(dut.o.ready, 0)
            ready_low = ctx.get(dut.i.ready)
            ready = rng.random() < p_ready
            ctx.set(dut.o.ready, ready)
            assert ctx.get(dut.i.ready) == ready_low      # no path from o.ready to i.ready
            if ctx.get(dut.o.valid) and ready:
                got.append(ctx.get(dut.o.payload))
                assert entered[len(got) - 1] < cyc       # at least one cycle in the slice
            if valid and ctx.get(dut.i.ready):
                sent.append(nxt & 0xFF)
                entered[len(sent) - 1] = cyc
                nxt += 1
            await ctx.tick()
    run(dut, bench)
    assert got == sent[:len(got)] and len(sent) - len(got) <= 2
    if p_valid == 1.0 and p_ready == 1.0:
        assert len(got) == 399                          # back to back after the first cycle
