"""Simulated cycles per second of the cycle-accurate simulator and of the compiled RTL.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_cycle.py [--config default small]
        [--latency 4 32] [--scale 1] [--repeat 3] [--baseline DIR]

Two long programs, each about a million cycles: a blocked GEMM (per block: load an INP
tile and a WGT tile, one GEMM over them, store the block) and a convolution-like program (a
3 × 3 kernel over padded input tiles, weights loaded once, ReLU and requantisation by ALU,
store), their tiles sized to fit each configuration's buffers. Both run on ``sim.cycle`` and on
the driver's ``rtl`` backend (its Verilator build is cached and not timed) for every
configuration and ``MEM_LATENCY``; cycles, counters and DRAM must agree. The issue's goal is a
speed-up of at least 10x, judged in CPU time (this process and the harness processes it
starts): on a shared machine the wall time mostly measures the other users. The last lines
are a table of the ratios. ``--baseline DIR`` also times the cycle simulator of another
checkout (e.g. ``git worktree add /tmp/before <commit>``) on the same images in the same run,
in a child process, and prints its ratio as "before". Figures: docs/timing.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver import Device, Loop, MemType, Uop, gemm_kernel  # noqa: E402
from driver.kernel import alu_kernel  # noqa: E402
from isa.encoding import AluOp  # noqa: E402


def _gemm_tile(c) -> tuple[int, int, int]:
    """(mi, ki, no) of the blocked GEMM: 128 × 8 INP and 8 × 8 WGT blocks where they fit."""
    ki, no = 8, 8
    return min(128, c.inp_depth // ki, c.acc_depth // no), ki, no


def _conv_tile(c) -> tuple[int, int]:
    """(side, output blocks) of the convolution-like tile: 16 × 16 × 4 where it fits."""
    side = 16 if 18 * 18 <= c.inp_depth else 8
    return side, max(1, min(4, c.acc_depth // (side * side), c.wgt_depth // 9))


def blocked_gemm(config, blocks: int):
    """``blocks`` × (load mi × 8 INP tiles and 8 × 8 WGT tiles, GEMM mi × 64 micro-ops,
    store): mi = 128 on ``default``."""
    dev = Device(config, dram_bytes=64 << 20)
    c = dev.config
    rng = np.random.default_rng(1)
    mi, ki, no = _gemm_tile(c)
    inp = dev.array(rng.integers(-3, 3, (blocks, mi * ki, c.batch, c.block_in), dtype=np.int8))
    wgt = dev.array(rng.integers(-3, 3, (blocks, no * ki, c.block_out, c.block_in),
                                 dtype=np.int8))
    out = dev.empty((blocks, mi * no, c.batch, c.block_out), np.int8)
    reset = gemm_kernel([Uop(0, 0, 0)], [Loop(mi * no, 1, 0, 0)], reset=True)
    kernel = gemm_kernel([Uop(0, k, k) for k in range(ki)],
                         [Loop(mi, no, ki, 0), Loop(no, 1, 0, ki)])
    s = dev.stream()
    for b in range(blocks):
        if b:
            s.dep_pop("compute", "load")
        s.load_2d(MemType.INP, 0, inp, b * mi * ki, x_size=mi * ki)
        s.load_2d(MemType.WGT, 0, wgt, b * no * ki, x_size=no * ki)
        s.dep_push("load", "compute")
        s.dep_pop("load", "compute")
        if b:
            s.dep_pop("store", "compute")
        s.gemm(reset)
        s.gemm(kernel)
        s.dep_push("compute", "load")
        s.dep_push("compute", "store")
        s.dep_pop("compute", "store")
        s.store_2d(0, out, b * mi * no, x_size=mi * no)
        s.dep_push("store", "compute")
    s.dep_pop("store", "compute")
    s.dep_pop("compute", "load")
    return s.build_image()


def conv_like(config, tiles: int):
    """``tiles`` × (a padded input tile, 3 × 3 × ``no`` output blocks, ReLU, shift, store):
    16 × 16 and 4 blocks on ``default``."""
    dev = Device(config, dram_bytes=64 << 20)
    c = dev.config
    rng = np.random.default_rng(2)
    h = w = _conv_tile(c)[0]
    no = _conv_tile(c)[1]
    inp = dev.array(rng.integers(-3, 3, (tiles, h * w, c.batch, c.block_in), dtype=np.int8))
    wgt = dev.array(rng.integers(-3, 3, (no * 9, c.block_out, c.block_in), dtype=np.int8))
    out = dev.empty((tiles, h * w * no, c.batch, c.block_out), np.int8)
    wp = w + 2
    reset = gemm_kernel([Uop(0, 0, 0)], [Loop(h * w * no, 1, 0, 0)], reset=True)
    conv = gemm_kernel([Uop(n, ky * wp + kx, n * 9 + ky * 3 + kx)
                        for n in range(no) for ky in range(3) for kx in range(3)],
                       [Loop(h, w * no, wp, 0), Loop(w, no, 1, 0)])
    relu = alu_kernel(AluOp.MAX, [Uop(0, 0, 0)], [Loop(h * w * no, 1, 0, 0)], imm=0)
    shift = alu_kernel(AluOp.SHR, [Uop(0, 0, 0)], [Loop(h * w * no, 1, 0, 0)], imm=2)
    s = dev.stream()
    s.load_2d(MemType.WGT, 0, wgt, x_size=no * 9)
    for t in range(tiles):
        if t:
            s.dep_pop("compute", "load")
        s.load_2d(MemType.INP, 0, inp, t * h * w, x_size=w, y_size=h, y_pad=(1, 1),
                  x_pad=(1, 1))
        s.dep_push("load", "compute")
        s.dep_pop("load", "compute")
        if t:
            s.dep_pop("store", "compute")
        s.gemm(reset)
        s.gemm(conv)
        s.dep_push("compute", "load")
        s.alu(relu)
        s.alu(shift)
        s.dep_push("compute", "store")
        s.dep_pop("compute", "store")
        s.store_2d(0, out, t * h * w * no, x_size=h * w * no)
        s.dep_push("store", "compute")
    s.dep_pop("store", "compute")
    s.dep_pop("compute", "load")
    return s.build_image()


def _cpu() -> float:
    """CPU seconds used so far by this process and its (finished) children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _time(run, image, repeat=1):
    """The result and the fastest of ``repeat`` runs' wall time and CPU time (this process and
    the simulator processes it starts: on a shared machine the wall time mostly measures the
    other users)."""
    best = best_cpu = None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu()
        result = run(image)
        took, used = time.perf_counter() - start, _cpu() - cpu
        best = took if best is None else min(best, took)
        best_cpu = used if best_cpu is None else min(best_cpu, used)
    return result, best, best_cpu


