"""Imported models, quantised, compiled for the default VTA configuration and run on the
functional simulator: the outputs are the Relay interpreter's, bit for bit, with every
conv/dense MAC on VTA (ResNet-18/50, MobileNet v2 on 32x32 images, the DCGAN generator).
VTA_FULL_MODELS=1 adds ResNet-18 and MobileNet v2 at 224x224."""
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("compiler.compile")

import relay  # noqa: E402
from compiler.compile import compile_module  # noqa: E402
from compiler.runtime import execute  # noqa: E402
from relay.frontend import from_pytorch, torch_models  # noqa: E402
from relay.quantize import QConfig, quantize  # noqa: E402

CASES = [("resnet18", (1, 3, 32, 32), False), ("dcgan_generator", (1, 100, 1, 1), True),
         ("mobilenet_v2", (1, 3, 32, 32), False), ("resnet50", (1, 3, 32, 32), True)]
if os.environ.get("VTA_FULL_MODELS"):
    CASES += [("resnet18", (1, 3, 224, 224), True), ("mobilenet_v2", (1, 3, 224, 224), True)]


@pytest.mark.parametrize("name,shape,per_channel", CASES)
def test_quantised_model_runs_on_vta_as_in_the_interpreter(name, shape, per_channel):
    kwargs = {"ngf": 8} if name == "dcgan_generator" else {"num_classes": 10}
    model = getattr(torch_models, name)(**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, (torch.zeros(shape),))
    mod, params = from_pytorch(program, name=name)
    cal = {"x": np.random.default_rng(0).standard_normal((2,) + shape).astype("float32")}
    q = quantize(mod, params, cal, QConfig(per_channel=per_channel))
    compiled = compile_module(q.mod, None, "default")
    assert compiled.vta_macs == compiled.macs > 0
    x = cal["x"][1]
    outputs, _, _ = execute(compiled, {"x": x}, "functional")
    np.testing.assert_array_equal(outputs[0], relay.run(q.mod, x))
