"""Shared helpers of the hw tests: batched RTL runs (one simulator process per batch)."""

from pathlib import Path

import pytest

from hw.toolchain import REPO_ROOT, ToolchainError, setup_verilator

VECTORS = REPO_ROOT / "tests" / "data" / "conformance"   # copied from shared/conformance

FAILURES = REPO_ROOT / "build" / "hw-failures"


def require_verilator():
    try:
        setup_verilator()
    except ToolchainError as exc:
        pytest.skip(f"no Verilator: {exc}")


class BatchCache:
    """Runs a whole batch of images on first use and hands out the results by key."""

    def __init__(self):
        self._results = {}

    def get(self, batch: str, key, make_jobs):
        """``make_jobs()`` -> (keys, images, backpressure list); run once per batch."""
        if batch not in self._results:
            from hw.rtlsim import run_images
            require_verilator()
            keys, images, bp = make_jobs()
            results = run_images(images, backpressure=bp, max_cycles=2_000_000)
            self._results[batch] = dict(zip(keys, results))
        return self._results[batch][key]


@pytest.fixture(scope="session")
def rtl_batches():
    return BatchCache()
