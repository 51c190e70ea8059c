"""CPU segments: layout transforms at the edges and the Relay operators VTA does not run."""

from __future__ import annotations

import numpy as np

from .packing import pack_activation, planes_to_int32, unpack_activation

__all__ = ["run_cpu_segment"]


def run_cpu_segment(seg, args: list) -> np.ndarray:
    if seg.kind == "pack":
        a = seg.attrs
        return pack_activation(np.asarray(args[0]).reshape(a["shape"]), a["batch"], a["block"])
    if seg.kind == "unpack":
        a = seg.attrs
        x = args[0]
        if a["planes"]:
            x = planes_to_int32(x)
        shape = a["shape"]
        n, c = shape[0], shape[1]
        return unpack_activation(x, n, c).reshape(shape)
    if seg.kind == "relay":
        from relay.interpreter import Interpreter
        from relay.ir import IRModule
        out = Interpreter(IRModule({"main": seg.function})).run_main(*args)
        return np.asarray(out)
    raise ValueError(f"unknown CPU segment kind {seg.kind!r}")
