"""The text format: printer and parser round-trip, TVM-printed programs parse, errors have positions."""
import base64
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import relay
from relay import ParseError, parse, parse_expr, parse_type, module_to_text
from relay.ty import ANY, FuncType, RefType, TensorType, TupleType, TypeCall

PROGRAMS = Path(__file__).parent / "programs"


def round_trip(text, base=None):
    mod = parse(text, base=base)
    once = module_to_text(mod)
    twice = module_to_text(parse(once, base=base))
    assert once == twice
    return mod, once


def test_graph_bindings_and_let_round_trip():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(3, 4), float32]) -> Tensor[(1, 3), float32] {
  %0 = nn.dense(%x, %w, units=3);
  let %y = nn.relu(%0);
  %1 = add(%y, 1f);
  multiply(%1, %1)
}
"""
    mod, out = round_trip(text)
    assert out == text
    body = mod["main"].body
    assert isinstance(body, relay.Let)
    # %1 is one node used twice (graph sharing), not two copies
    assert body.body.args[0] is body.body.args[1]


def test_every_construct_round_trips():
    text = """
type Pair[A, B] {
  MkPair(A, B),
}
def @main(%x: Tensor[(2, ?), float32], %c: bool) -> float32 {
  let %r = ref(0f);
  let %f = fn [T](%a: T) -> T { %a };
  let %t = (%x, (%c,), ());
  %0 = if (%c) { sum(%t.0) } else { let %z = -1.5f; %z };
  ref_write(%r, %0);
  %1 = MkPair(ref_read(%r), %f(2i8));
  match? (%1) {
    MkPair(%v, _) => %v,
  }
}
"""
    mod, out = round_trip(text)
    relay.check_module(mod)
    assert "fn [T](%a: T) -> T {" in out and "match? (%6) {" in out and "let %_ = ref_write(%r, %3);" in out
    assert float(relay.run(mod, np.ones((2, 3), "float32"), np.bool_(True))) == 6
    assert float(relay.run(mod, np.ones((2, 3), "float32"), np.bool_(False))) == -1.5


def test_prelude_and_programs_round_trip():
    round_trip(relay.prelude().astext())
    round_trip((PROGRAMS / "rnn.rly").read_text(), base=relay.prelude())


def test_zoo_model_round_trips_with_metadata():
    from relay import zoo, transform
    mod, params = zoo.mlp(in_features=8, hidden=(6,), classes=3)
    bound = transform.bind_params(mod, params)
    text = bound.astext()
    assert "meta[relay.Constant][0]" in text and "#[metadata]" in text
    again = parse(text)
    assert module_to_text(again) == text
    x = np.ones((1, 8), "float32")
    np.testing.assert_array_equal(relay.run(again, x), relay.run(bound, x))


def test_literals_and_types():
    e = parse_expr("(1, 2i64, 3u8, 1.5f, 2f64, 1e-3f16, True, -4i8, 7b)")
    dtypes = [str(f.data.dtype) for f in e.fields]
    assert dtypes == ["int32", "int64", "uint8", "float32", "float64", "float16", "bool", "int8", "bool"]
    assert parse_type("Tensor[(1, ?, 3), int8]") == TensorType((1, ANY, 3), "int8")
    assert parse_type("Tensor[(3), float32]") == TensorType((3,), "float32")
    assert parse_type("(float32, (int32,), ())") == TupleType((TensorType(()), TupleType((TensorType((), "int32"),)),
                                                               TupleType(())))
    assert parse_type("fn (float32) -> ref(int32)") == FuncType((TensorType(()),), RefType(TensorType((), "int32")))
    t = parse_type("List[Option[float32]]", relay.prelude())
    assert isinstance(t, TypeCall) and t.func.name == "List"
    for s in ["Tensor[(1, ?, 3), int8]", "(float32, (int32,), ())", "fn [A](A, List[A]) -> List[A]"]:
        assert str(parse_type(s, relay.prelude())) == s


def test_infix_operators_and_precedence():
    e = parse_expr("free_var %a: int32; free_var %b: int32; %a + %b * 2 - 1 == %b")
    assert e.op.name == "equal" and e.args[0].op.name == "subtract"
    assert e.args[0].args[0].args[1].op.name == "multiply"


TVM_TEXT = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 8, 8), float32], %conv_weight: Tensor[(4, 3, 3, 3), float32], %bn_gamma: Tensor[(4), float32], %bn_beta: Tensor[(4), float32], %bn_mean: Tensor[(4), float32], %bn_var: Tensor[(4), float32]) -> Tensor[(1, 4, 4, 4), float32] {
  %0 = nn.conv2d(%data, %conv_weight, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %1 = nn.batch_norm(%0, %bn_gamma, %bn_beta, %bn_mean, %bn_var, epsilon=1e-05f) /* ty=(Tensor[(1, 4, 8, 8), float32], Tensor[(4), float32], Tensor[(4), float32]) */;
  %2 = %1.0 /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %3 = nn.relu(%2) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %4 = nn.max_pool2d(%3, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0]) /* ty=Tensor[(1, 4, 4, 4), float32] */;
  %5 = clip(%4, a_min=-127f, a_max=127f);
  %6 = multiply(%5, meta[relay.Constant][0] /* ty=Tensor[(4, 1, 1), float32] */) /* ty=Tensor[(1, 4, 4, 4), float32] */;
  // a comment
  add(%6, 0.5f) /* ty=Tensor[(1, 4, 4, 4), float32] */
}

#[metadata]
"""


