"""docs/driver.md's ten-line example runs as written and prints what it says."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "driver.md"


def test_ten_line_example(capsys):
    code = re.search(r"## Ten lines\n\n```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 13  # ten lines of driver use plus two imports
    exec(compile(code, str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert printed.split() == ["["] + [str(n) for n in range(1, 17)] + ["]"] or \
        printed.strip() == "[ 1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16]"
