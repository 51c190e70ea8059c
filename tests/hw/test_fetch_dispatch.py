"""hw.fetch.FetchModule alone against the functional simulator's decoder: random programs read
from a memory model that accepts commands and delivers beats with random gaps (and garbage on
the data lines between beats), queues whose room comes and goes. Every legal instruction up to
the first field error is dispatched once, in order, into its queue with its index; that error
is raised with its code and index, and nothing after it is dispatched."""

import random

import pytest
from amaranth.sim import Simulator

from hw.fetch import FetchModule
from isa.config import load_config

from .test_fetch_decode import _reference, _words


def _program(cfg, rng, n, bad):
    legal, illegal = [], []
    for word in _words(cfg, rng, 40 * n):
        (legal if _reference(cfg, word)[1] is None else illegal).append(word)
    words = legal[:n]
    if bad is not None:
        words[bad] = illegal[0]
    return words


@pytest.mark.parametrize("seed,n,bad", [(1, 40, None), (2, 70, 53), (3, 25, 0), (4, 90, None),
                                        (5, 33, 32), (6, 1, None), (7, 2, 1)])
def test_fetch_dispatches_the_legal_prefix(seed, n, bad):
    cfg = load_config("ecp5-small")
    rng = random.Random(seed)
    words = _program(cfg, rng, n, bad)
    base = 0x340
    memory = {base // 8 + 2 * i + h: w >> (64 * h) & (2 ** 64 - 1)
              for i, w in enumerate(words) for h in (0, 1)}
    dut = FetchModule(cfg)
    got, errors = [], []

    async def bench(ctx):
        ctx.set(dut.insn_addr, base)
        ctx.set(dut.insn_count, n)
        ctx.set(dut.dram_size, 1 << 20)
        await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        bursts, halt, idle = [], False, 0
        for cycle in range(4000):
            # commands: accepted now and then; beats: from the oldest burst, with gaps
            ctx.set(dut.port.rcmd.ready, rng.random() < 0.6)
            beat = bursts[0] if bursts and rng.random() < 0.7 else None
            ctx.set(dut.port.rd.valid, beat is not None)
            if beat is not None:
                ctx.set(dut.port.rd.payload.data, memory.get(beat[0], 0))
                ctx.set(dut.port.rd.payload.last, beat[1] == 1)
            else:
                ctx.set(dut.port.rd.payload.data, rng.getrandbits(64))
                ctx.set(dut.port.rd.payload.last, rng.random() < 0.5)
            rdy = [rng.random() < 0.5 for _ in range(3)]
            for i in range(3):
                ctx.set(dut.q_rdy[i], rdy[i])
            ctx.set(dut.halt, halt)
            for i in range(3):
                if ctx.get(dut.q_en[i]):
                    got.append((ctx.get(dut.q_data.index), i, ctx.get(dut.q_data.word)))
            if ctx.get(dut.err):
                errors.append((ctx.get(dut.err_code), ctx.get(dut.err_index)))
                halt = True         # the core halts fetch from the next cycle
            if ctx.get(dut.port.rcmd.valid) and ctx.get(dut.port.rcmd.ready):
                cmd = ctx.get(dut.port.rcmd.payload)
                bursts.append([cmd.addr // 8, cmd.len + 1])
            if beat is not None and ctx.get(dut.port.rd.ready):
                beat[0] += 1
                beat[1] -= 1
                if beat[1] == 0:
                    bursts.pop(0)
            idle = idle + 1 if ctx.get(dut.quiet) and not bursts else 0
            if idle > 20:
                break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    last = n if bad is None else bad
    want = [(i, _reference(cfg, words[i])[0], words[i]) for i in range(last)]
    assert got == want
    assert errors == ([] if bad is None else [(_reference(cfg, words[bad])[1], bad)])