#: The issue's goal: simulated cycles per second at least this many times the Verilated RTL's.
GOAL = 10.0


def programs(cfg, scale: float) -> dict:
    """The two programs for ``cfg``, each about a million cycles at ``scale`` 1 (their
    blocks' count scaled from the ``default`` tiles' work)."""
    mi, ki, no = _gemm_tile(cfg)
    side, no_conv = _conv_tile(cfg)
    gemm_blocks = 60 * 128 / mi
    conv_tiles = 70 * (16 * 16 * 4) / (side * side * no_conv)
    return {"blocked GEMM": blocked_gemm(cfg, max(1, int(gemm_blocks * scale))),
            "convolution-like": conv_like(cfg, max(1, int(conv_tiles * scale)))}


#: Run in a child process with a baseline checkout first on ``sys.path``: the CPU time of its
#: ``run_image`` on an image file (best of ``repeat``), its cycles and counters.
_BASELINE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from isa.image import load_image
from sim.cycle import run_image
image = load_image(sys.argv[2])     # not timed (as in measure(): the image is in memory)
run_image(image)            # warm-up (lazy imports, first-touch pages), as in measure()
best = None
for _ in range(int(sys.argv[3])):
    cpu = time.process_time()
    r = run_image(image)
    used = time.process_time() - cpu
    best = used if best is None else min(best, used)
