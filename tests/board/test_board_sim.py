"""The whole board design in simulation — core, on-chip DRAM, UART bridge — with a simulated
serial line (Verilator + cocotb), driven by the driver's own host code: ``BoardBackend`` over
``SerialLink``, the code that runs a real board. Results equal the functional simulator's (and
the original VTA simulator's DRAM for the conformance vectors).

The default run takes two conformance vectors and a rejected program; VTA_BOARD_SIM_ALL=1
runs every small conformance vector.
"""

import os

import numpy as np
import pytest

from isa.conformance import conformance_programs
from isa.errors import ErrorCode
from isa.image import load_image
from sim.functional import run_image

from ..hw.conftest import VECTORS, require_verilator

DEFAULT = ("small-pub-conv3x3-pad1-relu", "small-pub-alu-imm-extremes")


def _vectors():
    if os.environ.get("VTA_BOARD_SIM_ALL"):
        return sorted(p.name.replace(".in.npz", "") for p in VECTORS.glob("small-*.in.npz"))
    return list(DEFAULT)


def test_conformance_images_through_the_serial_host_link():
    require_verilator()
    from hw.board.simserial import run_on_board_sim

    names = _vectors()
    images = [load_image(VECTORS / f"{n}.in.npz") for n in names]
    bad = next(p for p in conformance_programs("small") if p.name == "bad-dram-store-just-past")
    results = run_on_board_sim([*images, bad.image], mem_bytes=8 << 10)
    for name, image, r in zip(names, images, results):
        assert "error" not in r, f"{name}: {r.get('error')}"
        reference = run_image(image)
        original = np.load(VECTORS / f"{name}.expect.npz")["dram"]
        assert np.array_equal(r["dram"], reference.dram), name
        assert np.array_equal(r["dram"], original), name
        assert int(r["gemm_uops"]) == reference.counters["gemm_counter"], name
        assert int(r["alu_uops"]) == reference.counters["alu_counter"], name
        assert int(r["cycles"]) > 0 and int(r["store_busy"]) > 0, name
        assert int(r["ready_polls"]) == 1, name     # on-chip DRAM: ready from reset
        assert int(r["leds"]) == 0b010, name        # done, not running, no error
    error = results[-1]
    assert (int(error["code"]), int(error["index"])) == (ErrorCode.DRAM_RANGE,
                                                         bad.expected_index)
    assert "DRAM_RANGE" in str(error["error"]) and "Store(" in str(error["error"])
    assert int(error["leds"]) == 0b110                # done with an error
