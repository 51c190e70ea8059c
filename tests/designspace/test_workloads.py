"""Workloads: the host-side lowering against direct convolutions, blocks that fit, programs
that the simulators run to numpy's result."""

import numpy as np
import pytest

from designspace import workloads as wl
from isa.config import load_config


def _direct_conv(x, w, stride, pad):
    """Cross-correlation by explicit loops: x (C, H, W), w (K, C, k, k) -> (K, OH, OW)."""
    c, h, _ = x.shape
    k_out, _, k, _ = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - k) // stride + 1
    out = np.zeros((k_out, oh, oh), np.int64)
    for o in range(k_out):
        for i in range(oh):
            for j in range(oh):
                out[o, i, j] = np.sum(xp[:, i * stride:i * stride + k, j * stride:j * stride + k]
                                      * w[o])
    return out


def _direct_deconv(x, w, stride, pad):
    """Transposed convolution by scattering: x (C, H, W), w (K, C, k, k) with PyTorch's
    semantics (weight flipped relative to the forward convolution)."""
    c, h, _ = x.shape
    k_out, _, k, _ = w.shape
    full = (h - 1) * stride + k
    out = np.zeros((k_out, full, full), np.int64)
    for i in range(h):
        for j in range(h):
            out[:, i * stride:i * stride + k, j * stride:j * stride + k] += np.einsum(
                "c,kcyx->kyx", x[:, i, j].astype(np.int64), w.astype(np.int64))
    size = full - 2 * pad
    return out[:, pad:pad + size, pad:pad + size]


@pytest.mark.parametrize("kernel, stride, pad", [(3, 1, 1), (3, 2, 1), (1, 2, 0), (7, 2, 3)])
def test_im2col_is_a_convolution(kernel, stride, pad):
    rng = np.random.default_rng(kernel * 10 + stride)
    x = rng.integers(-9, 9, (3, 9, 9)).astype(np.int8)
    w = rng.integers(-9, 9, (4, 3, kernel, kernel)).astype(np.int8)
    cols = wl._im2col(x, kernel, stride, pad)
    got = (cols.astype(np.int64) @ w.reshape(4, -1).T.astype(np.int64)).T
    assert np.array_equal(got.reshape(_direct_conv(x, w, stride, pad).shape),
                          _direct_conv(x, w, stride, pad))


def test_dilated_im2col_is_a_transposed_convolution():
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 9, (3, 4, 4)).astype(np.int8)
    w = rng.integers(-9, 9, (2, 3, 4, 4)).astype(np.int8)
    k, s, p = 4, 2, 1
    cols = wl._im2col(wl._dilate(x, s), k, 1, k - 1 - p)
    flipped = w[:, :, ::-1, ::-1].reshape(2, -1)
    got = (cols.astype(np.int64) @ flipped.T.astype(np.int64)).T
    ref = _direct_deconv(x, w, s, p)
    assert got.shape[1] == ref.shape[1] * ref.shape[2]
    assert np.array_equal(got.reshape(ref.shape), ref)


def test_target_set_shapes():
    assert wl.WORKLOADS["resnet18.layer1"].gemms() == [(56 * 56, 64 * 9, 64)]
    assert wl.WORKLOADS["resnet18.conv1"].out_size() == 112
    assert wl.WORKLOADS["resnet18.layer4.down"].out_size() == 7
    assert wl.WORKLOADS["dcgan.deconv2"].out_size() == 8
    assert wl.WORKLOADS["resnet18.fc"].macs() == 512 * 1000
    assert wl.WORKLOADS["mlp"].gemms() == [(16, 784, 256), (16, 256, 256), (16, 256, 10)]
    with pytest.raises(wl.WorkloadError, match="unknown workload 'x'"):
        wl.get_workload("x")


@pytest.mark.parametrize("config", ["tiny", "small", "batch2", "default"])
def test_blocks_fit_the_buffers(config):
    cfg = load_config(config)
    for tiles in [(49, 288, 32), (1, 256, 500), (16, 49, 5), (3136, 36, 4)]:
        bt, it, ot, vt = wl.choose_blocks(cfg, tiles)
        assert tiles[0] % bt == 0 and tiles[1] % it == 0 and tiles[2] % ot == 0
        assert vt * bt * it <= cfg.inp_depth and vt * it * ot <= cfg.wgt_depth
        assert bt * ot <= cfg.acc_depth and it < cfg.wgt_depth


@pytest.mark.parametrize("config", ["tiny", "batch2"])
def test_programs_run_and_take_at_least_their_gemm_cycles(config):
    cfg = load_config(config)
    w = wl.WORKLOADS["resnet18.layer3.proj"]
    program = wl.compile_workload(w, cfg, spatial_div=7)   # compared with numpy inside
    assert program.macs == w.macs(7) and program.images
    cycles = wl.program_cycles(program)
    m, k, n = w.gemms(7)[0]
    tiles = (-(-m // cfg.batch)) * (-(-k // cfg.block_in)) * (-(-n // cfg.block_out))
    assert cycles > tiles          # one GEMM micro-op per tile product at best (SPEC §6)
    assert cycles == wl.program_cycles(program)      # deterministic
