"""Shared fixtures: the reference conformance vectors from the original simulator."""

import os
from pathlib import Path

# One BLAS thread per test process: with two xdist workers on two cores more threads only
# contend, and a fixed thread count keeps float32 reduction orders the same from run to run.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
VECTORS = Path(__file__).resolve().parent / "data" / "conformance"


def reference_vectors() -> list[Path]:
    """The 30 images of ../shared/conformance/vectors, copied into tests/data/conformance."""
    return sorted(VECTORS.glob("*.in.npz"))


@pytest.fixture(params=["default", "small", "batch2", "tiny"])
def any_config(request):
    from isa.config import load_config

    return load_config(request.param)


# On CI the toolchain is installed by `make`: a test that skips because Verilator or the RTL
# backend is missing would hide a broken install, so there it fails instead.
_TOOLCHAIN_SKIPS = ("no Verilator", "rtl backend unavailable", "no FPGA tools")


def _fail_toolchain_skip(report) -> None:
    if os.environ.get("CI") and report.skipped:
        reason = str(report.longrepr)
        if any(text in reason for text in _TOOLCHAIN_SKIPS):
            report.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_toolchain_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_toolchain_skip(outcome.get_result())
