"""Differential testing: random valid, race-free programs on the RTL vs the functional simulator.

All seeds of a configuration run in one simulator process. A failure names the seed and saves
the image under build/hw-failures/ (rerun it with ``hw.rtlsim.run_image``).
"""

import numpy as np
import pytest

from isa.conformance import random_program
from isa.errors import ErrorCode
from isa.image import save_image
from sim.functional import run_image as run_functional

from .conftest import FAILURES

SEEDS = {"small": range(150), "default": range(1000, 1060)}
CASES = [(c, s) for c, seeds in SEEDS.items() for s in seeds]


@pytest.mark.parametrize("cfg_name,seed", CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_random_program_matches_functional_simulator(cfg_name, seed, rtl_batches):
    def jobs():
        seeds = list(SEEDS[cfg_name])
        # every other program runs with back-pressure on every channel
        return seeds, [random_program(cfg_name, s) for s in seeds], \
            [s if s % 2 else None for s in seeds]

    result = rtl_batches.get(f"random-{cfg_name}", seed, jobs)
    image = random_program(cfg_name, seed)
    expected = run_functional(image).dram
    ok = result.done and result.error == ErrorCode.NONE and np.array_equal(result.dram, expected)
    if not ok:
        FAILURES.mkdir(parents=True, exist_ok=True)
        path = FAILURES / f"random-{cfg_name}-{seed}.npz"
        save_image(path, image)
        diff = np.flatnonzero(result.dram != expected)
        pytest.fail(f"seed {seed} ({cfg_name}): done={result.done} error={result.error.name}"
                    f"@{result.error_index}, {diff.size} bytes differ (first {diff[:8]}); "
                    f"image saved to {path}")
