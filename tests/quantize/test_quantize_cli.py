"""``vta quantize``: model + calibration data -> integer Relay text and the agreement report."""
from pathlib import Path

import numpy as np
import pytest

import relay
from vta.cli import main as vta

pytest.importorskip("onnx")
DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits_cnn.onnx"


def _calibration(path, n=16, name="image"):
    x = np.random.default_rng(0).uniform(0, 1, (n, 1, 1, 8, 8)).astype("float32")
    np.savez(path, **{name: x})
    return x


def test_quantize_onnx_then_run(tmp_path, capsys):
    x = _calibration(tmp_path / "cal.npz")
    assert vta(["quantize", str(DIGITS), "--calibrate", str(tmp_path / "cal.npz"), "-o", str(tmp_path / "q.rly")]) == 0
    out = capsys.readouterr().out
    assert "int8 program; agreement with float on 16 samples: cosine mean" in out
    mod = relay.parse((tmp_path / "q.rly").read_text())
    text = mod.astext(show_meta_data=False)
    assert 'out_dtype="int32"' in text and "right_shift" in text
    got = relay.run(mod, x[0])
    assert got.shape == (1, 10) and got.dtype == np.float32


def test_quantize_rly_with_params_and_skips(tmp_path, capsys):
    assert vta(["import", str(DIGITS), "-o", str(tmp_path / "d.rly"), "--params-out", str(tmp_path / "d.npz")]) == 0
    _calibration(tmp_path / "cal.npz", n=4)
    assert vta(["quantize", str(tmp_path / "d.rly"), "--params", str(tmp_path / "d.npz"), "--calibrate",
                str(tmp_path / "cal.npz"), "-o", str(tmp_path / "q.rly"), "--per-channel", "--skip-op", "nn.dense"]) == 0
    assert "left in float: nn.bias_add, nn.dense" in capsys.readouterr().out


@pytest.mark.parametrize("setup,message", [
    (lambda p: _calibration(p, name="x"), "calibration data has inputs ['x'] but the model's inputs are ['image']"),
    (lambda p: p.write_bytes(b"junk"), "cannot read calibration data"),
])
def test_bad_calibration_exits_2_without_output(tmp_path, capsys, setup, message):
    setup(tmp_path / "cal.npz")
    rc = vta(["quantize", str(DIGITS), "--calibrate", str(tmp_path / "cal.npz"), "-o", str(tmp_path / "q.rly")])
    assert rc == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "q.rly").exists()
