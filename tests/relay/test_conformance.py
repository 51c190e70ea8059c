"""Conformance with TVM's Relay: the programs of TVM's own tests, standard library and language
reference (``conformance/*.toml``), each with what TVM does with it.

A case is ``[[case]]`` with ``id``, ``source`` (the TVM file and test it comes from), ``kind``
(``module``: ``relay.parse``; ``expr``: ``relay.parse_expr``), ``std`` (TVM std files loaded
first, from ``tvm/``), ``text`` and ``expect``: ``ok``, ``parse-error`` (TVM's parser rejects it)
or ``type-error`` (it parses; TVM's ``InferType`` rejects it).  For accepted programs, ``type`` is
the type of ``@main`` (module) or of the expression, as TVM prints it; ``types`` gives other
globals' types; ``value`` (a Python literal) is the result of evaluating the expression or calling
``@main`` with no arguments where TVM's test asserts one (nat values are counted, lists become
Python lists, as TVM's test helpers ``count`` and ``to_list`` do); ``prints`` is the text TVM's
printer writes for it (without the version line), ``prints_contains`` fragments of that text;
``error`` is a fragment the
rejection message must contain (line:column and the rule); ``differs`` says why relay/ departs
from TVM on that case (an expected failure, documented in docs/relay.md).

``python -m pytest tests/relay/test_conformance.py -q`` runs it; ``python
tests/relay/test_conformance.py`` prints the pass counts (total, parse, type, value).
"""
from __future__ import annotations

import ast
import math
import sys
import tomllib
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import relay
from relay.interpreter import ConstructorValue

HERE = Path(__file__).parent
CASES_DIR = HERE / "conformance"
STD_DIR = HERE / "tvm"
STD_ORDER = ("prelude", "nat", "core", "gradient")


