"""Each pass: a before and an after, and an equivalence check through the interpreter."""
import numpy as np
import pytest

import relay
from relay import module_to_text, parse, transform as T, zoo
from relay.analysis import post_order
from relay.ir import Call, Constant, Function, Let, Op, Var

RNG = np.random.default_rng(7)


def text(mod):
    return module_to_text(mod, show_meta_data=False)


def random_args(mod, name="main"):
    out = []
    for p in mod[name].params:
        t = p.type_annotation
        if t.dtype == "bool":
            out.append(np.bool_(True))
        else:
            out.append(RNG.uniform(0.05, 0.3, t.shape).astype(t.dtype))
    return out


def assert_same_results(before, after, args=None, rtol=1e-5):
    args = random_args(before) if args is None else args
    relay.check_module(after)
    b, a = relay.run(before, *args), relay.run(after, *args)
    for x, y in zip(_flat(b), _flat(a)):
        np.testing.assert_allclose(y, x, rtol=rtol, atol=1e-5)


def _flat(v):
    if isinstance(v, tuple):
        return [y for x in v for y in _flat(x)]
    return [v]


def check_pass(p, before_text, after_text, **kw):
    before = parse(before_text)
    after = p(before, **kw)
    assert text(after) == after_text
    assert_same_results(before, after)
    return before, after


def test_fold_constant():
    check_pass(T.fold_constant, """
def @main(%x: Tensor[(2), float32]) {
  %0 = multiply(2f, 3f);
  let %c = add(%0, 1f);
  %1 = nn.batch_norm(ones(shape=[1, 2, 1, 1]), ones(shape=[2]), zeros(shape=[2]), zeros(shape=[2]),
                     ones(shape=[2]), epsilon=0f);
  %2 = sum(%1.0);
  add(multiply(%x, %c), %2)
}""", """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = multiply(%x, 7f);
  add(%0, 2f)
}
""")


def test_dead_code_elimination_keeps_effects():
    check_pass(T.dead_code_elimination, """
def @unused(%y: float32) { %y }
def @helper(%y: float32) { %y }
def @main(%x: float32) {
  let %dead = exp(%x);
  let %r = ref(%x);
  let %effect = ref_write(%r, 1f);
  let %live = @helper(%x);
  add(%live, ref_read(%r))
}""", """#[version = "0.0.5"]
def @helper(%y: float32) {
  %y
}
def @main(%x: float32) {
  let %r = ref(%x);
  let %effect = ref_write(%r, 1f);
  let %live = @helper(%x);
  %0 = ref_read(%r);
  add(%live, %0)
}
""")


def test_eliminate_common_subexpr():
    before, after = check_pass(T.eliminate_common_subexpr, """
def @main(%x: Tensor[(2), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%x);
  %2 = add(%0, 1f);
  %3 = add(%1, 1f);
  %4 = nn.softmax(%x, axis=0);
  %5 = nn.softmax(%x, axis=-1);
  (multiply(%2, %3), %4, %5)
}""", """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = nn.relu(%x);
  %1 = add(%0, 1f);
  %2 = multiply(%1, %1);
  %3 = nn.softmax(%x, axis=0);
  %4 = nn.softmax(%x, axis=-1);
  (%2, %3, %4)
}
""")
    skipped = T.eliminate_common_subexpr(before, skip=lambda c: c.op.name == "nn.relu")
    assert text(skipped).count("nn.relu") == 2


def test_simplify_inference():
    check_pass(T.simplify_inference, """
def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32],
          %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
  %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001f);
  %1 = nn.dropout(%0.0, rate=0.5f);
  (%1.0, %0.1)
}""", """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
  %0 = add(%v, 0.001f);
  %1 = rsqrt(%0);
  %2 = multiply(%1, %g);
  %3 = expand_dims(%2, axis=1, num_newaxis=2);
  %4 = multiply(%x, %3);
  %5 = multiply(%m, %2);
  %6 = negative(%5);
  %7 = add(%6, %b);
  %8 = expand_dims(%7, axis=1, num_newaxis=2);
  %9 = add(%4, %8);
  (%9, %m)
}
""")


