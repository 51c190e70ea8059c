"""Real networks through the frontends and the quantiser, in the Relay interpreter.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_frontends.py [--quick] [--samples 4]

For each of the nine ONNX models the onnx package ships (seeded random weights, one seeded
224x224 image): import time, Relay-interpreter time beside onnxruntime's (one thread) in the same
run, and the largest error relative to the output's scale (the acceptance bound is 1e-4). Then
ResNet-18/50 and MobileNet v2 through torch.export beside torch, and their int8 programs
(per-tensor power-of-two scales) against float on ``--samples`` seeded images: cosine similarity
and top-1/top-5 agreement. ``--quick`` uses 64x64 images for the torch models.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relay  # noqa: E402
from relay.frontend import from_onnx, from_pytorch  # noqa: E402
from relay.frontend.common import relay_name  # noqa: E402
from relay.frontend.onnx_zoo import LIGHT_MODELS, ort_session, randomized, with_logits  # noqa: E402


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))


def onnx_models():
    print(f"{'ONNX model':<14} {'import s':>9} {'relay s':>8} {'ort s':>7} {'relay/ort':>9} {'max rel err':>12}")
    for name in LIGHT_MODELS:
        model = with_logits(randomized(name, seed=1))
        t0 = time.perf_counter()
        mod, params = from_onnx(model, name=name)
        t1 = time.perf_counter()
        main = mod["main"]
        rng = np.random.default_rng(7)
        x = {p.name_hint: rng.standard_normal(tuple(p.type_annotation.shape)).astype("float32")
             for p in main.params if p.name_hint not in params}
        args = [x[p.name_hint] if p.name_hint in x else params[p.name_hint] for p in main.params]
        t2 = time.perf_counter()
        outs = relay.run(mod, *args)
        t3 = time.perf_counter()
        sess = ort_session(model)
        feed = {i.name: x[relay_name(i.name)] for i in sess.get_inputs()}
        sess.run(None, feed)
        t4 = time.perf_counter()
        refs = sess.run(None, feed)
        t5 = time.perf_counter()
        err = max(_rel(o, r) for o, r in zip(outs, refs))
        print(f"{name:<14} {t1 - t0:>9.2f} {t3 - t2:>8.2f} {t5 - t4:>7.3f} {(t3 - t2) / (t5 - t4):>9.1f} {err:>12.2e}")


def torch_models(side, samples):
    import torch
    from relay.frontend import torch_models as tm
    from relay.quantize import quantize
    torch.set_num_threads(1)
    print(f"\n{'torch model':<14} {'import s':>9} {'relay s':>8} {'torch s':>8} {'max rel err':>12}   int8 vs float "
          f"({samples} images {side}x{side})")
    for name in ("resnet18", "resnet50", "mobilenet_v2"):
        model = getattr(tm, name)()
        shape = (1, 3, side, side)
        x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod, params = from_pytorch(torch.export.export(model, (x,)), name=name)
        t1 = time.perf_counter()
        args = [x.numpy()] + [params[p.name_hint] for p in mod["main"].params[1:]]
        out = relay.run(mod, *args)
        t2 = time.perf_counter()
        with torch.no_grad():
            ref = model(x).numpy()
        t3 = time.perf_counter()
        cal = {"x": np.random.default_rng(1).standard_normal((samples,) + shape).astype("float32")}
        q = quantize(mod, params, cal)
        r = q.report
        print(f"{name:<14} {t1 - t0:>9.2f} {t2 - t1:>8.2f} {t3 - t2:>8.3f} {_rel(out, ref):>12.2e}   cosine "
              f"{r.cosine_mean:.4f} (min {r.cosine_min:.4f}), top-1 {100 * r.top1:.0f} %, top-5 {100 * r.top5:.0f} %")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="64x64 images for the torch models")
    p.add_argument("--samples", type=int, default=4, help="images for the int8 agreement")
    args = p.parse_args(argv)
    onnx_models()
    torch_models(64 if args.quick else 224, args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
