"""torch.export programs of ResNet-18/50, MobileNet v2, the DCGAN generator and a small CNN:
imported, run in the Relay interpreter, compared with torch within 1e-4 relative.
VTA_FULL_MODELS=1 runs them at 224x224 (the default run uses 64x64 images)."""
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import relay  # noqa: E402
from relay.frontend import FrontendError, UnsupportedOperator, from_pytorch, load_model  # noqa: E402
from relay.frontend import torch_models as tm  # noqa: E402
from relay.op import list_ops  # noqa: E402

SIDE = 224 if os.environ.get("VTA_FULL_MODELS") else 64


def _compare(model, shape, name, seed=0):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, (x,))
    mod, params = from_pytorch(program, name=name)
    main = mod["main"]
    assert main.params[0].name_hint == "x"
    got = relay.run(mod, x.numpy(), *[params[p.name_hint] for p in main.params[1:]])
    with torch.no_grad():
        want = model(x).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))
    return mod, params


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2"])
def test_classifiers_match_torch(name):
    mod, params = _compare(getattr(tm, name)(num_classes=100), (1, 3, SIDE, SIDE), name)
    assert "conv1_weight" in params or "features_0_0_weight" in params
    # Batch norms stay as nn.batch_norm for the quantiser to fold; running statistics are parameters.
    text = mod.astext(show_meta_data=False)
    assert "nn.batch_norm" in text and not any("num_batches_tracked" in k for k in params)


def test_depthwise_convolutions_of_mobilenet_are_grouped():
    mod, _ = _compare(tm.mobilenet_v2(num_classes=10), (1, 3, 32, 32), "mobilenet_v2")
    assert "groups=32" in mod.astext(show_meta_data=False)


def test_dcgan_generator():
    if "nn.conv2d_transpose" not in list_ops():
        pytest.skip("nn.conv2d_transpose is added by the compiler branch")
    _compare(tm.dcgan_generator(ngf=16), (1, 100, 1, 1), "dcgan")


def test_dcgan_without_conv2d_transpose_is_rejected_by_name():
    if "nn.conv2d_transpose" in list_ops():
        pytest.skip("the operator exists")
    x = torch.randn(1, 100, 1, 1)
    program = torch.export.export(tm.dcgan_generator(ngf=8), (x,))
    with pytest.raises(UnsupportedOperator, match="nn.conv2d_transpose"):
        from_pytorch(program, name="dcgan")


def test_digits_cnn_batch_and_saved_program(tmp_path):
    model = tm.randomize_batch_norm(tm.DigitsCNN(), seed=3)
    _compare(model, (4, 1, 8, 8), "digits")
    x = torch.randn(2, 1, 8, 8)
    torch.export.save(torch.export.export(model, (x,)), tmp_path / "digits.pt2")
    mod, params = load_model(tmp_path / "digits.pt2")
    got = relay.run(mod, x.numpy(), *[params[p.name_hint] for p in mod["main"].params[1:]])
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-5)


class _Odd(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)


def test_unsupported_aten_operator_is_named_before_any_work():
    program = torch.export.export(_Odd(), (torch.randn(2, 3),))
    with pytest.raises(UnsupportedOperator, match=r"operator aten\.gelu\.default \(node 'gelu' of model 'odd'\) "
                                                  "is not supported"):
        from_pytorch(program, name="odd")


def test_bad_pt2_files(tmp_path):
    with pytest.raises(FrontendError, match="no such file"):
        load_model(tmp_path / "missing.pt2")
    (tmp_path / "junk.pt2").write_bytes(b"not a zip")
    with pytest.raises(FrontendError, match="as a torch.export program"):
        load_model(tmp_path / "junk.pt2")
    with pytest.raises(FrontendError, match="unknown model format '.pth'"):
        load_model(tmp_path / "m.pth")


def test_vta_import_of_a_pt2(tmp_path, capsys):
    from vta.cli import main as vta
    model = tm.randomize_batch_norm(tm.DigitsCNN(), seed=1)
    x = torch.randn(1, 1, 8, 8)
    torch.export.save(torch.export.export(model, (x,)), tmp_path / "d.pt2")
    np.save(tmp_path / "x.npy", x.numpy())
    assert vta(["import", str(tmp_path / "d.pt2"), "-o", str(tmp_path / "d.rly"),
                "--params-out", str(tmp_path / "d.npz")]) == 0
    assert vta(["relay", "run", str(tmp_path / "d.rly"), "--params", str(tmp_path / "d.npz"),
                "--input", f"x={tmp_path / 'x.npy'}", "--out", str(tmp_path / "o.npz")]) == 0
    with torch.no_grad():
        np.testing.assert_allclose(np.load(tmp_path / "o.npz")["output_0"], model(x).numpy(), rtol=1e-4, atol=1e-5)
