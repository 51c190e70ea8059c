"""``vta compile``, ``vta run MODEL.vtab``, ``vta inspect``: models to VTA binaries and back."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from isa.errors import EXIT_OK, InputError

__all__ = ["register", "run_vtab_main", "RUNNERS", "describe", "report_table"]


class _Usage(InputError):
    """Bad usage or an unreadable/invalid input file (exit 2)."""


def register(subparsers) -> None:
    c = subparsers.add_parser(
        "compile", help="compile a model (Relay, ONNX, PyTorch) to a VTA binary (.vtab)",
        description="Compile @main of MODEL.rly (int8/int32, NCHW; see docs/compiler.md) for a "
                    "VTA configuration: conv2d/dense with their element-wise tails run on VTA, "
                    "everything else on the CPU (listed by 'vta inspect'). A float model "
                    "(.onnx, .pt2, or .rly with --calibrate) is imported and quantised to int8 "
                    "first, in the same step (docs/models.md); the binary then takes and "
                    "returns float tensors, quantising and dequantising at the edges.")
    c.add_argument("model", metavar="MODEL", help="Relay text (.rly), ONNX (.onnx) or a saved "
                                                  "torch.export program (.pt2)")
    c.add_argument("--params", metavar="PARAMS.npz",
                   help="binds @main parameters by name (without %%) as constants")
    c.add_argument("--calibrate", metavar="DATA.npz",
                   help="quantise a float model first: for each input NAME, S samples stacked "
                        "on a new first axis, shape (S, *input shape)")
    c.add_argument("--per-channel", action="store_true",
                   help="with --calibrate: one weight scale per output channel")
    c.add_argument("--skip-op", action="append", default=[], metavar="PATTERN",
                   help="with --calibrate: keep operators matching PATTERN (e.g. nn.dense) in "
                        "float, on the CPU (repeatable)")
    c.add_argument("--skip-layer", action="append", default=[], type=int, metavar="INDEX",
                   help="with --calibrate: keep the INDEX-th conv2d/dense (0 first, -1 last) in "
                        "float, on the CPU (repeatable)")
    c.add_argument("-o", "--out", metavar="MODEL.vtab", required=True, help="the binary to write")
    c.add_argument("--config", default="default", help="configuration name or JSON file")
    c.add_argument("--tune", action="store_true",
                   help="use (and fill) the tuning cache: measure the best schedules of each "
                        "VTA operator on the cycle simulator")
    c.set_defaults(func=_compile)

    t = subparsers.add_parser(
        "tune", help="tune the VTA operators of a model on the cycle simulator",
        description="Rank each VTA operator's schedules with the cost model, measure the best "
                    "on the cycle-accurate simulator (in parallel) and keep the winners in the "
                    "tuning cache ($VTA_TUNE_CACHE, default ~/.cache/vta-py/tuning.json), which "
                    "'vta compile --tune' uses.")
    t.add_argument("model", metavar="MODEL.rly")
    t.add_argument("--params", metavar="PARAMS.npz")
    t.add_argument("--config", default="default")
    t.add_argument("--top", type=_positive_int, default=6,
                   help="candidates measured per operator (at least 1)")
    t.set_defaults(func=_tune)

    i = subparsers.add_parser("inspect", help="summarise a VTA binary (.vtab)",
                              description="Print the configuration, inputs, outputs and the "
                                          "segments of a VTA binary with their schedules.")
    i.add_argument("binary", metavar="MODEL.vtab")
    i.set_defaults(func=_inspect)


def _positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1 (and of a sensible length)."""
    try:
        value = int(text) if len(text) <= 40 else 0
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number of at least 1")
    return value


def _check_tuning_cache() -> None:
    """The tuning cache (``$VTA_TUNE_CACHE``) must be writable before tuning starts."""
    from isa.safeio import check_output

    from .tuning import default_cache_path
    path = default_cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _Usage(f"cannot write the tuning cache {path} ($VTA_TUNE_CACHE): "
                     f"{exc.strerror or exc}") from None
    check_output(path, what="the tuning cache ($VTA_TUNE_CACHE)")


def _check_params(mod, params: dict, path) -> None:
    """Every array of ``--params`` is a parameter of @main, of its declared type and shape."""
    if "main" in mod.functions and params:
        names = {p.name_hint for p in mod["main"].params}
        unknown = sorted(set(params) - names)
        if unknown:
            raise _Usage(f"{path}: @main has no parameter(s) {', '.join(unknown)}; its "
                         f"parameters are {', '.join(sorted(names))}")
        for p in mod["main"].params:
            t = p.type_annotation
            if p.name_hint in params and t is not None and hasattr(t, "dtype"):
                v = params[p.name_hint]
                if str(v.dtype) != t.dtype or tuple(v.shape) != tuple(t.shape):
                    raise _Usage(f"{path}: {p.name_hint} is {v.dtype}{list(v.shape)} but "
                                 f"@main declares {t.dtype}{list(t.shape)}")


