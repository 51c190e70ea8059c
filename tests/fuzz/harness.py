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


def run_vta(argv: list, *, outputs=()) -> Outcome:
    """``vta.cli.main(argv)`` in-process with a hang alarm; ``outputs``: files it may write."""
    from vta.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    start = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
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


def write_stats() -> None:
    target = os.environ.get("VTA_FUZZ_STATS")
    if target and STATS:
        with open(target, "a") as fh:
            fh.write(json.dumps({k: dict(v) for k, v in STATS.items()}) + "\n")
