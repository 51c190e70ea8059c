"""The rtl backend (Verilated core + C++ memory model); skipped where it cannot be built."""

from pathlib import Path

import numpy as np
import pytest

from driver import BackendUnavailable, Device, DeviceError, DeviceTimeout, Loop, Uop, gemm_kernel
from driver.cli import EXIT_OK, main
from isa.errors import ErrorCode

from .test_stream import deadlocked_stream

try:
    from driver.backends.rtl import RtlBackend
    RtlBackend.check_available()
except (ImportError, BackendUnavailable) as exc:
    pytest.skip(f"rtl backend unavailable: {exc}", allow_module_level=True)

VECTORS = sorted((Path(__file__).resolve().parents[1] / "data" / "conformance")
                 .glob("small-*.in.npz"))


def test_cycle_budget_ends_in_a_timeout_naming_the_busy_module():
    dev = Device("small", RtlBackend(max_cycles=2000), dram_bytes=1 << 20)
    s = dev.stream()
    kernel = gemm_kernel([Uop(0, 0, 0)], [Loop(100), Loop(100)])
    s.gemm(kernel)
    with pytest.raises(DeviceTimeout, match=r"did not finish within 2000 cycles .*compute busy"):
        s.synchronize()


def test_deadlock_is_an_error_of_the_core():
    dev = Device("small", "rtl", dram_bytes=1 << 20)
    with pytest.raises(DeviceError, match=r"instruction \d+ .*DEADLOCK") as info:
        deadlocked_stream(dev).synchronize()
    assert info.value.code == ErrorCode.DEADLOCK


def test_vta_run_rtl_reports_cycles(tmp_path):
    image = VECTORS[0]
    out = tmp_path / "r.npz"
    assert main(["run", str(image), "--backend", "rtl", "--out", str(out)]) == EXIT_OK
    result = np.load(out)
    expected = np.load(str(image).replace(".in.npz", ".expect.npz"))
    assert np.array_equal(result["dram"], expected["dram"])
    assert int(result["cycles"]) > 0 and int(result["compute_busy"]) > 0


def test_dram_not_a_whole_number_of_beats():
    """4 KiB + 16 bytes of DRAM on a 512-bit bus, loaded and stored at its very end: the C++
    memory model pads the last beat (as hw/memmodel.py does) and returns the image's size."""
    from sim.functional import run_image as run_functional
    from tests.hw.dram_tail import DRAM_BYTES, tail_image

    image = tail_image(0)
    result = RtlBackend().run(image)
    assert result.dram.size == DRAM_BYTES
    assert np.array_equal(result.dram, run_functional(image).dram)
    assert result.counters["gemm_uops"] == 1 and result.counters["alu_uops"] == 3


def test_compiled_harness_and_cocotb_bench_count_the_same_cycles():
    """The C++ memory model of the rtl backend is the cocotb bench's, cycle for cycle."""
    from hw.rtlsim import run_images
    from isa.conformance import random_program
    from isa.image import load_image

    images = [load_image(p) for p in VECTORS]
    images += [random_program(images[0].config, seed) for seed in range(4)]
    bench = run_images(images)
    for image, expect in zip(images, bench):
        got = RtlBackend().run(image)
        assert got.cycles == expect.cycles
        assert {k: got.counters[k] for k in expect.counters} == expect.counters
        assert np.array_equal(got.dram, expect.dram)
