"""The SDRAM board's bus efficiency: long loads and stores on the Verilated board (``--link
board-sim``: core, LiteDRAM, the behavioural SDRAM chip), before and after several bursts in
flight in the SDRAM adapter, in one run.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_sdram.py [--baseline REV] [--repeat N]

Each program moves one memory type: ``repeat`` whole-buffer LOADs of INP, WGT or ACC, or
``repeat`` whole-buffer STOREs of OUT, on the ``small`` configuration (the board simulation's).
Efficiency = bytes moved / (the module's busy cycles × the SDRAM's peak bytes per cycle); the
peak is the chip's 16-bit DQ at the core clock (2 bytes a cycle; refresh and row changes make
100 % unreachable). ``--baseline REV`` (default ``03cb754``, one burst at a time through
LiteDRAM's down-converter) runs the same programs on that revision's tree (``git archive``
into a temporary folder, run there in a subprocess, its own Verilator build: minutes).
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

#: The commit before several bursts in flight on the SDRAM board.
BASELINE = "03cb754"
#: The chip's DQ width in bytes: what the SDRAM moves per cycle at best.
PEAK_BYTES_PER_CYCLE = 2


def programs(repeat: int):
    """(name, image, bytes moved, busy counter) for each memory type."""
    from driver import Device, MemType
    from isa.config import load_config
    cfg = load_config("small")
    kinds = {"INP": (MemType.INP, cfg.inp_depth, cfg.inp_elem_bytes, "load_busy"),
             "WGT": (MemType.WGT, cfg.wgt_depth, cfg.wgt_elem_bytes, "load_busy"),
             "ACC": (MemType.ACC, cfg.acc_depth, cfg.acc_elem_bytes, "compute_busy"),
             "OUT": (None, cfg.acc_depth, cfg.out_elem_bytes, "store_busy")}
    out = []
    for name, (mt, depth, eb, counter) in kinds.items():
        dev = Device(cfg, dram_bytes=8 << 10)
        buf = dev.alloc(depth * eb)
        s = dev.stream(insn_capacity=32, uop_capacity=16)
        for _ in range(repeat):
            if mt is None:
                s.store_2d(0, buf, 0, x_size=depth)
            else:
                s.load_2d(mt, 0, buf, 0, x_size=depth)
        out.append((name, s.build_image(), repeat * depth * eb, counter))
    return out


def measure(repeat: int) -> dict:
    """Efficiency per memory type on the SDRAM board simulation of this tree."""
    from hw.board.simserial import BOARD_SIM_BYTES, run_on_board_sim
    progs = programs(repeat)
    results = run_on_board_sim([p[1] for p in progs], mem_bytes=BOARD_SIM_BYTES,
                               memory="sdram")
    out = {}
    for (name, _, nbytes, counter), r in zip(progs, results):
        if "error" in r:
            raise RuntimeError(f"{name}: {r['error']}")
        if int(r.get("sdram_violation", 0)):
            raise RuntimeError(f"{name}: the SDRAM chip model saw violation "
                               f"{int(r['sdram_violation'])}")
        busy = int(r[counter])
        out[name] = {"bytes": nbytes, "busy": busy,
                     "efficiency": nbytes / (busy * PEAK_BYTES_PER_CYCLE)}
    return out


def baseline(rev: str, repeat: int) -> "dict | None":
    """The same measurement on revision ``rev`` (None if it cannot be run)."""
    return measure_at(rev, __file__, ["--repeat", str(repeat)])


def report(now: dict, before: "dict | None", rev: str) -> None:
    print(f"SDRAM board (small, 16-bit SDRAM at the core clock, peak "
          f"{PEAK_BYTES_PER_CYCLE} B/cycle): bus efficiency of long transfers")
    print(f"  {'':4} {'bytes':>6}  {'before (' + rev + ')':>22}  {'after':>18}  ratio")
    for name, r in now.items():
        old = before.get(name) if before else None
        was = f"{old['efficiency']:6.1%} ({old['busy']:5d} cyc)" if old else "—"
        ratio = f"{r['efficiency'] / old['efficiency']:.2f}×" if old else ""
        print(f"  {name:4} {r['bytes']:6d}  {was:>22}  "
              f"{r['efficiency']:6.1%} ({r['busy']:5d} cyc)  {ratio}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, metavar="REV",
                    help="git revision measured for the 'before' figures ('' for none)")
    ap.add_argument("--repeat", type=int, default=4, metavar="N",
                    help="whole-buffer transfers per program (default 4)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    now = measure(args.repeat)
    if args.json:
        print(json.dumps(now))
        return 0
    before = baseline(args.baseline, args.repeat) if args.baseline else None
    report(now, before, args.baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
