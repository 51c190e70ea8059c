"""The examples of docs/relay.md run: relay blocks type-check, python blocks execute."""
import re
from pathlib import Path

import relay

DOC = Path(__file__).resolve().parents[2] / "docs" / "relay.md"


def blocks(kind):
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), re.S)


def test_relay_blocks_parse_and_type_check():
    found = blocks("relay")
    assert len(found) >= 4
    for text in found:
        mod = relay.parse(text, base=relay.prelude())
        relay.check_module(mod)


def test_python_blocks_run(capsys):
    found = blocks("python")
    assert len(found) >= 10
    namespace = {}
    for i, code in enumerate(found):
        exec(compile(code, f"{DOC}:python-block-{i}", "exec"), namespace)


def test_shape_example_runs():
    shapes = next(t for t in blocks("relay") if "type Shape" in t)
    mod = relay.parse(shapes, base=relay.prelude())
    assert abs(float(relay.run(mod)) - (6 + 3.14159)) < 1e-5
