"""Device DRAM: an allocator of element-aligned buffers with numpy host views."""

from __future__ import annotations

import bisect

import numpy as np

from isa.arch import elem_bytes
from isa.config import VTAConfig
from isa.encoding import MemType

__all__ = ["DeviceMemory", "Buffer", "DeviceMemoryError", "OutOfDeviceMemory",
           "DEFAULT_DRAM_BYTES", "elem_bytes"]

DEFAULT_DRAM_BYTES = 16 << 20
# Like the original's virtual memory, no buffer starts at 0: a zero address is always a bug.
RESERVED_LOW_BYTES = 4096


class DeviceMemoryError(RuntimeError):
    """Misuse of device memory: double free, use after free, a copy out of bounds."""


class OutOfDeviceMemory(DeviceMemoryError):
    """No free region is large enough for an allocation."""


class Buffer:
    """A live region of device DRAM. ``view`` gives a numpy array that aliases DRAM."""

    def __init__(self, memory: "DeviceMemory", addr: int, nbytes: int, span: int, dtype,
                 shape, name: str = ""):
        # ``nbytes`` is what was asked for; ``span`` what the allocator reserved (aligned).
        self._memory, self.addr, self.nbytes, self.name = memory, addr, nbytes, name
        self._span = span
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)
        self.freed = False

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"{self.shape} {self.dtype}"
        return f"<Buffer 0x{self.addr:x}+{self.nbytes} {state}>"

    def _live(self, what: str) -> None:
        if self.freed:
            raise DeviceMemoryError(f"{what}: buffer at 0x{self.addr:x} ({self.nbytes} bytes) "
                                    f"was freed (use after free)")

    def view(self, dtype=None, shape=None) -> np.ndarray:
        """The buffer as a numpy array aliasing DRAM (default: its allocation dtype/shape)."""
        self._live("view")
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        raw = self._memory.dram[self.addr:self.addr + self.nbytes]
        if shape is None:
            shape = self.shape if dtype == self.dtype else (self.nbytes // dtype.itemsize,)
        count = int(np.prod(shape, dtype=np.int64))
        if count * dtype.itemsize > self.nbytes:
            raise DeviceMemoryError(f"view of {count} x {dtype} ({count * dtype.itemsize} bytes) "
                                    f"does not fit in a buffer of {self.nbytes} bytes")
        return raw[:count * dtype.itemsize].view(dtype).reshape(shape)

    def write(self, data, offset: int = 0) -> None:
        """Copy host ``data`` (array or bytes) into the buffer at byte ``offset``."""
        self._live("write")
        raw = np.frombuffer(np.ascontiguousarray(data).tobytes() if not isinstance(
            data, (bytes, bytearray)) else bytes(data), np.uint8)
        if offset < 0 or offset + raw.size > self.nbytes:
            raise DeviceMemoryError(f"copy of {raw.size} bytes at offset {offset} is out of "
                                    f"bounds of a buffer of {self.nbytes} bytes")
        self._memory.dram[self.addr + offset:self.addr + offset + raw.size] = raw

    def read(self, dtype=None, shape=None) -> np.ndarray:
        """A host copy of the buffer's contents."""
        return self.view(dtype, shape).copy()

    def read_bytes(self, offset: int = 0, nbytes: int | None = None) -> bytes:
        self._live("read")
        nbytes = self.nbytes - offset if nbytes is None else nbytes
        if offset < 0 or nbytes < 0 or offset + nbytes > self.nbytes:
            raise DeviceMemoryError(f"copy of {nbytes} bytes at offset {offset} is out of "
                                    f"bounds of a buffer of {self.nbytes} bytes")
        return self._memory.dram[self.addr + offset:self.addr + offset + nbytes].tobytes()

    def elem_offset(self, mem_type: int, index: int = 0) -> int:
        """``dram_base`` of element ``index`` of this buffer seen as ``mem_type`` elements."""
        self._live("elem_offset")
        size = elem_bytes(self._memory.cfg, mem_type)
        if self.addr % size:
            raise DeviceMemoryError(f"buffer at 0x{self.addr:x} is not aligned to the "
                                    f"{size}-byte {MemType(mem_type).name} element")
        return self.addr // size + index

    def free(self) -> None:
        self._memory.free(self)


class DeviceMemory:
    """First-fit allocator over one DRAM array of ``size`` bytes.

    Every allocation is aligned to ``align`` (by default the largest element of the
    configuration, 256 B for the default weights), so any buffer can hold any memory type.
    """

    def __init__(self, cfg: VTAConfig, size: int = DEFAULT_DRAM_BYTES):
        self.cfg = cfg
        self.default_align = max(64, cfg.insn_bytes, *(elem_bytes(cfg, m) for m in MemType
                                                       if m != MemType.OUT),
                                 cfg.out_elem_bytes)
        if size <= RESERVED_LOW_BYTES:
            raise ValueError(f"DRAM of {size} bytes is too small (at least "
                             f"{RESERVED_LOW_BYTES + 1})")
        self.dram = np.zeros(size, np.uint8)
        self._free: list[tuple[int, int]] = [(RESERVED_LOW_BYTES, size - RESERVED_LOW_BYTES)]
        self._live: dict[int, Buffer] = {}

    @property
    def size(self) -> int:
        return self.dram.size

    @property
    def bytes_free(self) -> int:
        return sum(n for _, n in self._free)

    @property
    def buffers(self) -> list[Buffer]:
        return [self._live[a] for a in sorted(self._live)]

    def alloc(self, nbytes: int, *, align: int | None = None, dtype=np.uint8,
              shape=None, name: str = "") -> Buffer:
        """Reserve ``nbytes`` bytes (rounded up to the alignment); contents are zero."""
        align = self.default_align if align is None else int(align)
        if align <= 0 or align & (align - 1):
            raise ValueError(f"alignment must be a positive power of two, got {align}")
        if nbytes <= 0:
            raise ValueError(f"allocation size must be positive, got {nbytes}")
        padded = -(-nbytes // align) * align
        for i, (start, length) in enumerate(self._free):
            addr = -(-start // align) * align
            if addr + padded <= start + length:
                pieces = [(start, addr - start), (addr + padded, start + length - addr - padded)]
                self._free[i:i + 1] = [p for p in pieces if p[1] > 0]
                shape = (nbytes // np.dtype(dtype).itemsize,) if shape is None else shape
                buf = Buffer(self, addr, nbytes, padded, dtype, shape, name)
                self._live[addr] = buf
                self.dram[addr:addr + padded] = 0
                return buf
        raise OutOfDeviceMemory(f"cannot allocate {nbytes} bytes aligned to {align}: "
                                f"{self.bytes_free} of {self.size} bytes free, largest free "
                                f"region {max((n for _, n in self._free), default=0)} bytes")

    def empty(self, shape, dtype, *, align: int | None = None, name: str = "") -> Buffer:
        """A zeroed buffer for an array of ``shape`` and ``dtype``."""
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return self.alloc(nbytes, align=align, dtype=dtype, shape=shape, name=name)

    def array(self, host: np.ndarray, *, align: int | None = None, name: str = "") -> Buffer:
        """A buffer holding a copy of ``host``."""
        host = np.ascontiguousarray(host)
        buf = self.empty(host.shape, host.dtype, align=align, name=name)
        buf.write(host)
        return buf

    def free(self, buf: Buffer) -> None:
        if buf._memory is not self:
            raise DeviceMemoryError(f"{buf!r} belongs to another device")
        if buf.freed or self._live.get(buf.addr) is not buf:
            raise DeviceMemoryError(f"double free of the buffer at 0x{buf.addr:x} "
                                    f"({buf.nbytes} bytes)")
        del self._live[buf.addr]
        buf.freed = True
        i = bisect.bisect(self._free, (buf.addr, 0))
        self._free.insert(i, (buf.addr, buf._span))
        # Coalesce with the neighbours.
        merged: list[tuple[int, int]] = []
        for start, length in self._free[max(0, i - 1):i + 2]:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        self._free[max(0, i - 1):i + 2] = merged
