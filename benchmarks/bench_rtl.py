"""RTL benchmark: the GEMM rate of the Verilated core and the RTL simulation speed.

    python benchmarks/bench_rtl.py [--config small] [--uops 20000]

Runs LOAD UOP + one GEMM of N micro-ops (all accumulating into ACC[0], the forwarding case) +
FINISH for two N and reports micro-ops per cycle after the pipeline has filled,
(N2 − N1) / (cycles2 − cycles1), from the hardware cycle counter; then the simulation speed
(cycles per wall-clock second of the cocotb + Verilator run, Python memory model included).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hw.rtlsim import build, build_seconds, run_images  # noqa: E402
from hw.testprog import long_gemm_image  # noqa: E402
from isa.config import load_config  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="small")
    p.add_argument("--uops", type=int, default=20000)
    args = p.parse_args(argv)
    cfg = load_config(args.config)
    start = time.monotonic()
    folder = build(cfg)
    print(f"config {cfg}: Verilator build {build_seconds(folder):.1f} s "
          f"(cached: {time.monotonic() - start:.1f} s now)")
    n1, n2 = args.uops // 10, args.uops
    start = time.monotonic()
    r1, r2 = run_images([long_gemm_image(cfg, n1), long_gemm_image(cfg, n2)])
    wall = time.monotonic() - start
    rate = (n2 - n1) / (r2.cycles - r1.cycles)
    print(f"GEMM: {n2} micro-ops in {r2.cycles} cycles, {n1} in {r1.cycles}: "
          f"{rate:.3f} micro-ops/cycle after the pipeline fills "
          f"({rate * cfg.macs_per_cycle:.0f} MACs/cycle of {cfg.macs_per_cycle})")
    total = r1.cycles + r2.cycles
    print(f"RTL simulation: {total} cycles in {wall:.1f} s = {total / wall:,.0f} cycles/s "
          f"(cocotb + Verilator, one process, start-up included)")
    return 0 if abs(rate - 1.0) < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
