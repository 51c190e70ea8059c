"""A long fuzz campaign over the fuzz table that records every failure instead of stopping.

    .venv/bin/python -m tests.fuzz.campaign [--scale 10] [--only asm,config] [--show 3] [--save DIR]

Prints, per command, the inputs tried and the failures by category (traceback, internal
error, unexpected exit status, error not on one line, partial or changed output, hang), with
the first examples of each. The default test run (tests/fuzz/test_commands.py) stops at the
first failure; this is for finding them all, e.g. on an older checkout (PYTHONPATH=...).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import traceback
from collections import Counter, defaultdict
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import harness
from .table import TABLE

from vta.cli import build_parser  # noqa: E402  (import every command now: Relay raises the
build_parser()                    # recursion limit at import)


def _category(message: str) -> str:
    for key, name in (("a traceback", "traceback"), ("internal error", "internal error"),
                      ("exit status", "unexpected exit status"),
                      ("not one 'vta", "error not one line"),
                      ("left an output", "partial output"), ("temporary files", "partial output"),
                      ("changed the existing", "changed existing output"),
                      ("impossible path", "wrote to an impossible path")):
        if key in message:
            return name
    return "other"


def _run_one(command, scale, show, tried, found, examples, save=None) -> None:
    @settings(max_examples=max(1, int(command.examples * scale)), derandomize=True,
              deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(files=command.files(), extra=command.extra(),
           out_kind=st.sampled_from(getattr(command, "out_kinds", harness.OUT_KINDS)))
    def one(files, extra, out_kind):
        tried[command.name] += 1
        with tempfile.TemporaryDirectory(prefix="vta-fuzz-") as tmp:
            argv, outputs, out, env = harness.prepare(command, Path(tmp), files, extra,
                                                      out_kind)
            try:
                result = harness.run_vta(argv, outputs=outputs, env=env)
            except harness.Hang as exc:
                category, message = "hang", str(exc)
            except SystemExit as exc:     # an older checkout: argparse exits
                result = harness.Outcome(argv, exc.code if isinstance(exc.code, int)
                                         else 1, "", str(exc.code), 0.0)
                category = None
            except BaseException as exc:  # noqa: BLE001 - uncaught: a traceback
                category = "traceback"
                message = "".join(traceback.format_exception_only(exc)).strip()
            else:
                category = None
            if category is None:
                try:
                    harness.check(result, command.allowed, name=command.name)
                    harness.check_out_kind(result, out, out_kind)
                    return
                except AssertionError as exc:
                    message = str(exc)
                    category = _category(message)
            found[command.name][category] += 1
            if save:    # the failing example's files and command line, to replay it
                where = Path(save) / f"{command.name.replace(' ', '-')}-{tried[command.name]}"
                shutil.copytree(tmp, where, dirs_exist_ok=True)
                (where / "argv.txt").write_text("\n".join(map(str, argv)) + "\n")
            if len(examples[command.name, category]) < show:
                shown = {name: data[:160] for name, data in files.items()}
                examples[command.name, category].append(
                    f"vta {' '.join(map(str, argv))[:200]}\n      {message[-400:]}\n"
                    f"      inputs: {shown}")

    one()


def campaign(scale: float, only: "set[str] | None", show: int, save: str | None = None) -> int:
    found: dict[str, Counter] = defaultdict(Counter)
    tried: Counter = Counter()
    examples: dict[tuple, list] = defaultdict(list)
    for command in TABLE:
        if only and command.name not in only:
            continue
        _run_one(command, scale, show, tried, found, examples, save)
        cats = ", ".join(f"{k}: {v}" for k, v in found[command.name].most_common()) or "none"
        print(f"... {command.name}: {tried[command.name]} inputs, failures: {cats}", flush=True)
    total = sum(tried.values())
    failures = sum(sum(c.values()) for c in found.values())
    print(f"{total} inputs tried, {failures} failures")
    for name in tried:
        cats = ", ".join(f"{k}: {v}" for k, v in found[name].most_common()) or "none"
        print(f"  {name:<16} {tried[name]:>6} inputs, failures: {cats}")
    for (name, cat), items in sorted(examples.items()):
        print(f"\n[{name}] {cat}:")
        for item in items:
            print(f"  {item}")
    return 1 if failures else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.campaign", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="examples x this (default 1)")
    ap.add_argument("--only", default="", help="comma-separated command names of the table")
    ap.add_argument("--show", type=int, default=2, help="examples shown per category")
    ap.add_argument("--save", metavar="DIR", help="copy each failing example's files (and its "
                                                   "command line, argv.txt) into DIR")
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()} or None
    return campaign(args.scale, only, args.show, args.save)


if __name__ == "__main__":
    sys.exit(main())
