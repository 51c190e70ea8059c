"""The cycle-accurate simulator: exact against the RTL (cycles, counters, errors), DRAM equal to
the functional simulator's, event skipping equal to stepping every cycle.

The default run checks a representative subset; ``VTA_FULL=1`` runs the full set (every
reference vector and conformance program on four configurations, 300 random programs on
``tiny`` and on ``small``, 50 on ``default``, and unusual bus widths and queue depths).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from isa.config import load_config
from isa.conformance import conformance_programs, random_program
from isa.errors import ErrorCode
from isa.image import load_image
from sim.cycle import CycleSimulationError, run_image, simulate
from sim.functional import run_image as functional_run

from ..conftest import reference_vectors

FULL = bool(os.environ.get("VTA_FULL"))

try:
    from driver.backends.base import DeviceError
    from driver.backends.rtl import RtlBackend
    RtlBackend.check_available()
    RTL = RtlBackend()
except Exception as exc:  # noqa: BLE001 - no toolchain, no hw/: the RTL checks are skipped
    RTL, RTL_WHY = None, str(exc)
else:
    RTL_WHY = ""
needs_rtl = pytest.mark.skipif(RTL is None, reason=f"rtl backend unavailable: {RTL_WHY}")


def outcome_of_model(image, *, fast=True):
    """(cycles or None, counters or None, (code, index) or None, dram)."""
    try:
        r = run_image(image, fast=fast)
    except CycleSimulationError as exc:
        return exc.result.cycles, None, (int(exc.code), exc.index), None
    counters = {k: v for k, v in r.counters.items() if k != "bursts"}
    return r.cycles, counters, None, r.dram


def outcome_of_rtl(image):
    try:
        r = RTL.run(image)
    except DeviceError as exc:
        return None, None, (int(exc.code) if exc.code is not None else str(exc), exc.index)
    return r.cycles, {k: v for k, v in r.counters.items() if k != "bursts"}, None


def check_exact(image, name=""):
    """The model agrees with the RTL, the per-cycle reference and the functional simulator."""
    cycles, counters, error, dram = outcome_of_model(image)
    ref = outcome_of_model(image, fast=False)
    assert (cycles, counters, error) == ref[:3], f"{name}: event skipping differs"
    if RTL is not None:
        rtl = outcome_of_rtl(image)
        if error is None:
            assert (cycles, counters) == rtl[:2], f"{name}: model {cycles} {counters} " \
                                                  f"rtl {rtl}"
        else:
            assert rtl[2] == error, f"{name}: model error {error}, rtl {rtl}"
    if error is None:
        try:
            want = functional_run(image).dram
        except Exception:   # noqa: BLE001 - e.g. a schedule-dependent token overflow
            return
        assert np.array_equal(dram, want), f"{name}: DRAM differs from the functional simulator"


# ---------------------------------------------------------------- reference vectors
@pytest.mark.parametrize("path", reference_vectors(), ids=lambda p: p.name[:-7])
def test_reference_vectors_dram_and_skipping(path):
    image = load_image(path)
    expect = np.load(str(path).replace(".in.npz", ".expect.npz"))
    fast = run_image(image)
    slow = run_image(image, fast=False)
    assert np.array_equal(fast.dram, expect["dram"])
    assert (fast.cycles, fast.counters) == (slow.cycles, slow.counters)


@needs_rtl
@pytest.mark.parametrize("path", [p for p in reference_vectors()
                                  if FULL or p.name.startswith("small")],
                         ids=lambda p: p.name[:-7])
def test_reference_vectors_exact(path):
    check_exact(load_image(path), path.name)


# ---------------------------------------------------------------- generated programs
CONFORMANCE = ["tiny", "small"] + (["default", "batch2"] if FULL else [])


@needs_rtl
@pytest.mark.parametrize("config", CONFORMANCE)
def test_conformance_programs_exact(config):
    progs = conformance_programs(config)
    assert any(p.is_bad for p in progs)
    for p in progs:
        check_exact(p.image, p.name)
        if p.is_bad:
            with pytest.raises(CycleSimulationError) as info:
                run_image(p.image)
            assert (info.value.code, info.value.index) == (p.expected_error, p.expected_index)


RANDOM = {"tiny": 300 if FULL else 60, "small": 300 if FULL else 40, "default": 50 if FULL else 5}


@needs_rtl
@pytest.mark.parametrize("config", list(RANDOM))
def test_random_programs_exact(config):
    for seed in range(RANDOM[config]):
        check_exact(random_program(config, seed), f"{config} random {seed}")


def _padded(image):
    """DRAM rounded up to 4 KiB: wide buses read whole beats past the data."""
    extra = -image.dram.size % 4096
    return dataclasses.replace(image, dram=np.concatenate([image.dram,
                                                           np.zeros(extra, np.uint8)]))


UNUSUAL = [("small", {"log_bus_width": 9}),            # elements narrower than a beat
           ("small", {"log_bus_width": 3, "mem_latency": 7}),   # elements of many beats
           ("tiny", {"cmd_queue_depth": 2, "token_queue_depth": 1, "mem_latency": 1,
                     "max_burst_beats": 2})]


@needs_rtl
@pytest.mark.skipif(not FULL, reason="VTA_FULL=1: builds three more RTL configurations")
@pytest.mark.parametrize("base,changes", UNUSUAL, ids=lambda v: json.dumps(v) if
                         isinstance(v, dict) else v)
def test_unusual_configurations_exact(base, changes):
    cfg = load_config(base).replace(**changes)
    images = [p.image for p in conformance_programs(cfg)]
    images += [random_program(cfg, s) for s in range(60)]
    for i, image in enumerate(images):
        check_exact(_padded(image), f"#{i}")


# ---------------------------------------------------------------- errors, trace, tools
def test_errors_carry_code_and_index():
    bad = [p for p in conformance_programs("tiny") if p.is_bad]
    for p in bad:
        with pytest.raises(CycleSimulationError) as info:
            run_image(p.image)
        assert (info.value.code, info.value.index) == (p.expected_error, p.expected_index)
        assert info.value.result.error == p.expected_error


def test_skipping_equals_stepping_on_random_programs():
    for seed in range(20):
        image = random_program("small", 1000 + seed)
        a, b = simulate(image), simulate(image, fast=False)
        assert (a.t, a.counters) == (b.t, b.counters)


def test_trace_is_chrome_json_with_a_summary(tmp_path):
    path = reference_vectors()[0]
    out = tmp_path / "t.json"
    r = run_image(load_image(path), trace=out)
    doc = json.loads(out.read_text())
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert events and all(e["dur"] >= 0 for e in events)
    assert {e["tid"] for e in events} >= {1, 2, 4}
    s = doc["otherData"]["summary"]
    assert s["cycles"] == r.cycles and 0 <= s["mac_utilisation"] <= 1
    assert set(s["memory_wait_cycles"]) == {"fetch", "load", "compute", "store"}
    assert r.counters == run_image(load_image(path)).counters   # tracing changes nothing


def test_vta_run_backend_cycle(tmp_path):
    from driver.cli import EXIT_OK, main
    path = reference_vectors()[0]
    out = tmp_path / "r.npz"
    assert main(["run", str(path), "--backend", "cycle", "--out", str(out)]) == EXIT_OK
    result = np.load(out)
    expect = np.load(str(path).replace(".in.npz", ".expect.npz"))
    assert np.array_equal(result["dram"], expect["dram"])
    assert int(result["cycles"]) == run_image(load_image(path)).cycles


@needs_rtl
def test_crosscheck_agrees_and_finds_an_injected_divergence(monkeypatch):
    from sim import cycle_crosscheck
    from sim.timing import compute
    path = next(p for p in reference_vectors() if "gemm-backtoback" in p.name
                and p.name.startswith("small"))
    assert cycle_crosscheck.crosscheck(path).same
    monkeypatch.setattr(compute, "GEMM_LATENCY", compute.GEMM_LATENCY + 1)
    result = cycle_crosscheck.crosscheck(path)
    # the first counter to differ is the compute module's (its reset GEMM retires late)
    assert not result.same and {"compute_busy", "gemm_uops"} & set(result.counters)
    assert "compute RUN" in result.state or "compute RETIRE" in result.state
    assert 0 < result.cycle < result.rtl["cycles"]


def test_deadlock_and_missing_finish_are_reported_like_the_rtl():
    from isa.conformance import ProgramBuilder
    b = ProgramBuilder(load_config("tiny"))
    b.noop("compute", pop_prev=True)          # waits for a token nobody pushes
    with pytest.raises(CycleSimulationError) as info:
        run_image(b.build(epilogue=False))
    assert info.value.code == ErrorCode.DEADLOCK
    b = ProgramBuilder(load_config("tiny"))
    b.noop("store")
    with pytest.raises(CycleSimulationError) as info:
        run_image(b.build(epilogue=False, finish=False))
    assert (info.value.code, info.value.index) == (ErrorCode.MISSING_FINISH, 0)
