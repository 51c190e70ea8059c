"""``vta import``: an ONNX or ``torch.export`` model to Relay text and its weights."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["register", "main"]

EXIT_REJECTED, EXIT_USAGE, EXIT_BUG = 1, 2, 3


def register(subparsers) -> None:
    """Add the ``import`` sub-command to ``subparsers``."""
    p = subparsers.add_parser(
        "import", help="import an ONNX (.onnx) or PyTorch (.pt2) model as Relay text and weights",
        description="Convert MODEL (.onnx, or .pt2 saved with torch.export.save) into a typed Relay "
                    "program. @main takes the model's inputs and then one parameter per weight; the "
                    "weights are saved in an .npz keyed by parameter name, for `vta relay run FILE "
                    "--params PARAMS.npz --input NAME=ARRAY.npy`. Exit status: 0 done, 1 the model uses "
                    "an unsupported operator or attribute, 2 bad usage or an unreadable model, 3 a bug.",
        epilog="example: vta import resnet.onnx -o resnet.rly --params-out resnet.npz",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    p.set_defaults(func=_run)


def _add_arguments(p):
    p.add_argument("model", type=Path, metavar="MODEL", help="the model file (.onnx or .pt2)")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="MODEL.rly", help="the Relay text to write")
    p.add_argument("--params-out", type=Path, required=True, metavar="PARAMS.npz",
                   help="where to write the weights (keyed by @main parameter name)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="the shape of an input whose dimensions are symbolic in the model (repeatable)")


def _parse_shapes(items):
    shapes = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = tuple(int(d) for d in dims.split(","))
            if any(d <= 0 for d in shapes[name]):
                raise ValueError
        except ValueError:
            raise _Usage(f"--shape {item!r} must be NAME=D0,D1,... with positive integers") from None
    return shapes


class _Usage(Exception):
    pass


def read_params(path):
    """The arrays of a weights .npz (as `vta import` writes), never unpickled."""
    from .common import FrontendError
    try:
        with np.load(path, allow_pickle=False) as z:
            if not hasattr(z, "files"):
                raise FrontendError(f"{path} is a single array; weights are an .npz keyed by parameter name")
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise FrontendError(f"cannot read weights {path}: {e}") from None


def _write_atomic(path, write):
    """Write through a temporary file in the same folder, renamed into place when complete."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.",
                               suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def import_model(model, out, params_out, shapes=None):
    """Import ``model`` and write ``out`` (Relay text) and ``params_out`` (weights); returns
    ``(IRModule, params)``.  Nothing is written unless both files can be."""
    from . import load_model
    mod, params = load_model(model, shapes=shapes)
    text = mod.astext()
    for p in (out, params_out):
        if not Path(p).parent.is_dir():
            raise _Usage(f"cannot write {p}: folder {Path(p).parent} does not exist")
    _write_atomic(params_out, lambda tmp: np.savez(tmp, **params))
    try:
        _write_atomic(out, lambda tmp: Path(tmp).write_text(text))
    except BaseException:
        Path(params_out).unlink(missing_ok=True)
        raise
    return mod, params


def _run(args):
    from .common import FrontendError, UnsupportedOperator
    prog = "vta import"
    try:
        shapes = _parse_shapes(args.shape)
        mod, params = import_model(args.model, args.out, args.params_out, shapes)
    except UnsupportedOperator as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_REJECTED
    except (FrontendError, _Usage) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug: say so, briefly, with the exit status the project reserves for it
        print(f"{prog}: internal error ({type(e).__name__}: {e}); please report it with the model", file=sys.stderr)
        return EXIT_BUG
    main_fn = mod["main"]
    inputs = [p for p in main_fn.params if p.name_hint not in params]
    size = sum(a.nbytes for a in params.values())
    print(f"{args.out}: @main({', '.join(f'%{p.name_hint}: {p.type_annotation}' for p in inputs)}) "
          f"+ {len(params)} weights ({size / 1e6:.1f} MB) in {args.params_out}")
    return 0


def main(argv=None) -> int:
    """``python -m relay.frontend.cli MODEL -o MODEL.rly --params-out PARAMS.npz``."""
    parser = argparse.ArgumentParser(prog="vta import", description="Import a model as Relay text and weights.")
    _add_arguments(parser)
    return _run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
