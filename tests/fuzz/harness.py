"""Running one ``vta`` command on one fuzzed input and checking the contract of issue 15.

:func:`run_vta` calls ``vta.cli.main(argv)`` in-process (milliseconds, not a Python start-up)
under a wall-clock alarm, capturing what it prints; :func:`check` asserts the contract:

* the exit status is one the command documents for such an input (never 3, an internal error);
* no traceback on either stream, and an error is one line that starts ``vta COMMAND: error:``;
* no hang: the alarm (:data:`HANG_SECONDS`) never fires;
* no partial output: after a failure neither the output nor a temporary ``.part`` file exists.

Every call is counted by command and outcome (:data:`STATS`); with ``VTA_FUZZ_STATS=FILE`` the
counts are appended to FILE as JSON lines when the session ends (the report's figures).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from isa.errors import EXIT_INTERNAL

#: The longest one in-process command may take before it counts as a hang.
HANG_SECONDS = 60
#: Inputs tried and outcomes, by command: {command: Counter({"exit 0": n, ...})}.
STATS: dict[str, Counter] = {}
#: Multiplies every fuzz test's example count (VTA_FUZZ_SCALE=20 for a long campaign).
SCALE = float(os.environ.get("VTA_FUZZ_SCALE", "1"))


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


class Hang(Exception):
    pass


@dataclass
class Outcome:
    argv: list
    code: int
    out: str
    err: str
    seconds: float
    outputs: list = field(default_factory=list)


def _alarm(signum, frame):
    raise Hang(f"no answer within {HANG_SECONDS} s")


@contextlib.contextmanager
def _environment(env: dict):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_vta(argv: list, *, outputs=(), env=None) -> Outcome:
    """``vta.cli.main(argv)`` in-process with a hang alarm; ``outputs``: files it may write;
    ``env``: environment variables set for the call."""
    from vta.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    start = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _environment(env or {}):
            code = main([str(a) for a in argv])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return Outcome(list(argv), code, out.getvalue(), err.getvalue(),
                   time.monotonic() - start, [Path(p) for p in outputs])


def check(result: Outcome, allowed: "set[int]", *, name: str) -> None:
    """Assert the contract; count the outcome under ``name``."""
    STATS.setdefault(name, Counter())[f"exit {result.code}"] += 1
    where = f"vta {' '.join(map(str, result.argv))}"
    text = result.out + result.err
    assert "Traceback" not in text, f"{where}: a traceback\n{text[-3000:]}"
    assert result.code != EXIT_INTERNAL, f"{where}: internal error\n{result.err[-3000:]}"
    assert result.code in allowed, (f"{where}: exit status {result.code}, expected one of "
                                    f"{sorted(allowed)}\n{result.err[-2000:]}")
    if result.code != 0:
        first = result.err.strip().splitlines()[:1]
        assert first and first[0].startswith(("vta ", "usage: vta")), \
            f"{where}: the error is not one 'vta ...: error:' line: {result.err[-500:]!r}"
        for path in result.outputs:
            assert not path.exists(), \
                f"{where}: left an output file {path} after failing"
    for path in result.outputs:
        leftovers = list(path.parent.glob(f".{path.name}.*.part")) if path.parent.is_dir() \
            else []
        assert not leftovers, f"{where}: left temporary files {leftovers}"


#: Where the ``--out``-like argument points, by kind (drawn per example).
OUT_KINDS = ("new", "new", "new", "existing", "dir", "missing-dir")


def prepare(command, tmp: Path, files: dict, extra: list, out_kind: str):
    """Write the fuzzed files into ``tmp`` and build the command line; returns
    ``(argv, outputs checked for partial files, out, env)``."""
    paths = {}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
        paths[name] = tmp / name
    out = {"new": tmp / command.out_name, "existing": tmp / "old.npz", "dir": tmp,
           "missing-dir": tmp / "no" / command.out_name}[out_kind]
    if out_kind == "existing":
        out.write_bytes(b"previous content")
    argv = command.argv(tmp, paths, out) + list(extra)
    outputs = ([out] if out_kind in ("new", "missing-dir") else []) + \
        [tmp / name for name in command.more_outputs]
    return argv, outputs, out, command.env(tmp)


def check_out_kind(result: Outcome, out: Path, out_kind: str) -> None:
    """An impossible output path fails; a failure leaves an existing output unchanged."""
    if str(out) in map(str, result.argv) and out_kind in ("dir", "missing-dir"):
        assert result.code != 0, f"{result.argv}: wrote to an impossible path"
    if out_kind == "existing" and result.code != 0:
        assert out.read_bytes() == b"previous content", \
            f"{result.argv}: failed and changed the existing output"


def write_stats() -> None:
    target = os.environ.get("VTA_FUZZ_STATS")
    if target and STATS:
        with open(target, "a") as fh:
            fh.write(json.dumps({k: dict(v) for k, v in STATS.items()}) + "\n")
