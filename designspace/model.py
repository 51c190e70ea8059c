"""The screening model: resources and Fmax of a configuration in microseconds, calibrated on
real syntheses, with its error against them.

* **DP16KD** is counted from the memories the core instantiates (:func:`memories`), each mapped
  the way Yosys' ``memory_libmap`` maps it on ECP5 (the cheapest aspect ratio of a DP16KD, or
  of a PDPW16KD for 36 bits; at most 16 entries deep: distributed RAM), plus a calibrated
  offset.
* **LUT4, FF, MULT18X18D** are linear in the GEMM array's multiply-accumulates
  (BATCH x BLOCK_IN x BLOCK_OUT), the ALU's 32-bit lanes (BATCH x BLOCK_OUT) and the bus width,
  fitted by least squares (with a small ridge so that few runs still give an answer).
* **Fmax** is linear in log2 of the multiply-accumulates, fitted on nextpnr runs.

:meth:`ScreeningModel.errors` reports the leave-one-out relative error on the calibration
runs: each run predicted by a model fitted on the others. The sweep synthesises for real what
this model cannot rule out with that error as a margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isa.config import VTAConfig

__all__ = ["ScreeningModel", "Sample", "memories", "dp16kd_count", "features"]

# Block RAM aspect ratios (depth, width); (512, 36) is the simple dual-port PDPW16KD.
_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
# Yosys puts memories at most this deep into TRELLIS_DPR16X4 distributed RAM.
_LUTRAM_DEPTH = 16
# Fitted quantities and their features (names of :func:`features` entries).
_LINEAR = {"LUT4": ("one", "macs", "lanes", "bus"), "FF": ("one", "macs", "lanes", "bus"),
           "MULT18X18D": ("one", "macs", "lanes")}
_RIDGE = 1e-6


def memories(cfg: VTAConfig) -> list[tuple[str, int, int, int]]:
    """(name, width, depth, copies) of every memory of ``hw.core.VTACore``.

    ACC has two read ports (GEMM/ALU operand and ALU source), which Yosys builds as two
    copies; then the three command queues and the fetch buffer.
    """
    from hw.fetch import fetch_buffer_depth
    from hw.fields import queue_entry

    queue_bits = queue_entry().size
    _, fetch_depth = fetch_buffer_depth(cfg)
    return [
        ("inp", cfg.inp_elem_bits, cfg.inp_depth, 1),
        ("wgt", cfg.wgt_elem_bits, cfg.wgt_depth, 1),
        ("acc", cfg.acc_elem_bits, cfg.acc_depth, 2),
        ("out", cfg.out_elem_bits, cfg.acc_depth, 1),
        ("uop", cfg.uop_elem_bits, cfg.uop_depth, 1),
        *((f"{q}_queue", queue_bits, cfg.cmd_queue_depth - 1, 1)
          for q in ("load", "compute", "store")),
        ("fetch", 8 * cfg.insn_bytes, fetch_depth, 1),
    ]


def _blocks(width: int, depth: int) -> int:
    if depth <= _LUTRAM_DEPTH:
        return 0
    return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in _SHAPES)


def dp16kd_count(cfg: VTAConfig) -> int:
    """Block RAMs of the core's memories as Yosys maps them (before the calibrated offset)."""
    return sum(copies * _blocks(w, d) for _, w, d, copies in memories(cfg))


def features(cfg: VTAConfig) -> dict:
    return {"one": 1.0, "macs": float(cfg.macs_per_cycle), "lanes": float(cfg.batch * cfg.block_out),
            "bus": float(cfg.bus_width), "log2_macs": float(math.log2(cfg.macs_per_cycle)),
            "brams": float(dp16kd_count(cfg))}


@dataclass(frozen=True)
class Sample:
    """One real measurement: the configuration, its resources and (if placed) its Fmax."""

    config: VTAConfig
    resources: dict
    fmax_mhz: "float | None" = None


