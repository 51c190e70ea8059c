"""The whole core on Verilator (cocotb): conformance vectors and generated programs.

Each configuration's programs run in one simulator process (the core is reset between
programs); DRAM must equal the expectation byte for byte and bad programs must end with done,
the right error code and the failing instruction's index.
"""

import numpy as np
import pytest

from isa.conformance import conformance_programs
from isa.errors import ErrorCode
from isa.image import load_image

from .conftest import VECTORS

SHARED = sorted(p.name[:-len(".in.npz")] for p in VECTORS.glob("*.in.npz"))
CONFIGS = ("default", "small", "batch2")


def _shared_jobs(cfg_name, backpressure):
    names = [n for n in SHARED if n.startswith(cfg_name + "-")]
    return names, [load_image(VECTORS / f"{n}.in.npz") for n in names], \
        [backpressure and (backpressure + i) for i in range(len(names))]


@pytest.mark.parametrize("name", SHARED)
def test_shared_vector(name, rtl_batches):
    cfg_name = name.split("-")[0]
    result = rtl_batches.get(f"shared-{cfg_name}", name, lambda: _shared_jobs(cfg_name, None))
    expected = np.load(VECTORS / f"{name}.expect.npz")["dram"]
    assert result.done and result.error == ErrorCode.NONE
    diff = np.flatnonzero(result.dram != expected)
    assert diff.size == 0, f"{diff.size} bytes differ, first at {diff[:8]}"
    assert result.cycles > 0 and result.counters["compute_busy"] > 0


@pytest.mark.parametrize("name", [n for n in SHARED if n.startswith(("small", "batch2"))])
def test_shared_vector_with_backpressure(name, rtl_batches):
    cfg_name = name.split("-")[0]
    result = rtl_batches.get(f"shared-bp-{cfg_name}", name,
                             lambda: _shared_jobs(cfg_name, 1000))
    expected = np.load(VECTORS / f"{name}.expect.npz")["dram"]
    assert result.done and result.error == ErrorCode.NONE
    assert np.array_equal(result.dram, expected)


def _generated(cfg_name):
    return {p.name: p for p in conformance_programs(cfg_name)}


_PROGRAMS = {c: _generated(c) for c in ("tiny", "small", "default")}
GENERATED = [(c, n) for c, progs in _PROGRAMS.items() for n in progs]


@pytest.mark.parametrize("cfg_name,name", GENERATED, ids=[f"{c}-{n}" for c, n in GENERATED])
def test_generated_program(cfg_name, name, rtl_batches):
    progs = _PROGRAMS[cfg_name]
    # Good programs of "small" run with back-pressure on every channel.
    bp = 77 if cfg_name == "small" else None

    def jobs():
        keys = list(progs)
        return keys, [progs[k].image for k in keys], [bp] * len(keys)

    result = rtl_batches.get(f"generated-{cfg_name}", name, jobs)
    prog = progs[name]
    assert result.done, "the core did not signal done"
    if prog.is_bad:
        assert (result.error, result.error_index) == (prog.expected_error, prog.expected_index)
    else:
        assert result.error == ErrorCode.NONE, f"{result.error.name} at {result.error_index}"
        assert prog.check_dram(result.dram) == []
