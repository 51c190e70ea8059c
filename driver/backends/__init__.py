"""Device backends behind one interface: run a program image, return DRAM, counters, cycles.

=============  ==========================================================================
``functional`` :mod:`sim.functional`, the architectural reference (no cycles)
``cycle``      :mod:`sim.cycle`, the RTL's cycle-accurate twin
``rtl``        the Verilated core with its memory model in C++ (when hw/ can be built)
``board``      an FPGA over its host link and register map (needs a link object)
=============  ==========================================================================
"""

from __future__ import annotations

import importlib

from .base import Backend, BackendUnavailable, DeviceError, DeviceTimeout, RunResult

__all__ = ["Backend", "BackendUnavailable", "DeviceError", "DeviceTimeout", "RunResult",
           "BACKENDS", "get_backend"]

# name -> "module:class", imported on first use so that a backend's tools are optional.
BACKENDS = {
    "functional": "driver.backends.functional:FunctionalBackend",
    "cycle": "driver.backends.cycle:CycleBackend",
    "rtl": "driver.backends.rtl:RtlBackend",
    "board": "driver.backends.board:BoardBackend",
}


def get_backend(name: "str | Backend", **options) -> Backend:
    """The backend called ``name`` built with ``options`` (a Backend passes through)."""
    if isinstance(name, Backend):
        return name
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    module, cls = BACKENDS[name].split(":")
    try:
        factory = getattr(importlib.import_module(module), cls)
    except ImportError as exc:
        raise BackendUnavailable(f"backend {name!r} is not available: {exc}") from None
    return factory(**options)
