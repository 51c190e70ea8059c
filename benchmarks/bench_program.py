"""Speed of the device-free program layer on a conv-like stream: instructions built, linked,
saved, loaded and dumped per second, and the same stream through the driver's CommandStream
on a functional device (build + link only: the backend does not run).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_program.py [--units 6000] [--config default]

Each unit is what a compiler emits per tile: wait for compute to free the SRAM, load weights
and inputs, one GEMM over a shared 16-micro-op kernel, store, with the four token queues in
use, so the stream splits into several launches. Anchor: the compiler's goal is an untuned
ResNet-18 (about 10^5 instructions) compiled in under 10 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from isa import load_config  # noqa: E402
from isa.arch import MemType  # noqa: E402
from isa.encoding import Uop  # noqa: E402
from isa.program import Loop, StreamBuilder, gemm_kernel, load_program  # noqa: E402


def emit(b, units: int, cfg, params, inp, out) -> None:
    kernels = [gemm_kernel([Uop(j, 0, j) for j in range(16)], [Loop(4, 16, 1, 0)])
               for _ in range(8)]
    for i in range(units):
        with b.unit():
            if i:
                b.dep_pop("compute", "load")
                b.dep_pop("store", "compute")
            b.load_2d(MemType.WGT, 0, params[i % len(params)], 0, x_size=64)
            b.load_2d(MemType.INP, 0, inp, i % 1000, x_size=4)
            b.dep_push("load", "compute")
            b.dep_pop("load", "compute")
            b.gemm(kernels[i % 8])
            b.dep_push("compute", "load")
            b.dep_push("compute", "store")
            b.dep_pop("compute", "store")
            b.store_2d(0, out, i % 1000, x_size=4)
            b.dep_push("store", "compute")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--units", type=int, default=6000)
    ap.add_argument("--config", default="default")
    args = ap.parse_args()
    cfg = load_config(args.config)
    wshape = (64, cfg.block_out, cfg.block_in)

    t0 = time.perf_counter()
    b = StreamBuilder(cfg)
    params = [b.parameter(f"w{i}", np.zeros(wshape, np.int8)) for i in range(60)]
    inp = b.input("x", (1024, cfg.batch, cfg.block_in), np.int8)
    out = b.output("y", (1024, cfg.batch, cfg.block_out), np.int8)
    emit(b, args.units, cfg, params, inp, out)
    prog = b.build()
    t1 = time.perf_counter()
    linked = prog.link()
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.npz"
        prog.save(path)
        t3 = time.perf_counter()
        load_program(path)
        t4 = time.perf_counter()
    prog.dump()
    t5 = time.perf_counter()

    from driver import Device
    dev = Device(cfg, dram_bytes=64 << 20)
    dev.launch = lambda image, timeout=None: None      # build and link only
    s = dev.stream()
    dparams = [dev.empty(wshape, np.int8) for _ in range(60)]
    t6 = time.perf_counter()
    emit(s, args.units, cfg, dparams, dev.empty((1024, cfg.batch, cfg.block_in), np.int8),
         dev.empty((1024, cfg.batch, cfg.block_out), np.int8))
    s.synchronize()
    t7 = time.perf_counter()

    n = prog.instruction_count
    print(f"{n} instructions in {len(prog.launches)} launches ({cfg.name}), "
          f"{linked.dram_bytes / 2**20:.1f} MiB of DRAM")
    for what, dt in (("build (StreamBuilder)", t1 - t0), ("link", t2 - t1), ("save", t3 - t2),
                     ("load", t4 - t3), ("dump", t5 - t4),
                     ("driver stream, build + link", t7 - t6)):
        print(f"  {what:<30} {dt:6.2f} s  {n / dt / 1e3:7.1f} k instructions/s")
    total = t2 - t0
    print(f"  build + link: {total:.2f} s; at this rate 10^5 instructions take "
          f"{1e5 * total / n:.1f} s (the compiler's anchor: 10 s for all of ResNet-18)")


if __name__ == "__main__":
    main()
