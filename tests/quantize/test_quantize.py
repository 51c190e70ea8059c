"""The quantiser: batch-norm folding, the rounding it states, the integer programs it emits, and
their agreement with the float model in the Relay interpreter."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay import transform as T
from relay.analysis import post_order
from relay.ir import Call, Constant, Op, Tuple, op_call
from relay.quantize import (DoesNotQuantize, QConfig, QuantizeError, anchor_macs, exponent_for,
                            fold_affine_into_anchor, quantize, round_half_away)
from relay.quantize.prepare import merge_affine_chains
from relay.quantize.realize import quantize_input, shift_round


def _ops(mod):
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)]


def _run_expr(build, *arrays):
    """Evaluate ``build(*vars)`` in the interpreter on ``arrays``."""
    vs = [relay.Var(f"a{i}", relay.TensorType(a.shape, str(a.dtype))) for i, a in enumerate(arrays)]
    mod = relay.IRModule({"main": relay.Function(vs, build(*vs))})
    return relay.run(mod, *arrays)


# ---------------------------------------------------------------- rounding


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.integers(-2 ** 24, 2 ** 24), min_size=1, max_size=16), st.integers(1, 7))
def test_requantisation_rounds_half_up(values, s):
    """``(y + 2**(s-1)) >> s`` is floor(y / 2**s + 1/2), in exact integers."""
    y = np.array(values, np.int32)
    got = _run_expr(lambda v: shift_round(v, s), y)
    want = [(2 * v + 2 ** s) // 2 ** (s + 1) for v in values]   # floor(v/2^s + 1/2) exactly
    assert got.dtype == np.int32 and got.tolist() == want


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(st.integers(-2 ** 20, 2 ** 20), min_size=3, max_size=3), st.lists(st.integers(0, 6), min_size=3,
                                                                                       max_size=3))
def test_per_channel_shift(values, shifts):
    y = np.array(values, np.int32).reshape(1, 3, 1, 1)
    got = _run_expr(lambda v: shift_round(v, np.array(shifts), (3, 1, 1)), y).ravel().tolist()
    assert got == [(2 * v + 2 ** s) // 2 ** (s + 1) if s else v for v, s in zip(values, shifts)]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.floats(-300, 300, allow_nan=False, width=32), min_size=1, max_size=16), st.integers(-8, 2))
def test_input_quantisation_rounds_half_away_and_saturates(values, e):
    x = np.array(values, np.float32)
    got = _run_expr(lambda v: quantize_input(v, e), x)
    scaled = x.astype(np.float32) * np.float32(2.0 ** -e)    # the program multiplies in float32
    want = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), -128, 127).astype(np.int8)
    assert got.dtype == np.int8 and got.tolist() == want.tolist()


def test_round_half_away_and_ties():
    assert round_half_away([0.5, 1.5, -0.5, -2.5, 2.4999]).tolist() == [1, 2, -1, -3, 2]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.floats(1e-6, 1e6, allow_nan=False))
def test_exponent_is_the_tightest_power_of_two(m):
    e = exponent_for(m)
    assert m / 2.0 ** e <= 127 < m / 2.0 ** (e - 1)


def test_exponent_of_exact_powers_and_zero():
    assert exponent_for(127.0) == 0 and exponent_for(127.5) == 1 and exponent_for(0.0) == 0
    assert exponent_for(np.array([127.0, 254.0, 0.0])).tolist() == [0, 1, 0]


# ---------------------------------------------------------------- batch-norm folding (a pass: before/after)


def test_fold_affine_into_anchor_before_and_after():
    model, params = relay.zoo.resnet18(image_shape=(3, 16, 16), classes=10)
    before = T.sequential(lambda m: T.bind_params(m, params), T.simplify_inference, T.fold_constant)(model)
    after = T.fold_constant(fold_affine_into_anchor(before))
    assert _ops(before).count("multiply") > 0
    ops = _ops(after)
    assert "multiply" not in ops and "nn.batch_norm" not in ops
    assert ops.count("nn.bias_add") == ops.count("nn.conv2d") + ops.count("nn.dense") == 21
    # Every anchor is followed by exactly one bias_add.
    for n in post_order(after["main"].body):
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.bias_add":
            assert n.args[0].op.name in ("nn.conv2d", "nn.dense")
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype("float32")
    want = relay.run(model, x, *params.values())
    np.testing.assert_allclose(relay.run(after, x), want, rtol=1e-4, atol=1e-6)


def test_fold_stops_at_a_shared_value():
    mod = relay.parse('''
def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
  %0 = nn.conv2d(%x, ones(shape=[3, 2, 1, 1], dtype="float32"));
  %1 = multiply(%0, 2f);
  (%1, %0)
}''')
    after = fold_affine_into_anchor(T.fold_constant(mod))
    assert "multiply" in _ops(after)


def test_merge_affine_chains_before_and_after():
    """Mul, Add, Mul, Add by per-channel and scalar constants after a concatenation (DenseNet's
    batch norm as the ONNX model writes it) become one multiply and one add; a chain through a
    value with two users, or a single step, stays as it was."""
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal((4, 1, 1)).astype("float32") for _ in range(4))
    x = relay.Var("x", relay.TensorType((1, 2, 3, 3), "float32"))
    cat = op_call("concatenate", Tuple((x, x)), axis=1)
    y = op_call("add", op_call("multiply", op_call("add", op_call("multiply", cat, Constant(a)), Constant(b)),
                               Constant(c)), Constant(d))
    shared = op_call("subtract", cat, Constant(np.float32(0.5)))
    z = op_call("divide", shared, Constant(np.float32(4.0)))
    before = relay.IRModule({"main": relay.Function([x], Tuple((y, z, shared)))})
    after = merge_affine_chains(before)
    ops = _ops(after)
    assert ops.count("multiply") == 1 and ops.count("add") == 1        # the chain of four: two
    assert ops.count("subtract") == 1 and ops.count("divide") == 1     # shared: left apart
    v = rng.standard_normal((1, 2, 3, 3)).astype("float32")
    for got, want in zip(relay.run(after, v), relay.run(before, v)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the integer program


def _zoo_quantized(config=QConfig(), samples=6, seed=0):
    model, params = relay.zoo.resnet18(image_shape=(3, 16, 16), classes=10, seed=seed)
    rng = np.random.default_rng(seed)
    cal = {"data": rng.standard_normal((samples, 1, 3, 16, 16)).astype("float32")}
    return model, params, cal, quantize(model, params, cal, config)


@pytest.fixture(scope="module")
def resnet_q():
    return _zoo_quantized()


def test_integer_program_follows_the_contract(resnet_q):
    """Anchors take int8 data and weights and accumulate in int32; no float operator is left
    between the input quantisation and the output dequantisation."""
    _, _, _, q = resnet_q
    assert q.report.float_ops == ("nn.softmax",)   # after the classifier, on the CPU
    anchors = 0
    for n in post_order(q.mod["main"].body):
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in ("nn.conv2d", "nn.dense"):
            anchors += 1
            assert n.args[0].checked_type.dtype == "int8" and n.args[1].checked_type.dtype == "int8"
            assert n.checked_type.dtype == "int32"
            assert isinstance(n.args[1], relay.Constant)
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "right_shift":
            s = n.args[1].data
            assert s.dtype == np.int32 and s.ndim == 0 and s >= 1
            assert n.args[0].op.name == "add" and n.args[0].args[1].data == 1 << (int(s) - 1)
    assert anchors == 21
    assert q.report.int8_mac_share == 1.0 and str(q.report).startswith("100.0 % of conv/dense MACs in int8")
    floats = [n for n in post_order(q.mod["main"].body) if isinstance(n, Call) and n.checked_type is not None
              and getattr(n.checked_type, "dtype", "") == "float32"]
    # Only the input quantisation (multiply, round, clip) and output dequantisation (cast, multiply)
    # and the softmax that follows it are float.
    assert sorted(n.op.name for n in floats) == ["cast", "clip", "multiply", "multiply", "nn.softmax", "round"]


def test_quantised_resnet_agrees_with_float(resnet_q):
    """Scores (before the softmax) within cosine 0.99; a top-1 class may differ only where the float
    model itself has a near tie (random weights on random inputs give close scores)."""
    _, _, cal, q = resnet_q
    r = q.report
    assert r.samples == 6 and r.cosine_min > 0.99 and r.top5 == 1.0 and r.top1 >= 0.8
    float_scores = relay.IRModule({"main": relay.Function(q.float_mod["main"].params, q.float_mod["main"].body.args[0])})
    int_scores = relay.IRModule({"main": relay.Function(q.mod["main"].params, q.mod["main"].body.args[0])})
    for x in cal["data"]:
        f, i = relay.run(float_scores, x)[0], relay.run(int_scores, x)[0]
        if np.argmax(f) != np.argmax(i):
            assert f.max() - f[np.argmax(i)] < 0.05 * (f.max() - f.min())


def test_agreement_is_measured_against_the_unprepared_float_model(resnet_q):
    """The float reference of the report is the prepared model, which equals the imported one."""
    model, params, cal, q = resnet_q
    x = cal["data"][0]
    np.testing.assert_allclose(relay.run(q.float_mod, x), relay.run(model, x, *params.values()), rtol=1e-4,
                               atol=1e-6)
    out = relay.run(q.mod, x)
    assert out.dtype == np.float32 and out.shape == (1, 10)


def test_per_channel_weights():
    *_, q = _zoo_quantized(QConfig(per_channel=True), samples=4, seed=1)
    vec = [n for n in post_order(q.mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)
           and n.op.name == "right_shift" and n.args[1].data.ndim == 3]
    assert len(vec) == 20   # one per convolution (the dense's per-channel shift is 1-D)
    assert q.report.cosine_min > 0.99 and q.report.top1 == 1.0


def test_one_conv_layer_against_numpy():
    """An independent integer reference: conv + bias + relu, requantised by hand with numpy."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 2, 3, 3)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    mod = relay.parse('''
