"""Run a benchmark's measurement on an earlier revision of the tree, for its "before" figures.

The revision is exported with ``git archive`` into a temporary folder and the *current*
benchmark script runs there with ``--json`` (``VTA_BENCH_TREE`` tells it not to put this
checkout on ``sys.path``), so before and after are the same measurement of two trees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure_at(rev: str, script: str, args: "list[str]", timeout: float = 3600) -> "dict | None":
    """The JSON the benchmark ``script`` prints (its last line) when run with ``--json`` plus
    ``args`` on revision ``rev``; None, with the reason printed, if that cannot be done."""
    with tempfile.TemporaryDirectory(prefix="vta-baseline-") as tmp:
        try:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            print(f"baseline {rev}: cannot export ({exc})")
            return None
        env = dict(os.environ, VTA_BENCH_TREE="1", PYTHONPATH=tmp)
        cmd = [sys.executable, str(Path(script).resolve()), "--json", *args]
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"baseline {rev}: no answer within {timeout:.0f} s")
            return None
        if done.returncode:
            print(f"baseline {rev}: failed\n{done.stderr[-2000:]}")
            return None
        return json.loads(done.stdout.splitlines()[-1])
