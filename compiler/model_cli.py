"""``vta import`` and ``vta quantize``: the command glue around Relay's frontends and quantiser.

Relay stands alone (SPEC §1) and gives pure functions raising its own errors
(``relay/frontend/cli.py``, ``relay/quantize/cli.py``); this layer, which may import both Relay
and isa, adds what every ``vta`` command shares: input files checked and read with
:mod:`isa.safeio` (bounded, never unpickled, a device or a pipe refused), outputs checked
before the work and written atomically, and exceptions mapped to exit codes by
:func:`isa.errors.run_command`. ``vta compile`` on a float model takes the same steps
(:func:`quantize_model`).
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import stat
import sys
import time
import warnings
from pathlib import Path

from isa.errors import EXIT_OK, InputError

__all__ = ["register", "import_model", "quantize_model", "check_model_file", "Progress"]

#: Largest model file read (a protobuf is at most 2 GiB; a .pt2 archive holds its weights).
MAX_MODEL_BYTES = 4 << 30


def register(subparsers) -> None:
    """Add the ``import`` and ``quantize`` sub-commands to ``subparsers``."""
    p = subparsers.add_parser(
        "import", help="import an ONNX (.onnx) or PyTorch (.pt2) model as Relay text and weights",
        description="Convert MODEL (.onnx, or .pt2 saved with torch.export.save) into a typed "
                    "Relay program. @main takes the model's inputs and then one parameter per "
                    "weight; the weights are saved in an .npz keyed by parameter name, for `vta "
                    "relay run FILE --params PARAMS.npz --input NAME=ARRAY.npy`. Exit status: 0 "
                    "done, 1 the model uses an unsupported operator or attribute, 2 bad usage or "
                    "an unreadable model (nothing is written), 3 a bug, 5 the onnx or torch "
                    "package (an optional extra) is not installed.",
        epilog="example: vta import resnet.onnx -o resnet.rly --params-out resnet.npz",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, metavar="MODEL", help="the model file (.onnx or .pt2)")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="MODEL.rly",
                   help="the Relay text to write")
    p.add_argument("--params-out", type=Path, required=True, metavar="PARAMS.npz",
                   help="where to write the weights (keyed by @main parameter name)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="the shape of an input whose dimensions are symbolic in the model "
                        "(repeatable)")
    p.set_defaults(func=_import)

    q = subparsers.add_parser(
        "quantize", help="quantise a float model to int8 with calibration data",
        description="Quantise MODEL (.onnx, .pt2, or .rly with --params) to the integer program "
                    "VTA runs: int8 activations and weights with power-of-two scales, int32 "
                    "accumulation, requantisation by rounding shift (half up) and clip. Batch "
                    "norm is folded into the layer before it. Prints the agreement of the int8 "
                    "program with the float model on the calibration data. Exit status: 0 done, "
                    "1 unsupported model, or one whose integer form does not fit int32 (the "
                    "message names the layer and the --skip-layer/--skip-op that keep it in "
                    "float), 2 bad usage or input file (nothing is written), 3 a bug, 5 the onnx "
                    "or torch package is not installed.",
        epilog="example: vta quantize digits.onnx --calibrate calibration.npz -o digits.int8.rly\n"
               "calibration.npz holds, for each input NAME of the model, S samples stacked on a "
               "new first axis: shape (S, *input shape).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("model", type=Path, metavar="MODEL",
                   help="the float model (.onnx, .pt2 or .rly)")
    q.add_argument("--params", type=Path, metavar="PARAMS.npz",
                   help="weights of a .rly model (from `vta import`)")
    q.add_argument("--calibrate", type=Path, required=True, metavar="DATA.npz",
                   help="calibration samples per input")
    q.add_argument("-o", "--out", type=Path, required=True, metavar="OUT.rly",
                   help="the integer program to write")
    q.add_argument("--per-channel", action="store_true",
                   help="one weight scale per output channel")
    q.add_argument("--skip-op", action="append", default=[], metavar="PATTERN",
                   help="keep operators matching PATTERN (e.g. nn.dense) in float (repeatable)")
    q.add_argument("--skip-layer", action="append", default=[], type=int, metavar="INDEX",
                   help="keep the INDEX-th conv2d/dense layer (0 first, -1 last) in float "
                        "(repeatable)")
    q.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="the shape of a symbolic model input (repeatable)")
    q.set_defaults(func=_quantize)


# ------------------------------------------------------------------------------ inputs
def check_model_file(path, *, limit: int = MAX_MODEL_BYTES) -> Path:
    """Refuse, before any reading, a model that is missing, a directory, a device or a pipe
    (the frontends read a file to its end), or larger than ``limit`` bytes."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"cannot read {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"cannot read {path}: it is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"cannot read {path}: it is not a regular file (a device or a pipe?); "
                         f"give the model's file")
    if info.st_size > limit:
        raise InputError(f"{path} is {info.st_size:,} bytes, more than the {limit:,} a model "
                         f"may hold")
    return path


