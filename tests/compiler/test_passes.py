"""Each pass of the compiler with a before and an after."""

import numpy as np

import relay
from relay.printer import module_to_text

from compiler.graph import build_graph
from compiler.packing import (expand_groups, pack_activation, pack_channel_const, pack_weight,
                              planes_to_int32, unpack_activation)
from compiler.partition import partition_for_vta, prepare, vta_functions, vta_operator
from isa.config import load_config

BEFORE = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), int8], %r: Tensor[(1, 8, 6, 6), int8]) {
  %0 = nn.conv2d(%x, meta[relay.Constant][0], padding=[1, 1], out_dtype="int32");
  %1 = nn.bias_add(%0, meta[relay.Constant][1]);
  %2 = add(%1, cast(%r, dtype="int32"));
  %3 = right_shift(add(%2, 8), 4);
  %4 = cast(clip(%3, a_min=-128f, a_max=127f), dtype="int8");
  nn.avg_pool2d(%4, pool_size=[2, 2], padding=[1, 1])
}
"""

AFTER = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), int8], %r: Tensor[(1, 8, 6, 6), int8]) {
  %7 = fn (%data: Tensor[(1, 4, 6, 6), int8], %residual: Tensor[(1, 8, 6, 6), int8], Primitive=1, Compiler="vta", global_symbol="vta_0") -> Tensor[(1, 8, 6, 6), int8] {
    %0 = nn.conv2d(%data, meta[relay.Constant][0], padding=[1, 1], out_dtype="int32");
    %1 = nn.bias_add(%0, meta[relay.Constant][1]);
    %2 = cast(%residual, dtype="int32");
    %3 = add(%1, %2);
    %4 = add(%3, 8);
    %5 = right_shift(%4, 4);
    %6 = clip(%5, a_min=-128f, a_max=127f);
    cast(%6, dtype="int8")
  };
  %8 = %7(%x, %r);
  nn.avg_pool2d(%8, pool_size=[2, 2], padding=[1, 1])
}
"""


def _module():
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (8, 4, 3, 3)).astype(np.int8)
    b = rng.integers(-100, 100, 8).astype(np.int32)
    return _parse_with_consts(w, b)


def _parse_with_consts(w, b):
    text = BEFORE.replace("meta[relay.Constant][0]", "%w").replace("meta[relay.Constant][1]", "%b")
    text = text.replace("%r: Tensor[(1, 8, 6, 6), int8])",
                        "%r: Tensor[(1, 8, 6, 6), int8], %w: Tensor[(8, 4, 3, 3), int8], "
                        "%b: Tensor[(8), int32])")
    return prepare(relay.parse(text), {"w": w, "b": b})


def test_partition_for_vta_before_after():
    mod = _module()
    after = partition_for_vta(mod)
    text = module_to_text(after)
    assert text.split("#[metadata]")[0].strip() == AFTER.strip()
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8)
    r = rng.integers(-128, 128, (1, 8, 6, 6)).astype(np.int8)
    np.testing.assert_array_equal(relay.run(after, x, r), relay.run(mod, x, r))
    (call,) = vta_functions(after["main"].body)
    op = vta_operator(call.op, "vta0")
    # the clip moved by 256 with the bias (offset_for_init)
    assert op.describe() == ("conv2d 4->8 3x3/1 on 6x6 [ADD const0, ADD residual, ADD 8, SHR 4, "
                             "MAX 128, MIN 383] -> int8")
    assert len(op.consts) == 1


