"""Deeply nested programs: a few thousand levels parse, type-check, print and run; deeper than
``relay.depth.MAX_NESTING`` is a one-line error, never a RecursionError."""
import numpy as np
import pytest

import relay
from relay.depth import MAX_NESTING

N = 3000
M = 1000    # blocks print indented: the text grows with the square of their nesting
PROGRAMS = {
    "parens": ("(" * N + "1" + ")" * N, 1),
    "calls": ("abs(" * N + "-2" + ")" * N, 2),
    "tuples": ("(" * N + "1," + ")" * N, None),
    "negations": ("negative(" * N + "1f" + ")" * N, 1.0),
    "lets": ("".join(f"let %x{i} = {i};\n" for i in range(N)) + "%x7", 7),
    "ifs": ("if (True) { " * M + "1" + " } else { 0 }" * M, 1),
    "fns": ("(fn () { " * M + "1" + " })()" * M, 1),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_thousands_of_levels_work(name):
    text, value = PROGRAMS[name]
    e = relay.parse_expr(text)
    t = relay.infer_expr(e)
    again = relay.parse_expr(relay.expr_to_text(e))
    assert relay.infer_expr(again) == t
    if value is not None:
        assert np.asarray(relay.evaluate(e)).item() == value


@pytest.mark.parametrize("text", [
    "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1),
    "let %x: " + "(" * (MAX_NESTING + 1) + "int32" + ",)" * (MAX_NESTING + 1) + " = 1; %x",
])
def test_too_deep_is_a_parse_error_with_a_position(text):
    with pytest.raises(relay.ParseError, match=f"nested more than {MAX_NESTING} levels deep") as e:
        relay.parse_expr(text, source="deep.rly")
    assert str(e.value).startswith("deep.rly:1:")
    assert len(str(e.value)) < 500


def test_deep_recursion_at_run_time():
    """The interpreter recurses as deep as the program does (a 5000-element list)."""
    mod = relay.parse('''
def @count(%n: int32) -> List[int32] { if (%n == 0) { Nil } else { Cons(%n, @count(%n - 1)) } }
def @main() -> int32 { @length(@count(5000)) }''', base=relay.prelude())
    assert relay.run(mod) == 5000


def test_recursion_limit_is_restored():
    import sys
    before = sys.getrecursionlimit()
    relay.parse_expr("(" * 2000 + "1" + ")" * 2000)
    assert sys.getrecursionlimit() == before
