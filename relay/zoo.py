"""A small model zoo: an MLP and ResNet-18, with random weights from a fixed seed.

Each builder returns ``(mod, params)``: ``@main`` takes ``%data`` followed by one parameter per
weight (in the order of ``params``), like TVM's ``relay.testing`` models.  Use
``transform.bind_params`` to turn the weights into constants.
"""
from __future__ import annotations

import numpy as np

from .ir import Function, IRModule, TupleGetItem, Var, op_call
from .ty import TensorType

__all__ = ["mlp", "resnet18", "resnet"]


class _Builder:
    def __init__(self, seed, dtype):
        self.rng = np.random.default_rng(seed)
        self.dtype = dtype
        self.params = {}
        self.vars = []

    def var(self, name, shape):
        v = Var(name, TensorType(shape, self.dtype))
        self.vars.append(v)
        return v

    def weight(self, name, shape, fan_in):
        self.params[name] = (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(self.dtype)
        return self.var(name, shape)

    def vector(self, name, n, kind):
        if kind == "gamma" or kind == "var":
            a = self.rng.uniform(0.5, 1.5, n)
        else:
            a = self.rng.standard_normal(n) * 0.1
        self.params[name] = a.astype(self.dtype)
        return self.var(name, (n,))

    def module(self, data, body):
        return IRModule({"main": Function([data] + self.vars, body)}), self.params


def mlp(batch=1, in_features=784, hidden=(128, 64), classes=10, seed=0, dtype="float32"):
    """dense -> bias_add -> relu for each hidden layer, then dense -> bias_add -> softmax."""
    b = _Builder(seed, dtype)
    data = Var("data", TensorType((batch, in_features), dtype))
    x, width = data, in_features
    for i, units in enumerate(list(hidden) + [classes]):
        w = b.weight(f"fc{i + 1}_weight", (units, width), width)
        bias = b.vector(f"fc{i + 1}_bias", units, "bias")
        x = op_call("nn.bias_add", op_call("nn.dense", x, w, units=units), bias)
        if i < len(hidden):
            x = op_call("nn.relu", x)
        width = units
    return b.module(data, op_call("nn.softmax", x, axis=-1))


def _bn(b, x, name, channels):
    gamma = b.vector(f"{name}_gamma", channels, "gamma")
    beta = b.vector(f"{name}_beta", channels, "beta")
    mean = b.vector(f"{name}_moving_mean", channels, "mean")
    var = b.vector(f"{name}_moving_var", channels, "var")
    return TupleGetItem(op_call("nn.batch_norm", x, gamma, beta, mean, var, epsilon=1e-5), 0)


def _conv_bn(b, x, name, in_ch, out_ch, kernel, stride, pad):
    w = b.weight(f"{name}_weight", (out_ch, in_ch, kernel, kernel), in_ch * kernel * kernel)
    y = op_call("nn.conv2d", x, w, strides=(stride, stride), padding=(pad, pad), channels=out_ch,
                kernel_size=(kernel, kernel))
    return _bn(b, y, f"{name}_bn", out_ch)


def _basic_block(b, x, name, in_ch, out_ch, stride):
    y = op_call("nn.relu", _conv_bn(b, x, f"{name}_conv1", in_ch, out_ch, 3, stride, 1))
    y = _conv_bn(b, y, f"{name}_conv2", out_ch, out_ch, 3, 1, 1)
    if stride != 1 or in_ch != out_ch:
        x = _conv_bn(b, x, f"{name}_downsample", in_ch, out_ch, 1, stride, 0)
    return op_call("nn.relu", op_call("add", y, x))


def resnet(layers=(2, 2, 2, 2), batch=1, image_shape=(3, 224, 224), classes=1000, seed=0, dtype="float32"):
    """ResNet v1 with basic blocks: ``layers`` blocks per stage at 64, 128, 256 and 512 channels."""
    b = _Builder(seed, dtype)
    data = Var("data", TensorType((batch,) + tuple(image_shape), dtype))
    x = op_call("nn.relu", _conv_bn(b, data, "conv0", image_shape[0], 64, 7, 2, 3))
    x = op_call("nn.max_pool2d", x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    in_ch = 64
    for stage, (n, ch) in enumerate(zip(layers, (64, 128, 256, 512))):
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            x = _basic_block(b, x, f"stage{stage + 1}_unit{i + 1}", in_ch, ch, stride)
            in_ch = ch
    x = op_call("nn.batch_flatten", op_call("nn.global_avg_pool2d", x))
    w = b.weight("fc_weight", (classes, in_ch), in_ch)
    bias = b.vector("fc_bias", classes, "bias")
    x = op_call("nn.bias_add", op_call("nn.dense", x, w, units=classes), bias)
    return b.module(data, op_call("nn.softmax", x, axis=-1))


def resnet18(batch=1, image_shape=(3, 224, 224), classes=1000, seed=0, dtype="float32"):
    """ResNet-18 (two basic blocks per stage)."""
    return resnet((2, 2, 2, 2), batch, image_shape, classes, seed, dtype)
