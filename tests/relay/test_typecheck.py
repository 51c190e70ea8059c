"""Type inference: unification, every operator's relation, polymorphism, ADTs, references and errors."""
import numpy as np
import pytest

import relay
from relay import ANY, FuncType, RefType, TensorType, TupleType, TypeCall, TypeVar
from relay.ir import Clause, Function, Let, Match, PatternConstructor, PatternVar, PatternWildcard, Var
from relay.typecheck import RelayTypeError, check_module, infer_expr

T = TensorType


def fn_type(params, body):
    return infer_expr(Function(params, body))


def v(name, shape, dtype="float32"):
    return Var(name, T(shape, dtype))


def test_infers_unannotated_let_and_function():
    x = v("x", (2, 3))
    y = Var("y")
    f = Var("f")
    g = Var("g")
    body = Let(f, Function([g], relay.op_call("add", g, g)),
               Let(y, relay.Call(f, [x]), relay.op_call("sum", y, axis=[1])))
    assert fn_type([x], body) == FuncType((T((2, 3)),), T((2,)))


def test_unification_through_holes_in_calls():
    a = Var("a")
    ident = Function([a], a)
    x = v("x", (4,))
    assert infer_expr(relay.Call(ident, [x]), relay.IRModule()) == T((4,))


def test_unknown_dimension_flows():
    x = v("x", (ANY, 3))
    w = v("w", (5, 3))
    t = fn_type([x, w], relay.op_call("nn.dense", x, w))
    assert t.ret_type == T((ANY, 5))
    assert str(t.ret_type) == "Tensor[(?, 5), float32]"


def test_if_needs_bool_scalar_and_matching_branches():
    c = v("c", (), "bool")
    x = v("x", (2,))
    assert fn_type([c, x], relay.If(c, x, relay.op_call("negative", x))).ret_type == T((2,))
    with pytest.raises(RelayTypeError, match="if condition: expected bool, but found float32"):
        fn_type([c, x], relay.If(relay.op_call("sum", x), x, x))
    with pytest.raises(RelayTypeError, match="else branch"):
        fn_type([c, x], relay.If(c, x, relay.op_call("sum", x)))


def test_tuples_and_projection():
    x, y = v("x", (2,)), v("y", (), "int32")
    tup = relay.Tuple([x, y])
    assert fn_type([x, y], tup).ret_type == TupleType((T((2,)), T((), "int32")))
    assert fn_type([x, y], relay.TupleGetItem(tup, 1)).ret_type == T((), "int32")
    with pytest.raises(RelayTypeError, match=r"relation TupleGetItem failed: index 2 is out of range"):
        fn_type([x, y], relay.TupleGetItem(tup, 2))


def test_references():
    x = v("x", (2,))
    r = Var("r")
    body = Let(r, relay.RefCreate(x), Let(Var("_"), relay.RefWrite(r, relay.op_call("exp", x)), relay.RefRead(r)))
    assert fn_type([x], body).ret_type == T((2,))
    assert infer_expr(Function([x], relay.RefCreate(x))).ret_type == RefType(T((2,)))
    with pytest.raises(RelayTypeError, match="value written to the reference"):
        fn_type([x], relay.RefWrite(relay.RefCreate(x), relay.op_call("sum", x)))


def test_polymorphic_global_instantiated_per_use():
    mod = relay.prelude()
    x, n = v("x", (3,)), v("n", (), "int32")
    cons, nil = mod.constructor("Cons"), mod.constructor("Nil")
    xs = relay.Call(cons, [x, relay.Call(nil, [])])
    ns = relay.Call(cons, [n, relay.Call(nil, [])])
    body = relay.Tuple([relay.Call(relay.GlobalVar("hd"), [xs]), relay.Call(relay.GlobalVar("hd"), [ns])])
    t = infer_expr(Function([x, n], body), mod)
    assert t.ret_type == TupleType((T((3,)), T((), "int32")))


def test_adt_constructor_arguments_checked():
    mod = relay.prelude()
    x, n = v("x", (3,)), v("n", (), "int32")
    cons, nil = mod.constructor("Cons"), mod.constructor("Nil")
    bad = relay.Call(cons, [x, relay.Call(cons, [n, relay.Call(nil, [])])])
    with pytest.raises(RelayTypeError, match="argument 1 of Cons"):
        infer_expr(Function([x, n], bad), mod)


