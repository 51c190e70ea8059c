"""The examples of docs/models.md run."""
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def test_python_blocks_run(capsys):
    found = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(found) >= 3
    namespace = {}
    for i, code in enumerate(found):
        exec(compile(code, f"{DOC}:python-block-{i}", "exec"), namespace)