def test_partition_of_pools_and_int8_elementwise():
    """Pools and add/multiply of two widened int8 tensors become VTA operators; an average
    pool without count_include_pad over padding (a divisor per position) stays on the CPU."""
    text = """#[version = "0.0.5"]
def @main(%a: Tensor[(1, 8, 6, 6), int8], %b: Tensor[(1, 8, 6, 6), int8]) {
  %0 = add(cast(%a, dtype="int32"), cast(%b, dtype="int32"));
  %1 = cast(clip(right_shift(%0, 1), a_min=-128f, a_max=127f), dtype="int8");
  %2 = nn.max_pool2d(%1, pool_size=[3, 3], strides=[2, 2], padding=[1, 1]);
  %3 = nn.global_avg_pool2d(%2);
  %4 = nn.avg_pool2d(%1, pool_size=[3, 3], padding=[1, 1]);
  (%3, %4)
}
"""
    after = partition_for_vta(prepare(relay.parse(text)), load_config("default"))
    ops = [vta_operator(c.op, "v").describe() for c in vta_functions(after["main"].body)]
    assert ops == ["int8 add on [1, 8, 6, 6] [SHR 1, MAX -128, MIN 127] -> int8",
                   "max_pool 3x3/2 on 8x6x6 -> int8", "avg_pool 3x3/1 on 8x3x3 -> int8"]
    from compiler.graph import dataflow_order
    from relay.ir import Call, Op
    left = [n.op.name for n in dataflow_order(after["main"].body)
            if isinstance(n, Call) and isinstance(n.op, Op)]
    assert left == ["nn.avg_pool2d"]