def _read_model(path: str):
    import relay
    from isa.safeio import read_text

    return relay.parse(read_text(path, what="model"), source=path)


def _read_npz(path: str) -> dict:
    from isa.safeio import load_arrays

    return load_arrays(path, what="parameters")     # bounded, never unpickled


def _compile(args) -> int:
    from isa.config import ConfigError, load_config

    from isa.safeio import check_output

    from .binary import save_binary
    from .compile import compile_module
    check_output(args.out, what="-o")                 # before the compilation
    if args.tune:
        _check_tuning_cache()
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    float_model = Path(args.model).suffix.lower() in (".onnx", ".pt2")
    if float_model and not args.calibrate:
        raise _Usage(f"{args.model} is a float model: give --calibrate DATA.npz (samples of each "
                     f"input, shape (S, *input shape)) to quantise it to int8 (docs/models.md)")
    if not args.calibrate and (args.per_channel or args.skip_op or args.skip_layer):
        raise _Usage("--per-channel, --skip-op and --skip-layer go with --calibrate")
    if args.calibrate:
        mod, params = _quantised(args), {}
    else:
        mod = _read_model(args.model)
        params = _read_npz(args.params) if args.params else {}
    _check_params(mod, params, args.params)
    schedules = None
    if args.tune:
        from .tuning import tune_module
        schedules = tune_module(mod, params, cfg, log=print)
    from .model_cli import Progress
    model = compile_module(mod, params, cfg, schedules, Progress())
    save_binary(args.out, model)
    vta = sum(1 for s in model.segments if s.target == "vta")
    share = model.vta_macs / model.macs if model.macs else 0.0
    print(f"{args.out}: {vta} VTA and {len(model.segments) - vta} CPU segments for {cfg.name} "
          f"({cfg.key}); {share:.1%} of the MACs on VTA")
    if model.macs and not model.vta_macs and not args.calibrate:
        print(f"  (VTA runs int8 conv2d/dense: a float model runs on the CPU unless --calibrate "
              f"DATA.npz quantises it; docs/models.md)")
    return EXIT_OK


def _quantised(args):
    """Import and quantise a float model in one step; prints the steps as they finish."""
    import time

    from relay.quantize import QConfig

    from .model_cli import Progress, quantize_model
    start = time.perf_counter()
    print(f"importing and quantising {args.model} with {args.calibrate} ...", flush=True)
    q = quantize_model(args.model, args.calibrate, args.params,
                      QConfig(per_channel=args.per_channel, skip_ops=tuple(args.skip_op),
                              skip_layers=tuple(args.skip_layer)), progress=Progress())
    print(f"  int8 program in {time.perf_counter() - start:.1f} s; {q.report} (agreement "
          f"with float on the calibration data)", flush=True)
    return q.mod


def _tune(args) -> int:
    from isa.config import ConfigError, load_config

    from .tuning import tune_module
    _check_tuning_cache()
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    mod = _read_model(args.model)
    params = _read_npz(args.params) if args.params else {}
    _check_params(mod, params, args.params)       # as compile does
    tuned = tune_module(mod, params, cfg, top=args.top, log=print)
    print(f"{len(tuned)} VTA operator(s) tuned for {cfg.name} ({cfg.key})")
    return EXIT_OK


def _inspect(args) -> int:
    from .binary import load_binary
    model = load_binary(args.binary)
    print(describe(model))
    return EXIT_OK


def describe(model) -> str:
    cfg = model.config
    lines = [f"VTA binary for {cfg.name} ({cfg.key}, {cfg.bus_width}-bit bus)"]
    for info in model.inputs:
        lines.append(f"  input  {info.name}: {info.dtype}{list(info.shape)}")
    for i, name in enumerate(model.outputs):
        t = model.tensors[name]
        lines.append(f"  output output_{i} ({name}): {t.dtype}{list(t.shape)}")
    share = model.vta_macs / model.macs if model.macs else 0.0
    lines.append(f"  {len(model.segments)} segments, {model.macs} MACs, {share:.1%} on VTA")
    for seg in model.segments:
        if seg.target == "vta":
            c = seg.image.counters()     # what the simulator's counters will read
            lines.append(f"  {seg.name:<7} vta  {seg.op.describe()}")
            sched = seg.schedule if seg.schedule is not None else "fixed (ALU operator)"
            lines.append(f"          schedule {sched}; {len(seg.program.commands)} "
                         f"commands, {len(seg.program.kernels)} kernels, "
                         f"{c['gemm_counter']} GEMM / {c['alu_counter']} ALU micro-ops")
        else:
            what = seg.kind
            if seg.kind == "relay":
                body = seg.function.body
                what = f"relay {getattr(getattr(body, 'op', None), 'name', type(body).__name__)}"
            lines.append(f"  {seg.name:<7} cpu  {what} {list(seg.inputs)} -> {seg.output}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- vta run X.vtab

def _run_parser() -> argparse.ArgumentParser:
    from isa.safeio import timeout_seconds

    p = argparse.ArgumentParser(
        prog="vta run", description="Run a VTA binary: the inputs by name, the outputs saved as "
                                    "output_0, output_1, ... (like 'vta relay run').")
    p.add_argument("binary", metavar="MODEL.vtab")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=ARRAY.npy",
                   help="a runtime input of @main and the .npy file holding it (repeatable)")
    p.add_argument("--out", "-o", required=True, metavar="RESULT.npz")
    p.add_argument("--backend", "-b", default="functional",
                   choices=("functional", "cycle", "rtl", "board"))
    p.add_argument("--link", default=None,
                   help="board only: a serial port PORT[@BAUD], 'sim' (the software board) or "
                        "'board-sim' (the whole board design with SDRAM on Verilator)")
    p.add_argument("--report", metavar="REPORT.json",
                   help="per segment: target, MACs, cycles, GEMM utilisation; whole model: "
                        "cycles and the share of MACs on VTA")
    p.add_argument("--config", default=None,
                   help="refuse the binary unless it was compiled for this configuration")
    p.add_argument("--timeout", type=timeout_seconds, default=None, metavar="SECONDS",
                   help="give up after this many seconds of wall-clock time for the whole "
                        "model, naming the segment that was running (exit status 4); every "
                        "backend honours it")
    return p


