"""ResNet-18 whole-model simulation time: one int8 inference (224x224, default configuration)
on the functional simulator, the cycle-accurate simulator and the Verilated RTL, beside the
original VTA's figures (apache/tvm PR #4986): 1.01 s on its C++ functional simulator (this
project's goal: under 0.5 s) and 227.73 s on its Verilator-based simulator (tsim, ~31 M cycles
for its unpipelined core).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_models_simtime.py [--no-cycle] [--rtl-layers 2]
        [--rtl-full]

The network is ``bench_resnet18.resnet18_text`` (random int8 weights, requantisation by shifts)
compiled untuned; the times are wall clock and CPU time of ``compiler.runtime.execute`` (CPU
segments included, compiled once beforehand). ``--rtl-layers N`` runs only the N smallest VTA
segments on the RTL and extrapolates the whole inference from their simulated cycles per second
(said so in the output; ``--rtl-layers 0`` skips it); ``--rtl-full`` runs the whole inference
on the RTL instead, printing each VTA segment as it finishes (a run cut short says how far it
got), checks its output against the functional simulator's, and prints what the extrapolation
would have said. One run with ``--rtl-full`` (session 5, load near 5 on 2 cores; CPU time, the
fair clock on a shared machine):

    simulator        this project   original
    functional       0.28 s         1.01 s    (goal < 0.5 s: met)
    cycle-accurate   11.3 s         227.73 s  (8.33 M cycles, 736 k cycles/s;
                                               8.34 M with GEMM_LATENCY 7)
    RTL (Verilator)  22 s           227.73 s  (measured on the whole inference, 25 s of wall
                                               clock; the extrapolation from the 2 smallest
                                               segments says 22 s)

The Verilated model is built before the clock starts: its compilers are children of this
process, whose CPU time the clock counts (an earlier extrapolation of ~1,840 s included them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

ANCHOR_FSIM, GOAL_FSIM, ANCHOR_TSIM = 1.01, 0.5, 227.73


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the Verilated model runs in
    one): a fair clock on a shared machine."""
    import resource
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def _timed(model, x, backend, cpu):
    from compiler.runtime import execute
    t, c = time.perf_counter(), _cpu()
    outs, report, _ = execute(model, {"data": x}, backend, cpu=cpu)
    return time.perf_counter() - t, _cpu() - c, outs[0], report


def _built_rtl(model):
    """The rtl backend with its Verilated model built beforehand: the build's compilers are
    children too, and their minutes of CPU must not count as simulation."""
    from driver.backends import get_backend
    from driver.backends.rtl import build_harness
    build_harness(model.config)
    return get_backend("rtl")


def _walk(model, x, cpu, run_vta):
    """Every segment of ``model`` in order, as ``compiler.runtime.execute`` runs them: the VTA
    ones by ``run_vta(seg, arrays)`` (their input arrays, with the residual), the CPU ones
    with ``cpu`` (its :func:`load_cpu` library); the values by tensor name."""
    from compiler.cpu import run_cpu_segment
    values = {"data": x}
    for seg in model.segments:
        args = [values[n] for n in seg.inputs]
        info = model.tensors[seg.output]
        if seg.target == "vta":
            arrays = {"data": args[0]}
            if seg.op.residual:
                arrays["residual"] = args[1]
            values[seg.output] = run_vta(seg, arrays).reshape(info.shape)
        else:
            values[seg.output] = (cpu.run(seg, args, info.shape, info.dtype) if seg.name in cpu
                                  else run_cpu_segment(seg, args))
    return values


def _rtl_subset(model, x, layers, cycles_total):
    """Run the ``layers`` smallest VTA segments on the RTL with their inputs from a functional
    run; (simulated cycles, wall seconds, extrapolated seconds for ``cycles_total``)."""
    from compiler.emit import run_linked
    from compiler.runtime import RunStats, load_cpu
    from driver.backends import get_backend
    # Inputs of each VTA segment: replay the model once on the functional simulator.
    fsim = get_backend("functional")
    inputs = {}

    def functional(seg, arrays):
        inputs[seg.name] = arrays
        return run_linked(seg.image, arrays, fsim, RunStats())
    _walk(model, x, load_cpu(model), functional)
    vta = sorted((s for s in model.segments if s.target == "vta"), key=lambda s: s.macs)[:layers]
    rtl = _built_rtl(model)
    cycles, wall = 0, 0.0
    for seg in vta:
        stats = RunStats()
        t = _cpu()
        run_linked(seg.image, inputs[seg.name], rtl, stats)
        wall += _cpu() - t
        cycles += stats.cycles
    return cycles, wall, cycles_total / (cycles / wall)


