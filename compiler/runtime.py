"""Running compiled VTA operators and whole compiled models on a device backend: each VTA
segment's ``isa.program`` is linked with its inputs and its launches run in order."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .operators import ConvGeometry
from .packing import pack_activation, planes_to_int32, unpack_activation
from .program import VtaProgram

__all__ = ["RunStats", "run_conv", "execute"]


@dataclass
class RunStats:
    """Cycles (None on a backend without them), launches, summed counters and the images of
    the launches run."""

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


def run_conv(backend, geo: ConvGeometry, program: VtaProgram, x: np.ndarray,
             residual: np.ndarray | None = None, stats: RunStats | None = None) -> np.ndarray:
    """Pack ``x`` (NCHW, or N x K for dense), link the operator's ``isa.program`` and run it
    on ``backend`` (a name or object), unpack: the operator's NCHW result."""
    from driver.backends import get_backend

    from .emit import run_linked, to_program
    cfg, op = geo.cfg, geo.op
    arrays = {"data": pack_activation(x.reshape(op.data_shape), cfg.batch, cfg.block_in)}
    n, o, oh, ow = op.out_shape
    if op.residual:
        arrays["residual"] = pack_activation(residual.reshape(op.out_shape), cfg.batch,
                                             cfg.block_out)
    image = to_program(geo, program, op.name)
    raw = run_linked(image, arrays, get_backend(backend), stats).reshape(-1)
    shape = (geo.nb, geo.ob, oh, ow, cfg.batch, cfg.block_out)
    if op.out_dtype == "int32":
        planes = raw.reshape((4,) + shape)
        out = unpack_activation(planes_to_int32(planes), n, o)
    else:
        out = unpack_activation(raw.reshape(shape), n, o)
    return out.reshape(n, o) if op.kind == "dense" else out


# ---------------------------------------------------------------------------- whole models

def _timed_out(timeout, seg, backend, detail):
    from isa.errors import RunTimeout
    what = seg.op.describe() if seg.target == "vta" else seg.kind
    return RunTimeout(f"the model did not finish within {timeout:g} s: segment {seg.name} "
                      f"({what}) on {getattr(backend, 'name', backend)}: {detail}")


def load_cpu(model):
    """JIT-compile the model's CPU segments (LLVM via llvmlite)."""
    from .cpu import CpuLibrary
    return CpuLibrary(model.segments)


def execute(model, inputs: dict, backend="functional", *, backend_options: dict | None = None,
            cpu=None, timeout: float | None = None):
    """Run a compiled model; ``cpu`` is its :func:`load_cpu` library (made here if None).
    ``timeout``: seconds for the whole run, checked before every segment and given to every
    launch as the time left (:class:`isa.errors.RunTimeout` names the segment that was
    running). Returns (outputs in order, report, images)."""
    import time

    from .cpu import run_cpu_segment
    cpu = load_cpu(model) if cpu is None else cpu
    from driver.backends import get_backend
    from driver.backends.base import DeviceTimeout

    from .emit import run_linked
    cfg = model.config
    device = get_backend(backend, **(backend_options or {}))
    deadline = None if timeout is None else time.monotonic() + timeout
    values = {}
    for info in model.inputs:
        values[info.name] = inputs[info.name]
    rows, images, total = [], [], 0
    for seg in model.segments:
        if deadline is not None and time.monotonic() >= deadline:
            raise _timed_out(timeout, seg, backend, "the time ran out before it started")
        args = [values[n] for n in seg.inputs]
        if seg.target == "vta":
            stats = RunStats()
            arrays = {"data": args[0]}
            if seg.op.residual:
                arrays["residual"] = args[1]
            info = model.tensors[seg.output]
            try:
                out = run_linked(seg.image, arrays, device, stats, deadline=deadline)
            except DeviceTimeout as exc:
                raise _timed_out(timeout, seg, backend, exc) from None
            values[seg.output] = out.reshape(info.shape)
            images.extend(stats.images)
            util = None
            if stats.cycles:
                util = seg.image.counters()["gemm_counter"] / stats.cycles
            rows.append({"name": seg.name, "target": "vta", "op": seg.op.describe(),
                         "macs": seg.macs, "cycles": stats.cycles, "launches": stats.launches,
                         "gemm_utilisation": util})
            if stats.cycles is not None and total is not None:
                total += stats.cycles
            else:
                total = None
        else:
            info = model.tensors[seg.output]
            compiled = seg.name in cpu
            if compiled:
                values[seg.output] = cpu.run(seg, args, info.shape, info.dtype)
            else:
                values[seg.output] = run_cpu_segment(seg, args)
            rows.append({"name": seg.name, "target": "cpu", "op": seg.kind if seg.kind != "relay"
                         else getattr(getattr(seg.function.body, "op", None), "name", "relay"),
                         "macs": seg.macs, "cycles": None, "interpreted": not compiled})
    macs = sum(r["macs"] for r in rows)
    vta = sum(r["macs"] for r in rows if r["target"] == "vta")
    report = {"backend": getattr(backend, "name", backend), "config": cfg.name,
              "vta_mac_share": (vta / macs) if macs else 0.0, "macs": macs, "segments": rows}
    if total is not None and any(r["target"] == "vta" for r in rows):
        report["cycles"] = int(total)
    return [values[n] for n in model.outputs], report, images
