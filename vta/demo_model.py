"""``vta sim`` (``make sim``): the bundled digits CNN from ONNX to VTA, checked against references.

The path a user's model takes, in one command: import ``examples/digits_cnn.onnx`` (a small CNN
trained with torch on scikit-learn's 8x8 digits), quantise it to int8 with power-of-two scales
calibrated on training images, compile it for the configuration, and run held-out images on the
chosen backend. Every VTA result must equal the Relay interpreter's run of the same integer
program bit for bit (the integer reference); the classification is compared with the float
model's (the float reference) and with the true labels.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["run_model_demo", "EXAMPLE", "MAX_TOP1_DROP"]

#: The bundled model and the script that trained it (its data split and calibration set).
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits_cnn.py"
#: The demo fails when int8 top-1 on the evaluated images falls more than this many points below
#: float: the quantiser's documented goal for this model is within 1 point on the whole split.
MAX_TOP1_DROP = 5.0


def _example():
    from isa.errors import Unavailable

    if not EXAMPLE.is_file():
        raise Unavailable(f"the bundled model is missing ({EXAMPLE}); run vta sim from a checkout "
                          "of the repository, or use --workload gemm")
    spec = importlib.util.spec_from_file_location("vta_digits_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _step(out, name: str, text: str, seconds: float) -> None:
    print(f"  {name:<10} {text} ({seconds:.2f} s)", file=out)


def run_model_demo(backend_name: str, config: str, *, images: int = 64, out=None) -> int:
    """Run the model demo; returns 0 when every check passed, 1 otherwise."""
    out = sys.stdout if out is None else out
    from isa.config import load_config
    from isa.errors import InputError

    if images < 1:
        raise InputError(f"--images {images}: give at least one image")
    cfg = load_config(config)
    try:
        ex = _example()
        from relay.frontend import load_onnx
    except ModuleNotFoundError as exc:
        from isa.errors import Unavailable
        raise Unavailable(f"the model demo needs {exc.name} (make venv installs it; or "
                          f"pip install -e '.[onnx,digits]')") from None
    from compiler.compile import compile_module
    from compiler.runtime import execute, load_cpu
    from relay.interpreter import Interpreter
    from relay.quantize import quantize

    print(f"digits CNN ({EXAMPLE.with_suffix('.onnx').name}) on VTA {cfg}, backend {backend_name}",
          file=out)
    t = time.perf_counter()
    mod, params = load_onnx(ex.MODEL)
    _step(out, "import", f"ONNX -> Relay, {len(params)} weight tensors", time.perf_counter() - t)

    t = time.perf_counter()
    q = quantize(mod, params, ex.calibration_set())
    _step(out, "quantise", f"int8, power-of-two scales; on the calibration set {q.report}",
          time.perf_counter() - t)

    t = time.perf_counter()
    model = compile_module(q.mod, None, cfg)
    cpu = load_cpu(model)
    n_vta = sum(s.target == "vta" for s in model.segments)
    _step(out, "compile", f"{n_vta} VTA operators, {len(model.segments) - n_vta} CPU segments "
          f"(llvmlite)", time.perf_counter() - t)

    _, (x_test, y_test) = ex.digits_split()
    n = min(images, len(x_test))
    name = model.inputs[0].name
    float_ref, int_ref = Interpreter(q.float_mod), Interpreter(q.mod)
    mismatches, pred_vta, pred_float, first_report = [], [], [], None
    t = time.perf_counter()
    for i in range(n):
        x = x_test[i:i + 1]
        outputs, report, _ = execute(model, {name: x}, backend_name, cpu=cpu)
        got = outputs[0]
        if not np.array_equal(got, int_ref.run_main(x)):
            mismatches.append(i)
        pred_vta.append(int(np.argmax(got)))
        pred_float.append(int(np.argmax(float_ref.run_main(x))))
        first_report = first_report or report
    seconds = time.perf_counter() - t
    _step(out, "run", f"{n} held-out images on {backend_name}: VTA == Relay interpreter (int8 "
          f"program) on {n - len(mismatches)}/{n}", seconds)

    labels = y_test[:n]
    acc_vta = 100.0 * float(np.mean(np.array(pred_vta) == labels))
    acc_float = 100.0 * float(np.mean(np.array(pred_float) == labels))
    agree = 100.0 * float(np.mean(np.array(pred_vta) == np.array(pred_float)))
    print(f"\ntop-1 on {n} held-out images: float {acc_float:.1f} %, int8 on VTA {acc_vta:.1f} % "
          f"(agreement with float {agree:.1f} %)", file=out)
    shown = ", ".join(f"{int(labels[i])}->{pred_vta[i]}" for i in range(min(n, 12)))
    print(f"label->VTA class: {shown}{' ...' if n > 12 else ''}", file=out)

    _layer_table(first_report, out)

    failures = []
    if mismatches:
        failures.append(f"VTA differs from the Relay interpreter on images {mismatches[:10]}")
    if acc_vta < acc_float - MAX_TOP1_DROP:
        failures.append(f"int8 top-1 {acc_vta:.1f} % is more than {MAX_TOP1_DROP} points below "
                        f"float {acc_float:.1f} %")
    for f in failures:
        print(f"FAILED: {f}", file=out)
    print("\nall checks passed" if not failures else f"\n{len(failures)} checks FAILED", file=out)
    return 0 if not failures else 1


def _layer_table(report: dict, out) -> None:
    """Per-segment figures of one inference (cycles and utilisation where the backend counts)."""
    print(f"\nper layer (one inference; {100 * report['vta_mac_share']:.1f} % of MACs on VTA):",
          file=out)
    print(f"  {'segment':<7} {'target':<6} {'MACs':>9} {'cycles':>9} {'GEMM util':>9}  operator",
          file=out)
    for row in report["segments"]:
        if row["target"] == "cpu" and not row["macs"]:
            continue
        cycles = f"{row['cycles']:,}" if row.get("cycles") else "-"
        util = row.get("gemm_utilisation")
        util = f"{100 * util:.1f} %" if util is not None else "-"
        print(f"  {row['name']:<7} {row['target']:<6} {row['macs']:>9,} {cycles:>9} {util:>9}  "
              f"{row['op']}", file=out)
    if report.get("cycles") is not None:
        print(f"  total VTA cycles {report['cycles']:,}", file=out)
    else:
        print("  (cycles: run with --backend cycle or rtl)", file=out)
