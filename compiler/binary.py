"""The VTA binary (``.vtab``): one versioned NumPy ``.npz`` file, JSON manifest plus arrays,
never pickled.

Manifest (``manifest``, a JSON string): ``format`` "vtab", ``version``, ``config`` (original
key names), inputs / outputs / tensors, and the segments in execution order — VTA segments with
their operator, schedule, program regions and micro-op kernels; CPU segments with their kind and
attributes, Relay segments as Relay text. Arrays: ``<segment>/program`` (the operator's
relocatable ``isa.program`` file: launches, micro-op kernels, packed weights and constants in
DRAM layout), ``<segment>/commands`` (the lowering's command list), ``<segment>/weight_oihw``
(the operator's weight as written in the model). Every array's SHA-256
is in the manifest: a corrupted file is refused before anything runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from isa.config import ConfigError, VTAConfig

from isa.program import ProgramFormatError

from .emit import program_from_bytes
from .errors import BinaryError
from .graph import CompiledModel, CpuSegment, TensorInfo, VtaSegment
from .operators import ConvOp, TailOp
from .program import Kernel, Region, VtaProgram
from .schedule import Schedule

__all__ = ["save_binary", "load_binary", "FORMAT_VERSION", "model_to_arrays"]

FORMAT_VERSION = 1


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _op_json(op) -> dict:
    from .vector import EltwiseOp, PoolOp
    if isinstance(op, PoolOp):
        return {"type": "pool", "name": op.name, "kind": op.kind, "data_shape": list(op.data_shape),
                "pool": list(op.pool), "strides": list(op.strides), "padding": list(op.padding),
                "dilation": list(op.dilation)}
    if isinstance(op, EltwiseOp):
        return {"type": "eltwise", "name": op.name, "alu": op.alu, "shape": list(op.shape),
                "out_dtype": op.out_dtype,
                "tail": [{"alu": t.alu, "imm": t.imm} for t in op.tail]}
    from .transpose import TransposeOp
    if isinstance(op, TransposeOp):
        d = _conv_json(op)
        d.update(type="transpose", output_padding=list(op.output_padding))
        return d
    return _conv_json(op)


def _conv_json(op) -> dict:
    return {"type": "conv", "name": op.name, "kind": op.kind, "data_shape": list(op.data_shape),
            "strides": list(op.strides), "padding": list(op.padding),
            "dilation": list(op.dilation), "groups": op.groups, "out_dtype": op.out_dtype,
            "tail": [{"alu": t.alu, "imm": t.imm, "const": t.const, "residual": t.residual}
                     for t in op.tail],
            "consts": [v.tolist() for v in op.consts]}


def model_to_arrays(model: CompiledModel) -> dict[str, np.ndarray]:
    """The arrays of the ``.vtab`` file of ``model`` (manifest included)."""
    from relay.ir import IRModule
    from relay.printer import module_to_text

    arrays: dict[str, np.ndarray] = {}
    segments = []
    for seg in model.segments:
        if seg.target == "vta":
            arrays[f"{seg.name}/commands"] = seg.program.commands
            arrays[f"{seg.name}/program"] = np.frombuffer(seg.image.to_bytes(), np.uint8)
            if hasattr(seg.op, "weight"):
                arrays[f"{seg.name}/weight_oihw"] = seg.op.weight
            segments.append({"target": "vta", "name": seg.name, "inputs": list(seg.inputs),
                             "output": seg.output, "op": _op_json(seg.op),
                             "schedule": seg.schedule and seg.schedule.to_json(),
                             "regions": [[r.name, r.nbytes, r.role]
                                         for r in seg.program.regions],
                             "kernels": [k.to_json() for k in seg.program.kernels]})
        else:
            entry = {"target": "cpu", "name": seg.name, "kind": seg.kind,
                     "inputs": list(seg.inputs), "output": seg.output, "attrs": seg.attrs}
            if seg.kind == "relay":
                entry["relay"] = module_to_text(IRModule({"main": seg.function}))
            segments.append(entry)
    manifest = {
        "format": "vtab", "version": FORMAT_VERSION, "config": model.config.to_dict(),
        "config_name": model.config.name,
        "inputs": [t.name for t in model.inputs], "outputs": list(model.outputs),
        "tensors": {n: [list(t.shape), t.dtype, t.layout] for n, t in model.tensors.items()},
        "segments": segments,
        "sha256": {k: _digest(a) for k, a in arrays.items()},
    }
    arrays["manifest"] = np.array(json.dumps(manifest))
    return arrays


def save_binary(path: "str | Path", model: CompiledModel) -> None:
    """Write ``model`` to ``path`` atomically (no partial file on failure)."""
    from isa.safeio import save_npz

    save_npz(path, model_to_arrays(model), what="binary")    # atomic, the umask's mode


def load_binary(source: "str | Path | bytes", *, config: VTAConfig | None = None
                ) -> CompiledModel:
    """Read and verify a ``.vtab``; :class:`BinaryError` says what is wrong with a bad one.
    With ``config``, the binary must have been compiled for exactly that configuration."""
    name = "<bytes>" if isinstance(source, bytes) else str(source)
    from isa.errors import InputError
    from isa.safeio import load_arrays

    if not isinstance(source, bytes) and not Path(source).exists():
        raise BinaryError(f"no such file: {name}")
    try:        # bounded, never unpickled; any corruption (zlib, zip, EOF) is one error
        arrays = load_arrays(source, label="the file")
    except InputError as exc:
        raise BinaryError(f"{name} is not a VTA binary (.vtab): {exc}") from None
    if "manifest" not in arrays:
        raise BinaryError(f"{name} is not a VTA binary: it has no manifest")
    from isa.safeio import parse_json

    try:        # depth- and digit-limited: the manifest is untrusted too
        manifest = parse_json(str(arrays.pop("manifest")), what="the manifest")
    except InputError as exc:
        raise BinaryError(f"{name}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "vtab":
        raise BinaryError(f"{name} is not a VTA binary (no 'vtab' format tag)")
    if manifest.get("version") != FORMAT_VERSION:
        raise BinaryError(f"{name} is a version {manifest.get('version')} VTA binary; this "
                          f"vta reads version {FORMAT_VERSION}: compile the model again")
    try:
        cfg = VTAConfig.from_dict(manifest["config"], name=manifest.get("config_name", "custom"))
    except (ConfigError, TypeError, KeyError) as exc:
        raise BinaryError(f"{name}: bad configuration: {exc}") from None
    if config is not None and cfg != config:
        raise BinaryError(f"{name} was compiled for {cfg.key} ({cfg.name}), not for "
                          f"{config.key} ({config.name}): compile it for that configuration")
    sums = manifest.get("sha256", {})
    if set(sums) != set(arrays):
        raise BinaryError(f"{name} is corrupted: its arrays do not match the manifest")
    for k, a in arrays.items():
        if _digest(a) != sums[k]:
            raise BinaryError(f"{name} is corrupted: array {k!r} fails its checksum")
    try:
        return _model(manifest, arrays, cfg)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise BinaryError(f"{name}: malformed manifest ({type(exc).__name__}: {exc})") from None


def _op_from_json(o: dict, s: dict, arrays: dict):
    from .vector import EltwiseOp, PoolOp
    if o["type"] == "pool":
        return PoolOp(o["name"], o["kind"], tuple(o["data_shape"]), tuple(o["pool"]),
                      tuple(o["strides"]), tuple(o["padding"]), tuple(o["dilation"]))
    if o["type"] == "eltwise":
        return EltwiseOp(o["name"], o["alu"], tuple(o["shape"]),
                         tuple(TailOp(t["alu"], imm=t["imm"]) for t in o["tail"]),
                         o["out_dtype"])
    if o["type"] == "transpose":
        from .transpose import TransposeOp
        return TransposeOp(o["name"], tuple(o["data_shape"]), arrays[f"{s['name']}/weight_oihw"],
                           tuple(o["strides"]), tuple(o["padding"]), tuple(o["output_padding"]),
                           tuple(o["dilation"]), int(o["groups"]),
                           tuple(TailOp(**t) for t in o["tail"]),
                           tuple(np.array(v, np.int32) for v in o["consts"]), o["out_dtype"])
    return ConvOp(o["name"], o["kind"], tuple(o["data_shape"]),
                  arrays[f"{s['name']}/weight_oihw"], tuple(o["strides"]),
                  tuple(o["padding"]), tuple(o["dilation"]), int(o["groups"]),
                  tuple(TailOp(**t) for t in o["tail"]),
                  tuple(np.array(v, np.int32) for v in o["consts"]), o["out_dtype"])


def _model(manifest: dict, arrays: dict, cfg: VTAConfig) -> CompiledModel:
    from relay.parser import parse
    from relay.transform import infer_type

    tensors = {n: TensorInfo(n, tuple(int(d) for d in shape), str(dtype), str(layout))
               for n, (shape, dtype, layout) in manifest["tensors"].items()}
    segments = []
    for s in manifest["segments"]:
        if s["target"] == "vta":
            o = s["op"]
            op = _op_from_json(o, s, arrays)
            program = VtaProgram(tuple(Region(n, int(b), r) for n, b, r in s["regions"]),
                                 tuple(Kernel.from_json(k) for k in s["kernels"]),
                                 arrays[f"{s['name']}/commands"])
            try:
                image = program_from_bytes(arrays[f"{s['name']}/program"])
            except ProgramFormatError as exc:
                raise BinaryError(f"segment {s['name']}: {exc}") from None
            if image.config != cfg:
                raise BinaryError(f"segment {s['name']} was linked for {image.config.key}, "
                                  f"the binary says {cfg.key}")
            sched = None if s["schedule"] is None else Schedule.from_json(s["schedule"])
            segments.append(VtaSegment(s["name"], op, sched,
                                       program, tuple(s["inputs"]), s["output"], image))
        else:
            fn = None
            if s["kind"] == "relay":
                fn = infer_type(parse(s["relay"]))["main"]
            segments.append(CpuSegment(s["name"], s["kind"], tuple(s["inputs"]), s["output"],
                                       dict(s["attrs"]), fn))
    return CompiledModel(cfg, tuple(tensors[n] for n in manifest["inputs"]),
                         tuple(manifest["outputs"]), tensors, tuple(segments))
