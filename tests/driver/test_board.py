"""The board backend against a simulated link: conformance images and the register protocol."""

from pathlib import Path

import numpy as np
import pytest

from driver.backends.board import BoardBackend, RegisterMap
from driver.backends.simlink import SimulatedLink
from isa.image import load_image

VECTORS = sorted(Path("/work/shared/conformance/vectors").glob("*.in.npz"))


@pytest.mark.skipif(not VECTORS, reason="the shared conformance vectors are not here")
@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name[:-7])
def test_conformance_on_the_simulated_board(path):
    image = load_image(path)
    expected = np.load(str(path).replace(".in.npz", ".expect.npz"))["dram"]
    backend = BoardBackend(SimulatedLink(dram_bytes=image.dram.size, steps_per_poll=4096))
    result = backend.run(image, timeout=30)
    assert np.array_equal(result.dram, expected)
    assert result.cycles is None  # the software board has no cycle counter


class RecordingLink(SimulatedLink):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.log = []

    def write_reg(self, offset, value):
        self.log.append(("w", offset, value))
        super().write_reg(offset, value)


def test_launch_protocol():
    image = load_image(VECTORS[0]) if VECTORS else pytest.skip("no vectors")
    link = RecordingLink(dram_bytes=image.dram.size)
    BoardBackend(link).run(image)
    regs = RegisterMap()
    assert link.log == [("w", regs.insn_addr_lo, image.insn_addr), ("w", regs.insn_addr_hi, 0),
                        ("w", regs.insn_count, image.insn_count), ("w", regs.ctrl, 1)]
    assert link.reg_reads >= 2  # polled CTRL, then STATUS


def test_image_larger_than_the_board():
    image = load_image(VECTORS[0]) if VECTORS else pytest.skip("no vectors")
    with pytest.raises(Exception, match="larger than the board's"):
        BoardBackend(SimulatedLink(dram_bytes=image.dram.size // 2)).run(image)
