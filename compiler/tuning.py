"""Tuning: workload keys, the persistent schedule cache."""

from __future__ import annotations

import hashlib
import json

from .operators import ConvOp

__all__ = ["workload_key"]


def workload_key(op: ConvOp) -> str:
    """What decides a schedule: shapes, strides, padding, dilation, groups, the tail's shape
    (not its constants' values) and the result type."""
    desc = {"kind": op.kind, "data": list(op.data_shape), "weight": list(op.weight.shape),
            "strides": list(op.strides), "padding": list(op.padding),
            "dilation": list(op.dilation), "groups": op.groups, "out": op.out_dtype,
            "tail": [[t.alu, t.imm is not None, t.const is not None, t.residual]
                     for t in op.tail], "consts": len(op.consts)}
    text = json.dumps(desc, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
