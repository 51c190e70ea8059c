"""CPU segments compiled with llvmlite, checked against the Relay interpreter (and the numpy
packing functions for the layout transforms)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.ir import Constant, op_call
from isa.config import load_config

from compiler.compile import compile_module
from compiler.cpu import CpuLibrary, run_cpu_segment, supported
from compiler.runtime import execute

RNG = np.random.default_rng(12)

CPU_OPS = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 5, 7, 6), float32], %i: Tensor[(2, 5, 7, 6), int8],
          %j: Tensor[(1, 5, 1, 6), int32]) {
  %0 = cast(clip(round(multiply(%x, 16f)), a_min=-128f, a_max=127f), dtype="int8");
  %1 = add(cast(%i, dtype="int32"), %j);
  %2 = right_shift(multiply(%1, -3), 2);
  %3 = left_shift(nn.relu(subtract(%2, 7)), 1);
  %4 = cast(maximum(minimum(%3, 100), -100), dtype="int8");
  %5 = nn.max_pool2d(%4, pool_size=[3, 2], strides=[2, 2], padding=[1, 0, 1, 1], ceil_mode=True);
  %6 = nn.avg_pool2d(%0, pool_size=[3, 3], padding=[1, 1]);
  %7 = nn.avg_pool2d(cast(%1, dtype="int32"), pool_size=[2, 3], strides=[1, 2], padding=[1, 1], count_include_pad=True);
  %8 = nn.global_avg_pool2d(%4);
  %9 = nn.global_max_pool2d(%x);
  %10 = multiply(cast(%4, dtype="float32"), 0.0625f);
  %11 = nn.batch_flatten(%8);
  %12 = transpose(%5, axes=[0, 2, 3, 1]);
  %13 = nn.avg_pool2d(%x, pool_size=[2, 2], strides=[2, 2], ceil_mode=True);
  %14 = nn.bias_add(%1, meta[relay.Constant][0]);
  %15 = divide(%14, 3);
  %16 = abs(negative(%x));
  %17 = concatenate((%4, %0, %4), axis=1);
  %18 = concatenate((%x, %x), axis=3);
  (%6, %7, %10, %11, %12, %13, %15, %16, reshape(%9, newshape=[10]), floor(%x), %17, %18)
}
"""


def _run_vta(seg, args, info):
    from compiler.emit import run_linked
    from driver import get_backend
    return run_linked(seg.image, dict(zip(("data", "data2"), args)),
                      get_backend("functional")).reshape(info.shape)


def _program():
    text = CPU_OPS.replace("meta[relay.Constant][0]", "%bias").replace(
        "%j: Tensor[(1, 5, 1, 6), int32])", "%j: Tensor[(1, 5, 1, 6), int32], "
        "%bias: Tensor[(5), int32])")
    return relay.parse(text), {"bias": RNG.integers(-50, 50, 5).astype(np.int32)}


def test_every_cpu_segment_compiles_and_matches_the_interpreter():
    mod, params = _program()
    model = compile_module(mod, params, "default")
    cpu = [s for s in model.segments if s.target == "cpu"]
    assert len(cpu) >= 20 and all(supported(s) for s in cpu)
    assert any(s.target == "vta" for s in model.segments)     # the int8 global pool
    lib = CpuLibrary(model.segments)
    x = RNG.uniform(-9, 9, (2, 5, 7, 6)).astype(np.float32)
    x[0, 0, 0, :3] = [0.03125, -0.03125, 2.53125]         # ties of round()
    i = RNG.integers(-128, 128, (2, 5, 7, 6)).astype(np.int8)
    j = RNG.integers(-2 ** 30, 2 ** 30, (1, 5, 1, 6)).astype(np.int32)
    values = {"x": x, "i": i, "j": j}
    for seg in model.segments:
        args = [values[n] for n in seg.inputs]
        info = model.tensors[seg.output]
        if seg.target == "vta":
            values[seg.output] = _run_vta(seg, args, info)
            continue
        got = lib.run(seg, args, info.shape, info.dtype)
        want = run_cpu_segment(seg, args)
        assert got.dtype == want.dtype, seg.name
        np.testing.assert_array_equal(got, want, err_msg=f"{seg.name} {seg.kind}")
        values[seg.output] = got
    outs, report, _ = execute(model, values, "functional", cpu=lib)
    for got, want in zip(outs, relay.run(mod, x, i, j, *params.values())):
        np.testing.assert_array_equal(got, want)
    assert not any(r.get("interpreted") for r in report["segments"])


