"""Workloads: the target set's shapes, their Relay programs, and compiled programs that the
cycle simulator runs to the Relay interpreter's result."""

import numpy as np
import pytest

import relay
from designspace import workloads as wl
from isa.config import load_config


def test_target_set_shapes():
    assert wl.WORKLOADS["resnet18.layer1"].gemms() == [(56 * 56, 64 * 9, 64)]
    assert wl.WORKLOADS["resnet18.conv1"].out_size() == 112
    assert wl.WORKLOADS["resnet18.layer4.down"].out_size() == 7
    assert wl.WORKLOADS["dcgan.deconv2"].out_size() == 8
    assert wl.WORKLOADS["dcgan.deconv2"].macs() == 4 * 4 * 512 * 256 * 16
    assert wl.WORKLOADS["resnet18.fc"].macs() == 512 * 1000
    assert wl.WORKLOADS["mlp"].gemms() == [(16, 784, 256), (16, 256, 256), (16, 256, 10)]
    # Scaled down: divided, but never below ResNet's last stage (7) nor above the layer.
    assert wl.WORKLOADS["resnet18.layer1"].in_size(4) == 14
    assert wl.WORKLOADS["resnet18.layer4"].in_size(8) == 7
    assert wl.WORKLOADS["dcgan.deconv2"].in_size(8) == 4
    with pytest.raises(wl.WorkloadError, match="unknown workload 'x'"):
        wl.get_workload("x")


@pytest.mark.parametrize("name", sorted(wl.WORKLOADS))
def test_relay_programs_type_check_to_the_layer(name):
    w = wl.WORKLOADS[name]
    mod = relay.parse(wl.relay_text(w, 8))
    out = relay.check_module(mod).global_types["main"].ret_type
    assert out.dtype == "int8"
    if w.kind == "dense":
        assert tuple(out.shape) == (w.m, w.layers[-1])
    else:
        o = w.out_size(8)
        assert tuple(out.shape) == (1, w.channels[1], o, o)


def test_relay_program_computes_the_layer():
    """The MLP's Relay program against numpy: dense, bias, shift, ReLU, clip per layer."""
    w = wl.WORKLOADS["mlp"]
    mod = relay.parse(wl.relay_text(w))
    x, params = wl._inputs(mod, np.random.default_rng(0))
    got = relay.run(mod, x, *params.values())
    a = x.astype(np.int64)
    for i in range(len(w.layers) - 1):
        acc = a @ params[f"w{i}"].astype(np.int64).T + params[f"b{i}"]
        a = np.clip(np.maximum(acc >> wl.REQUANT_SHIFT, 0), -128, 127)
    np.testing.assert_array_equal(got, a.astype(np.int8))


@pytest.mark.parametrize("config", ["small", "batch2"])
def test_compiled_programs_run_on_the_cycle_simulator(config):
    cfg = load_config(config)
    w = wl.WORKLOADS["resnet18.layer3.proj"]
    program = wl.compile_workload(w, cfg, spatial_div=14)   # checked against the interpreter
    assert program.macs == w.macs(14) and program.images
    m, k, n = w.gemms(14)[0]
    tiles = (-(-m // cfg.batch)) * (-(-k // cfg.block_in)) * (-(-n // cfg.block_out))
    assert program.cycles > tiles       # at best one GEMM micro-op per tile product (SPEC §6)
    # The images are the launches that ran: simulating them again gives the same cycles.
    again = wl.Program(program.workload, cfg, program.images, program.macs)
    assert wl.program_cycles(again) == program.cycles
