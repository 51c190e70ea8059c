"""Multi-objective search for spaces too large for a grid: Optuna's NSGA-II.

Each trial picks a value for every enumerated key and var of the space; the point is scored by
its total cycles over the workloads (the cycle-accurate simulator, cached like the grid's) and
its LUT4 and DP16KD as the screening model predicts them. Trials run in batches as wide as the
runner. The distinct valid points the search visited then go through the sweep's usual stages
(screening, synthesis, place and route), so what is reported is measured, not predicted.
"""

from __future__ import annotations

from typing import Callable

from .cache import Cache, task_key
from .space import Space, complete_point, validate

__all__ = ["nsga2_points"]


def nsga2_points(space: Space, grid: list, *, cache: Cache, runner, log: Callable,
                 batch: int = 4) -> list:
    """The points NSGA-II visits in ``space.trials`` trials (``grid``: the valid points, used
    to answer only with points the grid would hold)."""
    try:
        import optuna
    except ImportError:
        from .sweep import SweepError
        raise SweepError("search.method = \"nsga2\" needs Optuna: `pip install -e '.[sweep]'`") \
            from None
    from .model import ScreeningModel
    from .space import point_config
    from .sweep import SweepResult, _cycles_cost, _cycles_desc, _Job, _samples, _stage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    valid = {tuple(p.values()) for p in grid}
    samples = _samples(cache)
    model = ScreeningModel(samples) if samples else None
    study = optuna.create_study(directions=["minimize", "minimize", "minimize"],
                                sampler=optuna.samplers.NSGAIISampler(seed=space.seed))
    visited: dict = {}
    scratch = SweepResult(space)        # the search's own task counts, not reported
    done = 0
    while done < space.trials:
        trials, points = [], []
        for _ in range(min(batch, space.trials - done)):
            t = study.ask()
            assignment = {k: t.suggest_categorical(k, list(v)) for k, v in space.domains}
            p = complete_point(space, assignment)
            trials.append(t)
            points.append(p if p is not None and validate(p) is None
                          and tuple(p.values()) in valid else None)
        jobs = [_Job(_cycles_desc(p, w, space), "cycles", (p, w, space.spatial_div, space.seed),
                     _cycles_cost(p, w, space))
                for p in points if p is not None for w in space.workloads]
        got = _stage(runner, cache, jobs, "search", False, scratch)
        for t, p in zip(trials, points):
            if p is None:
                study.tell(t, state=optuna.trial.TrialState.PRUNED)
                continue
            res = [got[task_key(_cycles_desc(p, w, space))] for w in space.workloads]
            if any("cycles" not in r for r in res):
                study.tell(t, state=optuna.trial.TrialState.FAIL)
                continue
            pred = model.predict(point_config(p)) if model else {"LUT4": 0, "DP16KD": 0}
            study.tell(t, [sum(r["cycles"] for r in res), pred["LUT4"], pred["DP16KD"]])
            visited[tuple(p.values())] = p
        done += len(trials)
    log(f"NSGA-II: {space.trials} trials visited {len(visited)} of {len(grid)} points")
    return list(visited.values())
