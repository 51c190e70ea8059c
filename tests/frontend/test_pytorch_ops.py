"""ATen operators of the PyTorch frontend on small modules, against torch."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import relay  # noqa: E402
from relay.frontend import from_pytorch  # noqa: E402


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


CASES = {
    "upsample_nearest": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), [(1, 2, 3, 4)]),
    "upsample_size": (lambda x: F.interpolate(x, size=(5, 7), mode="nearest"), [(1, 2, 3, 4)]),
    "cat_and_slice": (lambda x, y: torch.cat([x, y], 1)[:, 1:4, ::2], [(1, 2, 4, 4), (1, 3, 4, 4)]),
    "avg_pool": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(1, 2, 7, 7)]),
    "avg_pool_ceil": (lambda x: F.avg_pool2d(x, 2, 2, ceil_mode=True), [(1, 2, 7, 7)]),
    "max_pool_dilated": (lambda x: F.max_pool2d(x, 3, 1, 1, dilation=2), [(1, 2, 8, 8)]),
    "pad": (lambda x: F.pad(x, (1, 2, 0, 3), value=0.5), [(1, 2, 3, 4)]),
    "leaky_softmax": (lambda x: F.softmax(F.leaky_relu(x, 0.1), dim=1), [(2, 5)]),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), [(2, 5)]),
    "sigmoid_tanh_clamp": (lambda x: torch.clamp(torch.sigmoid(x) * torch.tanh(x), -0.2, 0.3), [(3, 4)]),
    "arith_scalars": (lambda x, y: (x - 2.0) * y / 3.0 + 1.5 - y, [(2, 3), (2, 3)]),
    "mean_sum_amax": (lambda x: x.mean((2, 3)) + x.sum(1, keepdim=True).amax(-1).amax(-1), [(2, 3, 4, 5)]),
    "flatten_permute_unsqueeze": (lambda x: torch.flatten(x.permute(0, 2, 3, 1), 1).unsqueeze(1).squeeze(1),
                                  [(2, 3, 2, 2)]),
    "matmul_bmm": (lambda x, y: torch.bmm(x, y), [(2, 3, 4), (2, 4, 5)]),
    "linear_no_bias": (torch.nn.Linear(4, 3, bias=False), [(2, 4)]),
    "conv_dilated_grouped": (torch.nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2), [(1, 4, 9, 9)]),
    "adaptive_avg_pool": (torch.nn.AdaptiveAvgPool2d(1), [(1, 3, 5, 5)]),
    "hardtanh_relu6": (torch.nn.ReLU6(), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_torch(name):
    fn, shapes = CASES[name]
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    module.eval()
    gen = torch.Generator().manual_seed(0)
    xs = tuple(torch.randn(s, generator=gen) for s in shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(module, xs)
    mod, params = from_pytorch(program, name=name)
    main = mod["main"]
    args = [x.numpy() for x in xs] + [params[p.name_hint] for p in main.params[len(xs):]]
    got = relay.run(mod, *args)
    np.testing.assert_array_equal(relay.run(relay.parse(mod.astext()), *args), got)   # the text reads back
    with torch.no_grad():
        want = module(*xs).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(want).max())))
