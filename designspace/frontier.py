"""Pareto frontiers: the points no other point beats on every objective."""

from __future__ import annotations

from typing import Sequence

__all__ = ["dominates", "pareto_front"]


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """``a`` is at least as good as ``b`` everywhere and better somewhere (all minimised)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def pareto_front(rows: Sequence[dict], *, minimize: Sequence[str] = (),
                 maximize: Sequence[str] = ()) -> list[int]:
    """Indices (in input order) of the rows on the frontier of the given columns.

    Rows with a missing value (None) in any objective take no part. Rows with equal objective
    vectors are all kept (none dominates the other).
    """
    keys = [(k, 1.0) for k in minimize] + [(k, -1.0) for k in maximize]
    if not keys:
        raise ValueError("pareto_front needs at least one objective")
    vecs = []
    for i, r in enumerate(rows):
        if any(r.get(k) is None for k, _ in keys):
            continue
        vecs.append((i, tuple(sign * float(r[k]) for k, sign in keys)))
    # Sorting lexicographically means a row can only be dominated by rows before it.
    vecs.sort(key=lambda iv: iv[1])
    front: list[tuple[int, tuple]] = []
    for i, v in vecs:
        if not any(dominates(f, v) for _, f in front):
            front.append((i, v))
    return sorted(i for i, _ in front)
