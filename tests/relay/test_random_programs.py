"""Random dataflow programs: every pass preserves results and the text format round-trips."""
import numpy as np
from hypothesis import given, settings, strategies as st

import relay
from relay import module_to_text, parse, transform as T
from relay.ir import Function, IRModule, Let, Tuple, Var, const, op_call

BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
UNARY = ["tanh", "nn.relu", "negative", "sigmoid"]


@st.composite
def programs(draw, dtype="float32", scalar_output=False):
    x = Var("x", relay.TensorType((2, 3), dtype))
    y = Var("y", relay.TensorType((3,), dtype))
    nodes = [x, y, const(0.5, dtype), const(np.array([1.0, -1.0, 2.0], dtype))]
    ranks = [2, 1, 0, 1]
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "let"]))
        i = draw(st.integers(0, len(nodes) - 1))
        j = draw(st.integers(0, len(nodes) - 1))
        a, b = nodes[i], nodes[j]
        if kind == "unary":
            nodes.append(op_call(draw(st.sampled_from(UNARY)), a))
            ranks.append(ranks[i])
        elif kind == "binary":
            nodes.append(op_call(draw(st.sampled_from(BINARY)), a, b))
            ranks.append(max(ranks[i], ranks[j]))
        elif kind == "reduce" and ranks[i] > 0:
            nodes.append(op_call("sum", a, axis=[-1], keepdims=True))
            ranks.append(ranks[i])
        elif kind == "let":
            v = Var(f"v{len(nodes)}")
            nodes.append(Let(v, a, op_call("add", v, b)))
            ranks.append(max(ranks[i], ranks[j]))
    if len(nodes) == 4:
        nodes.append(op_call("add", x, y))
    outs = draw(st.lists(st.sampled_from(nodes[4:]), min_size=1, max_size=3))
    if scalar_output:
        total = op_call("sum", outs[0])
        for o in outs[1:]:
            total = op_call("add", total, op_call("sum", o))
        return IRModule({"main": Function([x, y], total)})
    return IRModule({"main": Function([x, y], Tuple(outs))})


PASSES = [T.fold_constant, T.dead_code_elimination, T.eliminate_common_subexpr, T.to_a_normal_form,
          T.to_graph_normal_form, T.fuse_ops, T.simplify_inference,
          T.sequential(T.to_a_normal_form, T.fuse_ops), T.sequential(T.fuse_ops, T.to_a_normal_form)]


@settings(max_examples=60, deadline=None)
@given(programs())
def test_passes_preserve_results_and_text_round_trips(mod):
    relay.check_module(mod)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal(3).astype("float32")]
    want = relay.run(mod, *args)
    text = module_to_text(mod)
    again = parse(text)
    assert module_to_text(again) == text
    for p in PASSES:
        out = p(mod)
        relay.check_module(out)
        got = relay.run(out, *args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        assert module_to_text(parse(module_to_text(out))) == module_to_text(out)


@settings(max_examples=30, deadline=None)
@given(programs(dtype="float64", scalar_output=True))
def test_gradient_of_random_programs_matches_numeric(mod):
    from relay.grad import gradient
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((2, 3)), rng.standard_normal(3)]
    _, grads = relay.run(gradient(mod), *args, name="main_grad")
    eps = 1e-6
    for i, a in enumerate(args):
        for idx in np.ndindex(a.shape):
            plus = [v.copy() for v in args]
            minus = [v.copy() for v in args]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            num = (relay.run(mod, *plus) - relay.run(mod, *minus)) / (2 * eps)
            np.testing.assert_allclose(grads[i][idx], num, rtol=1e-4, atol=1e-6)
