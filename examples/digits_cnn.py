"""A small CNN trained with torch on scikit-learn's 8x8 digits, taken to int8 for VTA.

    python examples/digits_cnn.py train      # train, write examples/digits_cnn.onnx (~40 KB)
    python examples/digits_cnn.py evaluate   # float vs int8 top-1 on the held-out split
    python examples/digits_cnn.py evaluate --vta [--backend functional|cycle|rtl]   # and on VTA
    python examples/digits_cnn.py export DIR # DIR/digits.rly, params.npz, calibration.npz, test.npz

The split is fixed (scikit-learn's ``train_test_split``, 20 % held out, stratified, seed 0);
the calibration set is the first 128 training images.  ``export`` writes the files of the
command-line path (docs/models.md): `vta quantize`, `vta compile`, `vta run`.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL = HERE / "digits_cnn.onnx"
CALIBRATION_SAMPLES = 128
INPUT = "image"


def digits_split():
    """((x_train, y_train), (x_test, y_test)); images (N, 1, 8, 8) float32 in [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    xtr, xte, ytr, yte = train_test_split(x, d.target, test_size=0.2, stratify=d.target, random_state=0)
    return (xtr, ytr.astype(np.int64)), (xte, yte.astype(np.int64))


def calibration_set():
    """The calibration data of the quantiser: ``{INPUT: (S, 1, 1, 8, 8)}`` from the training split."""
    (xtr, _), _ = digits_split()
    return {INPUT: xtr[:CALIBRATION_SAMPLES, None]}


def train(epochs=30, seed=0, out=MODEL):
    import torch
    from relay.frontend.torch_models import DigitsCNN
    torch.manual_seed(seed)
    (xtr, ytr), (xte, yte) = digits_split()
    model = DigitsCNN(channels=16)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(xt), generator=gen).split(64):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = float((model(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())
    torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), str(out), input_names=[INPUT], output_names=["scores"],
                      opset_version=13, dynamo=False)
    return acc


def evaluate(model_path=MODEL, per_channel=False):
    """Held-out top-1 of the float model and of its int8 program, both in the Relay interpreter,
    with the quantiser's agreement report on the calibration data."""
    import relay
    from relay.frontend import load_onnx
    from relay.interpreter import Interpreter
    from relay.quantize import QConfig, quantize
    mod, params = load_onnx(model_path)
    q = quantize(mod, params, calibration_set(), QConfig(per_channel=per_channel))
    _, (xte, yte) = digits_split()
    fi, ii = Interpreter(q.float_mod), Interpreter(q.mod)
    t0 = time.perf_counter()
    float_pred = np.array([int(np.argmax(fi.run_main(x[None]))) for x in xte])
    t1 = time.perf_counter()
    int_pred = np.array([int(np.argmax(ii.run_main(x[None]))) for x in xte])
    t2 = time.perf_counter()
    del relay
    return {"float": float((float_pred == yte).mean()), "int8": float((int_pred == yte).mean()),
            "agree": float((float_pred == int_pred).mean()), "test_samples": len(yte), "report": q.report,
            "float_s": t1 - t0, "int8_s": t2 - t1, "quantized": q}


def evaluate_on_vta(quantized, count=None, backend="functional", config="default"):
    """Compile the int8 program for VTA and run the held-out images (the first ``count``) on
    ``backend``: top-1, whether every VTA score equals the interpreter's, seconds per image."""
    from compiler.compile import compile_module
    from compiler.runtime import execute, load_cpu
    from relay.interpreter import Interpreter
    model = compile_module(quantized.mod, None, config)
    cpu = load_cpu(model)
    _, (xte, yte) = digits_split()
    xte, yte = xte[:count], yte[:count]
    ii = Interpreter(quantized.mod)
    name = model.inputs[0].name
    preds, exact, t0 = [], True, time.perf_counter()
    for x in xte:
        outputs, _, _ = execute(model, {name: x[None]}, backend, cpu=cpu)
        preds.append(int(np.argmax(outputs[0])))
        exact &= bool(np.array_equal(outputs[0], ii.run_main(x[None])))
    seconds = (time.perf_counter() - t0) / len(xte)
    share = model.vta_macs / model.macs if model.macs else 0.0
    return {"int8_vta": float((np.array(preds) == yte).mean()), "exact": exact, "s_per_image": seconds,
            "vta_mac_share": share, "test_samples": len(yte)}


def export(folder):
    from compiler.model_cli import import_model
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    import_model(MODEL, folder / "digits.rly", folder / "params.npz")
    np.savez(folder / "calibration.npz", **calibration_set())
    _, (xte, yte) = digits_split()
    np.savez(folder / "test.npz", images=xte[:, None], labels=yte)
    np.save(folder / "image0.npy", xte[:1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--epochs", type=int, default=30)
    t.add_argument("-o", "--out", type=Path, default=MODEL)
    e = sub.add_parser("evaluate")
    e.add_argument("--per-channel", action="store_true")
    e.add_argument("--vta", action="store_true", help="also compile for VTA and run on --backend")
    e.add_argument("--backend", default="functional", choices=("functional", "cycle", "rtl"))
    x = sub.add_parser("export")
    x.add_argument("folder", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "train":
        acc = train(args.epochs, out=args.out)
        print(f"{args.out}: held-out top-1 (torch, float) {100 * acc:.2f} %")
    elif args.cmd == "evaluate":
        r = evaluate(per_channel=args.per_channel)
        print(f"held-out split ({r['test_samples']} images), Relay interpreter:")
        print(f"  float top-1 {100 * r['float']:.2f} %   int8 top-1 {100 * r['int8']:.2f} %   "
              f"same class {100 * r['agree']:.2f} %")
        print(f"  calibration agreement: {r['report']}")
        if args.vta:
            v = evaluate_on_vta(r["quantized"], backend=args.backend)
            print(f"VTA ({args.backend} backend): int8 top-1 {100 * v['int8_vta']:.2f} %, scores "
                  f"{'identical to' if v['exact'] else 'DIFFERENT from'} the interpreter's, "
                  f"{v['s_per_image']:.3f} s per image, {100 * v['vta_mac_share']:.1f} % of MACs on VTA")
    else:
        export(args.folder)
        print(f"{args.folder}: digits.rly, params.npz, calibration.npz, test.npz, image0.npy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
