"""``vta sweep``: run a design-space sweep and write its table, frontier, report and plots."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

__all__ = ["register", "main", "DEFAULT_CACHE"]

#: Where results are cached unless --cache says otherwise (git-ignored build/).
DEFAULT_CACHE = Path("build") / "designspace-cache"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="design-space sweep: resources, Fmax, cycles, Pareto frontier",
        description="Sweep a design space (a TOML or JSON file, see docs/designspace.md): "
                    "cycles of each workload from the cycle-accurate simulator, resources "
                    "from Yosys synth_ecp5 for the points the screening model cannot rule "
                    "out, Fmax from nextpnr-ecp5 for the frontier. Writes OUT/points.csv, "
                    "OUT/frontier.csv, OUT/rejected.csv, OUT/report.md and plots. Every "
                    "result is cached: an interrupted sweep resumes where it stopped.")
    p.add_argument("--space", required=True, metavar="FILE", help="the space file")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the results")
    p.add_argument("--cache", metavar="DIR", default=str(DEFAULT_CACHE),
                   help=f"result cache (default {DEFAULT_CACHE})")
    p.add_argument("--no-cache", action="store_true", help="recompute everything")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="parallel tasks (default: the number of cores)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the tasks on the Dask cluster of this scheduler")
    p.add_argument("--dask", action="store_true",
                   help="run the tasks on a local Dask cluster (LocalCluster)")
    p.add_argument("--synthesis", choices=("real", "model"), default="real",
                   help="real: Yosys/nextpnr for what the model cannot rule out (default); "
                        "model: the screening model only, no FPGA tools")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    p.set_defaults(func=main)


def main(args) -> int:
    from .cache import Cache
    from .report import write_results
    from .runners import RunnerError, make_runner
    from .space import SpaceError, load_space
    from .sweep import SweepError, run_sweep
    from .synth import SynthesisError

    def fail(code: int, msg: str) -> int:
        print(f"vta sweep: error: {msg}", file=sys.stderr)
        return code

    if args.jobs is not None and args.jobs < 1:
        return fail(2, f"--jobs must be at least 1, got {args.jobs}")
    try:
        space = load_space(args.space)
    except SpaceError as exc:
        return fail(2, str(exc))
    if not args.no_plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return fail(2, "the plots need matplotlib: `pip install -e '.[plot]'` or "
                           "give --no-plots")
    try:
        cache = Cache(None if args.no_cache else args.cache)
        with make_runner(jobs=args.jobs, scheduler=args.scheduler, dask=args.dask) as runner:
            result = run_sweep(space, cache=cache, runner=runner, synthesis=args.synthesis,
                               progress=not args.no_progress,
                               log=lambda m: print(m, file=sys.stderr))
        out = write_results(result, args.out, plots=not args.no_plots)
    except RunnerError as exc:
        return fail(2, str(exc))
    except (SweepError, SynthesisError) as exc:
        return fail(1, str(exc))
    except OSError as exc:
        return fail(2, f"cannot write {args.out} or the cache: {exc}")
    except Exception:  # noqa: BLE001 - a bug: show it, exit 3
        traceback.print_exc()
        return fail(3, "internal error (a bug; please report it)")
    real = sum(r["resources_from"] == "yosys" for r in result.rows)
    print(f"{len(result.rows)} points ({real} synthesised), {len(result.frontier)} on the "
          f"frontier, {len(result.rejected)} rejected, {len(result.failed)} failed -> {out}")
    return 1 if result.failed and not result.rows else 0
