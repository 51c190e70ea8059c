"""Automatic differentiation checked against numeric differentiation, including control flow,
recursion, closures, references, ADTs, the generative RNN and second derivatives."""
from pathlib import Path

import numpy as np
import pytest

import relay
from relay import parse
from relay.grad import GradientError, gradient
from relay.op import get_op_attr, list_ops

RNG = np.random.default_rng(11)
PROGRAMS = Path(__file__).parent / "programs"


def numeric_grad(mod, args, name="main", eps=1e-6):
    grads = []
    for i, a in enumerate(args):
        g = np.zeros(a.shape)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            fp = np.sum(relay.run(mod, *plus, name=name))
            fm = np.sum(relay.run(mod, *minus, name=name))
            g[idx] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def check_gradient(mod, args, name="main", rtol=1e-5, atol=1e-6):
    g = gradient(mod, name)
    relay.check_module(g)   # the gradient program is well typed
    value, grads = relay.run(g, *args, name=f"{name}_grad")
    np.testing.assert_allclose(value, relay.run(mod, *args, name=name), rtol=1e-12)
    for got, want in zip(grads, numeric_grad(mod, args, name)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return g


def f64(shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype("float64")


UNARY = ["negative", "copy", "exp", "tanh", "sigmoid", "nn.relu", "nn.leaky_relu", "abs"]


@pytest.mark.parametrize("op", UNARY)
def test_unary_rules(op):
    mod = parse(f"def @main(%x: Tensor[(2, 3), float64]) -> Tensor[(2, 3), float64] {{ {op}(%x) }}")
    check_gradient(mod, [f64((2, 3))])


@pytest.mark.parametrize("op", ["log", "sqrt", "rsqrt"])
def test_positive_domain_rules(op):
    mod = parse(f"def @main(%x: Tensor[(4), float64]) -> Tensor[(4), float64] {{ {op}(%x) }}")
    check_gradient(mod, [f64((4,), 0.5, 2.0)])


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"])
def test_broadcasting_binary_rules(op):
    mod = parse(f"def @main(%x: Tensor[(2, 3), float64], %y: Tensor[(3), float64]) {{ {op}(%x, %y) }}")
    x, y = f64((2, 3), 0.5 if op == "power" else -1.0, 1.5), f64((3,), 0.5, 1.5)
    check_gradient(mod, [x, y])


def test_shape_and_reduction_rules():
    mod = parse("""
def @main(%x: Tensor[(2, 3, 4), float64], %w: Tensor[(5, 12), float64], %b: Tensor[(5), float64]) {
  %0 = transpose(%x, axes=[0, 2, 1]);
  %1 = reshape(%0, newshape=[2, -1]);
  %2 = nn.bias_add(nn.dense(%1, %w), %b);
  %3 = nn.softmax(%2);
  %4 = nn.log_softmax(%2, axis=0);
  %5 = expand_dims(sum(%x, axis=[1]), axis=0);
  %6 = squeeze(mean(%5, axis=[2], keepdims=True));
  %7 = nn.batch_flatten(clip(%x, a_min=-0.5f64, a_max=0.5f64));
  %8 = where(greater(%x, 0f64), %x, multiply(%x, 2f64));
  sum(%3 * %3) + sum(%4) + sum(%6 * %6) + mean(%7 * %7, axis=[1], exclude=True) + sum(%8 * %x)
}""")
    check_gradient(mod, [f64((2, 3, 4)), f64((5, 12)), f64((5,))], rtol=1e-4)


def test_cast_rule():
    mod = parse('def @main(%x: Tensor[(3), float64]) { %0 = cast(%x, dtype="float32"); sum(%0 * %0) }')
    x = f64((3,))
    _, (dx,) = relay.run(gradient(mod), x, name="main_grad")
    assert dx.dtype == np.float64
    np.testing.assert_allclose(dx, 2 * x, rtol=1e-6)


def test_cnn_rules():
    mod = parse("""
def @main(%x: Tensor[(2, 4, 7, 6), float64], %w: Tensor[(6, 2, 3, 3), float64]) -> float64 {
  %0 = nn.conv2d(%x, %w, strides=[2, 1], padding=[1, 2, 0, 1], dilation=[1, 2], groups=2);
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[1, 2], padding=[1, 0, 0, 1]);
  %2 = nn.avg_pool2d(%0, pool_size=[3, 2], padding=[1, 1, 1, 1], count_include_pad=True);
  %3 = nn.global_avg_pool2d(%0);
  sum(%1 * %1) + sum(%2 * %2) + sum(%3)
}""")
    check_gradient(mod, [f64((2, 4, 7, 6)), f64((6, 2, 3, 3))], rtol=1e-5, atol=1e-6)


def test_resnet18_gradient():
    from relay import transform as T, zoo
    from relay.ir import Call, Function, GlobalVar, Var, op_call
    mod, params = zoo.resnet18(image_shape=(3, 32, 32), classes=4, dtype="float64")
    inference = T.simplify_inference(mod)   # batch_norm has no gradient rule: use its inference form
    main = inference["main"]
    ps = [Var(p.name_hint, p.type_annotation) for p in main.params]
    out = Call(GlobalVar("main"), ps)
    target = relay.const(np.array([[1.0, -2.0, 3.0, -4.0]]))
    loss = inference.with_function("loss", Function(ps, op_call("sum", op_call("multiply", out, target))))
    g = gradient(loss, "loss")
    args = [RNG.standard_normal((1, 3, 32, 32))] + list(params.values())
    value, grads = relay.run(g, *args, name="loss_grad")
    assert len(grads) == len(args) and all(d.shape == a.shape for d, a in zip(grads, args))
    eps = 1e-6
    names = ["data"] + list(params)
    for name, idx in [("data", (0, 1, 5, 7)), ("conv0_weight", (3, 2, 1, 4)), ("stage2_unit1_conv1_weight",
                      (5, 7, 1, 1)), ("stage1_unit2_conv2_bn_beta", (9,)), ("fc_weight", (2, 100))]:
        i = names.index(name)
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[i][idx] += eps
        minus[i][idx] -= eps
        num = (relay.run(loss, *plus, name="loss") - relay.run(loss, *minus, name="loss")) / (2 * eps)
        np.testing.assert_allclose(grads[i][idx], num, rtol=1e-5, atol=1e-9)


def test_control_flow():
    mod = parse("""
def @main(%x: Tensor[(3), float64]) -> float64 {
  let %s = sum(%x);
  if (%s > 0f64) { sum(exp(%x)) * %s } else { sum(%x * %x * %x) }
}""")
    check_gradient(mod, [np.array([0.5, 0.2, -0.1])])
    check_gradient(mod, [np.array([-0.5, 0.2, -0.1])])


def test_recursion_closures_and_references():
    mod = parse("""
def @power(%x: Tensor[(2), float64], %n: int32) -> Tensor[(2), float64] {
  if (%n == 0) { ones_like(%x) } else { %x * @power(%x, %n - 1) }
}
def @main(%x: Tensor[(2), float64], %y: Tensor[(2), float64]) -> float64 {
  let %acc = ref(zeros_like(%x));
  let %add_scaled = fn (%v: Tensor[(2), float64]) -> () { ref_write(%acc, ref_read(%acc) + %v * %y) };
  %add_scaled(@power(%x, 3));
  %add_scaled(tanh(%x));
  let %twice = fn (%f: fn (Tensor[(2), float64]) -> Tensor[(2), float64]) {
    fn (%v: Tensor[(2), float64]) { %f(%f(%v)) }
  };
  sum(ref_read(%acc)) + sum(%twice(fn (%u: Tensor[(2), float64]) { sigmoid(%u) })(%x))
}""")
    check_gradient(mod, [f64((2,)), f64((2,))])


def test_adts_with_prelude_functions():
    mod = parse("""
def @main(%x: Tensor[(2), float64]) -> float64 {
  let %xs = Cons(%x, Cons(%x * %x, Cons(exp(%x), Nil)));
  let %ys = @map(fn (%v: Tensor[(2), float64]) { tanh(%v) * %x }, %xs);
  let %total = @foldl(fn (%a: Tensor[(2), float64], %b: Tensor[(2), float64]) { %a + %b }, zeros_like(%x), %ys);
  sum(%total) + sum(@get_or_else(Some(%x), %x)) * cast(@length(%ys), dtype="float64")
}""", base=relay.prelude())
    check_gradient(mod, [f64((2,))])


def rnn_module(dtype="float64"):
    text = (PROGRAMS / "rnn.rly").read_text().replace("float32", dtype).replace("0f,", "0f64,")
    return parse(text, base=relay.prelude())


def test_generative_rnn_gradient():
    mod = rnn_module()
    relay.check_module(mod)
    args = [RNG.standard_normal(p.type_annotation.shape) * 0.5 for p in mod["main"].params]
    g = check_gradient(mod, args, rtol=1e-5, atol=1e-7)
    assert "generate__ad" in g.functions and "cell__ad" in g.functions and "foldl__ad" in g.functions


def test_generative_rnn_gradient_float32_program():
    mod = parse((PROGRAMS / "rnn.rly").read_text(), base=relay.prelude())
    args = [(RNG.standard_normal(p.type_annotation.shape) * 0.5).astype("float32") for p in mod["main"].params]
    g = gradient(mod)
    relay.check_module(g)
    _, grads = relay.run(g, *args, name="main_grad")
    want = numeric_grad(rnn_module(), [a.astype("float64") for a in args])
    for got, w in zip(grads, want):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, w, rtol=1e-3, atol=1e-4)


def test_second_derivative_of_scalar_function():
    base = gradient(parse("def @f(%x: float64) -> float64 { %x * %x * tanh(%x) }"), "f")
    mod = base.update(parse("def @main(%x: float64) -> float64 { @f_grad(%x).1.0 }", base=base))
    g2 = gradient(mod, "main")
    relay.check_module(g2)
    x = 0.7
    first, (second,) = relay.run(g2, np.float64(x), name="main_grad")
    t = np.tanh(x)
    assert np.isclose(first, 2 * x * t + x * x * (1 - t * t))
    assert np.isclose(second, 2 * t + 4 * x * (1 - t * t) - 2 * x * x * t * (1 - t * t))


def test_second_derivative_with_control_flow_and_recursion():
    base = gradient(parse("""
def @power(%x: Tensor[(3), float64], %n: int32) -> Tensor[(3), float64] {
  if (%n == 0) { ones_like(%x) } else { %x * @power(%x, %n - 1) }
}
def @f(%x: Tensor[(3), float64], %w: Tensor[(3), float64]) -> float64 {
  sum(@power(%x, 3) * %w) + sum(sigmoid(%x * %w))
}"""), "f")
    mod = base.update(parse("""
def @main(%x: Tensor[(3), float64], %w: Tensor[(3), float64]) -> float64 {
  sum(@f_grad(%x, %w).1.0)
}""", base=base))
    relay.check_module(mod)
    args = [f64((3,)), f64((3,))]
    # d/dx and d/dw of sum(df/dx), against numeric differentiation of the first gradient
    check_gradient(mod, args, rtol=1e-5, atol=1e-6)


def test_gradient_errors():
    cat = parse("def @main(%x: Tensor[(2), float32]) { sum(concatenate((%x, %x))) }")
    with pytest.raises(GradientError, match="no gradient rule for operator concatenate"):
        gradient(cat)
    bn = parse("def @main(%x: Tensor[(1, 2), float32], %v: Tensor[(2), float32]) "
               "{ sum(nn.batch_norm(%x, %v, %v, %v, %v).0) }")
    with pytest.raises(GradientError, match="run simplify_inference first"):
        gradient(bn)
    packed = parse("def @main(%x: Tensor[(1, 1, 2, 2, 1, 16), float32], %w: Tensor[(1, 1, 1, 1, 16, 16), float32]) "
                   '{ sum(nn.conv2d(%x, %w, data_layout="NCHW1n16c", kernel_layout="OIHW16o16i")) }')
    with pytest.raises(GradientError, match="supports NCHW/OIHW"):
        gradient(packed)
    with pytest.raises(GradientError, match="must return a float tensor"):
        gradient(parse("def @main(%x: int32) { %x }"))
    with pytest.raises(GradientError, match="parameter %f of @main must be a tensor"):
        gradient(parse("def @main(%f: fn (float32) -> float32) -> float32 { %f(1f) }"))
    boxed = parse("""
type Box { MkBox(Tensor[(2), float64]), }
def @main(%x: Tensor[(2), float64]) -> float64 { match (MkBox(%x)) { MkBox(%y) => sum(%y) } }""")
    with pytest.raises(GradientError, match="cannot differentiate through Box"):
        gradient(boxed)


def test_rules_exist_for_the_differentiable_elementwise_and_shape_operators():
    have = {name for name in list_ops() if get_op_attr(name, "FPrimalGradient") is not None}
    assert {"add", "multiply", "nn.dense", "nn.bias_add", "sum", "mean", "reshape", "transpose",
            "nn.softmax", "collapse_sum_like", "broadcast_to_like", "where"} <= have


def test_conv2d_transpose_rule():
    mod = parse("""
def @main(%x: Tensor[(2, 4, 3, 4), float64], %w: Tensor[(4, 3, 4, 3), float64]) -> float64 {
  %0 = nn.conv2d_transpose(%x, %w, strides=[2, 1], padding=[1, 0, 2, 1], output_padding=[1, 0], groups=2);
  sum(%0 * %0)
}""")
    check_gradient(mod, [f64((2, 4, 3, 4)), f64((4, 3, 4, 3))], rtol=1e-5, atol=1e-6)