def _fit(rows: list[dict], names: tuple, y: list[float]) -> np.ndarray:
    """Ridge least squares; a feature that does not vary across the runs (other than "one")
    gets no weight, so the model never extrapolates along what it has not seen."""
    x = np.array([[r[n] for n in names] for r in rows])
    keep = np.array([n == "one" or np.ptp(x[:, i]) > 0 for i, n in enumerate(names)])
    coef = np.zeros(len(names))
    xk = x[:, keep]
    scale = np.maximum(np.abs(xk).max(axis=0), 1e-12)
    xs = xk / scale
    a = xs.T @ xs + _RIDGE * np.eye(xs.shape[1])
    coef[keep] = np.linalg.solve(a, xs.T @ np.asarray(y, float)) / scale
    return coef


class ScreeningModel:
    """Fitted on :class:`Sample` s; :meth:`predict` gives every resource and Fmax."""

    def __init__(self, samples: "list[Sample]"):
        self.samples = list(samples)
        if not self.samples:
            raise ValueError("the screening model needs at least one real synthesis")
        rows = [features(s.config) for s in self.samples]
        self.coef = {k: _fit(rows, names, [s.resources[k] for s in self.samples])
                     for k, names in _LINEAR.items()}
        self.bram_offset = float(np.mean([s.resources["DP16KD"] - r["brams"]
                                          for s, r in zip(self.samples, rows)]))
        timed = [(r, s.fmax_mhz) for s, r in zip(self.samples, rows) if s.fmax_mhz]
        if len(timed) >= 2 and len({r["log2_macs"] for r, _ in timed}) >= 2:
            self.fmax_coef = _fit([r for r, _ in timed], ("one", "log2_macs"),
                                  [f for _, f in timed])
        elif timed:
            self.fmax_coef = np.array([float(np.mean([f for _, f in timed])), 0.0])
        else:
            self.fmax_coef = None

    def predict(self, cfg: VTAConfig) -> dict:
        """LUT4, FF, DP16KD, MULT18X18D (non-negative integers) and ``fmax_mhz`` (or None)."""
        f = features(cfg)
        out = {k: max(0, round(float(np.dot(c, [f[n] for n in _LINEAR[k]]))))
               for k, c in self.coef.items()}
        out["DP16KD"] = max(0, round(f["brams"] + self.bram_offset))
        out["fmax_mhz"] = (None if self.fmax_coef is None else
                           round(max(1.0, float(self.fmax_coef[0] + self.fmax_coef[1]
                                                * f["log2_macs"])), 2))
        return {"LUT4": out["LUT4"], "FF": out["FF"], "DP16KD": out["DP16KD"],
                "MULT18X18D": out["MULT18X18D"], "fmax_mhz": out["fmax_mhz"]}

    def errors(self) -> dict:
        """Leave-one-out relative error per quantity: ``{key: {"mean": e, "max": e, "n": n}}``
        (the fraction of the measured value; None where fewer than two runs exist)."""
        keys = ("LUT4", "FF", "DP16KD", "MULT18X18D", "fmax_mhz")
        errs = {k: [] for k in keys}
        for i, s in enumerate(self.samples):
            rest = self.samples[:i] + self.samples[i + 1:]
            if not rest:
                break
            pred = ScreeningModel(rest).predict(s.config)
            for k in keys:
                real = s.fmax_mhz if k == "fmax_mhz" else s.resources[k]
                if real and pred[k] is not None:
                    errs[k].append(abs(pred[k] - real) / real)
        return {k: ({"mean": float(np.mean(v)), "max": float(np.max(v)), "n": len(v)}
                    if v else None) for k, v in errs.items()}

    def margin(self, floor: float) -> float:
        """The screening margin: the worst leave-one-out resource error, at least ``floor``."""
        worst = [e["max"] for k, e in self.errors().items() if e and k != "fmax_mhz"]
        return max([floor, *worst])