@pytest.mark.parametrize("cfg_name", ["default", "batch2"])
def test_layout_transforms_at_the_edges(cfg_name):
    """pack (batch and channel padding) and unpack (int8 and int32 byte planes) in LLVM give
    exactly the numpy packing, on a model whose VTA result leaves as int32 logits."""
    cfg = load_config(cfg_name)
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 5, 4, 4), float32], %w: Tensor[(7, 5, 3, 3), int8]) {
  %0 = cast(clip(round(multiply(%x, 8f)), a_min=-128f, a_max=127f), dtype="int8");
  %1 = nn.conv2d(%0, %w, padding=[1, 1], out_dtype="int32");
  multiply(cast(%1, dtype="float32"), 0.125f)
}"""
    mod = relay.parse(text)
    params = {"w": RNG.integers(-128, 128, (7, 5, 3, 3)).astype(np.int8)}
    model = compile_module(mod, params, cfg)
    kinds = [getattr(s, "kind", "vta") for s in model.segments]
    assert "pack" in kinds and "unpack" in kinds
    x = RNG.uniform(-20, 20, (3, 5, 4, 4)).astype(np.float32)
    lib = CpuLibrary(model.segments)
    values = {"x": x}
    for seg in model.segments:
        args = [values[n] for n in seg.inputs]
        if seg.target == "vta":
            values[seg.output] = _run_vta(seg, args, model.tensors[seg.output])
            continue
        info = model.tensors[seg.output]
        got = lib.run(seg, args, info.shape, info.dtype)
        np.testing.assert_array_equal(got, run_cpu_segment(seg, args))
        values[seg.output] = got
    (out,), report, _ = execute(model, {"x": x}, "functional", cpu=lib)
    np.testing.assert_array_equal(out, relay.run(mod, x, *params.values()))
    assert report["vta_mac_share"] == 1.0


def test_float_and_unquantised_layers_on_the_cpu():
    """What VTA does not take (float convolution and dense, a non-constant int8 weight,
    softmax) is compiled to LLVM too: integers exactly, floats to rounding."""
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3, 9, 8), float32], %i: Tensor[(1, 4, 6, 6), int8],
          %k: Tensor[(6, 2, 3, 3), int8], %w: Tensor[(8, 3, 3, 3), float32],
          %fw: Tensor[(5, 200), float32]) {
  %0 = nn.conv2d(%x, %w, strides=[2, 1], padding=[1, 0, 2, 1], dilation=[1, 2]);
  %1 = nn.conv2d(%i, %k, padding=[1, 1], groups=2, out_dtype="int32");
  %2 = nn.dense(reshape(%0, newshape=[-1, 200]), %fw);
  (nn.softmax(%2, axis=1), %1, nn.softmax(%0, axis=1))
}"""
    mod = relay.parse(text)
    params = {"w": RNG.standard_normal((8, 3, 3, 3)).astype(np.float32),
              "fw": RNG.standard_normal((5, 200)).astype(np.float32)}
    model = compile_module(mod, params, "default")
    assert all(s.target == "cpu" and supported(s) for s in model.segments)
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    i = RNG.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8)
    k = RNG.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
    outs, report, _ = execute(model, {"x": x, "i": i, "k": k})
    want = relay.run(mod, x, i, k, *params.values())
    assert not any(r.get("interpreted") for r in report["segments"])
    np.testing.assert_array_equal(outs[1], want[1])
    for got, ref in ((outs[0], want[0]), (outs[2], want[2])):
        assert got.dtype == ref.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


