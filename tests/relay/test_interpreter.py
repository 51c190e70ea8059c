"""The interpreter: closures, recursion, references, ADTs, tuples and the prelude."""
import numpy as np
import pytest

import relay
from relay.interpreter import Closure, ConstructorValue, RelayRuntimeError, RefValue, to_python


def run_text(src, *args, name="main"):
    mod = relay.parse(src, base=relay.prelude())
    relay.check_module(mod)
    return relay.run(mod, *args, name=name)


def test_closures_capture_their_environment():
    src = """
def @make_adder(%n: float32) -> fn (float32) -> float32 {
  fn (%x: float32) -> float32 { %x + %n }
}
def @main(%a: float32) -> float32 {
  let %add2 = @make_adder(2f);
  let %add5 = @make_adder(5f);
  %add2(%a) * %add5(%a)
}
"""
    assert run_text(src, np.float32(1)) == 18


def test_recursion_global_and_let_bound():
    src = """
def @fact(%n: int32) -> int32 {
  if (%n <= 1) { 1 } else { %n * @fact(%n - 1) }
}
def @main(%n: int32) -> (int32, int32) {
  let %fib = fn (%k: int32) -> int32 {
    if (%k < 2) { %k } else { %fib(%k - 1) + %fib(%k - 2) }
  };
  (@fact(%n), %fib(%n))
}
"""
    out = run_text(src, np.int32(6))
    assert tuple(int(x) for x in out) == (720, 8)


def test_deep_recursion():
    src = """
def @count(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) { %acc } else { @count(%n - 1, %acc + 1) }
}
def @main(%n: int32) -> int32 { @count(%n, 0) }
"""
    assert run_text(src, np.int32(2000)) == 2000


def test_references_are_mutable_cells():
    src = """
def @main(%x: float32) -> (float32, float32) {
  let %r = ref(%x);
  let %before = ref_read(%r);
  let %inc = fn () -> () { ref_write(%r, ref_read(%r) + 1f) };
  %inc();
  %inc();
  (%before, ref_read(%r))
}
"""
    before, after = run_text(src, np.float32(1))
    assert before == 1 and after == 3


def test_ref_values_and_closures_as_results():
    x = relay.Var("x", relay.TensorType((), "float32"))
    v = relay.evaluate(relay.RefCreate(relay.const(2.0)))
    assert isinstance(v, RefValue) and v.value == 2
    f = relay.evaluate(relay.Function([x], x))
    assert isinstance(f, Closure)
    assert relay.Interpreter().call(f, [np.float32(4)]) == 4


def test_adts_tuples_and_prelude_functions():
    src = """
def @main(%x: Tensor[(2), float32]) {
  let %xs = Cons(%x, Cons(%x * 2f, Cons(%x * 3f, Nil)));
  let %sums = @map(fn (%t: Tensor[(2), float32]) { sum(%t) }, %xs);
  let %big = @filter(fn (%s: float32) { %s > 3f }, %sums);
  (@foldl(fn (%a: float32, %b: float32) { %a + %b }, 0f, %sums),
   @foldr(fn (%a: float32, %b: float32) { %a - %b }, 0f, %sums),
   @length(%big), @nth(@rev(%sums), 0), @zip(%sums, @rev(%sums)), @concat(%big, %big),
   @foldr1(fn (%a: float32, %b: float32) { %a * %b }, %sums), @hd(@tl(%sums)))
}
"""
    out = to_python(run_text(src, np.array([1, 2], "float32")))
    total, alt, n_big, last, zipped, cat, prod, second = out
    assert total == 18 and alt == 3 - 6 + 9 and n_big == 2 and last == 9
    assert [(float(a), float(b)) for a, b in zipped] == [(3, 9), (6, 6), (9, 3)]
    assert [float(c) for c in cat] == [6, 9, 6, 9]
    assert prod == 162 and second == 6


def test_option_tree_iterate_unfoldr():
    src = """
def @main(%x: int32) {
  let %down = fn (%n: int32) -> Option[(int32, int32)] {
    if (%n == 0) { None } else { Some((%n - 1, %n)) }
  };
  let %tree = Rose(%x, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)));
  (@unfoldr(%down, %x), @get_or_else(@option_map(fn (%v: int32) { %v * 10 }, Some(%x)), 0),
   @get_or_else(None, 7), @is_some(Some(1)), @size(%tree),
   @iterate(fn (%v: int32) { %v * 2 }, 3)(%x), @compose(@id, fn (%v: int32) { %v + 1 })(%x),
   @flip(fn (%a: int32, %b: int32) { %a - %b })(1, 10))
}
"""
    unf, mapped, default, is_some, size, iterated, composed, flipped = to_python(run_text(src, np.int32(3)))
    assert [int(v) for v in unf] == [3, 2, 1]
    assert (mapped, default, bool(is_some), size, iterated, composed, flipped) == (30, 7, True, 4, 24, 4, 9)


def test_tree_map():
    src = """
def @main(%x: float32) -> Tree[float32] {
  @tmap(fn (%v: float32) { %v * 2f }, Rose(%x, Cons(Rose(%x + 1f, Nil), Nil)))
}
"""
    t = run_text(src, np.float32(1))
    assert isinstance(t, ConstructorValue) and t.constructor.name == "Rose"
    assert t.fields[0] == 2 and t.fields[1].fields[0].fields[0] == 4


def test_partial_match_failure_is_a_runtime_error():
    src = "def @main() -> int32 { @hd(Nil) }"
    mod = relay.parse(src, base=relay.prelude())
    with pytest.raises(RelayRuntimeError, match="no clause of the match matched Nil"):
        relay.run(mod)


def test_nested_and_tuple_patterns():
    src = """
def @main(%a: int32) -> int32 {
  match ((Cons(%a, Cons(2, Nil)), Some(5))) {
    (Cons(%x, Cons(%y, Nil)), Some(%z)) => %x * 100 + %y * 10 + %z,
    (_, _) => 0,
  }
}
"""
    assert run_text(src, np.int32(1)) == 125


def test_graph_sharing_evaluates_once():
    calls = []
    from relay.op import register_op, OpPattern

    @register_op("test.count", num_inputs=1, relation="Identity", pattern=OpPattern.OPAQUE)
    def _count(args, attrs):
        calls.append(1)
        return args[0]

    x = relay.Var("x", relay.TensorType((2,), "float32"))
    shared = relay.op_call("test.count", x)
    mod = relay.IRModule.from_expr(relay.Function([x], relay.op_call("add", shared, shared)))
    assert (relay.run(mod, np.ones(2, "float32")) == 2).all()
    assert len(calls) == 1


def test_kernel_failure_reports_operator():
    x = relay.Var("x", relay.TensorType((2,), "float32"))
    mod = relay.IRModule.from_expr(relay.Function([x], relay.op_call("reshape", x, newshape=[3])))
    with pytest.raises(RelayRuntimeError, match="reshape failed"):
        relay.run(mod, np.ones(2, "float32"))
