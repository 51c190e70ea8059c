"""A device: its DRAM, its recorded kernels and the backend that runs its launches."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isa.config import VTAConfig, load_config
from isa.image import ProgramImage, save_image

from .backends import Backend, RunResult, get_backend
from .kernel import KernelRegistry
from .memory import DEFAULT_DRAM_BYTES, Buffer, DeviceMemory
from .stream import CommandStream

__all__ = ["Device"]


class Device:
    """One accelerator as the host sees it.

    Parameters
    ----------
    config : a :class:`~isa.config.VTAConfig` or the name of a shipped configuration.
    backend : a backend name (``functional``, ``cycle``, ``rtl``, ``board``) or object.
    dram_bytes : size of the device DRAM.
    image_dir : if given, every launch is saved there as ``launch-NNNN.npz`` (SPEC §5).
    keep_images : keep a copy of every launch's image in ``CommandStream.images``.
    timeout : default seconds a launch may take.
    backend_options : passed to the backend's constructor.
    """

    def __init__(self, config: "VTAConfig | str" = "default", backend: "str | Backend" =
                 "functional", *, dram_bytes: int = DEFAULT_DRAM_BYTES,
                 image_dir: "str | Path | None" = None, keep_images: bool = False,
                 timeout: float | None = None, kernel_limit: int = 1024,
                 **backend_options):
        self.config = load_config(config)
        self.backend = get_backend(backend, **backend_options)
        self.memory = DeviceMemory(self.config, dram_bytes)
        self.kernels = KernelRegistry(kernel_limit)
        self.image_dir = None if image_dir is None else Path(image_dir)
        self.keep_images, self.timeout = keep_images, timeout
        self.launch_count = 0

    # Memory, for convenience.
    def alloc(self, nbytes: int, **kw) -> Buffer:
        return self.memory.alloc(nbytes, **kw)

    def empty(self, shape, dtype, **kw) -> Buffer:
        return self.memory.empty(shape, dtype, **kw)

    def array(self, host: np.ndarray, **kw) -> Buffer:
        return self.memory.array(host, **kw)

    def stream(self, **options) -> CommandStream:
        """A new command stream on this device (see :class:`CommandStream`)."""
        return CommandStream(self, **options)

    def launch(self, image: ProgramImage, *, timeout: float | None = None) -> RunResult:
        """Run one image on the backend and make its DRAM the device's DRAM."""
        if self.image_dir is not None:
            self.image_dir.mkdir(parents=True, exist_ok=True)
            save_image(self.image_dir / f"launch-{self.launch_count:04d}.npz", image)
        self.launch_count += 1
        result = self.backend.run(image, timeout=self.timeout if timeout is None else timeout)
        if result.dram.shape != self.memory.dram.shape:
            raise RuntimeError(f"backend {self.backend.name} returned {result.dram.size} bytes "
                               f"of DRAM for an image of {self.memory.dram.size}")
        self.memory.dram[:] = result.dram  # in place: host views stay valid
        return result