# A requantisation by a per-channel shift of 32 bits or more (a channel whose scale is 2^-32 of
# the tensor's largest, as DenseNet-121's merged batch norms give) is left to the CPU by the
# partitioner. LLVM's ashr/shl by such an amount is poison (DenseNet-121 got -2^31 for -1), while
# the interpreter gives the sign fill (0 to the left): the whole model differed silently.
_SHIFTS = st.integers(-40, 40)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(["int8", "uint8", "int32"]), name=st.sampled_from(["right_shift", "left_shift"]),
       amounts=st.lists(_SHIFTS, min_size=4, max_size=4), seed=st.integers(0, 2 ** 16))
def test_shift_by_any_amount_matches_the_interpreter(dtype, name, amounts, seed):
    """Shifts by constant per-channel amounts and by a tensor of amounts, every amount in
    [-40, 40] (outside [0, bits) included), of every integer type the CPU code takes."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, (1, 4, 3, 2), endpoint=True).astype(dtype)
    n = (np.array(amounts) % 256 if dtype == "uint8" else np.array(amounts)).astype(dtype)
    var_n = rng.integers(-40, 41, (1, 4, 3, 2))
    var_n = (var_n % 256 if dtype == "uint8" else var_n).astype(dtype)
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 3, 2), {dtype}], %n: Tensor[(1, 4, 3, 2), {dtype}],
          %c: Tensor[(4, 1, 1), {dtype}]) {{
  ({name}(%x, %c), {name}(%x, %n))
}}
"""
    mod = relay.parse(text)
    model = compile_module(mod, {"c": n.reshape(4, 1, 1)}, "default")
    lib = CpuLibrary(model.segments)
    outs, report, _ = execute(model, {"x": x, "n": var_n}, "functional", cpu=lib)
    assert not any(r.get("interpreted") for r in report["segments"])
    for got, want in zip(outs, relay.run(mod, x, var_n, n.reshape(4, 1, 1))):
        np.testing.assert_array_equal(got, want)


def test_requantisation_by_a_shift_beyond_31_bits_on_vta_and_cpu():
    """The DenseNet-121 reproduction: a depthwise 1x1 convolution on VTA whose per-channel
    requantisation shifts reach 35 bits (their rounding constant wraps to 0 in int32 as the
    quantiser emitted it); the shift runs on the CPU. VTA + CPU == the interpreter."""
    x = RNG.integers(-128, 128, (1, 32, 4, 4)).astype(np.int8)
    w = RNG.integers(64, 128, (32, 1, 1, 1)).astype(np.int8)
    bias = RNG.integers(-2 ** 20, 2 ** 20, 32).astype(np.int32)
    s = np.concatenate([np.arange(28, 36), RNG.integers(0, 12, 24)]).astype(np.int64)
    half = np.where(s > 0, np.left_shift(1, np.maximum(s - 1, 0)), 0).astype(np.int32)   # 2^34 -> 0
    data = relay.Var("x", relay.TensorType(x.shape, "int8"))
    y = op_call("nn.conv2d", data, Constant(w), groups=32, channels=32, kernel_size=(1, 1), out_dtype="int32")
    y = op_call("nn.bias_add", y, Constant(bias), axis=1)
    y = op_call("right_shift", op_call("add", y, Constant(half.reshape(-1, 1, 1))),
                Constant(s.astype(np.int32).reshape(-1, 1, 1)))
    mod = relay.IRModule({"main": relay.Function([data], op_call("cast", op_call(
        "clip", y, a_min=-128.0, a_max=127.0), dtype="int8"))})
    model = compile_module(mod, None, "default")
    assert any(g.target == "vta" and g.op.kind == "conv2d" for g in model.segments)
    outs, report, _ = execute(model, {"x": x}, "functional")
    want = relay.run(mod, x)
    np.testing.assert_array_equal(outs[0], want)
    assert np.any(want[0, 4:8] != 0)       # the channels shifted by 32..35: the sign fill (-1)
