"""Every command of the fuzz table on mutated and random inputs (hypothesis, derandomized):
no traceback, no internal error, no hang, the documented exit status, no partial output."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta.cli import build_parser

from .harness import check, check_out_kind, examples, prepare, run_vta
from .table import TABLE

build_parser()      # import every command module now (Relay raises the recursion limit)


@pytest.mark.parametrize("command", TABLE, ids=[c.name for c in TABLE])
def test_fuzz_command(command):
    @settings(max_examples=examples(command.examples), derandomize=True, deadline=None,
              database=None, suppress_health_check=list(HealthCheck), print_blob=True)
    @given(files=command.files(), extra=command.extra(), out_kind=st.sampled_from(command.out_kinds))
    def one(files, extra, out_kind):
        with tempfile.TemporaryDirectory(prefix="vta-fuzz-") as tmp:
            argv, outputs, out, env = prepare(command, Path(tmp), files, extra, out_kind)
            result = run_vta(argv, outputs=outputs, env=env)
            check(result, command.allowed, name=command.name)
            check_out_kind(result, out, out_kind)

    one()