def load_cases():
    cases = []
    for f in sorted(CASES_DIR.glob("*.toml")):
        for c in tomllib.loads(f.read_text())["case"]:
            c.setdefault("kind", "module")
            c.setdefault("std", [])
            c.setdefault("expect", "ok")
            c["file"] = f.name
            cases.append(c)
    ids = [c["id"] for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate case ids {dup}"
    return cases


CASES = load_cases()


@lru_cache(maxsize=None)
def std_module(names: tuple):
    """TVM's std files, unchanged, parsed in order on top of each other."""
    mod = None
    for n in STD_ORDER:
        if n in names:
            mod = relay.parse((STD_DIR / f"{n}.rly").read_text(), base=mod, source=f"{n}.rly")
    return mod


def _count_nat(v):
    n = 0
    while v.constructor.name == "succ":
        n += 1
        (v,) = v.fields
    assert v.constructor.name == "zero"
    return n


def to_value(v):
    """Results as TVM's tests read them: nats counted, lists to Python lists, scalars to numbers."""
    if isinstance(v, ConstructorValue):
        name = v.constructor.name
        if name in ("zero", "succ"):
            return _count_nat(v)
        if name in ("Cons", "Nil"):
            out = []
            while v.constructor.name == "Cons":
                out.append(to_value(v.fields[0]))
                v = v.fields[1]
            return out
        return (name, *[to_value(f) for f in v.fields])
    if isinstance(v, tuple):
        return tuple(to_value(x) for x in v)
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
        return np.asarray(v).tolist()
    return v


class Outcome:
    """What relay/ did with one case: stage reached, type text, value, error."""

    def __init__(self):
        self.stage = None       # "parse-error", "type-error" or "ok"
        self.error = None
        self.type = None
        self.types = {}
        self.value = None
        self.text = None


def run_case(c) -> Outcome:
    out = Outcome()
    base = std_module(tuple(c["std"])) if c["std"] else None
    try:
        if c["kind"] == "expr":
            tree = relay.parse_expr(c["text"], base=base, source=c["id"])
        else:
            tree = relay.parse(c["text"], base=base, source=c["id"])
    except relay.ParseError as e:
        out.stage, out.error = "parse-error", str(e)
        return out
    try:
        if c["kind"] == "expr":
            t = relay.infer_expr(tree, base)
            out.type = relay.type_to_text(t)
        else:
            info = relay.check_module(tree)
            out.types = {k: relay.type_to_text(v) for k, v in info.global_types.items()}
            out.type = out.types.get("main")
    except relay.RelayTypeError as e:
        out.stage, out.error = "type-error", str(e)
        return out
    out.stage = "ok"
    if c["kind"] == "expr":
        out.text = relay.expr_to_text(tree)
    else:
        out.text = relay.module_to_text(tree, only=set(tree.functions) - set(base.functions if base else {})
                                        | set(tree.type_definitions) - set(base.type_definitions if base else {}))
        out.text = out.text.removeprefix('#[version = "0.0.5"]\n').rstrip("\n")
    if "value" in c:
        if c["kind"] == "expr":
            out.value = to_value(relay.evaluate(tree, base))
        else:
            out.value = to_value(relay.run(tree))
    return out


def same_value(got, want):
    """Equal, floats to float32 precision (TVM's tests use numpy.isclose or exact small values)."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-7)
    if isinstance(want, (list, tuple)) and type(got) is type(want) and len(got) == len(want):
        return all(same_value(g, w) for g, w in zip(got, want))
    return type(got) is type(want) and got == want


def check(c, out: Outcome):
    """The list of disagreements between ``out`` and TVM's behaviour recorded in ``c``."""
    bad = []
    if out.stage != c["expect"]:
        bad.append(f"TVM: {c['expect']}; here: {out.stage}" + (f" ({out.error})" if out.error else ""))
        return bad
    if "error" in c and c["error"] not in (out.error or ""):
        bad.append(f"error message {out.error!r} lacks {c['error']!r}")
    if "type" in c and out.type != c["type"]:
        bad.append(f"type: TVM {c['type']}; here {out.type}")
    for g, t in c.get("types", {}).items():
        if out.types.get(g) != t:
            bad.append(f"type of @{g}: TVM {t}; here {out.types.get(g)}")
    if "prints" in c and out.text != c["prints"].strip("\n"):
        bad.append(f"printed: TVM {c['prints']!r}; here {out.text!r}")
    for fragment in c.get("prints_contains", []):
        if fragment.strip("\n") not in out.text:
            bad.append(f"printed text lacks TVM's {fragment!r}: {out.text!r}")
    if "value" in c and not same_value(out.value, ast.literal_eval(c["value"])):
        bad.append(f"value: TVM {c['value']}; here {out.value!r}")
    return bad


def _param(c):
    # ``differs``: where relay/ departs from TVM on purpose (docs/relay.md); it must keep failing
    marks = [pytest.mark.xfail(reason=c["differs"], strict=True)] if "differs" in c else []
    return pytest.param(c, id=c["id"], marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(case):
    problems = check(case, run_case(case))
    assert not problems, f"{case['source']}: " + "; ".join(problems)


def test_std_files_are_tvms_unchanged():
    """The vendored std files keep TVM's licence header (they are copied, not edited)."""
    for n in STD_ORDER:
        text = (STD_DIR / f"{n}.rly").read_text()
        assert text.startswith("/*\n * Licensed to the Apache Software Foundation (ASF)")
        assert '#[version = "0.0.5"]' in text


OK_CASES = [c for c in CASES if c["expect"] == "ok" and "differs" not in c]


@pytest.mark.parametrize("case", OK_CASES, ids=[c["id"] for c in OK_CASES])
def test_accepted_programs_round_trip(case):
    """Printing an accepted program and parsing it back gives the same text and types."""
    base = std_module(tuple(case["std"])) if case["std"] else None
    if case["kind"] == "expr":
        e = relay.parse_expr(case["text"], base=base)
        once = relay.expr_to_text(e, show_meta_data=True)
        e2 = relay.parse_expr(once, base=base)
        assert relay.expr_to_text(e2, show_meta_data=True) == once
        assert relay.type_to_text(relay.infer_expr(e2, base)) == relay.type_to_text(relay.infer_expr(e, base))
    else:
        mod = relay.parse(case["text"], base=base)
        once = mod.astext()
        mod2 = relay.parse(once)
        assert mod2.astext() == once
        types = [{k: relay.type_to_text(t) for k, t in relay.check_module(m).global_types.items()}
                 for m in (mod, mod2)]
        assert types[0] == types[1]


ADT_CASES = [c for c in CASES if c["file"] == "adt.toml"]


@lru_cache(maxsize=None)
def own_prelude_with_nat():
    return relay.parse((STD_DIR / "nat.rly").read_text(), base=relay.prelude(), source="nat.rly")


@pytest.mark.parametrize("case", ADT_CASES, ids=[c["id"] for c in ADT_CASES])
def test_tvm_prelude_programs_run_on_ours(case):
    """Programs written for TVM's prelude give the same types and values on relay.prelude()."""
    base = own_prelude_with_nat()
    if case["kind"] == "expr":
        e = relay.parse_expr(case["text"], base=base)
        t = relay.infer_expr(e, base)
        value = relay.evaluate(e, base) if "value" in case else None
    else:
        mod = relay.parse(case["text"], base=base)
        t = relay.check_module(mod).global_types["main"]
        value = relay.run(mod) if "value" in case else None
    if "type" in case:
        assert relay.type_to_text(t) == case["type"]
    if "value" in case:
        assert same_value(to_value(value), ast.literal_eval(case["value"]))


def test_prelude_has_tvms_functions_at_their_types():
    ours = relay.check_module(relay.prelude()).global_types
    tvm = relay.check_module(std_module(("prelude",))).global_types
    assert set(tvm) <= set(ours)
    for name, t in tvm.items():
        assert relay.type_to_text(ours[name]) == relay.type_to_text(t), name


@pytest.mark.parametrize("name", STD_ORDER)
def test_std_files_check_from_the_command_line(name, capsys):
    """``python -m relay check prelude.rly``: a file that brings its own List, Option and Tree
    replaces the built-in prelude's (and the prelude functions over them)."""
    from relay import cli
    path = STD_DIR / f"{name}.rly"
    if name == "nat":   # nat.rly uses the prelude's List, @hd and @tl
        assert cli.main(["check", str(path)]) == 0
    else:
        assert cli.main(["check", str(path)]) == 0
        assert cli.main(["check", "--no-prelude", str(path)]) == 0
    out = capsys.readouterr().out
    if name == "prelude":
        assert "@map: fn [A, B](fn (A) -> B, List[A]) -> List[B]" in out


def summary():
    """Pass counts: total, and per aspect (parse: the parse stage agrees with TVM; type: accept
    or reject agrees and the printed types equal TVM's; value: the evaluated value equals TVM's;
    print: the program prints as TVM prints it)."""
    n = {"total": [0, 0], "parse": [0, 0], "type": [0, 0], "value": [0, 0], "print": [0, 0]}
    failures = []
    for c in CASES:
        try:
            out = run_case(c)
        except Exception as e:   # a crash counts as a failure of every aspect
            out = Outcome()
            out.stage, out.error = "crash", f"{type(e).__name__}: {e}"
        bad = check(c, out)
        n["total"][1] += 1
        n["total"][0] += not bad
        n["parse"][1] += 1
        n["parse"][0] += (out.stage == "parse-error") == (c["expect"] == "parse-error")
        if c["expect"] != "parse-error":
            n["type"][1] += 1
            n["type"][0] += not [b for b in bad if not b.startswith(("value", "printed"))]
        if "prints" in c or "prints_contains" in c:
            n["print"][1] += 1
            n["print"][0] += not [b for b in bad if b.startswith("printed")]
        if "value" in c:
            n["value"][1] += 1
            n["value"][0] += not bad
        if bad:
            failures.append(f"{c['id']}: {'; '.join(bad)}"[:300])
    return n, failures


if __name__ == "__main__":
    counts, failures = summary()
    for f in failures:
        print(f)
    print(", ".join(f"{k} {p}/{t}" for k, (p, t) in counts.items()))
    sys.exit(1 if failures else 0)
