"""The memory system: streaming bus efficiency and the blocked GEMM against its roofline.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_memory.py [--baseline REV] [--quick]

Measured with the cycle-accurate simulator (equal to the RTL cycle for cycle), on the
``default`` configuration at several ``MEM_LATENCY`` values:

* streaming: one whole-buffer LOAD of INP, WGT, ACC and one STORE of OUT, each in its own
  program; bus efficiency = bytes moved / (the module's busy cycles × bus bytes per cycle).
  Goal: at least 95 % at latencies 4, 32 and 64.
* blocked GEMM (``driver.testlib.blocked_gemm_test``: 256 × 256 × 256 in blocks of 64, with 1
  and 2 virtual threads) at latencies 4 and 32: GEMM utilisation against the program's own
  roofline, max(GEMM micro-ops, bus beats) / cycles (the program is bandwidth-bound on a
  64-bit bus). Goal: at least 85 % with 2 virtual threads at both latencies.

``--baseline REV`` (default: the commit before the memory system, ``c002209``) measures the
same programs on that revision's code (exported with ``git archive`` into a temporary folder
and run there in a subprocess), so the figures before and after come from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "VTA_BENCH_TREE" not in os.environ:
    sys.path.insert(0, str(ROOT))

from revision import measure_at  # noqa: E402

import numpy as np  # noqa: E402

#: The commit before several bursts in flight (one burst at a time in the whole core).
BASELINE = "c002209"
STREAM_LATENCIES = (4, 32, 64)
GEMM_LATENCIES = (4, 32)
STREAM_GOAL = 0.95
GEMM_GOAL = 0.85


def _config(latency: int):
    from isa.config import load_config
    return load_config("default").replace(mem_latency=latency)


def streaming(latency: int) -> dict:
    """Bus efficiency of one whole-buffer transfer per memory type."""
    from driver import Device, MemType
    from sim.cycle import run_image
    cfg = _config(latency)
    kinds = {"INP": (MemType.INP, cfg.inp_depth, cfg.inp_elem_bytes, "load_busy"),
             "WGT": (MemType.WGT, cfg.wgt_depth, cfg.wgt_elem_bytes, "load_busy"),
             "ACC": (MemType.ACC, cfg.acc_depth, cfg.acc_elem_bytes, "compute_busy"),
             "OUT": (None, cfg.acc_depth, cfg.out_elem_bytes, "store_busy")}
    out = {}
    for name, (mt, depth, eb, counter) in kinds.items():
        dev = Device(cfg, dram_bytes=(depth * eb) + (4 << 20))
        buf = dev.alloc(depth * eb)
        s = dev.stream()
        if mt is None:
            s.store_2d(0, buf, 0, x_size=depth)
        else:
            s.load_2d(mt, 0, buf, 0, x_size=depth)
        r = run_image(s.build_image())
        out[name] = depth * eb / (r.counters[counter] * cfg.bus_bytes)
    return out


class _Recorder:
    """A cycle backend that keeps every launch's cycles and beats."""

    def __new__(cls):
        from driver.backends.cycle import CycleBackend

        class Recorder(CycleBackend):
            def __init__(self):
                super().__init__()
                self.runs = []

            def run(self, image, *, timeout=None):
                result = super().run(image, timeout=timeout)
                self.runs.append(result)
                return result
        return Recorder()


def blocked_gemm(latency: int, vt: int) -> dict:
    """GEMM utilisation of the blocked GEMM and its ratio to the program's roofline."""
    from driver import Device
    from driver.testlib import blocked_gemm_test
    cfg = _config(latency)
    backend = _Recorder()
    dev = Device(cfg, backend=backend)
    outcome = blocked_gemm_test(dev, 256, 256, 64, False, vt, np.random.default_rng(0))
    if not outcome.ok:
        raise AssertionError(f"blocked GEMM (latency {latency}, {vt} threads) is wrong")
    cycles = sum(r.cycles for r in backend.runs)
    uops = sum(r.counters["gemm_uops"] for r in backend.runs)
    beats = sum((r.summary["bytes_read"] + r.summary["bytes_written"]) // cfg.bus_bytes
                for r in backend.runs)
    return {"utilisation": uops / cycles, "roofline": max(uops, beats) / cycles,
            "cycles": cycles}


def measure(quick: bool) -> dict:
    lat = STREAM_LATENCIES[:1] if quick else STREAM_LATENCIES
    glat = GEMM_LATENCIES[:1] if quick else GEMM_LATENCIES
    return {"streaming": {str(L): streaming(L) for L in lat},
            "gemm": {f"{L}/{vt}": blocked_gemm(L, vt) for L in glat for vt in (1, 2)}}


def baseline(rev: str, quick: bool) -> "dict | None":
    """The same measurement on revision ``rev`` (None if it cannot be exported)."""
    return measure_at(rev, __file__, ["--quick"] if quick else [])


def report(now: dict, before: "dict | None") -> int:
    status = 0
    print("streaming: bus efficiency of whole-buffer transfers (default configuration)")
    for L, eff in now["streaming"].items():
        old = before["streaming"].get(L) if before else None
        cells = []
        for name, e in eff.items():
            was = f"{old[name]:.2f} → " if old else ""
            cells.append(f"{name} {was}{e:.3f}")
        worst = min(eff.values())
        ok = worst >= STREAM_GOAL
        status |= not ok
        print(f"  MEM_LATENCY {L:>2}: " + ", ".join(cells)
              + f"  (goal {STREAM_GOAL:.0%}: {'met' if ok else 'NOT met'})")
    print("blocked GEMM 256³ in blocks of 64: GEMM utilisation, and against the roofline")
    for key, g in now["gemm"].items():
        L, vt = key.split("/")
        old = before["gemm"].get(key) if before else None
        was = (f"{old['utilisation']:.1%} / {old['roofline']:.1%} → " if old else "")
        line = (f"  MEM_LATENCY {L:>2}, {vt} virtual thread{'s' if vt != '1' else ''}: "
                f"{was}{g['utilisation']:.1%} / {g['roofline']:.1%} of roofline "
                f"({g['cycles']} cycles)")
        if vt == "2":
            ok = g["roofline"] >= GEMM_GOAL
            status |= not ok
            line += f"  (goal {GEMM_GOAL:.0%}: {'met' if ok else 'NOT met'})"
        print(line)
    return status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, metavar="REV",
                    help="git revision measured for the 'before' figures ('' for none)")
    ap.add_argument("--quick", action="store_true", help="only the lowest latency")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    now = measure(args.quick)
    if args.json:
        print(json.dumps(now))
        return 0
    before = baseline(args.baseline, args.quick) if args.baseline else None
    return report(now, before)


if __name__ == "__main__":
    sys.exit(main())
