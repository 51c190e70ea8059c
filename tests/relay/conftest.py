"""Shared helpers for the Relay tests."""
import numpy as np
import pytest

import relay


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def tensor(shape, dtype="float32"):
    return relay.TensorType(shape, dtype)
