"""IR nodes are immutable; the module is updated functionally; attrs are hashable values."""
import dataclasses

import numpy as np
import pytest

import relay
from relay import ir
from relay.analysis import free_vars, post_order


def test_nodes_are_immutable():
    x = relay.Var("x")
    call = relay.op_call("nn.relu", x)
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.args = ()
    with pytest.raises(AttributeError):
        call.attrs.axis = 1
    c = relay.const(np.ones(3, "float32"))
    with pytest.raises(ValueError):
        c.data[0] = 2


def test_vars_compare_by_identity_globals_by_name():
    assert relay.Var("x") != relay.Var("x")
    assert relay.GlobalVar("f") == relay.GlobalVar("f")
    assert hash(relay.GlobalVar("f")) == hash(relay.GlobalVar("f"))


def test_attrs_normalise_lists_and_hash():
    a = ir.Attrs(padding=[1, 1], axis=1)
    b = ir.Attrs({"axis": 1, "padding": (1, 1)})
    assert a == b and hash(a) == hash(b)
    assert a.padding == (1, 1)
    assert a.updated(axis=2)["axis"] == 2 and a["axis"] == 1


def test_module_updates_return_new_modules():
    f = relay.Function([], relay.const(1.0))
    m0 = relay.IRModule()
    m1 = m0.with_function("f", f)
    assert "f" in m1 and "f" not in m0
    with pytest.raises(AttributeError):
        m1.x = 1
    assert m1.without_function("f").functions == {}
    with pytest.raises(TypeError, match="must be a Function"):
        relay.IRModule({"f": relay.const(1.0)})
    with pytest.raises(KeyError, match="no global @g"):
        m1["g"]


def test_op_call_checks_registry():
    with pytest.raises(KeyError, match="unknown operator 'nn.nope'"):
        relay.op_call("nn.nope")


def test_free_vars_and_post_order():
    x, y = relay.Var("x"), relay.Var("y")
    body = relay.Let(y, relay.op_call("add", x, x), relay.op_call("multiply", y, x))
    assert free_vars(body) == [x]
    assert free_vars(relay.Function([x], body)) == []
    order = post_order(body)
    assert order.index(x) < order.index(body.value) < order.index(body)


def test_from_expr_wraps_free_vars():
    x = relay.Var("x", relay.TensorType((2,), "float32"))
    mod = relay.IRModule.from_expr(relay.op_call("exp", x))
    assert mod["main"].params == (x,)
