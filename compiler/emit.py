"""From the lowering's command list to the device-free program layer (``isa.program``), and
running linked programs on a backend."""

from __future__ import annotations

import numpy as np

from isa.program import Program, StreamBuilder, load_program

from .operators import ConvGeometry
from .program import VtaProgram

__all__ = ["to_program", "build_program", "run_linked", "program_from_bytes",
           "region_shapes"]


def region_shapes(geo: ConvGeometry) -> dict[str, tuple]:
    """Shapes (int8, packed) of the operator's input and output regions."""
    cfg, op = geo.cfg, geo.op
    h, w = geo.hw
    oh, ow = geo.out_hw
    out = (geo.nb, geo.ob, oh, ow, cfg.batch, cfg.block_out)
    shapes = {"data": (geo.nb, geo.cb, h, w, cfg.batch, cfg.block_in),
              "out": ((4,) + out) if op.out_dtype == "int32" else out}
    if op.residual:
        shapes["residual"] = out
    return shapes


def to_program(geo: ConvGeometry, lowered: VtaProgram, name: str) -> Program:
    """The relocatable :class:`isa.program.Program` of one convolution: packed weights and
    constants attached as parameters, the data (and residual) as inputs, ``out`` as output."""
    return build_program(geo.cfg, lowered, region_shapes(geo),
                         {"weights": geo.packed_weight, "consts": geo.packed_consts}, name)


def build_program(cfg, lowered: VtaProgram, shapes: dict, params: dict, name: str) -> Program:
    """Replay ``lowered`` on a :class:`isa.program.StreamBuilder`: parameter regions get
    ``params`` (already in DRAM layout), input and output regions the int8 ``shapes``."""
    b = StreamBuilder(cfg, name=name)
    regions = {}
    for r in lowered.regions:
        if r.role == "param":
            regions[r.name] = b.parameter(r.name, params[r.name])
        elif r.role == "input":
            regions[r.name] = b.input(r.name, shapes[r.name], np.int8)
        else:
            regions[r.name] = b.output(r.name, shapes[r.name], np.int8)
    lowered.replay(b, regions)
    return b.build()


def program_from_bytes(data: np.ndarray) -> Program:
    """The :class:`isa.program.Program` whose ``Program.to_bytes()`` are ``data``."""
    return load_program(np.asarray(data, np.uint8).tobytes())


def run_linked(program: Program, inputs: dict, backend, stats=None, *,
               deadline: float | None = None) -> np.ndarray:
    """Link ``program`` with ``inputs``, run its launches in order on ``backend``, return the
    ``out`` region. ``stats`` (a :class:`~compiler.runtime.RunStats`) collects cycles,
    counters and the launch images. ``deadline`` (``time.monotonic()``): each launch gets the
    time left as its timeout; the backend raises ``DeviceTimeout`` when it runs out."""
    import time

    from driver.backends.base import DeviceTimeout
    linked = program.link(inputs=inputs)
    dram = linked.dram
    for k in range(len(linked)):
        image = linked.image(k, dram)
        timeout = None
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise DeviceTimeout(f"no time left before launch {k} of {len(linked)}",
                                    field="timeout", value=0)
        result = backend.run(image, timeout=timeout)
        if stats is not None:
            stats.add(result)
            stats.images.append(image)
        dram = np.asarray(result.dram, np.uint8)
    return linked.read("out", dram)
