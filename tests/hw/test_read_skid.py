"""The arbiter's read skid buffer and the clients' slices: ``mem.rd.ready`` is a register, no
beat is lost, duplicated or misrouted when a client drops ``rd.ready`` mid-burst, and the cycle simulator stays exact
against the RTL where the buffer fills (narrow readers, a beat every K > 1 cycles)."""

import random
from collections import deque

import pytest

from hw.memport import MemArbiter
from isa.config import load_config
from isa.conformance import random_program

from ..sim.test_cycle import _padded, check_exact, needs_rtl
from ..sim.test_cycle_periods import streaming_program
from .test_blocks import run


def _burst_beats(addr, n):
    """The data of a burst's beats: its address plus the beat's number (unique per beat)."""
    return [addr + b for b in range(n)]


@pytest.mark.parametrize("p_valid,p_ready,outstanding",
                         [(1.0, 0.5, 3), (0.7, 0.3, 2), (1.0, 0.2, 4), (0.4, 1.0, 1)])
def test_every_beat_reaches_its_client_in_order_through_the_skid(p_valid, p_ready,
                                                                  outstanding):
    """Three clients issue bursts and take beats in random cycles; an in-order memory answers
    with beats in random cycles. Against a reference of the arbiter's skid buffer (one beat)
    and each client's slice (two): ``mem.rd.ready`` is low exactly while the skid holds a beat
    (and does not follow the clients' ``ready`` within a cycle), a beat goes to its burst's
    client's slice while that slice has room (else from the memory it parks), each client
    sees its slice's oldest beat, and gets exactly its bursts' beats in order."""
    cfg = load_config("tiny").replace(mem_outstanding=outstanding, max_burst_beats=4)
    dut = MemArbiter(cfg)
    rng = random.Random(f"{p_valid}-{p_ready}-{outstanding}")
    plans = [[(i * 0x1000 + k * 0x40, rng.randint(1, 4)) for k in range(12)] for i in range(3)]
    got = [[] for _ in range(3)]
    stats = {"parked": 0, "held_off": 0}

    async def bench(ctx):
        issued = [0, 0, 0]
        bursts = deque()            # the memory's bursts in flight: [client, addr, beats, next]
        parked = deque()            # the arbiter's skid: (client, data)
        slices = [deque() for _ in range(3)]    # each client's slice: data, oldest first
        ctx.set(dut.mem.rcmd.ready, 1)
        for cyc in range(3000):
            # the memory's outputs from its state
            mem_valid = bool(bursts) and rng.random() < p_valid
            if mem_valid:
                who, addr, n, b = bursts[0]
                ctx.set(dut.mem.rd.payload, {"data": addr + b, "last": b == n - 1})
            ctx.set(dut.mem.rd.valid, mem_valid)
            for i in range(3):
                more = issued[i] < len(plans[i])
                ctx.set(dut.clients[i].rcmd.valid, more)
                if more:
                    c_addr, c_n = plans[i][issued[i]]
                    ctx.set(dut.clients[i].rcmd.payload, {"addr": c_addr, "len": c_n - 1})
                ctx.set(dut.clients[i].rd.ready, 0)
            mem_ready = ctx.get(dut.mem.rd.ready)
            ready = [rng.random() < p_ready for _ in range(3)]
            for i in range(3):
                ctx.set(dut.clients[i].rd.ready, ready[i])
            assert ctx.get(dut.mem.rd.ready) == mem_ready      # a register: no path back
            assert mem_ready == (not parked), cyc
            took = []
            for i in range(3):
                assert ctx.get(dut.clients[i].rd.valid) == bool(slices[i]), (cyc, i)
                if slices[i]:
                    assert ctx.get(dut.clients[i].rd.payload.data) == slices[i][0], (cyc, i)
                    if ready[i]:
                        took.append(i)
            # the beat offered to a slice: the parked one, else the memory's
            offer = parked[0] if parked else (who, addr + b) if mem_valid else None
            fired = [ctx.get(dut.clients[i].rcmd.ready) and issued[i] < len(plans[i])
                     for i in range(3)]
            # the command the arbiter hands the memory (from the client's command slice,
            # a cycle or more after the client's handshake); its address names the client
            to_mem = None
            if ctx.get(dut.mem.rcmd.valid):
                c_addr = ctx.get(dut.mem.rcmd.payload.addr)
                to_mem = [c_addr // 0x1000, c_addr, ctx.get(dut.mem.rcmd.payload.len) + 1, 0]
            if mem_valid and not mem_ready:
                stats["held_off"] += 1
            await ctx.tick()
            # the clock edge of the reference
            room = offer is not None and len(slices[offer[0]]) < 2
            for i in took:
                got[i].append(slices[i].popleft())
            if room:
                slices[offer[0]].append(offer[1])
                if parked:
                    parked.popleft()
            if mem_valid and mem_ready:
                if parked or not room:
                    parked.append((who, addr + b))
                    stats["parked"] += 1
                bursts[0][3] += 1
                if bursts[0][3] == n:
                    bursts.popleft()
            assert len(parked) <= 1
            for i in range(3):
                if fired[i]:
                    issued[i] += 1
            if to_mem is not None:
                bursts.append(to_mem)
            if all(issued[i] == len(plans[i]) for i in range(3)) and not bursts and \
                    not parked and not any(slices):
                break
        assert ctx.get(dut.idle)

    run(dut, bench)
    for i in range(3):
        assert got[i] == [d for a, n in plans[i] for d in _burst_beats(a, n)], i
    if p_ready < 1.0:
        assert stats["parked"] > 10                 # the buffer did fill, often
    if p_valid == 1.0 and p_ready < 1.0:
        assert stats["held_off"] > 10               # and held the memory off


#: Where the buffer fills on every beat: ecp5-small's INP elements (4 bytes) on its 64-bit bus,
#: with a beat every K cycles (the memory then sees beats taken earlier than the loader takes
#: them, which moves its slot and read/write turn).
SKID_CONFIGS = [("ecp5-small", {}), ("ecp5-small", {"mem_beat_interval": 2}),
                ("ecp5-small", {"mem_beat_interval": 3, "mem_latency": 4})]


@needs_rtl
@pytest.mark.parametrize("base,changes", SKID_CONFIGS,
                         ids=lambda v: v if isinstance(v, str) else
                         ",".join(f"{k}={x}" for k, x in v.items()) or "default")
def test_cycle_simulator_equals_rtl_where_the_skid_fills(base, changes):
    cfg = load_config(base).replace(**changes)
    images = [random_program(cfg, seed) for seed in range(4)]
    images += [streaming_program(cfg, seed) for seed in range(2)]
    for i, image in enumerate(images):
        check_exact(_padded(image), f"{base} {changes} #{i}")
