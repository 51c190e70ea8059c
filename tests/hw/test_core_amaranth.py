"""The whole core in Amaranth's simulator agrees with its Verilog on Verilator, cycle for cycle."""

import numpy as np
import pytest

from hw.amsim import run_image_amaranth
from hw.core import COUNTERS
from isa.errors import ErrorCode
from isa.image import load_image

from .conftest import VECTORS, require_verilator

CASES = ["small-pub-alu-requant-chain", "small-pub-gemm-backtoback", "small-pub-acc8bit-load-pad"]


@pytest.mark.parametrize("backpressure", [None, 9])
@pytest.mark.parametrize("name", CASES)
def test_amaranth_and_verilator_agree_on_dram_cycles_and_counters(name, backpressure,
                                                                  rtl_batches):
    image = load_image(VECTORS / f"{name}.in.npz")
    am = run_image_amaranth(image, backpressure=backpressure)
    expected = np.load(VECTORS / f"{name}.expect.npz")["dram"]
    assert am["done"] and am["error_code"] == ErrorCode.NONE
    assert np.array_equal(am["dram"], expected)
    require_verilator()

    def jobs():
        keys = [(n, bp) for n in CASES for bp in (None, 9)]
        return keys, [load_image(VECTORS / f"{n}.in.npz") for n, _ in keys], \
            [bp for _, bp in keys]

    rtl = rtl_batches.get("amaranth-vs-verilator", (name, backpressure), jobs)
    assert rtl.cycles == am["cycles"]
    assert rtl.counters == {n: am[n] for n in COUNTERS}
    assert np.array_equal(rtl.dram, am["dram"])