def _rtl_full(model, x, cpu, expected):
    """Run the whole inference on the RTL, segment by segment (with a progress line per VTA
    segment); (simulated cycles, CPU seconds and wall seconds of the whole inference, and of
    each VTA segment (name -> (cycles, CPU seconds)))."""
    from compiler.emit import run_linked
    from compiler.runtime import RunStats
    rtl = _built_rtl(model)
    total = sum(1 for s in model.segments if s.target == "vta")
    so_far, per = {"segments": 0, "cycles": 0}, {}
    start, wall = _cpu(), time.perf_counter()

    def on_rtl(seg, arrays):
        stats, t = RunStats(), _cpu()
        out = run_linked(seg.image, arrays, rtl, stats)
        per[seg.name] = (stats.cycles, _cpu() - t)
        so_far["segments"] += 1
        so_far["cycles"] += stats.cycles
        print(f"  RTL segment {so_far['segments']}/{total} {seg.name}: {stats.cycles:,} cycles; "
              f"{so_far['cycles']:,} cycles in {_cpu() - start:.0f} CPU s so far", flush=True)
        return out
    values = _walk(model, x, cpu, on_rtl)
    spent, wall = _cpu() - start, time.perf_counter() - wall
    out = values[model.outputs[0]]
    assert np.array_equal(out, expected), "RTL and functional simulator disagree"
    return so_far["cycles"], spent, wall, per


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--no-cycle", action="store_true", help="skip the cycle-accurate simulator")
    p.add_argument("--rtl-layers", type=int, default=2, help="VTA segments run on the RTL (0: skip)")
    p.add_argument("--rtl-full", action="store_true",
                   help="run the whole inference on the RTL (about half a CPU minute) instead of "
                        "extrapolating from --rtl-layers segments")
    p.add_argument("--repeat", type=int, default=3, help="functional runs (the best is reported)")
    args = p.parse_args(argv)
    import relay
    from bench_resnet18 import resnet18_text
    from compiler.compile import compile_module
    from compiler.runtime import load_cpu
    text, params = resnet18_text()
    t = time.perf_counter()
    model = compile_module(relay.parse(text), params, "default")
    cpu = load_cpu(model)
    print(f"ResNet-18 int8, 224x224, default configuration: compiled in {time.perf_counter() - t:.1f} s, "
          f"{model.macs / 1e9:.2f} G MACs, {model.vta_macs / model.macs:.1%} on VTA")
    x = np.random.default_rng(5).integers(-128, 128, (1, 3, 224, 224)).astype(np.int8)
    runs = [_timed(model, x, "functional", cpu) for _ in range(max(1, args.repeat))]
    fsim, fcpu, out_f, _ = min(runs, key=lambda r: r[1])
    print(f"{'simulator':<22} {'this project':>14} {'original':>10} {'ratio':>7}   (wall clock; CPU time "
          f"in brackets: the machine may be shared)")
    print(f"{'functional':<22} {fsim:>12.2f} s {ANCHOR_FSIM:>8.2f} s {fsim / ANCHOR_FSIM:>7.2f}   "
          f"[CPU {fcpu:.2f} s, ratio {fcpu / ANCHOR_FSIM:.2f}] (goal < {GOAL_FSIM} s: "
          f"{'met' if fcpu < GOAL_FSIM else 'not met'})")
    cycles = None
    if not args.no_cycle:
        wall, ccpu, out_c, report = _timed(model, x, "cycle", cpu)
        cycles = report["cycles"]
        assert np.array_equal(out_c, out_f), "cycle simulator and functional simulator disagree"
        print(f"{'cycle-accurate':<22} {wall:>12.1f} s {ANCHOR_TSIM:>8.1f} s {wall / ANCHOR_TSIM:>7.2f}   "
              f"[CPU {ccpu:.1f} s, ratio {ccpu / ANCHOR_TSIM:.2f}] ({cycles / 1e6:.2f} M cycles, "
              f"{cycles / ccpu / 1e3:.0f} k cycles per CPU second; original tsim ~31 M cycles)")
    if args.rtl_full:
        done, spent, wall, per = _rtl_full(model, x, cpu, out_f)
        print(f"{'RTL (Verilator)':<22} {wall:>12.0f} s {ANCHOR_TSIM:>8.1f} s {wall / ANCHOR_TSIM:>7.2f}   "
              f"[CPU {spent:.0f} s, ratio {spent / ANCHOR_TSIM:.2f}] (the whole inference, measured: "
              f"{done:,} cycles, {done / spent / 1e3:.1f} k cycles per CPU second; output equal to "
              f"the functional simulator's)")
        # What --rtl-layers would have extrapolated, from this run's segments.
        small = sorted((s for s in model.segments if s.target == "vta"), key=lambda s: s.macs)
        c, t = (sum(per[s.name][i] for s in small[:max(1, args.rtl_layers)]) for i in (0, 1))
        print(f"{'':<22} (extrapolating from the {max(1, args.rtl_layers)} smallest segments "
              f"instead, as --rtl-layers does: {done / (c / t):.0f} CPU s)")
    elif args.rtl_layers > 0:
        if cycles is None:
            print("RTL: needs the cycle count of the whole network (run without --no-cycle)")
            return 0
        done, wall, est = _rtl_subset(model, x, args.rtl_layers, cycles)
        print(f"{'RTL (Verilator)':<22} {est:>12.0f} s {ANCHOR_TSIM:>8.1f} s {est / ANCHOR_TSIM:>7.2f}   "
              f"(CPU time extrapolated from the {args.rtl_layers} smallest VTA segments: {done:,} cycles in "
              f"{wall:.1f} CPU s, {done / wall / 1e3:.1f} k cycles/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
