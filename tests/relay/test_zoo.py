"""ResNet-18 and an MLP from the zoo type-check and match an independent numpy implementation."""
import numpy as np

import relay
from relay import TensorType, zoo


def np_conv(x, w, stride, pad):
    """Convolution by im2col (written for this test, independent of relay.op)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    cols = np.empty((n, c, kh, kw, oh, ow), x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
    return np.einsum("ncijhw,ocij->nohw", cols, w)


def np_bn(x, p, name):
    g, b, m, v = (p[f"{name}_{k}"] for k in ("gamma", "beta", "moving_mean", "moving_var"))
    s = (slice(None), None, None)
    return (x - m[s]) / np.sqrt(v[s] + 1e-5) * g[s] + b[s]


def np_maxpool(x):
    x = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh = (x.shape[2] - 3) // 2 + 1
    ow = (x.shape[3] - 3) // 2 + 1
    out = np.full(x.shape[:2] + (oh, ow), -np.inf, x.dtype)
    for i in range(3):
        for j in range(3):
            out = np.maximum(out, x[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2])
    return out


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_resnet18(x, p):
    relu = lambda a: np.maximum(a, 0)   # noqa: E731

    def conv_bn(a, name, stride, pad):
        return np_bn(np_conv(a, p[f"{name}_weight"], stride, pad), p, f"{name}_bn")
    y = relu(conv_bn(x, "conv0", 2, 3))
    y = np_maxpool(y)
    for stage in range(4):
        for unit in range(2):
            name = f"stage{stage + 1}_unit{unit + 1}"
            stride = 2 if stage > 0 and unit == 0 else 1
            r = relu(conv_bn(y, f"{name}_conv1", stride, 1))
            r = conv_bn(r, f"{name}_conv2", 1, 1)
            sc = conv_bn(y, f"{name}_downsample", stride, 0) if f"{name}_downsample_weight" in p else y
            y = relu(r + sc)
    y = y.mean(axis=(2, 3))
    return np_softmax(y @ p["fc_weight"].T + p["fc_bias"])


def test_resnet18_type_checks_and_matches_numpy():
    mod, params = zoo.resnet18(image_shape=(3, 32, 32), classes=10)
    info = relay.check_module(mod)
    assert info.global_types["main"].ret_type == TensorType((1, 10), "float32")
    assert sum(1 for k in params if k.endswith("_weight") and k != "fc_weight") == 20   # 17 convs + 3 downsamples
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype("float32")
    out = relay.run(mod, x, *params.values())
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    np.testing.assert_allclose(out, np_resnet18(x.astype(np.float64), p64), rtol=1e-4, atol=1e-6)


def test_resnet18_is_deterministic_and_sized():
    a = zoo.resnet18(image_shape=(3, 64, 64), classes=5, seed=1)[1]
    b = zoo.resnet18(image_shape=(3, 64, 64), classes=5, seed=1)[1]
    assert all(np.array_equal(a[k], b[k]) for k in a)
    mod, _ = zoo.resnet18(batch=2, image_shape=(3, 64, 64), classes=5)
    assert relay.check_module(mod).global_types["main"].ret_type == TensorType((2, 5), "float32")


def test_mlp_matches_numpy():
    mod, params = zoo.mlp(batch=4, in_features=20, hidden=(16, 8), classes=3)
    assert relay.check_module(mod).global_types["main"].ret_type == TensorType((4, 3), "float32")
    x = np.random.default_rng(0).standard_normal((4, 20)).astype("float32")
    h = x
    for i in (1, 2):
        h = np.maximum(h @ params[f"fc{i}_weight"].T + params[f"fc{i}_bias"], 0)
    ref = np_softmax(h @ params["fc3_weight"].T + params["fc3_bias"])
    np.testing.assert_allclose(relay.run(mod, x, *params.values()), ref, rtol=1e-5, atol=1e-6)
