"""Pareto frontiers on known data and against a brute-force definition."""

from hypothesis import given, settings
from hypothesis import strategies as st

from designspace.frontier import dominates, pareto_front


def test_known_frontier():
    rows = [
        {"name": "a", "lut": 100, "gops": 1.0},    # smallest: on the frontier
        {"name": "b", "lut": 200, "gops": 3.0},    # on
        {"name": "c", "lut": 250, "gops": 2.0},    # beaten by b (fewer LUTs, faster)
        {"name": "d", "lut": 400, "gops": 5.0},    # on
        {"name": "e", "lut": 400, "gops": 5.0},    # equal to d: kept too
        {"name": "f", "lut": 500, "gops": 5.0},    # as fast as d with more LUTs: off
        {"name": "g", "lut": None, "gops": 9.0},   # not measured: takes no part
        {"name": "h", "lut": 150, "gops": 0.5},    # beaten by a
    ]
    idx = pareto_front(rows, minimize=("lut",), maximize=("gops",))
    assert [rows[i]["name"] for i in idx] == ["a", "b", "d", "e"]


def test_three_objectives():
    rows = [{"lut": 1, "bram": 9, "t": 1}, {"lut": 9, "bram": 1, "t": 1},
            {"lut": 5, "bram": 5, "t": 2}, {"lut": 5, "bram": 6, "t": 2},
            {"lut": 9, "bram": 9, "t": 1}]
    assert pareto_front(rows, minimize=("lut", "bram"), maximize=("t",)) == [0, 1, 2]


def _brute(points):
    return [i for i, p in enumerate(points)
            if not any(dominates(q, p) for j, q in enumerate(points) if j != i)]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
                max_size=25))
def test_matches_the_definition(points):
    rows = [{"x": a, "y": b, "z": c} for a, b, c in points]
    got = pareto_front(rows, minimize=("x", "y"), maximize=("z",))
    assert got == _brute([(a, b, -c) for a, b, c in points])