def test_partition_keeps_what_vta_cannot_run():
    """A tail step whose input has another user ends the operator; int32 results stay int32;
    float and non-constant weights are left to the CPU."""
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 4, 4), int8], %w: Tensor[(4, 4, 1, 1), int8], %f: Tensor[(2, 4), float32]) {
  %0 = nn.conv2d(%x, meta[relay.Constant][0], out_dtype="int32");
  %1 = right_shift(%0, 2);
  %2 = nn.conv2d(%x, %w, out_dtype="int32");
  %3 = nn.dense(%f, meta[relay.Constant][1]);
  (add(%1, %1), %2, %3)
}
"""
    text = text.replace("meta[relay.Constant][0]", "%c0").replace("meta[relay.Constant][1]", "%c1")
    text = text.replace("%f: Tensor[(2, 4), float32])", "%f: Tensor[(2, 4), float32], "
                        "%c0: Tensor[(4, 4, 1, 1), int8], %c1: Tensor[(3, 4), float32])")
    mod = prepare(relay.parse(text), {"c0": np.ones((4, 4, 1, 1), np.int8),
                                      "c1": np.ones((3, 4), np.float32)})
    after = partition_for_vta(mod)
    (call,) = vta_functions(after["main"].body)
    assert vta_operator(call.op, "v").describe() == "conv2d 4->4 1x1/1 on 4x4 [SHR 2] -> int32"
    model = build_graph(after["main"], load_config("default"))
    kinds = [(s.target, getattr(s, "kind", "")) for s in model.segments]
    assert kinds.count(("vta", "")) == 1
    relay_ops = sorted(s.function.body.op.name for s in model.segments
                       if s.target == "cpu" and s.kind == "relay")
    assert relay_ops == ["add", "nn.conv2d", "nn.dense"]


def test_packing_before_after():
    x = np.arange(2 * 3 * 2 * 2, dtype=np.int8).reshape(2, 3, 2, 2)
    p = pack_activation(x, 1, 2)            # C = 3 -> two blocks of 2, the last zero-padded
    assert p.shape == (2, 2, 2, 2, 1, 2)
    assert p[0, 0, 0, 0, 0].tolist() == [x[0, 0, 0, 0], x[0, 1, 0, 0]]
    assert p[1, 1, 1, 1, 0].tolist() == [x[1, 2, 1, 1], 0]
    np.testing.assert_array_equal(unpack_activation(p, 2, 3), x)
    pb = pack_activation(x, 2, 4)           # batch blocks of 2
    assert pb.shape == (1, 1, 2, 2, 2, 4)
    assert pb[0, 0, 1, 0, 1].tolist() == [x[1, 0, 1, 0], x[1, 1, 1, 0], x[1, 2, 1, 0], 0]
    w = np.arange(3 * 2 * 1 * 1, dtype=np.int8).reshape(3, 2, 1, 1)
    pw = pack_weight(w, 2, 2)
    assert pw.shape == (2, 1, 1, 1, 2, 2)
    assert pw[1, 0, 0, 0].tolist() == [[4, 5], [0, 0]]
    assert pack_channel_const(np.array([1, 2, 3], np.int32), 2, 2).tolist() == \
        [[[1, 2], [1, 2]], [[3, 0], [3, 0]]]
    dw = np.array([[[[1]]], [[[2]]], [[[3]]], [[[4]]]], np.int8)    # depthwise, 4 groups
    assert expand_groups(dw, 4, 2)[:, :, 0, 0].tolist() == [[1, 0], [0, 2], [3, 0], [0, 4]]
    y = np.array([-1, 70000, -(1 << 31), 12345678], np.int32)
    planes = np.stack([((y.astype(np.int64) >> (8 * k)) & 0xFF).astype(np.uint8).view(np.int8)
                       for k in range(4)])
    np.testing.assert_array_equal(planes_to_int32(planes), y)


def test_simplify_tail_before_after():
    from compiler.operators import TailOp as T, simplify_tail
    before = (T("ADD", const=0), T("ADD", imm=0), T("SHR", imm=9), T("MAX", imm=0),
              T("MAX", imm=-128), T("MIN", imm=127), T("MUL", imm=1), T("MIN", imm=100))
    after = (T("ADD", const=0), T("SHR", imm=9), T("MAX", imm=0), T("MIN", imm=100))
    assert simplify_tail(before) == after
    rng = np.random.default_rng(0)
    y = rng.integers(-2 ** 31, 2 ** 31, 1000).astype(np.int64)

    def run(steps):
        v = y.copy()
        for t in steps:
            b = 5 if t.const is not None else t.imm
            v = {"ADD": lambda: v + b, "SHR": lambda: v >> b, "MAX": lambda: np.maximum(v, b),
                 "MIN": lambda: np.minimum(v, b), "MUL": lambda: v * b}[t.alu]()
        return v
    np.testing.assert_array_equal(run(before), run(after))


def test_fold_columns_before_after():
    """The stem's kernel columns move into its channels: a 7x7/2 conv on 3 channels becomes a
    7x1 conv on 21 channels (2 blocks x 7 taps of GEMM work instead of 1 x 49), exactly."""
    from compiler.operators import ConvOp, TailOp, fold_columns, geometry, unfold_columns
    from compiler.reference import reference_conv
    cfg = load_config("default")
    rng = np.random.default_rng(6)
    x = rng.integers(-128, 128, (2, 3, 17, 15)).astype(np.int8)
    w = rng.integers(-128, 128, (8, 3, 7, 7)).astype(np.int8)
    op = ConvOp("stem", "conv2d", x.shape, w, (2, 2), (3, 3, 2, 1), (1, 1), 1,
                (TailOp("SHR", imm=4),), (), "int32")
    folded, fold = fold_columns(op, cfg)
    assert folded.data_shape == (2, 21, 17, op.out_shape[3])
    assert folded.weight.shape == (8, 21, 7, 1)
    assert (folded.strides, folded.padding) == ((2, 1), (3, 0, 2, 0))
    g0, g1 = geometry(op, cfg), geometry(folded, cfg)
    assert (g0.cbg * 49, g1.cbg * 7) == (49, 14)
    np.testing.assert_array_equal(reference_conv(folded, unfold_columns(x, fold)),
                                  reference_conv(op, x))
    deep = ConvOp("c", "conv2d", (1, 16, 8, 8), np.ones((16, 16, 3, 3), np.int8))
    assert fold_columns(deep, cfg) is None        # 16 channels: already whole blocks


def test_merge_constant_adds_before_after():
    from compiler.operators import TailOp as T, merge_constant_adds
    bias = np.array([1, -2, 2 ** 31 - 100], np.int32)
    scale = np.array([3, 3, 3], np.int32)
    before = (T("ADD", const=0), T("ADD", imm=128), T("SHR", imm=8), T("MUL", const=1),
              T("ADD", imm=5), T("ADD", const=2))
    steps, consts = merge_constant_adds(before, (bias, scale, bias))
    assert steps == (T("ADD", const=0), T("SHR", imm=8), T("MUL", const=1), T("ADD", const=2))
    np.testing.assert_array_equal(consts[0], (bias.astype(np.int64) + 128).astype(np.int32))
    np.testing.assert_array_equal(consts[1], scale)
    np.testing.assert_array_equal(consts[2], (bias.astype(np.int64) + 5).astype(np.int32))


def _run_tail(acc, steps, consts):
    """A tail's steps on the accumulators ``acc`` in int64, step by step (the reference)."""
    v = acc.astype(np.int64)
    for t in steps:
        b = consts[t.const].astype(np.int64) if t.const is not None else t.imm
        v = {"ADD": lambda: v + b, "SHR": lambda: v >> b, "MAX": lambda: np.maximum(v, b),
             "MIN": lambda: np.minimum(v, b)}[t.alu]()
    return v