def _arrays(path, what: str) -> dict:
    """The arrays of an .npz input, bounded and never unpickled; errors say 'cannot read
    {what} PATH: ...'."""
    from isa.safeio import MAX_ARRAY_BYTES, load_arrays, read_bytes
    data = read_bytes(path, what=what, limit=MAX_ARRAY_BYTES)
    try:
        return load_arrays(data, label="it")
    except InputError as exc:
        raise InputError(f"cannot read {what} {path}: {exc}") from None


@contextlib.contextmanager
def _quiet_frontends(model):
    """Keep the libraries' own chatter (torch's FutureWarnings, the traceback torch.export
    logs before it retries a corrupted archive) off the user's terminal: the command says in
    one line what is wrong."""
    if Path(model).suffix.lower() == ".pt2":
        # torch sets its loggers' levels when it is first imported: import it before ours.
        with contextlib.suppress(ImportError):
            import torch  # noqa: F401
    loggers = [logging.getLogger(name) for name in ("torch", "torch.export", "onnx")]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lg in loggers:
            lg.setLevel(logging.CRITICAL)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)


class Progress:
    """The ``progress(stage, done, total)`` callback of the quantiser and the compiler, shown on
    ``out``: on a terminal one line per stage, rewritten as it advances; elsewhere (a log) one
    line when the stage ends."""

    LABELS = {"calibrate": "calibration samples run in float",
              "agreement": "samples compared, int8 against float",
              "compile": "VTA operators compiled"}

    def __init__(self, out=None):
        self.out = sys.stdout if out is None else out
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.start = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        start = self.start.setdefault(stage, time.perf_counter())
        label = self.LABELS.get(stage, stage)
        line = f"  {label}: {done}/{total}"
        if done >= total:
            line += f" ({time.perf_counter() - start:.1f} s)"
        if self.tty:
            self.out.write("\r" + line + ("\n" if done >= total else ""))
        elif done >= total:
            self.out.write(line + "\n")
        else:
            return
        self.out.flush()


def _write_error(exc: OSError, path) -> InputError:
    return InputError(f"cannot write {path}: {exc.strerror or exc}")


# ------------------------------------------------------------------------------ vta import
def import_model(model, out, params_out, shapes=None):
    """Import ``model`` (.onnx or .pt2) and write ``out`` (Relay text) and ``params_out`` (the
    weights); returns ``(IRModule, params)``. Both outputs are checked before the import and
    written atomically: nothing is written unless both can be."""
    import numpy as np

    from isa.safeio import atomic_output, check_output
    from relay.frontend.cli import import_model as convert
    check_output(out, what="-o")
    check_output(params_out, what="--params-out")
    if Path(out).resolve() == Path(params_out).resolve():
        raise InputError(f"-o and --params-out name the same file {out}")
    check_model_file(model)
    with _quiet_frontends(model):
        mod, params, text = convert(model, shapes=shapes)
    try:
        with atomic_output(params_out, what="--params-out") as weights, \
                atomic_output(out, what="-o") as program:
            np.savez(weights, **params)
            program.write(text.encode("utf-8"))
    except OSError as exc:
        raise _write_error(exc, out) from None
    return mod, params


def _import(args) -> int:
    from relay.frontend.cli import describe_import, parse_shapes
    shapes = parse_shapes(args.shape)
    mod, params = import_model(args.model, args.out, args.params_out, shapes)
    print(describe_import(args.out, args.params_out, mod, params))
    return EXIT_OK


# ------------------------------------------------------------------------------ vta quantize
def quantize_model(model, calibrate, params=None, config=None, shapes=None, progress=None):
    """Import ``model`` (.onnx, .pt2, or .rly with the ``params`` .npz) and quantise it with the
    calibration .npz ``calibrate``, every file read safely: the one step `vta quantize` and
    `vta compile --calibrate` take (``progress``: e.g. a :class:`Progress`). Returns relay's
    ``Quantized``."""
    from relay.quantize.cli import quantize_file
    check_model_file(model)
    weights = params            # relay refuses --params for a model that carries its weights
    if params is not None and Path(model).suffix.lower() == ".rly":
        weights = _arrays(params, "weights")
    samples = _arrays(calibrate, "calibration data")
    with _quiet_frontends(model):
        return quantize_file(model, samples, weights, config, shapes, progress)


def _quantize(args) -> int:
    from isa.safeio import atomic_output, check_output
    from relay.frontend.cli import parse_shapes
    from relay.quantize import QConfig
    from relay.typecheck import RelayTypeError
    check_output(args.out, what="-o")                 # before the work
    config = QConfig(per_channel=args.per_channel, skip_ops=tuple(args.skip_op),
                     skip_layers=tuple(args.skip_layer))
    try:
        q = quantize_model(args.model, args.calibrate, args.params, config,
                           parse_shapes(args.shape), Progress())
    except RelayTypeError as exc:     # an ill-typed .rly model is an invalid input file here
        raise InputError(str(exc)) from None
    text = q.mod.astext()
    try:
        with atomic_output(args.out, what="-o") as fh:
            fh.write(text.encode("utf-8"))
    except OSError as exc:
        raise _write_error(exc, args.out) from None
    print(f"{args.out}: int8 program; {q.report} (agreement with float on the calibration data)")
    return EXIT_OK
