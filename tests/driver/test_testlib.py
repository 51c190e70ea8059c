"""The original test_lib programs on every available backend and several configurations:
each checks against numpy, and every backend leaves the same DRAM byte for byte."""

import numpy as np
import pytest

from driver import AluOp
from driver.testlib import alu_test, blocked_gemm_test, gemm_test

from .conftest import CONFIGS, available_backends

BACKENDS = available_backends()
# The Verilated default core takes minutes to build; the RTL runs on the smaller ones.
RTL_CONFIGS = ("small", "batch2")


def run_everywhere(make_device, config, program):
    """Run ``program(device, rng)`` on every backend; return the outcomes and DRAMs."""
    drams = {}
    for backend in BACKENDS:
        if backend == "rtl" and config not in RTL_CONFIGS:
            continue
        dev = make_device(config, backend)
        outcomes = program(dev, np.random.default_rng(1234))
        for outcome in outcomes:
            assert outcome.ok, (backend, config)
        drams[backend] = dev.memory.dram.copy()
    reference = drams.pop("functional")
    for backend, dram in drams.items():
        assert np.array_equal(dram, reference), f"{backend} DRAM differs from functional"


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("use_imm", [True, False], ids=["imm", "vector"])
def test_alu(make_device, config, use_imm):
    def program(dev, rng):
        c = dev.config
        batch, vector = max(c.batch, c.block_out), 8 * c.block_out
        return [alu_test(dev, op, use_imm, batch, vector, compressed, rng)
                for op in AluOp for compressed in (True, False)]
    run_everywhere(make_device, config, program)


@pytest.mark.parametrize("config", CONFIGS)
def test_gemm(make_device, config):
    def program(dev, rng):
        c = dev.config
        return [gemm_test(dev, 4 * c.batch, 4 * c.block_in, 4 * c.block_out, compressed, rng)
                for compressed in (False, True)]
    run_everywhere(make_device, config, program)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_blocked_gemm(make_device, config, virtual_threads):
    def program(dev, rng):
        c = dev.config
        if config == "default":   # test_lib's own instantiation
            batch, channels, block = 256, 256, 64
        else:
            block = 4 * max(c.batch, c.block_in, c.block_out)
            batch, channels = 2 * block, 4 * block
        return [blocked_gemm_test(dev, batch, channels, block, compressed, virtual_threads, rng)
                for compressed in (False, True)]
    run_everywhere(make_device, config, program)


def test_blocked_gemm_across_flushes(make_device):
    """Output blocks are units: a small instruction buffer splits the run between blocks."""
    dev = make_device("small", keep_images=True)
    c = dev.config
    block = 4 * c.block_in
    outcome = blocked_gemm_test(dev, 2 * block, 4 * block, block, True, 2,
                                np.random.default_rng(5), insn_capacity=48)
    assert outcome.ok and dev.launch_count >= 4


def test_programs_are_race_free(make_device):
    from sim.functional import find_race
    dev = make_device("small", keep_images=True)
    c = dev.config
    rng = np.random.default_rng(9)
    streams = []
    dev_stream = dev.stream
    dev.stream = lambda **kw: streams.append(dev_stream(**kw)) or streams[-1]
    blocked_gemm_test(dev, 32, 64, 16, False, 2, rng)
    gemm_test(dev, 4, 16, 16, True, rng)
    alu_test(dev, AluOp.SHR, False, 4, 32, True, rng)
    images = [image for s in streams for image in s.images]
    assert len(images) == 3
    for image in images:
        find_race(image, schedules=6)