def test_sink_max_before_after():
    """relu before the rounding shift moves behind it; with the merged bias and clip the
    quantiser's tail costs four ALU passes instead of six, with the same results."""
    from compiler.operators import (TailOp as T, accumulator_bounds, merge_constant_adds,
                                    simplify_tail, sink_max, tail_ranges)
    rng = np.random.default_rng(2)
    w = rng.integers(-128, 128, (8, 16, 3, 3)).astype(np.int8)
    bias = rng.integers(-5000, 5000, 8).astype(np.int32)
    before = (T("ADD", const=0), T("MAX", imm=0), T("ADD", imm=32), T("SHR", imm=6),
              T("MAX", imm=-128), T("MIN", imm=127))
    lo, hi = accumulator_bounds(w)
    assert tail_ranges(before, (bias,), lo, hi)
    assert sink_max(before) == (T("ADD", const=0), T("ADD", imm=32), T("SHR", imm=6),
                                T("MAX", imm=0), T("MAX", imm=-128), T("MIN", imm=127))
    steps, consts = merge_constant_adds(sink_max(before), (bias,))
    after = simplify_tail(steps)
    assert after == (T("ADD", const=0), T("SHR", imm=6), T("MAX", imm=0), T("MIN", imm=127))
    acc = rng.integers(lo, hi + 1, (1000, 8))
    acc[0], acc[1] = lo, hi

    np.testing.assert_array_equal(_run_tail(acc, before, (bias,)), _run_tail(acc, after, consts))
    # an accumulator that could wrap keeps its order
    huge = np.full(8, 2 ** 31 - 10, np.int64)
    assert not tail_ranges(before, (bias,), huge - 1, huge)