def @main(%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(4, 2, 3, 3), float32], %b: Tensor[(4), float32]) {
  nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b))
}''')
    cal = {"x": rng.standard_normal((5, 1, 2, 6, 6)).astype("float32")}
    q = quantize(mod, {"w": w, "b": b}, cal)
    ex = q.exponents["x"]
    x = cal["x"][2]
    xq = np.clip(np.sign(x * 2.0 ** -ex) * np.floor(np.abs(x * 2.0 ** -ex) + 0.5), -128, 127).astype(np.int64)
    ew = exponent_for(np.abs(w).max())
    wq = np.clip(round_half_away(w / 2.0 ** ew), -128, 127).astype(np.int64)
    bq = round_half_away(b / 2.0 ** (ex + ew)).astype(np.int64)
    xp = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((1, 4, 6, 6), np.int64)
    for i in range(6):
        for j in range(6):
            acc[0, :, i, j] = np.einsum("cij,ocij->o", xp[0, :, i:i + 3, j:j + 3], wq)
    acc = np.maximum(acc + bq.reshape(4, 1, 1), 0)
    float_out = relay.run(q.float_mod, x)
    e_out = exponent_for(max(np.abs(relay.run(q.float_mod, s)).max() for s in cal["x"]))
    s = e_out - (ex + ew)
    want = np.clip((acc + (1 << (s - 1))) >> s, -128, 127).astype(np.float32) * 2.0 ** e_out
    got = relay.run(q.mod, x)
    np.testing.assert_array_equal(got, want)
    # Input and weight rounding add to the output's own: a few output steps at most.
    assert np.max(np.abs(got - float_out)) <= 2 * 2.0 ** e_out
    assert np.mean(np.abs(got - float_out)) <= 0.5 * 2.0 ** e_out


CONV_BIAS = """
def @main(%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(4, 2, 3, 3), float32], %b: Tensor[(4), float32]) {
  nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b))
}"""


def _conv_with_bias(bias):
    """A convolution with weights near 1e-3 (scale 2^-20 with the input's 2^-5: int32 holds
    biases up to ~2048) and the float ``bias``; its calibration samples."""
    rng = np.random.default_rng(3)
    w = (1e-3 * rng.standard_normal((4, 2, 3, 3))).astype("float32")
    cal = {"x": rng.standard_normal((5, 1, 2, 6, 6)).astype("float32")}
    return relay.parse(CONV_BIAS), {"w": w, "b": np.asarray(bias, "float32")}, cal


def test_a_bias_beyond_int32_is_refused_naming_the_layer():
    """Before: the bias was clipped to int32 (and its rounding constant wrapped): the int8 program
    printed -2048 where float had 5000, cosine -0.24, and nothing said so. Now the quantiser
    refuses it, naming the layer, the channel, the values and the options that keep it in float."""
    mod, params, cal = _conv_with_bias([0.5, -3.0, 2.0, 1000.0])
    q = quantize(mod, params, cal)              # in range: exact to a few output steps
    x = cal["x"][1]
    got, want = relay.run(q.mod, x), relay.run(q.float_mod, x)
    assert np.max(np.abs(got - want)) <= 2 * 2.0 ** exponent_for(np.abs(want).max())
    acc_exp = q.exponents["x"] + exponent_for(np.abs(params["w"]).max())
    assert acc_exp == -20 and 1000 * 2 ** 20 < 2 ** 31 < 5000 * 2 ** 20

    mod, params, cal = _conv_with_bias([0.5, -3000.0, 2.0, 5000.0])
    with pytest.raises(DoesNotQuantize) as err:
        quantize(mod, params, cal)
    msg = str(err.value)
    assert msg.startswith("nn.conv2d layer 0 does not fit int32: its bias of channel 3, 5000 (float, "
                          "range -3000 to 5000), is 5.243e+09 at its accumulator's scale 2^-20")
    assert "keep it in float with --skip-layer 0 or --skip-op nn.conv2d" in msg and "\n" not in msg
    assert err.value.exit_code == 1 and isinstance(err.value, QuantizeError)
    with pytest.raises(DoesNotQuantize, match="or quantise without --per-channel"):
        quantize(mod, params, cal, QConfig(per_channel=True))
    # What the message offers works: the layer in float gives the float model's result.
    for config in (QConfig(skip_layers=(0,)), QConfig(skip_ops=("nn.conv2d",))):
        q = quantize(mod, params, cal, config)
        np.testing.assert_allclose(relay.run(q.mod, x), relay.run(q.float_mod, x), rtol=1e-6)


def test_a_bias_within_int32_but_not_with_the_products_is_refused():
    """The bias and the largest sum of the layer's int8 products must fit together: a bias
    just below 2^31 units would wrap on the accumulator."""
    mod, params, cal = _conv_with_bias([0.0, 0.0, 0.0, 2047.99])   # 2^31 - 10486 units at 2^-20
    with pytest.raises(DoesNotQuantize, match="with its products \\(up to [0-9.e+]+\\) beyond int32"):
        quantize(mod, params, cal)


def test_a_per_channel_step_whose_shift_does_not_fit_is_refused():
    """A batch norm after a concatenation with tiny scales and a large shift becomes a depthwise
    1x1 convolution whose bias would leave int32: named by its operator and position."""
    x = relay.Var("x", relay.TensorType((1, 2, 4, 4), "float32"))
    w = relay.Var("w", relay.TensorType((2, 2, 1, 1), "float32"))
    cat = op_call("concatenate", Tuple((op_call("nn.conv2d", x, w), op_call("nn.conv2d", x, w))), axis=1)
    body = op_call("add", op_call("multiply", cat, Constant(np.full((4, 1, 1), 1e-6, "float32"))),
                   Constant(np.full((4, 1, 1), 10.0, "float32")))
    mod = relay.IRModule({"main": relay.Function([x, w], body)})
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((2, 2, 1, 1)).astype("float32")}
    cal = {"x": rng.standard_normal((3, 1, 2, 4, 4)).astype("float32")}
    with pytest.raises(DoesNotQuantize, match="^the per-channel multiply \\(operator [0-9]+ in evaluation order, "
                                              "a depthwise 1x1 convolution on VTA\\) does not fit int32: .*"
                                              "keep it in float with --skip-op multiply"):
        quantize(mod, params, cal)
    q = quantize(mod, params, cal, QConfig(skip_ops=("multiply",)))
    np.testing.assert_allclose(relay.run(q.mod, cal["x"][0]), relay.run(q.float_mod, cal["x"][0]), rtol=1e-5)


def test_skip_by_layer_index_and_operator_pattern():
    model, params = relay.zoo.resnet18(image_shape=(3, 16, 16), classes=10)
    cal = {"data": np.random.default_rng(0).standard_normal((2, 1, 3, 16, 16)).astype("float32")}
    q = quantize(model, params, cal, QConfig(skip_layers=(0,), skip_ops=("nn.dense",)))
    anchors = [n for n in post_order(q.mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)
               and n.op.name in ("nn.conv2d", "nn.dense")]
    kinds = [n.checked_type.dtype for n in anchors]
    assert kinds[0] == "float32" and kinds[-1] == "float32" and set(kinds[1:-1]) == {"int32"}
    # The max pool after the float stem pools the quantised tensor (exact: quantisation is monotone).
    assert sorted(set(q.report.float_ops)) == ["nn.bias_add", "nn.conv2d", "nn.dense", "nn.relu", "nn.softmax"]
    assert "left in float" in str(q.report)
    # The first convolution (64 x 8 x 8 outputs of 3 x 7 x 7) and the classifier (10 x 512) are float.
    _, total = anchor_macs(relay.transform.infer_type(q.float_mod)["main"])
    assert q.report.int8_mac_share == pytest.approx(1 - (64 * 8 * 8 * 3 * 7 * 7 + 10 * 512) / total)
    with pytest.raises(QuantizeError, match="skip_layers \\[30\\] out of range: the model has 21"):
        quantize(model, params, cal, QConfig(skip_layers=(30,)))


@pytest.mark.parametrize("cal,message", [
    ({"image": np.zeros((2, 1, 3, 16, 16), "float32")}, "the model's inputs are \\['data'\\]"),
    ({"data": np.zeros((1, 3, 16, 16), "float32")}, "expected \\(S, 1, 3, 16, 16\\)"),
    ({"data": np.zeros((2, 1, 3, 16, 16), "int32")}, "float data is needed"),
    ({"data": np.zeros((0, 1, 3, 16, 16), "float32")}, "no samples"),
])
def test_bad_calibration_data(cal, message):
    model, params = relay.zoo.resnet18(image_shape=(3, 16, 16), classes=10)
    with pytest.raises(QuantizeError, match=message):
        quantize(model, params, cal)


def test_dcgan_generator_transposed_convolutions():
    """conv2d_transpose is an anchor too: int8 in, int32 accumulation, IOHW weights (per-channel
    scales along the output axis 1); only the final tanh stays in float."""
    torch = pytest.importorskip("torch")
    from relay.op import list_ops
    if "nn.conv2d_transpose" not in list_ops():
        pytest.skip("nn.conv2d_transpose is added by the compiler branch")
    import warnings
    from relay.frontend import from_pytorch, torch_models
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(torch_models.dcgan_generator(ngf=8), (torch.randn(1, 100, 1, 1),))
    mod, params = from_pytorch(program, name="dcgan")
    cal = {"x": np.random.default_rng(0).standard_normal((3, 1, 100, 1, 1)).astype("float32")}
    for per_channel in (False, True):
        q = quantize(mod, params, cal, QConfig(per_channel=per_channel))
        assert q.report.float_ops == ("tanh",) and q.report.cosine_min > 0.99
        convs = [n for n in post_order(q.mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)
                 and n.op.name == "nn.conv2d_transpose"]
        assert len(convs) == 5 and all(n.args[0].checked_type.dtype == "int8" for n in convs)
