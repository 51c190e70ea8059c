"""Shared fixtures: the reference conformance vectors from the original simulator."""

from pathlib import Path

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