def test_sink_max_through_a_per_channel_rounding_shift():
    """The quantiser's depthwise step (a batch norm after a concatenation): bias, relu, then a
    per-channel rounding shift ``+ 2^(s-1)``, ``>> s`` (``s`` 0 in some channels) and the clip.
    relu's 0 comes out of every channel's shift as 0, so it moves behind it; with the two
    per-channel adds merged and relu joined to the clip, six ALU passes become four, with the
    results of the six (evaluated step by step in int64, extremes included)."""
    from compiler.operators import (TailOp as T, accumulator_bounds, merge_constant_adds,
                                    simplify_tail, sink_max, tail_ranges)
    rng = np.random.default_rng(5)
    w = rng.integers(-128, 128, (16, 1, 1, 1)).astype(np.int8)
    bias = rng.integers(-2 ** 20, 2 ** 20, 16).astype(np.int32)
    s = rng.integers(0, 12, 16)
    s[:3] = 0
    half = np.where(s > 0, np.left_shift(1, np.maximum(s - 1, 0)), 0).astype(np.int32)
    before = (T("ADD", const=0), T("MAX", imm=0), T("ADD", const=1), T("SHR", const=2),
              T("MAX", imm=-128), T("MIN", imm=127))
    consts = (bias, half, s.astype(np.int32))
    lo, hi = accumulator_bounds(w)
    assert tail_ranges(before, consts, lo, hi)
    moved = sink_max(before, consts)
    assert moved == (T("ADD", const=0), T("ADD", const=1), T("SHR", const=2), T("MAX", imm=0),
                     T("MAX", imm=-128), T("MIN", imm=127))
    steps, merged = merge_constant_adds(moved, consts)
    after = simplify_tail(steps)
    assert after == (T("ADD", const=0), T("SHR", const=1), T("MAX", imm=0), T("MIN", imm=127))
    acc = rng.integers(lo, hi + 1, (2000, 16))
    acc[0], acc[1], acc[2] = lo, hi, 0

    np.testing.assert_array_equal(_run_tail(acc, before, consts), _run_tail(acc, after, merged))
    # A rounding constant at least 2^s in some channel (not the quantiser's) keeps relu where
    # it is: its bound would differ between channels.
    odd = (bias, half + (1 << s).astype(np.int32) * (np.arange(16) == 5), s.astype(np.int32))
    assert sink_max(before, odd) == before


def test_stored_range_and_acc_init_step():
    """stored_range bounds what the tail leaves (checked on random and extreme int32 sums with
    the numpy reference tail); acc_init_step needs an int8 result, a leading immediate ADD and
    stored values on one side of its constant."""
    from compiler.operators import ConvOp, TailOp, acc_init_step, stored_range
    from compiler.reference import apply_tail
    w = np.ones((16, 16, 1, 1), np.int8)
    rng = np.random.default_rng(2)
    y = np.concatenate([rng.integers(-2 ** 31, 2 ** 31, 4000),
                        [-2 ** 31, 2 ** 31 - 1, 0, -1, 127, -128]]).reshape(1, 1, -1, 1)
    bias = np.arange(-8, 8, dtype=np.int32) * 1000
    tails = [((TailOp("ADD", imm=128), TailOp("SHR", imm=8), TailOp("MAX", imm=-128),
               TailOp("MIN", imm=127)), (-128, 127), TailOp("MAX", imm=128)),
             ((TailOp("ADD", imm=-5), TailOp("MIN", imm=9), TailOp("MAX", imm=2)), (2, 9),
              TailOp("MIN", imm=-5)),
             ((TailOp("SHR", imm=20), TailOp("ADD", imm=3)), (-2045, 2050), None),
             ((TailOp("ADD", imm=7), TailOp("SHR", imm=30)), (-2, 1), TailOp("MAX", imm=7)),
             ((TailOp("SHR", imm=24), TailOp("ADD", const=0), TailOp("MUL", imm=3)),
              (-3 * (128 + 8000), 3 * (127 + 7000)), None),
             ((TailOp("ADD", imm=1), TailOp("MUL", imm=2)), (-2 ** 31, 2 ** 31 - 1), None)]
    for tail, expect, init in tails:
        op = ConvOp("c", "conv2d", (1, 16, 1, 1), w, tail=tail,
                    consts=(bias,) if any(t.const is not None for t in tail) else ())
        lo, hi = stored_range(op)
        assert (lo, hi) == expect
        ys = np.broadcast_to(y, (1, 16, y.shape[2], 1)).astype(np.int64)
        out = apply_tail(ConvOp("c", "conv2d", (1, 16, 1, 1), w, tail=tail,
                                consts=op.consts, out_dtype="int32"), ys)
        assert lo <= out.min() and out.max() <= hi
        assert acc_init_step(op) == init
    int32 = ConvOp("c", "conv2d", (1, 16, 1, 1), w, tail=tails[0][0], out_dtype="int32")
    assert acc_init_step(int32) is None


