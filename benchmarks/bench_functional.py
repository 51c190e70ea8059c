"""Functional simulator speed on the original test suite's blocked 256x256x256 GEMM.

test_lib's ``blocked_gemm_test(256, 256, 64, ...)`` on the default configuration: 65,536 GEMM
micro-ops (16.8 M multiply-accumulates) plus the loads, stores and token traffic around them.
Prints the best of several runs, so that a busy machine disturbs the figure as little as
possible, and checks every result against numpy.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from isa.config import load_config  # noqa: E402
from isa.conformance.family_gemm import blocked_gemm_program  # noqa: E402
from sim.functional import run_image  # noqa: E402

REPEATS = 5


def main() -> int:
    cfg = load_config("default")
    print(f"blocked 256x256x256 GEMM, block 64, on {cfg}")
    print(f"{'variant':<28}{'insns':>7}{'uops':>8}{'best s':>9}{'MAC/s':>10}")
    for vt in (1, 2):
        for compressed in (False, True):
            program = blocked_gemm_program(cfg, 0, vt, compressed, size=256, block=64)
            best = float("inf")
            for _ in range(REPEATS):
                start = time.perf_counter()
                result = run_image(program.image)
                best = min(best, time.perf_counter() - start)
                problems = program.check_dram(result.dram)
                if problems:
                    print(f"WRONG RESULT: {problems[:3]}")
                    return 1
            uops = result.counters["gemm_counter"]
            variant = f"vt{vt} {'compressed' if compressed else 'uncompressed'}"
            print(f"{variant:<28}{program.image.insn_count:>7}{uops:>8}{best:>9.3f}"
                  f"{uops * cfg.macs_per_cycle / best:>10.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
