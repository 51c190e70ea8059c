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
    assert "int8 program; 100.0 % of conv/dense MACs in int8; 16 samples: cosine mean" in out
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


@pytest.mark.parametrize("command", [["quantize"], ["compile"]])
def test_a_bias_beyond_int32_exits_1_in_one_line(tmp_path, capsys, command):
    """A model whose integer form does not fit int32 is rejected (exit 1), not bad input."""
    from tests.quantize.test_quantize import CONV_BIAS, _conv_with_bias
    _, params, cal = _conv_with_bias([0.5, -3000.0, 2.0, 5000.0])
    (tmp_path / "m.rly").write_text(CONV_BIAS)
    np.savez(tmp_path / "p.npz", **params)
    np.savez(tmp_path / "cal.npz", **cal)
    out = tmp_path / ("q.rly" if command == ["quantize"] else "q.vtab")
    rc = vta(command + [str(tmp_path / "m.rly"), "--params", str(tmp_path / "p.npz"), "--calibrate",
                        str(tmp_path / "cal.npz"), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and not out.exists()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"vta {command[0]}: error: nn.conv2d layer 0 does not fit int32: its bias of channel 3")
    assert "--skip-layer 0" in err