def test_ceil_mode_max_pool_runs_on_vta():
    """A ceil_mode max pool becomes a VTA pool with more bottom/right DMA padding (the extra
    windows' part past the input never wins) and gives the interpreter's result exactly; a
    ceil_mode average pool (its divisor changes there) and a max pool with a window wholly
    past the input (here the last row of windows) stay on the CPU."""
    from compiler.compile import compile_module
    from compiler.runtime import execute
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 20, 8, 7), int8]) {
  %0 = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], ceil_mode=True);
  %1 = nn.max_pool2d(%x, pool_size=[3, 3], strides=[3, 2], padding=[0, 0, 0, 1], ceil_mode=True);
  %4 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[3, 3], padding=[1, 1], ceil_mode=True);
  %2 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2], ceil_mode=True);
  %3 = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], ceil_mode=True);
  (%0, %1, %2, %3, %4)
}
"""
    mod = relay.parse(text)
    model = compile_module(mod, {}, "default")
    vta = [s.op.describe() for s in model.segments if s.target == "vta"]
    assert vta == ["max_pool 3x3/2 on 20x8x7 -> int8", "max_pool 3x3/3 on 20x8x7 -> int8",
                   "max_pool 2x2/2 on 20x8x7 -> int8"]
    pads = [s.op.padding for s in model.segments if s.target == "vta"]
    assert pads == [(0, 0, 1, 0), (0, 0, 1, 2), (0, 0, 0, 1)]
    x = np.random.default_rng(6).integers(-128, 128, (1, 20, 8, 7)).astype(np.int8)
    x[0, :, 7, :] = -128            # the last row and column take part in the extra windows
    x[0, :3, :, 6] = 127
    outs, _, _ = execute(model, {"x": x}, "functional")
    for got, want in zip(outs, relay.run(mod, x)):
        np.testing.assert_array_equal(got, want)


def test_offset_for_init_before_after():
    """The quantiser's ``ADD bias, SHR s, MAX 0, MIN 127`` becomes ``ADD bias + 2^(s+8),
    SHR s, MAX 256, MIN 383``: the same int8 (low byte) on every accumulator value the int8
    weights allow, and the accumulator can then be set by ``MAX bias``. An int32 result, a
    MUL after the shift, or a sum that could wrap keeps the operator as it was."""
    from compiler.operators import ConvOp, TailOp, acc_init_step, offset_for_init
    from compiler.reference import apply_tail
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (16, 32, 3, 3)).astype(np.int8)
    bias = rng.integers(-20000, 20000, 16).astype(np.int32)
    tail = (TailOp("ADD", const=0), TailOp("SHR", imm=10), TailOp("MAX", imm=0),
            TailOp("MIN", imm=127))
    op = ConvOp("c", "conv2d", (1, 32, 4, 4), w, tail=tail, consts=(bias,))
    assert acc_init_step(op) is None
    new = offset_for_init(op)
    assert [t.describe() for t in new.tail] == ["ADD const0", "SHR 10", "MAX 256", "MIN 383"]
    np.testing.assert_array_equal(new.consts[0], bias.astype(np.int64) + (1 << 18))
    assert acc_init_step(new) == TailOp("MAX", const=0)
    lim = int(np.abs(w.astype(np.int64)).sum(axis=(1, 2, 3)).max()) * 128
    y = rng.integers(-lim, lim, (1, 16, 50, 40)).astype(np.int64)
    np.testing.assert_array_equal(apply_tail(new, y), apply_tail(op, y))
    for keep in (ConvOp("c", "conv2d", (1, 32, 4, 4), w, tail=tail, consts=(bias,),
                        out_dtype="int32"),
                 ConvOp("c", "conv2d", (1, 32, 4, 4), w, tail=tail[:2] + (TailOp("MUL", imm=3),),
                        consts=(bias,)),
                 ConvOp("c", "conv2d", (1, 32, 4, 4), w, tail=tail,
                        consts=(np.full(16, 2 ** 31 - 2 ** 17, np.int32),))):
        assert offset_for_init(keep) is keep
