"""The memory system with bursts in flight: the cycle simulator equals the RTL (cycles, every
counter, errors) and its DRAM the functional simulator's, at several latencies, outstanding
limits and bandwidth limits, and on 128-, 256- and 512-bit buses (also through the driver).

The default run takes a representative slice; ``VTA_FULL=1`` runs every conformance program
and more random programs on every point of the matrix, and all three wide buses.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from isa.config import load_config
from isa.conformance import conformance_programs, random_program
from sim.cycle import run_image

from .test_cycle import RTL, _padded, check_exact, needs_rtl
from .test_cycle_periods import streaming_program

FULL = bool(os.environ.get("VTA_FULL"))

#: (configuration, memory keys): latency 1 to 64, 1 to 8 bursts in flight, a beat every 1 to
#: 3 cycles. MEM_OUTSTANDING changes the RTL (one more build each); the others do not.
MATRIX = [
    ("small", {"mem_latency": 1}),
    ("small", {"mem_latency": 29}),
    ("small", {"mem_latency": 64}),
    ("small", {"mem_latency": 5, "mem_beat_interval": 3}),
    ("tiny", {"mem_outstanding": 2, "mem_latency": 17, "mem_beat_interval": 2}),
] + ([("small", {"mem_outstanding": 1, "mem_latency": 9}),
      ("default", {"mem_latency": 32})] if FULL else [])


def _name(v):
    return v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items())


@needs_rtl
@pytest.mark.parametrize("base,changes", MATRIX, ids=_name)
def test_cycle_simulator_equals_rtl_across_the_memory_matrix(base, changes):
    cfg = load_config(base).replace(**changes)
    images = [random_program(cfg, seed) for seed in range(60 if FULL else 8)]
    images += [streaming_program(cfg, seed) for seed in range(4 if FULL else 1)]
    if FULL:
        images += [p.image for p in conformance_programs(cfg)]
    for i, image in enumerate(images):
        check_exact(_padded(image), f"{base} {changes} #{i}")


def test_latency_and_bandwidth_change_the_timing_not_the_result():
    base = load_config("small")
    image = streaming_program(base, 3)
    runs = {}
    for changes in ({}, {"mem_latency": 40}, {"mem_beat_interval": 4},
                    {"mem_outstanding": 1}):
        cfg = base.replace(**changes)
        r = run_image(_with_config(image, cfg))
        runs[tuple(changes)] = r
        assert np.array_equal(r.dram, runs[()].dram)
    cycles = {k: r.cycles for k, r in runs.items()}
    assert cycles[("mem_latency",)] > cycles[()]
    assert cycles[("mem_beat_interval",)] > cycles[()]
    assert cycles[("mem_outstanding",)] > cycles[()]


def _with_config(image, cfg):
    return dataclasses.replace(image, config=cfg)


WIDE = [7, 8, 9] if FULL else [9]


@needs_rtl
@pytest.mark.parametrize("log_bus_width", WIDE, ids=lambda w: f"{1 << w}-bit")
def test_wide_buses_end_to_end(log_bus_width):
    """RTL, cycle simulator, functional simulator and the driver agree on a wide bus."""
    from driver import Device
    from driver.testlib import blocked_gemm_test
    cfg = load_config("small").replace(log_bus_width=log_bus_width)
    images = [random_program(cfg, seed) for seed in range(6)] + [streaming_program(cfg, 0)]
    images += [p.image for p in conformance_programs(cfg)][:40 if not FULL else None]
    for i, image in enumerate(images):
        check_exact(_padded(image), f"{1 << log_bus_width}-bit #{i}")
    for backend in ("cycle", "rtl"):
        dev = Device(cfg, backend=backend)
        outcome = blocked_gemm_test(dev, 16, 16, 8, False, 2, np.random.default_rng(1))
        assert outcome.ok, backend
    assert RTL is not None