def tvm_ndarray_blob(a):
    code = {"i": 0, "u": 1, "f": 2}[a.dtype.kind]
    head = struct.pack("<QQiii", 0xDD5E40F096B4A13F, 0, 1, 0, a.ndim)
    head += struct.pack("<BBH", code, a.dtype.itemsize * 8, 1)
    head += struct.pack(f"<{a.ndim}q", *a.shape) + struct.pack("<q", a.nbytes)
    return base64.b64encode(head + a.tobytes()).decode()


def test_tvm_printed_program_parses_and_runs():
    scale = np.arange(4, dtype="float32").reshape(4, 1, 1)
    meta = json.dumps({"root": 1, "nodes": [{"type_key": ""}], "b64ndarrays": [tvm_ndarray_blob(scale)],
                       "attrs": {"tvm_version": "0.8.0"}})
    mod = parse(TVM_TEXT + meta)
    assert str(relay.check_module(mod).global_types["main"].ret_type) == "Tensor[(1, 4, 4, 4), float32]"
    np.testing.assert_array_equal(mod["main"].body.args[0].args[1].data, scale)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type_annotation.shape).astype("float32") for p in mod["main"].params]
    args[-1] = np.abs(args[-1]) + 1
    out = relay.run(mod, *args)
    assert out.shape == (1, 4, 4, 4)


def test_constants_can_be_supplied_instead_of_metadata():
    e = parse_expr("add(meta[relay.Constant][0], 1f)", constants=[np.ones(2, "float32")])
    assert relay.evaluate(e).tolist() == [2, 2]


@pytest.mark.parametrize("text,line,col,message", [
    ("def @main() {\n  add(1f, \n}", 3, 1, "expected an expression but found '}'"),
    ("def @main(%x: Tensor[(1), float33]) { %x }", 1, 27, "unknown dtype 'float33'"),
    ("def @main() {\n  %y\n}", 2, 3, "unbound variable %y"),
    ("def @main() {\n  nn.relux(1f)\n}", 2, 3, "unknown operator or constructor 'nn.relux'"),
    ("def @main() {\n  @nope(1f)\n}", 2, 3, "unknown global function @nope"),
    ("def @main() { meta[relay.Constant][3] }", 1, 15, "meta[relay.Constant][3] is not in the metadata section"),
    ("def @f() { 1 }\ndef @f() { 2 }", 2, 1, "global @f is defined twice"),
    ("def @main() { 1 } $", 1, 19, "unexpected character '$'"),
    ("def @main() -> Foo { 1 }", 1, 16, "unknown type 'Foo'"),
    ("def @main() { match (1) { Bar => 1 } }", 1, 27, "unknown constructor 'Bar' in pattern"),
    ("deff @main() { 1 }", 1, 1, "expected 'def' or 'type' at top level"),
])
def test_parse_errors_give_line_and_column(text, line, col, message):
    with pytest.raises(ParseError) as e:
        parse(text, source="bad.rly")
    assert (e.value.line, e.value.column) == (line, col), str(e.value)
    assert message in str(e.value)
    assert str(e.value).startswith(f"bad.rly:{line}:{col}: ")


def test_dotted_variable_names_from_tvm_frontends():
    mod = parse("""
def @main(%input.1: Tensor[(2), float32], %t: (float32, float32)) {
  %0 = (%input.1, %input.1);
  add(%0.1, %t.0)
}""")
    out = relay.run(mod, np.array([1, 2], "float32"), (np.float32(10), np.float32(20)))
    assert out.tolist() == [11, 12]
    printed = module_to_text(mod)
    assert "%input_1: Tensor[(2), float32]" in printed
    assert module_to_text(parse(printed)) == printed


def test_conv2d_transpose_round_trips():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 4, 4), int8], %w: Tensor[(8, 4, 4, 4), int8]) -> Tensor[(1, 4, 8, 8), int32] {
  nn.conv2d_transpose(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[0, 0], channels=4, kernel_size=[4, 4], out_dtype="int32")
}
"""
    mod, out = round_trip(text)
    assert out == text
    assert relay.check_module(mod).global_types["main"].ret_type == TensorType((1, 4, 8, 8), "int32")
