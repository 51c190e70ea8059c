"""Every command of the fuzz table on mutated and random inputs (hypothesis, derandomized):
no traceback, no internal error, no hang, the documented exit status, no partial output."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta.cli import build_parser

from .harness import check, examples, run_vta
from .table import TABLE

build_parser()      # import every command module now (Relay raises the recursion limit)


def _materialise(tmp: Path, files: dict) -> dict:
    paths = {}
    for name, data in files.items():
        path = tmp / name
        path.write_bytes(data)
        paths[name] = path
    return paths


@pytest.mark.parametrize("command", TABLE, ids=[c.name for c in TABLE])
def test_fuzz_command(command):
    @settings(max_examples=examples(command.examples), derandomize=True, deadline=None,
              database=None, suppress_health_check=list(HealthCheck), print_blob=True)
    @given(files=command.files(), extra=command.extra(), out_kind=st.sampled_from(
        ["new", "new", "new", "existing", "dir", "missing-dir"]))
    def one(files, extra, out_kind):
        with tempfile.TemporaryDirectory(prefix="vta-fuzz-") as tmp:
            tmp = Path(tmp)
            paths = _materialise(tmp, files)
            out = {"new": tmp / command.out_name, "existing": tmp / "old.npz", "dir": tmp,
                   "missing-dir": tmp / "no" / command.out_name}[out_kind]
            if out_kind == "existing":
                out.write_bytes(b"previous content")
            argv = command.argv(tmp, paths, out) + list(extra)
            result = run_vta(argv, outputs=[out] if out_kind in ("new", "missing-dir") else [])
            check(result, command.allowed, name=command.name)
            uses_out = str(out) in map(str, argv)
            if uses_out and out_kind in ("dir", "missing-dir"):
                assert result.code != 0, f"{argv}: wrote to an impossible path"
            if out_kind == "existing" and result.code != 0:
                assert out.read_bytes() == b"previous content", \
                    f"{argv}: failed and changed the existing output"

    one()
