"""``vta sweep``: run a design-space sweep and write its table, frontier, report and plots."""

from __future__ import annotations

import sys
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
                    "result is cached: an interrupted sweep resumes where it stopped. "
                    "--dry-run only checks the space and counts its points.")
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
    p.add_argument("--synthesis", choices=("real", "cached", "model"), default="real",
                   help="real: Yosys/nextpnr for what the model cannot rule out (default); "
                        "cached: no FPGA tools, the cache's real results and the model for "
                        "the rest; model: the screening model only")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    p.add_argument("--dry-run", action="store_true",
                   help="check the space and the options, print the number of points (and "
                        "of those rejected by VTAConfig or excluded by the constraints) and "
                        "the workloads; run and write nothing")
    p.set_defaults(func=main)


def main(args) -> int:
    """Errors are the project's own (``isa.errors``): ``vta`` prints one line and exits 2 for
    a bad space file or option, 1 for a space nothing of which could be measured, 5 for a
    missing tool or Dask, 3 for a bug."""
    from isa.errors import InputError

    from .cache import Cache
    from .report import write_results
    from .runners import make_runner
    from .space import expand, load_space
    from .sweep import run_sweep

    # Everything that can be refused is refused here, before minutes of work.
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {args.out} is a file; give a folder (it is replaced as a "
                         f"whole)")
    if not out.parent.is_dir():
        raise InputError(f"--out {args.out}: the folder {out.parent} does not exist; create "
                         f"it first")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be at least 1, got {args.jobs}")
    space = load_space(args.space)
    if not args.no_plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError("the plots need matplotlib: `pip install -e '.[plot]'` or give "
                             "--no-plots") from None
    # Expanding evaluates every expression and constraint: a space that fails there is refused
    # now, not after the cache and the workers are set up (run_sweep expands it again: ms).
    exp = expand(space)
    if args.dry_run:
        print(f"{len(exp.points)} points ({len(exp.rejected)} rejected by VTAConfig, "
              f"{exp.excluded} excluded by constraints), search {space.method}, "
              f"{len(space.workloads)} workloads: {', '.join(space.workloads)}")
        return 0
    try:
        cache = Cache(None if args.no_cache else args.cache)
    except OSError as exc:
        raise InputError(f"cannot use the cache {args.cache}: {exc.strerror or exc}") from None
    with make_runner(jobs=args.jobs, scheduler=args.scheduler, dask=args.dask) as runner:
        result = run_sweep(space, cache=cache, runner=runner, synthesis=args.synthesis,
                           progress=not args.no_progress,
                           log=lambda m: print(m, file=sys.stderr))
    try:
        out = write_results(result, args.out, plots=not args.no_plots)
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    real = sum(r["resources_from"] == "yosys" for r in result.rows)
    placed = sum(r["fmax_from"] == "nextpnr" for r in result.rows)
    print(f"{len(result.rows)} points ({real} synthesised, {placed} placed and routed), "
          f"{len(result.frontier)} on the frontier, {len(result.rejected)} rejected, "
          f"{len(result.failed)} failed -> {out}")
    # Nothing measured at all (every workload failed everywhere): the space was rejected.
    return 1 if result.failed and not any(r["throughput_gmacs"] for r in result.rows) else 0
