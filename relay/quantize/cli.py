"""``vta quantize``: a float model and calibration data to the integer Relay program VTA runs."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register", "load_float_model"]

EXIT_REJECTED, EXIT_USAGE, EXIT_BUG = 1, 2, 3


def register(subparsers) -> None:
    """Add the ``quantize`` sub-command to ``subparsers``."""
    p = subparsers.add_parser(
        "quantize", help="quantise a float model to int8 with calibration data",
        description="Quantise MODEL (.onnx, .pt2, or .rly with --params) to the integer program VTA runs: "
                    "int8 activations and weights with power-of-two scales, int32 accumulation, "
                    "requantisation by rounding shift (half up) and clip. Batch norm is folded into the "
                    "layer before it. Prints the agreement of the int8 program with the float model on "
                    "the calibration data. Exit status: 0 done, 1 unsupported model, 2 bad usage or "
                    "input file, 3 a bug.",
        epilog="example: vta quantize digits.onnx --calibrate calibration.npz -o digits.int8.rly\n"
               "calibration.npz holds, for each input NAME of the model, S samples stacked on a new "
               "first axis: shape (S, *input shape).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, metavar="MODEL", help="the float model (.onnx, .pt2 or .rly)")
    p.add_argument("--params", type=Path, metavar="PARAMS.npz", help="weights of a .rly model (from `vta import`)")
    p.add_argument("--calibrate", type=Path, required=True, metavar="DATA.npz", help="calibration samples per input")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="OUT.rly", help="the integer program to write")
    p.add_argument("--per-channel", action="store_true", help="one weight scale per output channel")
    p.add_argument("--skip-op", action="append", default=[], metavar="PATTERN",
                   help="keep operators matching PATTERN (e.g. nn.dense) in float (repeatable)")
    p.add_argument("--skip-layer", action="append", default=[], type=int, metavar="INDEX",
                   help="keep the INDEX-th conv2d/dense layer (0 first, -1 last) in float (repeatable)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="the shape of a symbolic model input (repeatable)")
    p.set_defaults(func=_run)


def load_float_model(path, params_path=None, shapes=None):
    """``(IRModule, params)`` of an .onnx, .pt2 or .rly (+ params .npz) model."""
    from ..frontend import FrontendError, load_model
    path = Path(path)
    if path.suffix.lower() != ".rly":
        if params_path is not None:
            raise FrontendError("--params is for .rly models; .onnx and .pt2 carry their weights")
        return load_model(path, shapes=shapes)
    from ..parser import parse
    from ..frontend.cli import read_params
    try:
        text = path.read_text()
    except OSError as e:
        raise FrontendError(f"cannot read {path}: {e.strerror}") from None
    return parse(text, source=str(path)), (read_params(params_path) if params_path else {})


def _run(args):
    from ..frontend import FrontendError, UnsupportedOperator
    from ..frontend.cli import _parse_shapes, _Usage, _write_atomic
    from ..parser import ParseError
    from ..typecheck import RelayTypeError
    from . import QConfig, QuantizeError, load_calibration, quantize
    prog = "vta quantize"
    try:
        mod, params = load_float_model(args.model, args.params, _parse_shapes(args.shape))
        cal = load_calibration(args.calibrate)
        q = quantize(mod, params, cal, QConfig(per_channel=args.per_channel, skip_ops=tuple(args.skip_op),
                                               skip_layers=tuple(args.skip_layer)))
        text = q.mod.astext()
        _write_atomic(args.out, lambda tmp: Path(tmp).write_text(text))
    except UnsupportedOperator as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_REJECTED
    except (FrontendError, QuantizeError, _Usage, ParseError, RelayTypeError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug: say so with the status the project reserves for it
        print(f"{prog}: internal error ({type(e).__name__}: {e}); please report it with the model", file=sys.stderr)
        return EXIT_BUG
    print(f"{args.out}: int8 program; agreement with float on {q.report}")
    return 0