def test_match_binds_pattern_types_and_checks_exhaustiveness():
    mod = relay.prelude()
    cons, nil = mod.constructor("Cons"), mod.constructor("Nil")
    xs = Var("xs", TypeCall(mod["List"].header, (T((2,)),)))
    h, t = Var("h"), Var("t")
    m = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]), h),
                   Clause(PatternConstructor(nil), relay.op_call("zeros", shape=[2]))])
    assert infer_expr(Function([xs], m), mod).ret_type == T((2,))
    partial = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(Var("a")), PatternWildcard()]),
                                relay.op_call("zeros", shape=[2]))])
    with pytest.raises(RelayTypeError, match="not exhaustive"):
        infer_expr(Function([xs], partial), mod)
    ok = Match(xs, partial.clauses, complete=False)
    assert infer_expr(Function([xs], ok), mod).ret_type == T((2,))


def test_type_parameters_are_rigid():
    a = TypeVar("A")
    x = Var("x", a)
    f = Function([x], relay.op_call("exp", x), type_params=[a])
    with pytest.raises(RelayTypeError, match="data must be a tensor, but has type A"):
        infer_expr(f)


def test_mutual_recursion_in_module():
    n = Var("n", T((), "int32"))
    m = Var("m", T((), "int32"))
    one = relay.const(1)
    zero = relay.const(0)
    even = Function([n], relay.If(relay.op_call("equal", n, zero), relay.const(True),
                                  relay.Call(relay.GlobalVar("odd"), [relay.op_call("subtract", n, one)])))
    odd = Function([m], relay.If(relay.op_call("equal", m, zero), relay.const(False),
                                 relay.Call(relay.GlobalVar("even"), [relay.op_call("subtract", m, one)])))
    info = check_module(relay.IRModule({"even": even, "odd": odd}))
    assert info.global_types["even"] == FuncType((T((), "int32"),), T((), "bool"))
    assert relay.run(relay.IRModule({"even": even, "odd": odd}), np.int32(7), name="odd")


def test_error_points_at_subexpression_and_names_relation():
    text = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
  %0 = nn.relu(%x);
  nn.conv2d(%0, %w, padding=[1, 1])
}
"""
    mod = relay.parse(text, source="net.rly")
    with pytest.raises(RelayTypeError) as e:
        check_module(mod)
    msg = str(e.value)
    assert msg.startswith("net.rly:4:3: in `nn.conv2d(nn.relu(...), %w, padding=(1, 1))`")
    assert "relation Conv2D failed: data has 3 input channels but weight expects 2 x groups 1 = 2" in msg
    assert e.value.expr.op.name == "nn.conv2d"


def test_unsolvable_needs_annotation():
    x = Var("x")
    with pytest.raises(RelayTypeError, match="cannot be solved.*add type annotations"):
        infer_expr(Function([x], relay.op_call("exp", x)))


def test_unknown_attribute_and_arity():
    x = v("x", (2,))
    with pytest.raises(RelayTypeError, match="nn.relu has no attribute 'axis'"):
        fn_type([x], relay.op_call("nn.relu", x, axis=1))
    with pytest.raises(RelayTypeError, match="add takes 2 argument"):
        fn_type([x], relay.Call(relay.Op("add"), [x]))
    with pytest.raises(RelayTypeError, match="requires attribute 'a_min'"):
        fn_type([x], relay.Call(relay.Op("clip"), [x], relay.Attrs(a_max=1.0)))


def test_free_variable_is_an_error():
    x = v("x", (2,))
    with pytest.raises(RelayTypeError, match="not bound"):
        infer_expr(Function([], x))


def test_infer_type_pass_annotates_every_node():
    x = v("x", (2, 3))
    y = Var("y")
    mod = relay.IRModule.from_expr(Function([x], Let(y, relay.op_call("exp", x), relay.op_call("sum", y))))
    out = relay.transform.infer_type(mod)
    fn = out["main"]
    assert fn.checked_type == FuncType((T((2, 3)),), T(()))
    assert fn.body.checked_type == T(())
    assert fn.body.var.checked_type == T((2, 3))
    assert fn.body.value.args[0].checked_type == T((2, 3))
    assert mod["main"].checked_type is None   # the input module is untouched
