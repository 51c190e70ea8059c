"""Tuning: the analytical cost model ranks the schedule space, the best candidates are
measured on the cycle-accurate simulator in parallel, and the winners are kept in a persistent
cache keyed by configuration and workload (``$VTA_TUNE_CACHE``, default
``~/.cache/vta-py/tuning.json``)."""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from .operators import ConvOp
from .schedule import Schedule, candidates, estimate, hazard_free_layout

__all__ = ["workload_key", "TuningCache", "measure", "tune_op", "tune_module"]


def workload_key(op) -> str:
    """What decides a schedule: shapes, strides, padding, dilation, groups, the tail's shape
    (not its constants' values) and the result type."""
    desc = {"kind": op.kind, "output_padding": list(getattr(op, "output_padding", ())),
            "data": list(op.data_shape), "weight": list(op.weight.shape),
            "strides": list(op.strides), "padding": list(op.padding),
            "dilation": list(op.dilation), "groups": op.groups, "out": op.out_dtype,
            "tail": [[t.alu, t.imm is not None, t.const is not None, t.residual]
                     for t in op.tail], "consts": len(op.consts)}
    text = json.dumps(desc, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------- search and cache

def default_cache_path() -> Path:
    return Path(os.environ.get("VTA_TUNE_CACHE",
                               Path.home() / ".cache" / "vta-py" / "tuning.json"))


class TuningCache:
    """Winning schedules, persistent, keyed by configuration and workload (a JSON file)."""

    def __init__(self, path: "str | Path | None" = None):
        self.path = default_cache_path() if path is None else Path(path)
        try:
            self.entries = json.loads(self.path.read_text())
            if not isinstance(self.entries, dict):
                self.entries = {}
        except (OSError, ValueError):
            self.entries = {}

    @staticmethod
    def key(cfg, op: ConvOp) -> str:
        return f"{cfg.key}/{cfg.bus_width}/{cfg.mem_latency}/{workload_key(op)}"

    def get(self, cfg, op: ConvOp) -> Schedule | None:
        """The cached winner, or None; an entry that is not a schedule of ``op``'s space (a
        hand-edited or damaged cache) is a miss, tuned again and overwritten."""
        from .operators import geometry
        e = self.entries.get(self.key(cfg, op))
        try:
            s = Schedule.from_json(e["schedule"])
        except (TypeError, KeyError, ValueError):
            return None
        return s if s in set(candidates(geometry(op, cfg))) else None

    def put(self, cfg, op: ConvOp, schedule: Schedule, cycles: int) -> None:
        self.entries[self.key(cfg, op)] = {"schedule": schedule.to_json(), "cycles": cycles,
                                           "op": op.describe()}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.entries, indent=1, sort_keys=True))
        tmp.replace(self.path)


def measure(op: ConvOp, cfg, schedule: Schedule) -> int:
    """Exact cycles of ``op`` under ``schedule`` on the cycle-accurate simulator (random data:
    timing does not depend on values)."""
    from .lower import lower_conv
    from .operators import geometry
    from .runtime import RunStats, run_conv
    geo = geometry(op, cfg)
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, op.data_shape).astype(np.int8)
    res = rng.integers(-128, 128, op.out_shape).astype(np.int8) if op.residual else None
    stats = RunStats()
    run_conv("cycle", geo, lower_conv(geo, schedule), x, res, stats)
    return int(stats.cycles)


def _measure_job(args):
    op, cfg, schedule = args
    return measure(op, cfg, schedule)


def tune_op(op: ConvOp, cfg, *, top: int = 6, jobs: int | None = None) -> tuple[Schedule, int]:
    """Rank the schedule space with the cost model, measure the ``top`` best on the cycle
    simulator (in parallel), return the fastest and its cycles."""
    from .operators import geometry
    geo = geometry(op, cfg)
    ranked = sorted(candidates(geo), key=lambda s: (not hazard_free_layout(geo, s),
                                                    estimate(geo, s)["cycles"]))
    picks = ranked[:top]
    if not picks:       # as compile's schedule choice says (a zero-size tensor, say)
        from .errors import DoesNotFit
        raise DoesNotFit(f"{op.name}: no schedule fits {cfg.key}")
    jobs = jobs or min(len(picks), os.cpu_count() or 1)
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            cycles = list(pool.map(_measure_job, [(op, cfg, s) for s in picks]))
    else:
        cycles = [measure(op, cfg, s) for s in picks]
    best = min(range(len(picks)), key=lambda i: cycles[i])
    return picks[best], cycles[best]


def tune_module(mod, params, cfg, *, cache: TuningCache | None = None, top: int = 6,
                log=None) -> dict:
    """Tuned schedules of every VTA operator of ``mod`` (from the cache, or measured and then
    cached): a {workload key: Schedule} mapping for :func:`compiler.compile.compile_module`."""
    from .partition import partition_for_vta, prepare, vta_functions, vta_operator
    cache = TuningCache() if cache is None else cache
    part = partition_for_vta(prepare(mod, params), cfg)
    out = {}
    for i, call in enumerate(vta_functions(part["main"].body)):
        op = vta_operator(call.op, f"vta{i}")
        if not isinstance(op, ConvOp):
            continue            # pools and element-wise operators have one schedule
        s = cache.get(cfg, op)
        if s is None:
            s, cycles = tune_op(op, cfg, top=top)
            cache.put(cfg, op, s, cycles)
            if log:
                log(f"vta{i}: {op.describe()}: {s} ({cycles} cycles)")
        out[workload_key(op)] = s
    cache.save()
    return out
