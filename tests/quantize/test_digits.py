"""The trained digits CNN (examples/digits_cnn.onnx): int8 top-1 on the held-out split within one
point of float, both run in the Relay interpreter."""
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("digits_cnn", ROOT / "examples" / "digits_cnn.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_int8_within_one_point_of_float():
    ex = _example()
    assert ex.MODEL.stat().st_size < 200_000
    r = ex.evaluate()
    assert r["test_samples"] == 360
    assert r["float"] >= 0.97
    assert r["int8"] >= r["float"] - 0.01
    assert r["report"].samples == 128 and r["report"].top1 >= 0.99
    # Everything between the edges is integer: no operator was left in float.
    assert r["report"].float_ops == ()


def test_export_writes_what_vta_relay_run_takes(tmp_path):
    import numpy as np
    from vta.cli import main as vta
    ex = _example()
    ex.export(tmp_path)
    assert vta(["relay", "run", str(tmp_path / "digits.rly"), "--params", str(tmp_path / "params.npz"),
                "--input", f"image={tmp_path / 'image0.npy'}", "--out", str(tmp_path / "o.npz")]) == 0
    scores = np.load(tmp_path / "o.npz")["output_0"]
    labels = np.load(tmp_path / "test.npz")["labels"]
    assert scores.shape == (1, 10) and int(np.argmax(scores)) == int(labels[0])
    cal = np.load(tmp_path / "calibration.npz")
    assert cal.files == ["image"] and cal["image"].shape == (128, 1, 1, 8, 8)
