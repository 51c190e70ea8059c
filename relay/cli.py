"""``vta relay``: check, print and run Relay text programs from the command line."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

__all__ = ["register", "main"]


def register(subparsers) -> None:
    """Add the ``relay`` sub-command (with ``check``, ``print`` and ``run``) to ``subparsers``."""
    p = subparsers.add_parser(
        "relay", help="parse, type-check, print and run Relay text programs",
        description="Work with programs in the Relay text format (#[version = \"0.0.5\"]). The "
                    "prelude (List, Option, Tree, map, foldl, foldr, ...) is available to every "
                    "program unless --no-prelude is given.")
    _add_commands(p)
    p.set_defaults(func=lambda args: _entry(args, p))


def _entry(args, parser):
    if getattr(args, "relay_command", None) is None:
        parser.print_help()
        return 2
    return _dispatch(args)


def _add_commands(p):
    sub = p.add_subparsers(dest="relay_command", metavar="COMMAND")

    c = sub.add_parser("check", help="parse and type-check; print the type of every global function",
                       description="Parse FILE, infer every type, and print one line per global function "
                                   "defined in FILE: '@name: <type>'. Exits with status 1 and the error "
                                   "(with line and column) if parsing or type checking fails.")
    c.add_argument("file", type=Path, metavar="FILE", help="Relay text file (.rly)")
    c.add_argument("--no-prelude", action="store_true", help="do not make the prelude available")
    c.set_defaults(relay_func=_check)

    c = sub.add_parser("print", help="parse and print the program back in canonical text form",
                       description="Parse FILE and print it in graph form (every operator call bound "
                                   "to a temporary), followed by the metadata section if the program "
                                   "has tensor constants. Only FILE's own definitions are printed.")
    c.add_argument("file", type=Path, metavar="FILE", help="Relay text file (.rly)")
    c.add_argument("--no-prelude", action="store_true", help="do not make the prelude available")
    c.add_argument("-o", "--out", type=Path, help="write to this file instead of standard output")
    c.set_defaults(relay_func=_print)

    c = sub.add_parser("run", help="run @main in the reference interpreter",
                       description="Type-check FILE and call @main with the given inputs. Each input "
                                   "is NAME=ARRAY.npy, where NAME is a parameter of @main (without %). "
                                   "The outputs are saved in an .npz file as output_0, output_1, ... "
                                   "(a tuple result gives one output per field, flattened).",
                       epilog="example: vta relay run net.rly --input data=image.npy --out result.npz",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", type=Path, metavar="FILE", help="Relay text file (.rly)")
    c.add_argument("--input", "-i", action="append", default=[], metavar="NAME=ARRAY.npy",
                   help="a parameter of @main and the .npy file holding its value (repeatable)")
    c.add_argument("--out", "-o", type=Path, required=True,
                   help="where to write the outputs (.npz; exactly this name, no suffix added)")
    c.add_argument("--params", type=Path, metavar="PARAMS.npz",
                   help="values of @main parameters by name (the weights `vta import` writes); "
                        "--input takes precedence")
    c.add_argument("--no-prelude", action="store_true", help="do not make the prelude available")
    c.set_defaults(relay_func=_run)


def _load(args):
    from .parser import parse
    from .prelude import prelude
    path = args.file
    text = _files().read_text(path, what="Relay file")
    base = None if args.no_prelude else prelude()
    mod = parse(text, base=base, source=str(path))
    names = _own_names(text, mod, base)
    return mod, names


def _own_names(text, mod, base):
    """Names the file itself defines (the prelude's are left out of listings)."""
    import re
    defined = set(re.findall(r"^\s*def\s+@([A-Za-z_][A-Za-z0-9_.]*)", text, re.M))
    defined |= set(re.findall(r"^\s*type\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.M))
    if not defined and "main" in mod.functions:   # a file that is one expression: its @main
        defined.add("main")
    return [n for n in list(mod.type_definitions) + list(mod.functions) if n in defined]


def _files():
    """The vta command's safe file handling (bounded reads, UTF-8, no pickle, atomic
    writes); imported here only, so that the Relay library itself stays standalone."""
    from isa import safeio
    return safeio


class _UserError(Exception):
    exit_code = 2   # bad usage or input (the `vta` command's exit codes)


def _check(args):
    from .printer import type_to_text
    from .typecheck import check_module
    mod, names = _load(args)
    info = check_module(mod)
    for name in names:
        if name in info.global_types:
            print(f"@{name}: {type_to_text(info.global_types[name])}")
    return 0


def _print(args):
    from .printer import module_to_text
    if args.out:
        _files().check_output(args.out)
    mod, names = _load(args)
    text = module_to_text(mod, only=set(names))
    if args.out:
        with _files().atomic_output(args.out, mode="w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _flatten(v, out):
    from .interpreter import ConstructorValue, to_python
    if isinstance(v, tuple):
        for x in v:
            _flatten(x, out)
    elif isinstance(v, np.ndarray):
        out.append(v)
    elif isinstance(v, ConstructorValue):
        py = to_python(v)
        if isinstance(py, ConstructorValue):
            raise _UserError(f"cannot save a value of type {v.constructor.belongs_to.name}")
        _flatten(tuple(py) if isinstance(py, list) else py, out)
    elif v is None:
        pass
    else:
        raise _UserError(f"cannot save a {type(v).__name__} output")


def _run(args):
    from .interpreter import Interpreter
    from .typecheck import check_module
    files = _files()
    files.check_output(args.out)
    mod, _ = _load(args)
    if "main" not in mod.functions:
        raise _UserError("the program has no @main")
    check_module(mod)
    main = mod.functions["main"]
    given = _load_params(args.params) if getattr(args, "params", None) else {}
    for item in args.input:
        if "=" not in item:
            raise _UserError(f"--input {item!r} must be NAME=ARRAY.npy")
        name, path = item.split("=", 1)
        given[name.lstrip("%")] = files.load_array(path, what=f"--input {name}")
    params = [p.name_hint for p in main.params]
    unknown = set(given) - set(params)
    if unknown:
        raise _UserError(f"@main has no parameter(s) {', '.join(sorted(unknown))}; "
                         f"its parameters are {', '.join(params) or 'none'}")
    missing = [p for p in params if p not in given]
    if missing:
        hint = "" if getattr(args, "params", None) else (
            " (weights, such as those `vta import` wrote, go in with --params PARAMS.npz)")
        raise _UserError(f"missing --input for parameter(s) {', '.join(missing)}{hint}")
    values = []
    for p in main.params:
        v = given[p.name_hint]
        t = p.type_annotation
        if t is not None and hasattr(t, "dtype"):
            if str(v.dtype) != t.dtype:
                raise _UserError(f"input {p.name_hint} has dtype {v.dtype} but @main expects {t.dtype}")
            if len(v.shape) != len(t.shape) or any(isinstance(d, int) and d != s for d, s in zip(t.shape, v.shape)):
                raise _UserError(f"input {p.name_hint} has shape {v.shape} but @main expects {t}")
        values.append(v)
    result = Interpreter(mod).run_main(*values)
    outs = []
    _flatten(result, outs)
    files.save_npz(args.out, {f"output_{i}": o for i, o in enumerate(outs)}, compressed=False)
    print(f"{args.out}: {len(outs)} output(s): " + ", ".join(f"{o.dtype}{list(o.shape)}" for o in outs))
    return 0


def _load_params(path):
    """The arrays of a ``--params`` .npz (bounded read, never unpickled)."""
    return _files().load_arrays(path, what="--params")


def _dispatch(args):
    try:
        return args.relay_func(args)
    except Exception as e:
        # Every error that says what it means (parse: 2, type or run time: 1, input: 2) is one
        # message; anything else is a bug, reported by the vta command's handler.
        code = getattr(type(e), "exit_code", None)
        if not isinstance(code, int):
            raise
        print(f"vta relay {args.relay_command}: error: {e}", file=sys.stderr)
        return code


def main(argv=None) -> int:
    """Run ``relay`` standalone: ``python -m relay check FILE.rly``."""
    parser = argparse.ArgumentParser(prog="python -m relay", description="Relay text programs: check, print, run.")
    _add_commands(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if getattr(args, "relay_command", None) is None:
        parser.print_help()
        return 2
    from isa.errors import run_command
    return run_command(_dispatch, args, f"python -m relay {args.relay_command}")
