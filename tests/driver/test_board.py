"""The board backend against a simulated link: conformance images, the register protocol of
isa/registers.py, errors, counters and the timeout diagnosis."""

from pathlib import Path

import numpy as np
import pytest

from driver import Device, DeviceError, DeviceTimeout
from driver.backends.base import BackendUnavailable
from driver.backends.board import BoardBackend, describe_progress
from driver.backends.simlink import SimulatedLink
from isa import registers as R
from isa.errors import ErrorCode
from isa.image import load_image

VECTORS = sorted((Path(__file__).resolve().parents[1] / "data" / "conformance")
                 .glob("*.in.npz"))


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
    image = load_image(VECTORS[0])
    link = RecordingLink(dram_bytes=image.dram.size)
    BoardBackend(link).run(image)
    result = BoardBackend(link).run(image)   # a second launch on the same board
    launch = [("w", R.INSN_ADDR, image.insn_addr), ("w", R.INSN_COUNT, image.insn_count),
              ("w", R.DRAM_SIZE, image.dram.size), ("w", R.CTRL, R.CTRL_LAUNCH)]
    assert link.log == launch + launch
    assert link.reg_reads >= 4  # ID, CTRL before the launch, polled CTRL, ERROR_CODE
    assert result.cycles is None and set(result.counters) == set(R.COUNTERS)


def test_the_backend_waits_for_the_boards_sdram():
    """A board just out of reset: the backend looks at the ready bit until it is set before
    it touches DRAM (the software board refuses an early access), then runs as usual."""
    image = load_image(VECTORS[0])
    expected = np.load(str(VECTORS[0]).replace(".in.npz", ".expect.npz"))["dram"]
    link = SimulatedLink(dram_bytes=image.dram.size, steps_per_poll=4096, init_polls=5)
    with pytest.raises(RuntimeError, match="before mem_ready"):
        link.write_mem(0, b"\0")
    backend = BoardBackend(link)
    assert np.array_equal(backend.run(image, timeout=30).dram, expected)
    assert backend.ready_polls == 5 and link.ready_looks == 5
    backend.run(image, timeout=30)                 # ready now: one look
    assert backend.ready_polls == 1


def test_a_board_whose_sdram_never_gets_ready_is_a_clear_error():
    image = load_image(VECTORS[0])
    link = SimulatedLink(dram_bytes=image.dram.size, init_polls=None)
    backend = BoardBackend(link, ready_timeout=0.05)
    with pytest.raises(BackendUnavailable, match=r"the board's SDRAM did not finish its init "
                                                 r"within 50 ms: .*LED 3"):
        backend.run(image)
    assert backend.ready_polls >= 2
    assert link.reg_writes == 0                    # nothing was launched


def test_image_larger_than_the_board():
    image = load_image(VECTORS[0])
    with pytest.raises(Exception, match="larger than the board's"):
        BoardBackend(SimulatedLink(dram_bytes=image.dram.size // 2)).run(image)


def test_simulated_board_registers():
    """ID, the R/W registers, CTRL's bits and the error registers behave as the hardware's."""
    link = SimulatedLink(dram_bytes=1 << 16, config="tiny")
    assert link.read_reg(R.ID) == R.CSR_ID
    assert link.read_reg(R.CTRL) == 0
    for offset in (R.INSN_ADDR, R.INSN_COUNT, R.DRAM_SIZE):
        link.write_reg(offset, 0x1234 + offset)
        assert link.read_reg(offset) == 0x1234 + offset
    link.write_reg(R.ERROR_CODE, 7)               # read-only: ignored
    assert link.read_reg(R.ERROR_CODE) == 0
    assert link.read_reg(0x60) == 0               # unmapped
    # No FINISH: MISSING_FINISH at the last instruction; done and error set, running clear.
    link.write_reg(R.INSN_ADDR, 0)
    link.write_reg(R.INSN_COUNT, 1)
    link.write_reg(R.DRAM_SIZE, 1 << 16)
    link.write_reg(R.CTRL, R.CTRL_LAUNCH)
    for _ in range(4):
        ctrl = link.read_reg(R.CTRL)
    assert ctrl == R.CTRL_DONE | R.CTRL_ERROR
    assert link.read_reg(R.ERROR_CODE) != ErrorCode.NONE
    assert (link.read_reg(R.CYCLES_LO), link.read_reg(R.CYCLES_HI)) == (0, 0)


def test_board_counters(make_device):
    """The board backend returns the counters; the simulated board's micro-op counts are exact."""
    from driver import Loop, Uop, gemm_kernel
    dev = make_device("small", "board")
    s = dev.stream()
    s.gemm(gemm_kernel([Uop(0, 0, 0)], [Loop(10, dst=1)]))
    result = s.synchronize()
    assert result.cycles is None
    assert result.counters["gemm_uops"] == 10 and result.counters["alu_uops"] == 0
    assert result.counters["compute_busy"] > 0 and result.counters["fetch_busy"] > 0
    assert result.counters["mem_busy"] > 0


def test_bad_programs_on_the_simulated_board():
    """Every bad conformance program: ERROR_CODE and ERROR_INDEX (through DRAM_SIZE for the
    DRAM range errors) as the hardware reports them."""
    from isa.conformance import conformance_programs
    bad = [p for p in conformance_programs("tiny") if p.is_bad]
    assert len(bad) > 40
    for program in bad:
        image = program.image
        backend = BoardBackend(SimulatedLink(dram_bytes=image.dram.size + 4096))
        with pytest.raises(DeviceError) as info:
            backend.run(image, timeout=30)
        assert (info.value.code, info.value.index) == (program.expected_error,
                                                       program.expected_index), program.name


def test_timeout_names_the_busy_module():
    """A long GEMM on a slow board: the counters read twice say compute executes."""
    from driver import Loop, Uop, gemm_kernel
    dev = Device("small", "board", dram_bytes=1 << 20,
                 link=SimulatedLink(dram_bytes=1 << 20, steps_per_poll=1))
    s = dev.stream()
    kernel = gemm_kernel([Uop(0, 0, 0)], [Loop(100, dst=1)])
    for _ in range(200):
        s.gemm(kernel)
    with pytest.raises(DeviceTimeout, match=r"timed out after 0 s: over 16 polls: .*"
                                            r"compute busy, executing \(compute_busy advancing\)"):
        s.synchronize(timeout=0)


def test_describe_progress():
    text = describe_progress({"fetch_busy": 5, "fetch_stall": 5, "load_busy": 1,
                              "store_stall": 3, "mem_busy": 2})
    assert text == ("fetch busy, blocked on a full command queue (fetch_stall advancing); "
                    "load busy, executing (load_busy advancing); compute idle; "
                    "store busy, waiting on a token (store_stall advancing); "
                    "memory port busy (mem_busy advancing)")


class FakeBoard:
    """A board that is not this core (wrong ID)."""
    dram_bytes, has_cycle_counter = 1 << 20, True

    def read_reg(self, offset):
        return 0xDEADBEEF if offset == R.ID else 0

    def write_reg(self, offset, value):
        raise AssertionError("wrote a register of a board that is not VTA")

    def write_mem(self, addr, data):
        pass

    def read_mem(self, addr, nbytes):
        return bytes(nbytes)


def test_a_board_with_another_id_is_refused():
    from driver import BackendUnavailable
    image = load_image(VECTORS[0])
    with pytest.raises(BackendUnavailable, match="ID register reads 0xdeadbeef"):
        BoardBackend(FakeBoard()).run(image)