print(json.dumps({"cpu": best, "cycles": r.cycles, "counters": r.counters}))
"""


def baseline_cpu(baseline: str, image, repeat: int, expect) -> float:
    """CPU seconds of the baseline checkout's cycle simulator on ``image`` (which must give
    the cycles and counters of ``expect``)."""
    from isa.image import save_image
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "image.npz")
        save_image(path, image)
        done = subprocess.run([sys.executable, "-c", _BASELINE, baseline, path, str(repeat)],
                              capture_output=True, text=True, timeout=3600, cwd=baseline)
    if done.returncode:
        raise RuntimeError(f"the baseline at {baseline} failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.splitlines()[-1])
    if out["cycles"] != expect.cycles or out["counters"] != expect.counters:
        raise RuntimeError(f"the baseline at {baseline} disagrees: {out['cycles']} cycles")
    return out["cpu"]


def measure(cfg, scale: float, repeat: int, rtl, baseline: str | None = None) -> list:
    """Run both programs on both simulators; print a line each; return (program, cycles,
    speed-up in CPU time or None, exact, the baseline's speed-up or None) per program."""
    from sim.cycle import run_image
    rows = []
    for name, image in programs(cfg, scale).items():
        run_image(image)        # warm-up: lazy imports and first-touch pages are not timed
        sim, sim_s, sim_cpu = _time(run_image, image, repeat)
        line = (f"{cfg.name} MEM_LATENCY {cfg.mem_latency}, {name}: {image.insn_count} "
                f"instructions, {sim.cycles} cycles; cycle sim {sim_s:.2f} s wall, "
                f"{sim_cpu:.2f} s CPU = {sim.cycles / sim_cpu / 1e6:.2f} M cycles/s")
        speedup, same, before = None, True, None
        if rtl is not None:
            ref, rtl_s, rtl_cpu = _time(rtl.run, image, repeat)
            same = (ref.cycles == sim.cycles and np.array_equal(ref.dram, sim.dram)
                    and all(ref.counters[k] == sim.counters[k] for k in ref.counters))
            speedup = rtl_cpu / sim_cpu
            line += (f"; rtl {rtl_s:.2f} s wall, {rtl_cpu:.2f} s CPU = "
                     f"{ref.cycles / rtl_cpu / 1e6:.2f} M cycles/s; speed-up {speedup:.1f}x "
                     f"in CPU time, {rtl_s / sim_s:.1f}x in wall time (goal {GOAL:.0f}x: "
                     f"{'met' if speedup >= GOAL else 'NOT met'}); "
                     f"{'exact' if same else 'MISMATCH'}")
        if baseline is not None and rtl is not None:
            base_cpu = baseline_cpu(baseline, image, repeat, sim)
            before = rtl_cpu / base_cpu
            line += f"; baseline {base_cpu:.2f} s CPU = {before:.1f}x"
        print(line, flush=True)
        s = sim.summary
        print(f"  GEMM utilisation {s['mac_utilisation']:.1%}, memory busy "
              f"{s['mem_busy_fraction']:.1%}, {s['bandwidth_bytes_per_cycle']:.2f} bytes/cycle")
        rows.append((name, sim.cycles, speedup, same, before))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="+", default=["default", "small"],
                    help="configuration names or JSON files (default: default small)")
    ap.add_argument("--latency", nargs="+", type=int, default=[4, 32],
                    help="MEM_LATENCY values to run each configuration at (default: 4 32)")
    ap.add_argument("--scale", type=float, default=1.0, help="program length factor")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time each simulator this many times and keep the fastest")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another checkout whose cycle simulator is timed too (\"before\")")
    args = ap.parse_args(argv)
    from driver.backends import BackendUnavailable, get_backend
    from isa.config import load_config
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    table = []
    for name in args.config:
        base = load_config(name)
        try:
            rtl = get_backend("rtl")
            from driver.backends.rtl import build_harness
            build_harness(base)
        except BackendUnavailable as exc:
            rtl = None
            print(f"rtl: not available ({exc})")
        for latency in args.latency:
            cfg = base.replace(mem_latency=latency)
            table += [(cfg.name, latency, *row) for row in measure(cfg, args.scale,
                                                                   args.repeat, rtl,
                                                                   args.baseline)]
    print(f"\nspeed-up of the cycle simulator over the RTL in CPU time (goal {GOAL:.0f}x); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'config':<10} {'latency':>7}  {'program':<18} {'cycles':>9}  {'speed-up':>8}"
          + ("  before" if args.baseline else ""))
    status = 0
    for cfg_name, latency, prog, cycles, speedup, same, before in table:
        ratio = "n/a" if speedup is None else f"{speedup:.1f}x"
        verdict = ("" if speedup is None else " met" if speedup >= GOAL else " NOT met")
        was = "" if before is None else f"  {before:.1f}x"
        print(f"{cfg_name:<10} {latency:>7}  {prog:<18} {cycles:>9}  {ratio:>8}{verdict}{was}"
              f"{'' if same else '  MISMATCH'}")
        status |= not same
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
