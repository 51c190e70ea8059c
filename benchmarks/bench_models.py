"""Real networks on VTA: the onnx package's nine light models (seeded random weights, 224x224)
and DenseNet / ResNet-18 / MobileNet v2 written in torch, each quantised to int8 (power-of-two
scales, per tensor, on ``--samples`` seeded images), compiled for the default configuration and
run on the functional simulator.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_models.py [--models vgg19 densenet121 ...]
                                                             [--samples 2] [--side 224]

Per model: conv/dense MACs, the share of them on VTA, the operators left on the CPU (besides
layout changes and the edges' quantisation), whether VTA's int8 result equals the Relay
interpreter's run of the integer program bit for bit, the int8 result's agreement with the float
model run by onnxruntime (ONNX) or torch: cosine similarity of the scores (before a final
softmax) and whether float's top-1 class is VTA's top-1 / in VTA's top-5, on the first sample;
and the wall and CPU time of one inference on the functional simulator.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relay  # noqa: E402
from relay.analysis import post_order  # noqa: E402
from relay.ir import Call, Op  # noqa: E402

TORCH = ("densenet", "resnet18", "mobilenet_v2")
_PLUMBING = {"cast", "clip", "round", "multiply", "add", "right_shift", "reshape", "nn.batch_flatten",
             "squeeze", "expand_dims", "transpose"}


def _cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _onnx(name, side):
    import onnx
    from relay.frontend import from_onnx
    from relay.frontend.onnx_zoo import light_path, ort_session, randomize, with_logits
    model = with_logits(randomize(onnx.load(light_path(name)), seed=1))
    mod, params = from_onnx(model, name=name)
    sess = ort_session(model)

    def reference(x):
        return sess.run(None, {sess.get_inputs()[0].name: x})[-1]
    return mod, params, reference


def _torch(name, side):
    import torch
    from relay.frontend import from_pytorch, torch_models
    torch.set_num_threads(1)
    model = getattr(torch_models, name)(num_classes=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = from_pytorch(torch.export.export(model, (torch.zeros(1, 3, side, side),)), name=name)

    def reference(x):
        with torch.no_grad():
            return model(torch.from_numpy(x)).numpy()
    return mod, params, reference


def run(name, side, samples):
    from compiler.compile import compile_module
    from compiler.runtime import execute, load_cpu
    from relay.quantize import quantize
    t0 = time.perf_counter()
    mod, params, reference = (_torch if name in TORCH else _onnx)(name, side)
    inp = mod["main"].params[0]
    shape = tuple(inp.type_annotation.shape)
    x = np.random.default_rng(3).standard_normal((samples,) + shape).astype("float32")
    q = quantize(mod, params, {inp.name_hint: x})
    t1 = time.perf_counter()
    model = compile_module(q.mod, None, "default")
    cpu = load_cpu(model)
    t2 = time.perf_counter()
    w, c = time.perf_counter(), time.process_time()
    outs, _, _ = execute(model, {inp.name_hint: x[0]}, "functional", cpu=cpu)
    wall, cpu_s = time.perf_counter() - w, time.process_time() - c
    ref = relay.run(q.mod, x[0])
    ref = ref if isinstance(ref, tuple) else (ref,)
    logits, want = outs[-1], reference(x[0])
    exact = np.array_equal(outs[-1], ref[-1])
    left = Counter(n.op.name for s in model.segments if s.target == "cpu" and s.kind == "relay"
                   for n in post_order(s.function.body) if isinstance(n, Call) and isinstance(n.op, Op)
                   and n.op.name not in _PLUMBING)
    top = np.argsort(-logits.ravel())
    f1 = int(np.argmax(want))
    print(f"{name:<14} {model.macs / 1e9:>6.2f} G {100 * model.vta_macs / model.macs:>6.1f} % "
          f"{'yes' if exact else 'NO':>6} {_cosine(logits, want):>7.4f} {'yes' if top[0] == f1 else 'no':>5} "
          f"{'yes' if f1 in top[:5] else 'no':>5} {wall:>7.1f} s {cpu_s:>6.1f} s   "
          f"{', '.join(f'{k} x{v}' for k, v in sorted(left.items())) or '-'}"
          f"   (quantise {t1 - t0:.0f} s, compile {t2 - t1:.0f} s)", flush=True)


def main(argv=None):
    from relay.frontend.onnx_zoo import LIGHT_MODELS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=list(LIGHT_MODELS) + list(TORCH))
    p.add_argument("--samples", type=int, default=2, help="calibration images")
    p.add_argument("--side", type=int, default=224, help="image side for the torch models")
    args = p.parse_args(argv)
    print(f"{'model':<14} {'MACs':>8} {'on VTA':>8} {'exact':>6} {'cosine':>7} {'top1':>5} {'top5':>5} "
          f"{'fsim wall':>9} {'cpu':>8}   left on the CPU")
    for name in args.models:
        run(name, args.side, args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
