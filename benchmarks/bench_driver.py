"""Simulated cycles per second of the ``rtl`` backend on a long program, and the same
program's wall time on ``functional`` (and ``cycle`` once sim/cycle.py exists).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_driver.py [--config small] [--gemms 10]

The program: load inputs, weights and biases, then ``--gemms`` GEMM instructions of
2^20 micro-op executions each (16 micro-ops in 256 x 256 loops that accumulate in place), then
one STORE: at least ten million cycles with the default ``--gemms 10``. The RTL build is not
timed (it is cached under build/driver-rtl/).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver import BackendUnavailable, Device, Loop, MemType, Uop, gemm_kernel  # noqa: E402
from driver.backends import get_backend  # noqa: E402


def long_program(config: str, gemms: int):
    """The program image, and the micro-op executions it performs."""
    dev = Device(config, dram_bytes=4 << 20)
    c = dev.config
    rng = np.random.default_rng(0)
    n = 16
    inp = dev.array(rng.integers(-4, 4, (n, c.batch, c.block_in), dtype=np.int8))
    wgt = dev.array(rng.integers(-4, 4, (n, c.block_out, c.block_in), dtype=np.int8))
    acc = dev.array(np.zeros((n, c.batch, c.block_out), np.int32))
    out = dev.empty((n, c.batch, c.block_out), np.int8)
    kernel = gemm_kernel([Uop(i, i, i) for i in range(n)], [Loop(256), Loop(256)])
    s = dev.stream()
    s.load_2d(MemType.ACC, 0, acc, x_size=n)
    s.load_2d(MemType.INP, 0, inp, x_size=n)
    s.load_2d(MemType.WGT, 0, wgt, x_size=n)
    s.dep_push("load", "compute")
    s.dep_pop("load", "compute")
    for _ in range(gemms):
        s.gemm(kernel)
    s.dep_push("compute", "store")
    s.dep_pop("compute", "store")
    s.store_2d(0, out, x_size=n)
    return s.build_image(), gemms * kernel.executions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="small")
    ap.add_argument("--gemms", type=int, default=10)
    args = ap.parse_args(argv)
    image, executions = long_program(args.config, args.gemms)
    print(f"program: {image.insn_count} instructions, {executions} GEMM micro-op executions, "
          f"configuration {image.config}")
    results = {}
    for name in ("rtl", "functional", "cycle"):
        try:
            backend = get_backend(name)
            if name == "rtl":
                from driver.backends.rtl import build_harness
                start = time.perf_counter()
                build_harness(image.config)
                print(f"rtl: harness ready in {time.perf_counter() - start:.1f} s (cached build)")
            start = time.perf_counter()
            result = backend.run(image)
            seconds = time.perf_counter() - start
        except BackendUnavailable as exc:
            print(f"{name}: not available ({exc})")
            continue
        results[name] = result
        line = f"{name}: {seconds:.2f} s"
        if result.cycles is not None:
            line += (f", {result.cycles} cycles, "
                     f"{result.cycles / seconds / 1e6:.2f} M simulated cycles/s")
        print(line)
    ref = results.get("functional")
    for name, result in results.items():
        if ref is not None and not np.array_equal(result.dram, ref.dram):
            print(f"{name}: DRAM DIFFERS from functional")
            return 1
    if "rtl" in results and results["rtl"].cycles < 10_000_000:
        print("warning: fewer than ten million cycles; raise --gemms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
