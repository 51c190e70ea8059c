"""``vta sim`` (``make sim``): the main job on one configuration, checked against references.

The default workload is the bundled model (``vta/demo_model.py``: the digits CNN from ONNX,
quantised, compiled and run). ``--workload gemm`` runs the original test suite's blocked int8
matrix multiply (256 x 256 x 256 in blocks of 64 on the default configuration, scaled on
others), checked against numpy, followed by the conformance suite: the original simulator's
reference images (where the configuration matches) and the generated programs.
"""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["register", "run_demo", "MAX_SIZE"]

#: The largest --size (its three matrices and the program stay well under 100 MB of DRAM).
MAX_SIZE = 2048


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sim", help="run the bundled model (or the GEMM and conformance suite) on a backend",
        description="The main job. By default: import the bundled digits CNN (ONNX), quantise "
                    "it to int8, compile it for the configuration and classify held-out images "
                    "on the backend; every output must equal the Relay interpreter's, and int8 "
                    "accuracy is compared with float; prints the classification, cycles and "
                    "per-layer GEMM utilisation. --workload gemm: a tiled int8 matrix multiply "
                    "and the conformance suite, checked against numpy and the original "
                    "simulator.")
    p.add_argument("--workload", choices=("model", "gemm"), default="model",
                   help="the bundled model (default) or the GEMM + conformance suite")
    p.add_argument("--images", type=int, default=32,
                   help="model: how many held-out images to classify (default: %(default)s)")
    p.add_argument("--backend", default="functional",
                   choices=("functional", "cycle", "rtl", "board"),
                   help="where to run (default: %(default)s)")
    p.add_argument("--config", default="default",
                   help="configuration name or JSON path (default: %(default)s)")
    p.add_argument("--size", type=int, default=None,
                   help=f"gemm: matrix size of the GEMM, a multiple of twice the block, at most "
                        f"{MAX_SIZE} (default: 256 on the default configuration)")
    p.add_argument("--quick", action="store_true",
                   help="gemm: only the GEMM and the reference images, not the generated suite")
    p.set_defaults(func=_main)


def _main(args) -> int:
    if args.workload == "model":
        from .demo_model import run_model_demo
        return run_model_demo(args.backend, args.config, images=args.images)
    return run_demo(args.backend, args.config, size=args.size, quick=args.quick)


def run_demo(backend_name: str, config: str, *, size: int | None = None,
             quick: bool = False, out=None) -> int:
    """Run the demo; returns 0 when everything matched its reference."""
    out = sys.stdout if out is None else out
    from driver.backends import get_backend
    from isa.config import load_config
    from isa.conformance import conformance_programs
    from isa.conformance.family_gemm import blocked_gemm_program, fitting_block

    cfg = load_config(config)
    backend = get_backend(backend_name)
    failures = 0

    # 1. The workload: a tiled int8 matrix multiply with bias, narrowed to int8.
    # The original's 256^3 in blocks of 64 on the default configuration, else scaled.
    block = 64 if cfg == load_config("default") else fitting_block(cfg, 2)
    if size is not None and not (0 < size <= MAX_SIZE and size % (2 * block) == 0):
        from isa.errors import InputError
        raise InputError(f"--size {size}: the GEMM size must be a positive multiple of "
                         f"{2 * block} (two blocks of {block}) and at most {MAX_SIZE}")
    size = size or (256 if block == 64 else 4 * block)
    print(f"VTA on {cfg}, backend {backend.name}", file=out)
    program = blocked_gemm_program(cfg, 0, 2, False, size=size, block=block)
    start = time.perf_counter()
    result = backend.run(program.image)
    seconds = time.perf_counter() - start
    problems = program.check_dram(result.dram)
    failures += bool(problems)
    # The functional simulator counts micro-ops as the original did; the hardware as gemm_uops.
    uops = result.counters.get("gemm_uops", result.counters.get("gemm_counter", 0))
    macs = uops * cfg.macs_per_cycle
    print(f"\nGEMM {size}x{size}x{size} (int8 x int8 + int32 bias -> int8), blocks of {block}, "
          f"two virtual threads: {'OK, equals numpy' if not problems else 'MISMATCH'}", file=out)
    for problem in problems[:5]:
        print(f"  {problem}", file=out)
    print(f"  {program.image.insn_count} instructions, {macs:,} multiply-accumulates, "
          f"{seconds:.3f} s on {backend.name}", file=out)
    if result.cycles:
        print(f"  {result.cycles:,} cycles, GEMM utilisation {uops / result.cycles:.1%} "
              f"(micro-ops per cycle; peak {cfg.macs_per_cycle} MACs each)", file=out)
    for key in sorted(result.counters):
        if result.counters[key]:
            print(f"  {key:<22} {result.counters[key]:>12,}", file=out)

    # 2. The original functional simulator's images, where the configuration matches.
    refs = _reference_images(cfg)
    bad = 0
    for image, expect in refs:
        got = backend.run(image).dram
        bad += not np.array_equal(got, expect)
    failures += bad
    print(f"\nreference images of the original simulator for this configuration: "
          f"{len(refs) - bad}/{len(refs)} byte-identical DRAM", file=out)

    # 3. The generated conformance suite.
    if not quick:
        programs = conformance_programs(cfg)
        wrong = []
        for prog in programs:
            wrong += prog.check_run(backend.run)
        good = sum(not p.is_bad for p in programs)
        print(f"conformance suite: {len(programs)} programs ({good} computing, "
              f"{len(programs) - good} that must be rejected): "
              f"{len(programs) - len({w.split(':')[0] for w in wrong})} pass", file=out)
        for problem in wrong[:10]:
            print(f"  {problem}", file=out)
        failures += len(wrong)
    print("\nall checks passed" if not failures else f"\n{failures} checks FAILED", file=out)
    return 0 if not failures else 1


def _reference_images(cfg):
    from pathlib import Path

    from isa.image import load_image

    root = Path(__file__).resolve().parents[1] / "tests" / "data" / "conformance"
    out = []
    for path in sorted(root.glob("*.in.npz")):
        image = load_image(path)
        if image.config == cfg:
            out.append((image, np.load(str(path).replace(".in.npz", ".expect.npz"))["dram"]))
    return out
