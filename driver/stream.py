"""Command streams: the instruction stream of one or more launches on a live device, built like
the original runtime's command queue (reference §8).

A :class:`CommandStream` is the program layer's :class:`~isa.program.StreamBuilder` (token
rules, micro-op cache, launch splitting, units: one implementation, see docs/program.md) plus
a :class:`~driver.device.Device`: device buffers stand for the builder's regions, and each
launch the builder seals is linked into the device's DRAM (instructions and micro-ops in the
stream's two staging buffers, addresses from the buffers) and run at once.

Loads and stores are appended with their stage; GEMM and ALU take a :class:`UopKernel`, made
resident in the micro-op buffer first (a LOAD UOP when it is not). A kernel's micro-ops are
staged once per launch at an offset that never moves, so a ring wrap of the micro-op buffer
cannot leave a stale offset. When the instruction or micro-op staging buffer fills, the
stream flushes: it runs what it has (outstanding tokens drained, the epilogue) and continues,
pushing the drained tokens again. On-chip buffers are not part of a program image: group the
calls that share on-chip data in ``with stream.unit(): ...``; a flush then falls before or
after the unit, never inside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Hashable

from isa.arch import QUEUES, STAGES, MemType
from isa.image import OutputRegion, ProgramImage
from isa.program import (DEFAULT_INSN_CAPACITY, Launch, ProgramError, Region, StreamBuilder,
                         write_launch)
from isa.program.program import relocate_list

from .kernel import UopKernel
from .memory import Buffer

if TYPE_CHECKING:
    from .backends.base import RunResult
    from .device import Device

__all__ = ["CommandStream", "StreamError", "STAGES", "QUEUES", "DEFAULT_INSN_CAPACITY"]

#: The errors of building a stream are the program layer's.
StreamError = ProgramError


class CommandStream:
    """An instruction stream for one :class:`~driver.device.Device`.

    Parameters
    ----------
    device : the device whose memory holds the instruction and micro-op buffers.
    insn_capacity : instructions per launch; the stream flushes before it would overflow.
    uop_capacity : micro-ops staged in DRAM per launch (default 4 x the micro-op buffer).
    portable_kernels : also reject kernels with the original's read-after-write hazards.
    timeout : seconds each launch may take (None: the device's default).
    """

    def __init__(self, device: "Device", *, insn_capacity: int = DEFAULT_INSN_CAPACITY,
                 uop_capacity: int | None = None, portable_kernels: bool = False,
                 timeout: float | None = None):
        self.device, self.cfg = device, device.config
        if insn_capacity is None:
            raise StreamError("a device stream needs a finite insn_capacity")
        self._builder = StreamBuilder(self.cfg, name="stream", insn_capacity=insn_capacity,
                                      uop_capacity=uop_capacity,
                                      portable_kernels=portable_kernels,
                                      kernels=device.kernels, on_launch=self._run)
        self.insn_capacity = self._builder.insn_capacity
        self.uop_capacity = self._builder.uop_capacity
        self.portable_kernels, self.timeout = portable_kernels, timeout
        self._insn_buf = device.memory.alloc(insn_capacity * self.cfg.insn_bytes,
                                             name="instructions")
        self._uop_buf = device.memory.alloc(self.uop_capacity * self.cfg.uop_elem_bytes,
                                            name="micro-ops")
        self._buffers: dict[int, tuple[Buffer, Region]] = {}
        self._by_region: dict[str, Buffer] = {}
        self._launch_timeout = timeout
        self._run_launches = True
        self._built_image: ProgramImage | None = None
        self.launches: list[RunResult] = []
        self.images: list[ProgramImage] = []
        self._closed = False

    # ------------------------------------------------------------------ state
    def unit(self):
        """Keep the calls inside in one launch (see the module docstring). Units nest."""
        self._check_open()
        return self._builder.unit()

    def __len__(self) -> int:
        return len(self._builder)

    @property
    def flushes(self) -> int:
        """Automatic flushes so far."""
        return self._builder.splits

    @property
    def instructions(self) -> list:
        """The instructions of the current (not yet launched) launch, with their addresses."""
        b = self._builder
        layout = {name: buf.addr for name, buf in self._by_region.items()}
        layout[b.uops_region] = self._uop_buf.addr
        return relocate_list(b.instructions, b.relocs, layout, self.cfg)

    @property
    def uop_loads(self) -> int:
        """LOAD UOPs emitted so far (over all launches)."""
        return self._builder.uop_loads

    @property
    def uop_evictions(self) -> int:
        return self._builder.uop_evictions

    def close(self) -> None:
        """Release the stream's instruction and micro-op buffers."""
        if not self._closed:
            self._insn_buf.free()
            self._uop_buf.free()
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StreamError("the stream is closed")

    def _region(self, what: str, buf, mem_type: int) -> Region:
        """The builder's region for a device buffer (checked live and aligned for
        ``mem_type``)."""
        self._check_open()
        if not isinstance(buf, Buffer):
            raise StreamError(f"{what}: expected a device Buffer, got {type(buf).__name__}")
        buf.elem_offset(mem_type)          # use after free, alignment
        entry = self._buffers.get(id(buf))
        if entry is None or entry[0] is not buf:
            name = f"{buf.name or 'buffer'}@0x{buf.addr:x}"
            n = 1
            while name in self._builder.regions:
                n += 1
                name = f"{buf.name or 'buffer'}@0x{buf.addr:x}#{n}"
            entry = (buf, self._builder.region(name, buf.nbytes, "activation"))
            self._buffers[id(buf)] = entry
            self._by_region[name] = buf
        return entry[1]

    # ------------------------------------------------------------------ the builder's API
    def dep_pop(self, src, dst) -> None:
        """The next instruction of stage ``dst`` waits for a token from ``src``."""
        self._check_open()
        self._builder.dep_pop(src, dst)

    def dep_push(self, src, dst) -> None:
        """Stage ``src`` sends a token to ``dst`` once its work so far is done."""
        self._check_open()
        self._builder.dep_push(src, dst)

    def load_2d(self, mem_type: int, sram: int, buf: Buffer, offset: int = 0, *, x_size: int,
                y_size: int = 1, x_stride: int | None = None, y_pad: tuple = (0, 0),
                x_pad: tuple = (0, 0)) -> None:
        """LOAD ``y_size`` rows of ``x_size`` elements from ``buf`` (element ``offset``, row
        pitch ``x_stride``) into SRAM entry ``sram`` and on, with zero padding."""
        mem_type = MemType(mem_type)
        region = self._region(f"load_2d({mem_type.name})", buf, mem_type)
        self._builder.load_2d(mem_type, sram, region, offset, x_size=x_size, y_size=y_size,
                              x_stride=x_stride, y_pad=y_pad, x_pad=x_pad)

    def store_2d(self, sram: int, buf: Buffer, offset: int = 0, *, x_size: int,
                 y_size: int = 1, x_stride: int | None = None) -> None:
        """STORE ``y_size`` x ``x_size`` narrowed accumulator entries from SRAM ``sram``."""
        region = self._region("store_2d", buf, MemType.OUT)
        self._builder.store_2d(sram, region, offset, x_size=x_size, y_size=y_size,
                               x_stride=x_stride)

    def kernel(self, key: Hashable, record: Callable[[], UopKernel]) -> UopKernel:
        """The kernel recorded for ``key`` (``record()`` runs only the first time)."""
        return self.device.kernels.get(key, record)

    def gemm(self, kernel: UopKernel) -> None:
        """GEMM over ``kernel`` (loading its micro-ops first if they are not resident)."""
        self._check_open()
        self._builder.gemm(kernel)

    def alu(self, kernel: UopKernel) -> None:
        """ALU over ``kernel``."""
        self._check_open()
        self._builder.alu(kernel)

    # ------------------------------------------------------------------ launching
    def _image(self, launch: Launch) -> ProgramImage:
        """Link ``launch`` into the device's DRAM: its image."""
        layout = {name: self._by_region[name].addr for name in launch.regions_used()}
        layout[launch.insns] = self._insn_buf.addr
        if launch.uops is not None:
            layout[launch.uops] = self._uop_buf.addr
        dram = self.device.memory.dram
        start = write_launch(dram, launch, self._builder.regions, layout, self.cfg)
        stored = [self._by_region[name] for name in launch.stores()]
        outputs = [OutputRegion(b.name or f"out@0x{b.addr:x}", b.addr, b.shape, b.dtype.str)
                   for b in dict.fromkeys(stored) if not b.freed]
        return ProgramImage(dram, start, len(launch), self.cfg, outputs)

    def _run(self, launch: Launch) -> None:
        """The builder sealed ``launch``: link it and run it now (or only keep its image)."""
        image = self._image(launch)
        if not self._run_launches:
            self._built_image = image
            return
        if self.device.keep_images:
            self.images.append(image.copy())
        self.launches.append(self.device.launch(image, timeout=self._launch_timeout))

    def build_image(self) -> ProgramImage:
        """Close the current launch and return its program image without running it."""
        self._check_open()
        self._run_launches = False
        try:
            self._builder.seal()
        finally:
            self._run_launches = True
        return self._built_image

    def synchronize(self, *, timeout: float | None = None) -> "RunResult | None":
        """Run what the stream holds (with the epilogue) and wait; None if it is empty."""
        self._check_open()
        if self._builder.in_unit:
            raise StreamError("synchronize() inside a unit: a unit runs in one launch")
        if not self._builder.pending:
            return None
        self._launch_timeout = self.timeout if timeout is None else timeout
        try:
            if self._builder.flush() is None:
                return None
        finally:
            self._launch_timeout = self.timeout
        return self.launches[-1]
