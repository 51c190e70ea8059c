"""Malformed Relay text is a ParseError or RelayTypeError naming the place, never a traceback
from deeper down (JSON, base64, struct, numpy, int conversion)."""
import pytest

import relay

BIG = "9" * 5000
BAD = {
    "metadata-not-json": ('def @main() { meta[relay.Constant][0] }\n#[metadata]\n{not json', "2:1: invalid #[metadata]"),
    "metadata-size": ('def @main() { meta[relay.Constant][0] }\n#[metadata]\n'
                      '{"relay.Constant": [{"dtype": "float32", "shape": [3], "data": "AAAA"}]}', "invalid #[metadata]"),
    "metadata-object-dtype": ('def @main() { 1 }\n#[metadata]\n'
                              '{"relay.Constant": [{"dtype": "object", "shape": [1], "data": "AAAAAAAAAAA="}]}',
                              "unsupported dtype 'object'"),
    "metadata-bad-base64": ('def @main() { 1 }\n#[metadata]\n{"b64ndarrays": ["@@@"]}', "invalid #[metadata]"),
    "metadata-truncated-tvm-blob": ('def @main() { 1 }\n#[metadata]\n{"b64ndarrays": ["AAAA"]}', "invalid #[metadata]"),
    "metadata-list": ('def @main() { 1 }\n#[metadata]\n[1, 2]', "expected a JSON object"),
    "5000-digit-literal": (f"def @main() {{ {BIG} }}", "1:15: numeric literal longer than 64 characters"),
    "5000-digit-dimension": (f"def @main(%x: Tensor[({BIG}), float32]) {{ %x }}", "numeric literal longer"),
    "5000-digit-tuple-index": (f"def @main() {{ (1, 2).{BIG} }}", "numeric literal longer"),
    "int8-overflow": ("def @main() { 128i8 }", "integer literal 128 does not fit in int8"),
    "float16-overflow": ("def @main() { -65505f16 }", "floating point literal -65505 does not fit in float16"),
    "bad-escape": ('def @main(%x: float32) { cast(%x, dtype="\\q") }', "invalid string literal"),
    "string-attr-for-number": ('def @main(%x: Tensor[(2), float32]) { nn.softmax(%x, axis="one") }',
                               "nn.softmax attribute axis='one' must be a number"),
    "number-attr-for-string": ('def @main(%x: Tensor[(1, 1, 4, 4), float32], %w: Tensor[(1, 1, 1, 1), float32]) '
                               '{ nn.conv2d(%x, %w, data_layout=3) }', "data_layout=3 must be a string"),
    "string-pool-size": ('def @main(%x: Tensor[(1, 1, 4, 4), float32]) { nn.max_pool2d(%x, pool_size="a") }',
                         "pool_size must be an integer or a list of integers"),
    "string-newshape": ('def @main(%x: Tensor[(2), float32]) { reshape(%x, newshape="ab") }',
                        "relation Reshape failed on the call's attributes"),
    "unterminated-comment": ("def @main() { 1 } /* /* */", "unterminated /* comment"),
    "extern-with-constructors": ("extern type T { A }", "an external type may not have any constructors"),
    "vector-dtype-typo": ("def @main(%x: int8y4) { %x }", "unknown dtype 'int8y4'"),
}


@pytest.mark.parametrize("name", BAD)
def test_malformed_text_is_a_clean_error(name):
    text, message = BAD[name]
    with pytest.raises((relay.ParseError, relay.RelayTypeError)) as e:
        relay.check_module(relay.parse(text, source="bad.rly"))
    assert message in str(e.value)
    assert str(e.value).startswith("bad.rly:")
    assert len(str(e.value).split("\n")[0]) < 300
