"""Running compiled VTA operators on a device backend."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .lower import region_bytes
from .operators import ConvGeometry
from .packing import pack_activation, planes_to_int32, unpack_activation
from .program import VtaProgram

__all__ = ["run_program", "RunStats", "run_conv"]


@dataclass
class RunStats:
    cycles: int | None = 0
    launches: int = 0
    counters: dict = field(default_factory=dict)
    images: list = field(default_factory=list)

    def add(self, result) -> None:
        self.launches += 1
        if result.cycles is None:
            self.cycles = None
        elif self.cycles is not None:
            self.cycles += result.cycles
        for k, v in result.counters.items():
            if isinstance(v, (int, np.integer)):
                self.counters[k] = self.counters.get(k, 0) + int(v)


def run_program(device, program: VtaProgram, arrays: dict[str, np.ndarray],
                stats: RunStats | None = None) -> np.ndarray:
    """Allocate the program's regions on ``device`` (writing ``arrays`` into the input and
    parameter regions), replay it, run it, and return the bytes of its ``out`` region."""
    stats = RunStats() if stats is None else stats
    buffers = {}
    try:
        for r in program.regions:
            buf = device.alloc(r.nbytes, name=r.name)
            buffers[r.name] = buf
            if r.name in arrays:
                data = np.ascontiguousarray(arrays[r.name]).view(np.uint8).reshape(-1)
                if data.size != r.nbytes:
                    raise ValueError(f"region {r.name}: {data.size} bytes given, "
                                     f"{r.nbytes} expected")
                buf.write(data)
        stream = device.stream()
        try:
            program.replay(stream, buffers)
            stream.synchronize()
            for result in stream.launches:
                stats.add(result)
            stats.images.extend(stream.images)
        finally:
            stream.close()
        return buffers["out"].read_bytes()
    finally:
        for buf in buffers.values():
            buf.free()


def run_conv(device, geo: ConvGeometry, program: VtaProgram, x: np.ndarray,
             residual: np.ndarray | None = None, stats: RunStats | None = None) -> np.ndarray:
    """Pack ``x`` (NCHW, or N x K for dense), run, unpack: the operator's NCHW result."""
    cfg, op = geo.cfg, geo.op
    arrays = {"data": pack_activation(x.reshape(op.data_shape), cfg.batch, cfg.block_in),
              "weights": geo.packed_weight}
    n, o, oh, ow = op.out_shape
    if op.residual:
        arrays["residual"] = pack_activation(residual.reshape(op.out_shape), cfg.batch,
                                             cfg.block_out)
    if op.consts:
        arrays["consts"] = geo.packed_consts
    raw = np.frombuffer(run_program(device, program, arrays, stats), np.int8)
    shape = (geo.nb, geo.ob, oh, ow, cfg.batch, cfg.block_out)
    if op.out_dtype == "int32":
        planes = raw.reshape((4,) + shape)
        out = unpack_activation(planes_to_int32(planes), n, o)
    else:
        out = unpack_activation(raw.reshape(shape), n, o)
    return out.reshape(n, o) if op.kind == "dense" else out
