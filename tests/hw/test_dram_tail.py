"""DRAM whose size is not a multiple of the bus width: the memory model pads the last beat.

The core reads and writes whole beats; the models (hw/memmodel.py and its C++ copy in
driver/native/rtl_harness.cpp) pad DRAM to whole beats with zeros, let writes touch the padding
only with zero byte strobes and return DRAM of the image's size.
"""

import numpy as np
import pytest

from hw.memmodel import MemoryModel, MemoryViolation
from sim.functional import run_image as run_functional

from .conftest import require_verilator
from .dram_tail import DRAM_BYTES, tail_config, tail_image


def _read_beats(model, addr, beats):
    model.step(rcmd_valid=1, rcmd_addr=addr, rcmd_len=beats - 1)
    got = []
    for _ in range(100):
        o = model.out
        if o.rd_valid:
            got.append(o.rd_data)
        model.step(rd_ready=1)
        if len(got) == beats:
            return got
    raise AssertionError("no data")


def _write_beat(model, addr, data, strb):
    model.step(wcmd_valid=1, wcmd_addr=addr)
    for _ in range(100):
        if model.out.wr_ready:
            model.step(wr_valid=1, wr_data=data, wr_strb=strb)
            return
        model.step()
    raise AssertionError("never ready")


def _wait_idle(model):
    for _ in range(100):
        if model.idle:
            return
        model.step()
    raise AssertionError("never idle")


def test_memory_model_pads_the_last_beat():
    cfg = tail_config()
    bb = cfg.bus_bytes
    dram = np.arange(DRAM_BYTES, dtype=np.uint32).astype(np.uint8)
    model = MemoryModel(cfg, dram, latency=2)
    last = DRAM_BYTES // bb * bb                              # 4096: the partial beat
    tail = DRAM_BYTES - last                                  # 16 bytes of it are DRAM
    (beat,) = _read_beats(model, last, 1)
    assert beat == int.from_bytes(dram[last:].tobytes() + bytes(bb - tail), "little")
    # a write whose strobes stop at the end of DRAM is fine; the array keeps its size
    _write_beat(model, last, int.from_bytes(bytes(range(1, bb + 1)), "little"),
                (1 << tail) - 1)
    _wait_idle(model)
    assert dram.size == DRAM_BYTES and list(dram[last:]) == list(range(1, tail + 1))
    # a strobed byte in the padding is a violation
    with pytest.raises(MemoryViolation, match="in the padding past the end of DRAM"):
        _write_beat(model, last, 0, 1 << tail)
    # and so is a burst past the padded beat
    model = MemoryModel(cfg, dram, latency=2)
    with pytest.raises(MemoryViolation, match="past the end of DRAM"):
        model.step(rcmd_valid=1, rcmd_addr=last + bb)
    with pytest.raises(MemoryViolation, match="past the end of DRAM"):
        model.step(rcmd_valid=1, rcmd_addr=last - bb, rcmd_len=2)


def test_core_loads_and_stores_at_the_end_of_dram():
    """LOADs and a STORE in the last, partial 64-byte beat: rtlsim equals sim.functional,
    with and without back-pressure."""
    require_verilator()
    from hw.rtlsim import run_images
    images = [tail_image(0), tail_image(1)]
    results = run_images(images, backpressure=[None, 7])
    for image, result in zip(images, results):
        assert result.done and result.error == 0
        expected = run_functional(image).dram
        assert result.dram.size == DRAM_BYTES
        assert np.array_equal(result.dram, expected)
        assert not np.array_equal(expected, image.dram)      # the STORE wrote something
        assert result.counters["gemm_uops"] == 1 and result.counters["alu_uops"] == 3