def test_fold_scale_axis_backward_and_forward():
    w = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    s_out = RNG.uniform(0.5, 2, (4, 1, 1)).astype("float32")
    s_in = RNG.uniform(0.5, 2, (3, 1, 1)).astype("float32")
    src = """
def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
  %0 = multiply(%x, meta[relay.Constant][2]);
  %1 = nn.conv2d(%0, meta[relay.Constant][0], padding=[1, 1]);
  multiply(%1, meta[relay.Constant][1])
}"""
    before = parse(src, constants=[w, s_out, s_in])
    after = T.fold_scale_axis(before)
    assert text(after) == """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
  nn.conv2d(%x, meta[relay.Constant][0], padding=[1, 1])
}
"""
    np.testing.assert_allclose(after["main"].body.args[1].data,
                               w * s_out.reshape(4, 1, 1, 1) * s_in.reshape(1, 3, 1, 1), rtol=1e-6)
    assert_same_results(before, after, rtol=1e-4)


def test_fold_scale_axis_dense_and_shared_conv_untouched():
    w = RNG.standard_normal((4, 3)).astype("float32")
    s = RNG.uniform(0.5, 2, (4,)).astype("float32")
    before = parse("def @main(%x: Tensor[(2, 3), float32]) { multiply(nn.dense(%x, meta[relay.Constant][0]), "
                   "meta[relay.Constant][1]) }", constants=[w, s])
    after = T.fold_scale_axis(before)
    assert text(after).count("multiply") == 0
    assert_same_results(before, after)
    shared = parse("""
def @main(%x: Tensor[(1, 3, 4, 4), float32]) {
  %0 = nn.conv2d(%x, meta[relay.Constant][0]);
  (multiply(%0, meta[relay.Constant][1]), %0)
}""", constants=[RNG.standard_normal((2, 3, 1, 1)).astype("float32"), np.ones((2, 1, 1), "float32")])
    assert text(T.fold_scale_axis(shared)) == text(shared)


def test_batch_norm_folds_into_conv_weights():
    mod, params = zoo.resnet18(image_shape=(3, 32, 32), classes=10)
    bound = T.bind_params(mod, params)
    opt = T.sequential(T.simplify_inference, T.fold_constant, T.fold_scale_axis, T.fold_constant)(bound)
    ops = [n.op.name for n in post_order(opt["main"]) if isinstance(n, Call) and isinstance(n.op, Op)]
    assert "nn.batch_norm" not in ops and "multiply" not in ops
    assert ops.count("nn.conv2d") == 20
    x = RNG.standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(relay.run(opt, x), relay.run(mod, x, *params.values()), rtol=1e-4, atol=1e-6)


def test_to_a_normal_form_places_shared_nodes_at_the_common_scope():
    before, after = check_pass(T.to_a_normal_form, """
def @main(%x: Tensor[(1, 2), float32], %c: bool) {
  %0 = nn.relu(%x);
  %1 = add(%0, %0);
  %2 = if (%c) { multiply(%1, 2f) } else { %1 };
  (%2, exp(%1))
}""", """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2), float32], %c: bool) {
  let %x1 = nn.relu(%x);
  let %x2 = add(%x1, %x1);
  let %x3 = if (%c) {
    multiply(%x2, 2f)
  } else {
    %x2
  };
  let %x4 = exp(%x2);
  (%x3, %x4)
}
""")
    # every call argument is atomic
    for n in post_order(after["main"]):
        if isinstance(n, Call):
            assert all(isinstance(a, (Var, Constant, relay.GlobalVar)) for a in n.args)


def test_to_graph_normal_form():
    check_pass(T.to_graph_normal_form, """
def @main(%x: Tensor[(1, 2), float32]) {
  let %a = nn.relu(%x);
  let %f = fn (%y: Tensor[(1, 2), float32]) { add(%y, %a) };
  let %b = add(%a, %a);
  let %r = ref(%b);
  %f(ref_read(%r))
}""", """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2), float32]) {
  let %f = fn (%y: Tensor[(1, 2), float32]) {
    %0 = nn.relu(%x);
    add(%y, %0)
  };
  %1 = nn.relu(%x);
  %2 = add(%1, %1);
  let %r = ref(%2);
  %3 = ref_read(%r);
  %f(%3)
}
""")


def test_normal_forms_are_inverse_on_dataflow_and_keep_programs_working():
    mod, params = zoo.resnet18(image_shape=(3, 32, 32), classes=10)
    anf = T.to_a_normal_form(mod)
    assert isinstance(anf["main"].body, Let)
    assert text(T.to_graph_normal_form(anf)) == text(mod)
    x = RNG.standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_array_equal(relay.run(anf, x, *params.values()), relay.run(mod, x, *params.values()))
    p = T.to_a_normal_form(relay.prelude())
    relay.check_module(p)
    rnn = parse((__import__("pathlib").Path(__file__).parent / "programs" / "rnn.rly").read_text(),
                base=relay.prelude())
    args = random_args(rnn)
    np.testing.assert_allclose(relay.run(T.to_a_normal_form(rnn), *args), relay.run(rnn, *args))


