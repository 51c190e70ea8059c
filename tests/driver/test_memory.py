import numpy as np
import pytest

from driver import DeviceMemoryError, OutOfDeviceMemory
from driver.memory import DeviceMemory, RESERVED_LOW_BYTES
from isa.config import load_config
from isa.encoding import MemType


@pytest.fixture
def mem():
    return DeviceMemory(load_config("default"), 1 << 16)


def test_alignment_is_the_largest_element(mem):
    assert mem.default_align == 256  # default weights are 16 x 16 int8
    a = mem.alloc(3)
    b = mem.alloc(5)
    assert a.addr >= RESERVED_LOW_BYTES and a.addr % 256 == 0 and b.addr % 256 == 0
    assert b.addr >= a.addr + 256
    assert b.elem_offset(MemType.WGT) == b.addr // 256
    assert b.elem_offset(MemType.INP, 3) == b.addr // 16 + 3


def test_explicit_alignment_and_misaligned_element(mem):
    a = mem.alloc(16, align=16)
    b = mem.alloc(16, align=16)
    misaligned = b if b.addr % 256 else a
    with pytest.raises(DeviceMemoryError, match="not aligned to the 256-byte WGT element"):
        misaligned.elem_offset(MemType.WGT)
    with pytest.raises(ValueError, match="power of two"):
        mem.alloc(16, align=24)


def test_views_alias_dram_and_copies(mem):
    buf = mem.array(np.arange(10, dtype=np.int32))
    view = buf.view()
    assert view.dtype == np.int32 and list(view) == list(range(10))
    mem.dram[buf.addr] = 99
    assert view[0] == 99
    buf.write(np.array([7, 8], np.int32), offset=4)
    assert list(buf.read()[:3]) == [99, 7, 8]
    assert buf.read_bytes(4, 4) == np.int32(7).tobytes()


def test_out_of_bounds_copies(mem):
    buf = mem.alloc(256)
    with pytest.raises(DeviceMemoryError, match="out of bounds"):
        buf.write(np.zeros(257, np.uint8))
    with pytest.raises(DeviceMemoryError, match="out of bounds"):
        buf.write(b"xy", offset=255)
    with pytest.raises(DeviceMemoryError, match="out of bounds"):
        buf.read_bytes(250, 10)
    with pytest.raises(DeviceMemoryError, match="does not fit"):
        buf.view(np.int32, (65,))


def test_double_free_and_use_after_free(mem):
    buf = mem.alloc(100)
    buf.free()
    with pytest.raises(DeviceMemoryError, match="double free"):
        buf.free()
    for use in (buf.view, lambda: buf.write(b"x"), buf.read, lambda: buf.elem_offset(1)):
        with pytest.raises(DeviceMemoryError, match="use after free"):
            use()


def test_exhaustion_and_coalescing(mem):
    total = mem.bytes_free
    bufs = [mem.alloc(4096) for _ in range(total // 4096)]
    with pytest.raises(OutOfDeviceMemory, match="cannot allocate 4096 bytes"):
        mem.alloc(4096)
    for b in bufs[::2]:
        b.free()
    with pytest.raises(OutOfDeviceMemory, match="largest free region 4096"):
        mem.alloc(8192)
    for b in bufs[1::2]:
        b.free()
    assert mem.bytes_free == total
    assert mem.alloc(total).addr == RESERVED_LOW_BYTES  # all holes merged back


def test_new_allocations_are_zeroed(mem):
    a = mem.alloc(256)
    a.write(np.full(256, 5, np.uint8))
    a.free()
    assert not mem.alloc(256).read().any()
