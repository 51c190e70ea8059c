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


# ---------------------------------------------------------------------------- whole models

def _cpu_segment(seg, args):
    """Run one CPU segment (layout transforms, Relay operators)."""
    from .cpu import run_cpu_segment
    return run_cpu_segment(seg, args)


def _dram_bytes(model, cfg) -> int:
    from .lower import region_bytes
    need = 0
    for seg in model.segments:
        if seg.target == "vta":
            need = max(need, sum(-(-r.nbytes // 256) * 256 + 256 for r in seg.program.regions))
    insn = (1 << 13) * cfg.insn_bytes + 4 * cfg.uop_depth * cfg.uop_elem_bytes
    return max(1 << 20, need + insn + (64 << 10))


def execute(model, inputs: dict, backend="functional", *, keep_images: bool = False,
            backend_options: dict | None = None):
    """Run a compiled model. Returns (outputs in order, report, images)."""
    from driver import Device
    cfg = model.config
    device = Device(cfg, backend, dram_bytes=_dram_bytes(model, cfg), keep_images=keep_images,
                    **(backend_options or {}))
    values = {}
    for info in model.inputs:
        values[info.name] = inputs[info.name]
    rows, images, total = [], [], 0
    for seg in model.segments:
        args = [values[n] for n in seg.inputs]
        if seg.target == "vta":
            stats = RunStats()
            arrays = {"data": args[0], "weights": seg.weights}
            if seg.op.residual:
                arrays["residual"] = args[1]
            if seg.op.consts:
                arrays["consts"] = seg.consts
            info = model.tensors[seg.output]
            raw = run_program(device, seg.program, arrays, stats)
            values[seg.output] = np.frombuffer(raw, np.int8).reshape(info.shape).copy()
            images.extend(stats.images)
            util = None
            if stats.cycles:
                util = seg.program.counts()["gemm_uops"] / stats.cycles
            rows.append({"name": seg.name, "target": "vta", "op": seg.op.describe(),
                         "macs": seg.macs, "cycles": stats.cycles, "launches": stats.launches,
                         "gemm_utilisation": util})
            if stats.cycles is not None and total is not None:
                total += stats.cycles
            else:
                total = None
        else:
            values[seg.output] = _cpu_segment(seg, args)
            rows.append({"name": seg.name, "target": "cpu", "op": seg.kind if seg.kind != "relay"
                         else seg.function.body.op.name if hasattr(seg.function.body, "op")
                         else "relay", "macs": seg.macs, "cycles": None})
    macs = sum(r["macs"] for r in rows)
    vta = sum(r["macs"] for r in rows if r["target"] == "vta")
    report = {"backend": getattr(backend, "name", backend), "config": cfg.name,
              "vta_mac_share": (vta / macs) if macs else 0.0, "macs": macs, "segments": rows}
    if total is not None and any(r["target"] == "vta" for r in rows):
        report["cycles"] = int(total)
    return [values[n] for n in model.outputs], report, images
