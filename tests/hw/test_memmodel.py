"""The memory model behind the port (hw/memmodel.py): latency, bursts in flight, in-order
answers, the beat interval; and the cycle simulator's copy (sim/timing/memport.py) agrees with
it cycle for cycle under random traffic."""

import random

import numpy as np
import pytest

from hw.memmodel import MemoryModel, MemoryViolation
from isa.config import load_config
from sim.timing.memport import MemoryTiming


def _model(**changes):
    cfg = load_config("tiny").replace(max_burst_beats=4, **changes)
    dram = np.arange(1 << 14, dtype=np.uint32).astype(np.uint8)
    return cfg, MemoryModel(cfg, dram)


def _beat(cfg, dram, addr):
    return int.from_bytes(dram[addr:addr + cfg.bus_bytes].tobytes(), "little")


def test_reads_in_flight_answer_in_order_after_the_latency():
    cfg, m = _model(mem_latency=6, mem_outstanding=3)
    bb = cfg.bus_bytes
    addrs = [0x100, 0x40, 0x200, 0x300]
    issued, beats = [], []
    for t in range(60):           # commands whenever the model accepts them
        o = m.out
        if t == 3:
            assert not o.rcmd_ready       # three in flight: the fourth waits
        go = o.rcmd_ready and len(issued) < 4
        if o.rd_valid:
            beats.append((t, o.rd_data, o.rd_last))
        m.step(rcmd_valid=go, rcmd_addr=addrs[len(issued)] if go else 0, rcmd_len=1,
               rd_ready=1)
        if go:
            issued.append(t)
    assert issued[:3] == [0, 1, 2] and issued[3] > 3
    assert [d for _, d, _ in beats] == [_beat(cfg, m.dram, a + i * bb) for a in addrs
                                        for i in range(2)]
    assert [last for _, _, last in beats] == [0, 1] * 4
    times = [c for c, _, _ in beats]
    assert times[0] == 6                                  # latency after the first command
    assert times[:6] == list(range(6, 12))               # then a beat every cycle
    assert times[6] == max(issued[3] + 6, 12)            # the fourth after its own latency
    assert m.idle


def test_beat_interval_and_alternation_of_reads_and_writes():
    cfg, m = _model(mem_latency=2, mem_beat_interval=3)
    m.step(rcmd_valid=1, rcmd_addr=0, rcmd_len=3, wcmd_valid=1, wcmd_addr=0x800, wcmd_len=3)
    moved = []
    for t in range(1, 60):
        o = m.out
        if o.rd_valid:
            moved.append((t, "r"))
        if o.wr_ready:
            moved.append((t, "w"))
        m.step(rd_ready=1, wr_valid=1, wr_data=t, wr_strb=0xFF)
    times = [c for c, _ in moved]
    assert all(b - a >= 3 for a, b in zip(times, times[1:]))     # a beat every 3 cycles
    kinds = "".join(k for _, k in moved)
    assert kinds.startswith("wrwrwr")       # the write was ready first, then they alternate
    assert kinds.count("r") == kinds.count("w") == 4
    assert m.idle


def test_write_acknowledged_after_the_latency_and_limits_count_until_then():
    cfg, m = _model(mem_latency=5, mem_outstanding=2)
    m.step(wcmd_valid=1, wcmd_addr=0x40, wcmd_len=0)
    m.step(wcmd_valid=1, wcmd_addr=0x80, wcmd_len=0)
    assert not m.out.wcmd_ready and m.out.rcmd_ready     # writes and reads count separately
    assert m.out.wr_ready                                 # the first burst's data from t + 1
    m.step(wr_valid=1, wr_data=0x1122, wr_strb=0x3)       # last beat at u = 2
    m.step(wr_valid=1, wr_data=0x3344, wr_strb=0x3)       # u = 3
    acks = []
    for t in range(4, 12):
        acks.append(m.out.wr_ack)
        if t < 8:
            assert not m.out.wcmd_ready
        m.step()
    assert acks == [0, 0, 0, 1, 1, 0, 0, 0]               # u + 5 = 7 and 8
    assert m.out.wcmd_ready and m.idle
    assert list(m.dram[0x40:0x42]) == [0x22, 0x11] and list(m.dram[0x80:0x82]) == [0x44, 0x33]


def test_protocol_violations_are_reported():
    cfg, m = _model()
    with pytest.raises(MemoryViolation, match="not aligned"):
        m.step(rcmd_valid=1, rcmd_addr=3)
    with pytest.raises(MemoryViolation, match="burst of 5 beats"):
        m.step(wcmd_valid=1, wcmd_addr=0, wcmd_len=4)


@pytest.mark.parametrize("seed", range(6))
def test_cycle_simulator_memory_equals_the_model(seed):
    """Random traffic (commands whenever accepted, random readiness of the initiator) on both
    models: the same outputs in every cycle."""
    rng = random.Random(seed)
    cfg = load_config("tiny").replace(max_burst_beats=4, mem_latency=rng.randint(1, 12),
                                      mem_outstanding=rng.randint(1, 5),
                                      mem_beat_interval=rng.choice((1, 1, 2, 3)))
    dram = np.zeros(1 << 14, np.uint8)
    hw = MemoryModel(cfg, dram)
    tw = MemoryTiming(cfg, dram.size)
    writes_left = 0             # beats the initiator still owes on the write channel
    for t in range(600):
        o = hw.out
        rd_valid, wr_ready = tw.channels(t)
        assert (o.rd_valid, o.wr_ready, o.wr_ack, o.rcmd_ready, o.wcmd_ready) == \
            (rd_valid, wr_ready, tw.wr_ack(t), tw.rcmd_ready(), tw.wcmd_ready()), t
        if o.rd_valid:
            assert o.rd_last == (tw.reads[0][0] == 1)
        rv, rl = rng.random() < 0.3, rng.randint(0, 3)
        wv, wl = rng.random() < 0.2, rng.randint(0, 3)
        rd_ready = rng.random() < 0.8
        wr_valid = writes_left > 0 and rng.random() < 0.8
        rfire, wfire = rv and o.rcmd_ready, wv and o.wcmd_ready
        ra, wa = 0x40 * rng.randint(0, 60), 0x40 * rng.randint(0, 60)
        hw.step(rcmd_valid=rv, rcmd_addr=ra, rcmd_len=rl, wcmd_valid=wv, wcmd_addr=wa,
                wcmd_len=wl, rd_ready=rd_ready, wr_valid=wr_valid, wr_data=0, wr_strb=0)
        if tw.wr_ack(t):
            tw.acked(t)
        if rd_valid and rd_ready:
            tw.read_beat(t)
        if wr_ready and wr_valid:
            tw.write_beat(t)
            writes_left -= 1
        if rfire:
            tw.read_command(t, ra, rl + 1)
        if wfire:
            tw.write_command(t, wa, wl + 1)
            writes_left += wl + 1