FUSE_AFTER = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 3, 3), float32], %b: Tensor[(3), float32]) {
  %2 = fn (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(3, 2, 3, 3), float32], %p2: Tensor[(3), float32], Primitive=1) -> Tensor[(1, 3, 4, 4), float32] {
    %0 = nn.conv2d(%p0, %p1, padding=[1, 1]);
    %1 = nn.bias_add(%0, %p2);
    nn.relu(%1)
  };
  %3 = %2(%x, %w, %b);
  %4 = fn (%p0_1: Tensor[(1, 3, 4, 4), float32], Primitive=1) -> Tensor[(1, 3, 2, 2), float32] {
    nn.max_pool2d(%p0_1, pool_size=[2, 2], strides=[2, 2])
  };
  %5 = %4(%3);
  %8 = fn (%p0_2: Tensor[(1, 3, 2, 2), float32], Primitive=1) -> Tensor[(1), float32] {
    %6 = reshape(%p0_2, newshape=[1, -1]);
    %7 = transpose(%6);
    sum(%7, axis=[0])
  };
  %9 = %8(%5);
  %10 = fn (%p0_3: Tensor[(1), float32], Primitive=1) -> Tensor[(1), float32] {
    exp(%p0_3)
  };
  %11 = %10(%9);
  %12 = fn (%p0_4: Tensor[(1), float32], Primitive=1) -> Tensor[(1), float32] {
    nn.softmax(%p0_4)
  };
  %13 = %12(%11);
  %14 = fn (%p0_5: Tensor[(1, 3, 2, 2), float32], Primitive=1) -> Tensor[(1, 3, 2, 2), float32] {
    nn.relu(%p0_5)
  };
  %15 = %14(%5);
  (%13, %15)
}
"""


def test_fuse_ops_by_pattern():
    # conv2d (anchor) absorbs bias_add and relu; max_pool2d has two users so it stays alone;
    # reshape/transpose (injective) fuse into the reduction; nothing fuses after a reduction;
    # softmax is opaque.
    check_pass(T.fuse_ops, """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 3, 3), float32], %b: Tensor[(3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = reshape(%3, newshape=[1, -1]);
  %5 = transpose(%4);
  %6 = sum(%5, axis=[0]);
  %7 = exp(%6);
  %8 = nn.softmax(%7);
  (%8, nn.relu(%3))
}""", FUSE_AFTER)


def test_fuse_ops_on_resnet_and_control_flow():
    mod, params = zoo.resnet18(image_shape=(3, 32, 32), classes=10)
    opt = T.sequential(lambda m: T.bind_params(m, params), T.simplify_inference, T.fold_constant,
                       T.fold_scale_axis, T.fold_constant, T.fuse_ops)(mod)
    prims = [n for n in post_order(opt["main"]) if isinstance(n, Function) and n.is_primitive]
    for f in prims:
        anchors = [n for n in post_order(f.body) if isinstance(n, Call) and isinstance(n.op, Op)
                   and relay.op.get_op(n.op.name).pattern == relay.op.OpPattern.OUT_ELEMWISE_FUSABLE]
        assert len(anchors) <= 1
    # 20 convolutions, 1 max pool, 1 global pool, 1 dense -> one group each; softmax alone
    assert len(prims) == 20 + 1 + 1 + 1 + 1 + 1   # + batch_flatten
    x = RNG.standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(relay.run(opt, x), relay.run(mod, x, *params.values()), rtol=1e-4, atol=1e-6)
    rnn = parse((__import__("pathlib").Path(__file__).parent / "programs" / "rnn.rly").read_text(),
                base=relay.prelude())
    fused = T.fuse_ops(rnn)
    args = random_args(rnn)
    np.testing.assert_allclose(relay.run(fused, *args), relay.run(rnn, *args), rtol=1e-5)


def test_bind_params():
    before = parse("def @main(%x: Tensor[(2), float32], %w: Tensor[(2), float32]) { add(%x, %w) }")
    after = T.bind_params(before, {"w": np.array([1, 2], "float32")})
    assert text(after) == """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  add(%x, meta[relay.Constant][0])
}
"""
    with pytest.raises(ValueError, match="no parameter"):
        T.bind_params(before, {"nope": np.ones(2)})