def run_vtab_main(argv: list[str]) -> int:
    """``vta run MODEL.vtab ...`` (the ``vta`` command routes ``.vtab`` files here through
    :data:`RUNNERS` and maps the exceptions to exit codes)."""
    return _run(_run_parser().parse_args(argv))


#: The file kinds ``vta run FILE`` hands to this layer (vta.cli collects every command module's
#: RUNNERS: the driver, which owns ``vta run`` for program images, never imports the compiler):
#: {kind (the file's suffix): (runner of the arguments after 'run', a line for --help)}.
RUNNERS = {"vtab": (run_vtab_main, "'vta run MODEL.vtab --input NAME=ARRAY.npy --out RESULT.npz' "
                                   "runs a compiled model\ninstead of a program image (see 'vta "
                                   "run MODEL.vtab --help').")}


def _run(args) -> int:
    from isa.config import ConfigError, load_config

    from isa.safeio import atomic_output, check_output, load_array, save_npz

    from .binary import load_binary
    from .runtime import execute
    for option, value in (("--out", args.out), ("--report", args.report)):
        if value is not None:
            check_output(value, what=option)          # before the run
    cfg = None
    if args.config:
        try:
            cfg = load_config(args.config)
        except ConfigError as exc:
            raise _Usage(str(exc)) from None
    model = load_binary(args.binary, config=cfg)
    given = {}
    for item in args.input:
        if "=" not in item:
            raise _Usage(f"--input {item!r} must be NAME=ARRAY.npy")
        name, path = item.split("=", 1)
        given[name.lstrip("%")] = load_array(path, what=f"--input {name}")
    names = [t.name for t in model.inputs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise _Usage(f"the model has no input(s) {', '.join(unknown)}; its inputs are "
                     f"{', '.join(names) or 'none'}")
    missing = [n for n in names if n not in given]
    if missing:
        raise _Usage(f"missing --input for {', '.join(missing)}")
    for t in model.inputs:
        v = given[t.name]
        if str(v.dtype) != t.dtype or tuple(v.shape) != t.shape:
            raise _Usage(f"input {t.name} is {v.dtype}{list(v.shape)} but the model expects "
                         f"{t.dtype}{list(t.shape)}")
    if args.link is not None and args.backend != "board":
        raise _Usage("--link applies to the board backend only")
    options = {"link": args.link} if args.backend == "board" else None
    outputs, report, _ = execute(model, given, args.backend, backend_options=options,
                                 timeout=args.timeout)
    save_npz(args.out, {f"output_{i}": o for i, o in enumerate(outputs)}, compressed=False)
    if args.report:
        with atomic_output(args.report, what="--report", mode="w") as fh:
            fh.write(json.dumps(report, indent=2) + "\n")
    print(report_table(report))
    print(f"{args.out}: {len(outputs)} output(s): "
          + ", ".join(f"{o.dtype}{list(o.shape)}" for o in outputs))
    return EXIT_OK


def report_table(report: dict) -> str:
    lines = [f"{'segment':<8} {'target':<6} {'MACs':>12} {'cycles':>10} {'GEMM util':>9}  op"]
    for r in report["segments"]:
        cyc = "-" if r.get("cycles") is None else str(r["cycles"])
        util = "-" if r.get("gemm_utilisation") is None else f"{r['gemm_utilisation']:.1%}"
        lines.append(f"{r['name']:<8} {r['target']:<6} {r['macs']:>12} {cyc:>10} {util:>9}  "
                     f"{r.get('op', '')}")
    total = report.get("cycles")
    lines.append(f"total: {report['macs']} MACs, {report['vta_mac_share']:.1%} on VTA"
                 + (f", {total} VTA cycles" if total is not None else ""))
    return "\n".join(lines)
