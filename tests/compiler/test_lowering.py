"""VTA operators lowered and run on the simulators, bit-exact against an independent numpy
integer reference (compiler/reference.py: explicit tap accumulation, not the Relay kernel)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from isa.config import load_config
from sim.functional import find_race

from compiler.errors import CompileError, DoesNotFit
from compiler.lower import lower_conv
from compiler.operators import ConvOp, TailOp, geometry, offset_for_init
from compiler.reference import reference_conv
from compiler.runtime import RunStats, run_conv
from compiler.schedule import Schedule, candidates, check_fits, choose, hazard_free_layout

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


@st.composite
def conv_ops(draw, cfg_name):
    cfg = load_config(cfg_name)
    bi = cfg.block_in
    groups = draw(st.sampled_from([1, 1, 2]))
    if groups > 1:
        cin = groups * bi * draw(st.integers(1, 2))
        cout = groups * cfg.block_out * draw(st.integers(1, 2))
    else:
        cin = draw(st.integers(1, 2 * bi + 3))
        cout = draw(st.integers(1, 3 * cfg.block_out + 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    n = draw(st.integers(1, 2))
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - pads[0] - pads[2]), 9))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - pads[1] - pads[3]), 9))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    weight = rng.integers(-128, 128, (cout, cin // groups, kh, kw)).astype(np.int8)
    consts, tail = [], []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["bias", "imm", "shr", "clip", "relu", "res", "mul"]))
        if kind == "bias":
            consts.append(rng.integers(-5000, 5000, cout).astype(np.int32))
            tail.append(TailOp("ADD", const=len(consts) - 1))
        elif kind == "imm":
            tail.append(TailOp("ADD", imm=int(rng.integers(-32768, 32768))))
        elif kind == "mul":
            tail.append(TailOp("MUL", imm=int(rng.integers(-300, 300))))
        elif kind == "shr":
            tail.append(TailOp("SHR", imm=int(rng.integers(0, 12))))
        elif kind == "clip":
            tail += [TailOp("MAX", imm=-128), TailOp("MIN", imm=127)]
        elif kind == "relu":
            tail.append(TailOp("MAX", imm=0))
        elif kind == "res" and not any(t.residual for t in tail):
            tail.append(TailOp("ADD", residual=True))
    out_dtype = draw(st.sampled_from(["int8", "int32"]))
    x = rng.integers(-128, 128, (n, cin, h, w)).astype(np.int8)
    op = ConvOp("op", "conv2d", x.shape, weight, (sh, sw), pads, (dh, dw), groups, tuple(tail),
                tuple(consts), out_dtype)
    res = rng.integers(-128, 128, op.out_shape).astype(np.int8) if op.residual else None
    return cfg, op, x, res


def _check(cfg, op, x, res, schedule=None, backend="functional"):
    """Lower ``op`` (after ``offset_for_init``, as the partition does), run, compare with the
    reference of ``op`` itself."""
    geo = geometry(offset_for_init(op), cfg)
    program = lower_conv(geo, schedule or choose(geo))
    stats = RunStats()
    out = run_conv(backend, geo, program, x, res, stats)
    np.testing.assert_array_equal(out, reference_conv(op, x, res))
    if op.out_dtype == "int32" and backend == "functional":
        for image in stats.images:      # the byte planes' token pattern
            find_race(image, schedules=3)
    return stats


@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_random_convolutions_are_bit_exact(cfg_name):
    @SETTINGS
    @given(conv_ops(cfg_name))
    def run(case):
        _check(*case)
    run()


@pytest.mark.parametrize("cfg_name", ["default", "small", "batch2"])
def test_random_schedules_are_bit_exact_and_race_free(cfg_name):
    """Not only the cost model's choice: any schedule of the space (virtual threads, both
    micro-op layouts, edge tiles) computes the same, and every launch is race-free."""
    rng = np.random.default_rng(7)
    cfg = load_config(cfg_name)
    w = rng.integers(-128, 128, (3 * cfg.block_out, 2 * cfg.block_in + 1, 3, 3)).astype(np.int8)
    x = rng.integers(-128, 128, (2, w.shape[1], 7, 6)).astype(np.int8)
    bias = rng.integers(-3000, 3000, w.shape[0]).astype(np.int32)
    op = ConvOp("c", "conv2d", x.shape, w, (1, 1), (1, 0, 2, 1), (1, 1), 1,
                (TailOp("ADD", const=0), TailOp("ADD", residual=True), TailOp("SHR", imm=6),
                 TailOp("MAX", imm=-128), TailOp("MIN", imm=127)), (bias,), "int8")
    res = rng.integers(-128, 128, op.out_shape).astype(np.int8)
    space = list(candidates(geometry(op, cfg)))
    picks = [space[i] for i in rng.choice(len(space), size=min(6, len(space)), replace=False)]
    for s in picks + [Schedule(tco=3, th=2, tw=4, vt=2, layout="B")]:
        if s not in space:
            continue
        stats = _check(cfg, op, x, res, s)
        for image in stats.images:
            find_race(image, schedules=4)


@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_strided_1x1_reads_every_other_row(cfg_name):
    """A 1x1 stride-2 convolution loads only the rows it uses (the DMA's row pitch)."""
    from compiler.schedule import skips_rows
    cfg = load_config(cfg_name)
    rng = np.random.default_rng(8)
    w = rng.integers(-128, 128, (2 * cfg.block_out, 2 * cfg.block_in, 1, 1)).astype(np.int8)
    x = rng.integers(-128, 128, (1, w.shape[1], 9, 7)).astype(np.int8)
    op = ConvOp("c", "conv2d", x.shape, w, (2, 2), (0, 0, 0, 1), (1, 1), 1,
                (TailOp("SHR", imm=7),), (), "int8")
    geo = geometry(op, cfg)
    assert skips_rows(geo)
    space = list(candidates(geo))
    for s in space[:: max(1, len(space) // 5)]:
        stats = _check(cfg, op, x, None, s)
        for image in stats.images:
            find_race(image, schedules=2)


def test_dense_and_int32_planes():
    cfg = load_config("default")
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (40, 70)).astype(np.int8)
    x = rng.integers(-128, 128, (3, 70)).astype(np.int8)
    op = ConvOp("fc", "dense", (3, 70, 1, 1), w.reshape(40, 70, 1, 1),
                tail=(TailOp("ADD", const=0),), consts=(rng.integers(-9, 9, 40).astype(np.int32),),
                out_dtype="int32")
    _check(cfg, op, x, None)


@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_cycle_simulator_runs_the_same_programs(cfg_name):
    rng = np.random.default_rng(5)
    cfg = load_config(cfg_name)
    w = rng.integers(-128, 128, (2 * cfg.block_out, 3, 3, 3)).astype(np.int8)
    x = rng.integers(-128, 128, (1, 3, 8, 8)).astype(np.int8)
    op = ConvOp("stem", "conv2d", x.shape, w, (2, 2), (1, 1, 1, 1), (1, 1), 1,
                (TailOp("SHR", imm=5), TailOp("MAX", imm=0), TailOp("MIN", imm=127)), (), "int8")
    stats = _check(cfg, op, x, None, backend="cycle")
    assert stats.cycles > 0


def test_depthwise_by_block_diagonal_groups():
    """One channel per group runs as groups of whole blocks with block-diagonal weights."""
    cfg = load_config("small")
    rng = np.random.default_rng(9)
    c = 3 * cfg.block_in
    w = rng.integers(-128, 128, (c, 1, 3, 3)).astype(np.int8)
    x = rng.integers(-128, 128, (1, c, 6, 6)).astype(np.int8)
    op = ConvOp("dw", "conv2d", x.shape, w, (1, 1), (1, 1, 1, 1), (1, 1), c,
                (TailOp("SHR", imm=4),), (), "int8")
    assert geometry(op, cfg).groups == 3
    _check(cfg, op, x, None)


def test_hazard_rule_of_the_chosen_gemm_kernels():
    """With at least three output rows in a tile, no GEMM micro-op writes the accumulator entry
    that one of the two micro-ops before it wrote."""
    cfg = load_config("default")
    w = np.ones((48, 32, 3, 3), np.int8)
    op = ConvOp("c", "conv2d", (1, 32, 10, 10), w, padding=(1, 1, 1, 1))
    geo = geometry(op, cfg)
    s = choose(geo)
    assert hazard_free_layout(geo, s)
    program = lower_conv(geo, s)
    for k in program.kernels:
        if k.mode != "gemm" or k.reset:
            continue
        dsts = []
        (eo, do, _, _), (ei, di, _, _) = k.loops
        for i in range(eo):
            for j in range(ei):
                dsts += [u[0] + i * do + j * di for u in k.uops]
        for n in range(2, len(dsts)):
            assert dsts[n] not in (dsts[n - 1], dsts[n - 2])


def test_smallest_tile_that_does_not_fit_names_the_buffer():
    cfg = load_config("tiny")
    op = ConvOp("big", "conv2d", (1, 2, 16, 16), np.ones((2, 2, 12, 12), np.int8))
    with pytest.raises(DoesNotFit, match=r"big: .*needs 144 INP entries but the INP buffer of 1x2_i8w8a32_8_8_9_10 has 128"):
        choose(geometry(op, cfg))
    wide = ConvOp("wide", "conv2d", (1, 2, 4, 4), np.ones((128, 2, 1, 1), np.int8))
    with pytest.raises(DoesNotFit, match="needs 192 ACC entries but the ACC buffer"):
        check_fits(geometry(wide, cfg), Schedule(tco=64, th=1, tw=3))


def test_padding_beyond_the_dma_limit_is_an_error():
    op = ConvOp("p", "conv2d", (1, 16, 8, 8), np.ones((16, 16, 3, 3), np.int8),
                padding=(16, 0, 0, 0))
    with pytest.raises(CompileError, match="padding .* exceeds the load DMA's limit of 15"):
        geometry(op, load_config("default"))


# ------------------------------------------------------------------ pools and element-wise

def _run_vector(cfg, program, arrays, out_shape4, planes=False):
    from compiler.emit import build_program, run_linked
    from compiler.packing import planes_to_int32, unpack_activation
    n, c, oh, ow = out_shape4
    shape = (-(-n // cfg.batch), -(-c // cfg.block_out), oh, ow, cfg.batch, cfg.block_out)
    shapes = {k: v.shape for k, v in arrays.items()}
    shapes["out"] = ((4,) + shape) if planes else shape
    image = build_program(cfg, program, shapes, {}, "t")
    stats = RunStats()
    raw = run_linked(image, arrays, __import__("driver").get_backend("functional"), stats)
    for im in stats.images:
        find_race(im, schedules=3)
    return unpack_activation(planes_to_int32(raw) if planes else raw, n, c)


@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_random_pools_are_bit_exact(cfg_name):
    from compiler.packing import pack_activation
    from compiler.vector import PoolOp, check_pool, lower_pool, reference_pool
    cfg = load_config(cfg_name)

    @SETTINGS
    @given(st.sampled_from(["max", "avg"]), st.integers(1, 3), st.integers(1, 3),
           st.integers(1, 2), st.integers(1, 2), st.tuples(*[st.integers(0, 1)] * 4),
           st.integers(1, 2), st.integers(1, 20), st.integers(3, 9), st.integers(3, 9),
           st.integers(0, 99))
    def run(kind, kh, kw, sh, dw, pads, n, c, h, w, seed):
        rng = np.random.default_rng(seed)
        x = rng.integers(-128, 128, (n, c, h, w)).astype(np.int8)
        op = PoolOp("p", kind, x.shape, (kh, kw), (sh, 1), pads, (1, dw))
        try:
            check_pool(op, cfg)
        except DoesNotFit:
            return
        out = _run_vector(cfg, lower_pool(op, cfg), {"data": pack_activation(
            x, cfg.batch, cfg.block_out)}, op.out_shape)
        np.testing.assert_array_equal(out, reference_pool(op, x))
    run()


def test_global_average_pool_divisions():
    from compiler.packing import pack_activation
    from compiler.vector import PoolOp, divider, lower_pool, reference_pool
    cfg = load_config("default")
    rng = np.random.default_rng(4)
    for hw in (3, 5, 7, 8):
        x = rng.integers(-128, 128, (1, 20, hw, hw)).astype(np.int8)
        x[0, 0] = -128      # the extremes of the sum
        x[0, 1] = 127
        op = PoolOp("g", "avg", x.shape, (hw, hw))
        out = _run_vector(cfg, lower_pool(op, cfg), {"data": pack_activation(x, 1, 16)},
                          op.out_shape)
        np.testing.assert_array_equal(out, reference_pool(op, x))
    assert divider(3136) is None        # 56 x 56: no exact 32-bit scheme, stays on the CPU


@pytest.mark.parametrize("cfg_name", ["default", "small"])
@pytest.mark.parametrize("alu,out_dtype", [("ADD", "int8"), ("MUL", "int32")])
def test_int8_elementwise(cfg_name, alu, out_dtype):
    from compiler.packing import pack_activation
    from compiler.vector import EltwiseOp, lower_eltwise, reference_eltwise
    cfg = load_config(cfg_name)
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-128, 128, (2, 9, 5, 7)).astype(np.int8) for _ in range(2))
    tail = (TailOp("ADD", imm=3), TailOp("SHR", imm=1)) + (
        (TailOp("MAX", imm=-128), TailOp("MIN", imm=127)) if out_dtype == "int8" else ())
    op = EltwiseOp("e", alu, a.shape, tail, out_dtype)
    out = _run_vector(cfg, lower_eltwise(op, cfg), {
        "data": pack_activation(a, cfg.batch, cfg.block_out),
        "data2": pack_activation(b, cfg.batch, cfg.block_out)}, a.shape, out_dtype == "int32")
    np.testing.assert_array_equal(out, reference_eltwise(op, a, b))


# ------------------------------------------------------------------ conv2d_transpose

@pytest.mark.parametrize("cfg_name", ["default", "small"])
@pytest.mark.parametrize("c,o,k,s,pad,out_pad,dil,groups,out_dtype", [
    (16, 16, 4, 2, (1, 1, 1, 1), (0, 0), 1, 1, "int8"),       # DCGAN
    (5, 7, 3, 2, (0, 1, 2, 0), (1, 0), 1, 1, "int32"),
    (8, 8, 3, 3, (1, 1, 1, 1), (2, 1), 2, 1, "int8"),         # dilation: phases without taps
    (32, 32, 4, 2, (1, 1, 1, 1), (0, 0), 1, 2, "int8"),       # groups of whole blocks
    (4, 4, 1, 2, (0, 0, 0, 0), (1, 1), 1, 1, "int8"),
])
def test_conv2d_transpose_by_phases(cfg_name, c, o, k, s, pad, out_pad, dil, groups, out_dtype):
    from relay.op.nn import conv2d_transpose_nchw
    from compiler.emit import build_program, run_linked
    from compiler.packing import pack_activation, planes_to_int32, unpack_activation
    from compiler.transpose import TransposeOp, lower_transpose, reference_transpose
    cfg = load_config(cfg_name)
    rng = np.random.default_rng(c * 31 + k)
    x = rng.integers(-128, 128, (2, c, 5, 4)).astype(np.int8)
    w = rng.integers(-128, 128, (c, o // groups, k, k)).astype(np.int8)
    bias = rng.integers(-999, 999, o).astype(np.int32)
    tail = (TailOp("ADD", const=0),) + ((TailOp("SHR", imm=6), TailOp("MAX", imm=-128),
                                          TailOp("MIN", imm=127)) if out_dtype == "int8" else ())
    op = TransposeOp("t", x.shape, w, (s, s), pad, out_pad, (dil, dil), groups, tail, (bias,),
                     out_dtype)
    # the two references agree on the convolution itself
    bare = TransposeOp("t", x.shape, w, (s, s), pad, out_pad, (dil, dil), groups, (), (), "int32")
    np.testing.assert_array_equal(reference_transpose(bare, x), conv2d_transpose_nchw(
        x, w, (s, s), pad, out_pad, (dil, dil), groups, "int32"))
    program, geos, _ = lower_transpose(op, cfg)
    params = {f"weights{i}": g.packed_weight for i, g in enumerate(geos)}
    params["consts"] = geos[0].packed_consts
    n, _, oh, ow = op.out_shape
    shape = (geos[0].nb, geos[0].ob, oh, ow, cfg.batch, cfg.block_out)
    shapes = {"data": (geos[0].nb, geos[0].cb, 5, 4, cfg.batch, cfg.block_in),
              "out": ((4,) + shape) if out_dtype == "int32" else shape}
    image = build_program(cfg, program, shapes, params, "t")
    stats = RunStats()
    raw = run_linked(image, {"data": pack_activation(x, cfg.batch, cfg.block_in)},
                     __import__("driver").get_backend("functional"), stats)
    out = unpack_activation(planes_to_int32(raw) if out_dtype == "int32" else raw, n, o)
    np.testing.assert_array_equal(out, reference_transpose(op, x))
    for im in stats.images:
        find_race(im, schedules=2)


# ------------------------------------------------------------------ random shapes of the rest

@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_random_dense_layers(cfg_name):
    cfg = load_config(cfg_name)

    @settings(max_examples=8, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(1, 5), st.integers(1, 70), st.integers(1, 40), st.booleans(),
           st.integers(0, 999))
    def run(n, k, units, narrow, seed):
        rng = np.random.default_rng(seed)
        w = rng.integers(-128, 128, (units, k, 1, 1)).astype(np.int8)
        x = rng.integers(-128, 128, (n, k)).astype(np.int8)
        tail = ((TailOp("ADD", const=0), TailOp("SHR", imm=5), TailOp("MAX", imm=-128),
                 TailOp("MIN", imm=127)) if narrow else (TailOp("ADD", const=0),))
        op = ConvOp("fc", "dense", (n, k, 1, 1), w, tail=tail,
                    consts=(rng.integers(-999, 999, units).astype(np.int32),),
                    out_dtype="int8" if narrow else "int32")
        _check(cfg, op, x, None)
    run()


@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_random_transposed_convolutions(cfg_name):
    cfg = load_config(cfg_name)

    @settings(max_examples=8, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(1, 20), st.integers(1, 12), st.integers(1, 4), st.integers(1, 3),
           st.integers(1, 2), st.integers(0, 2), st.integers(0, 2), st.integers(2, 5),
           st.integers(0, 999))
    def run(c, o, k, s, d, pad, out_pad, hw, seed):
        from compiler.transpose import TransposeOp
        rng = np.random.default_rng(seed)
        out_pad = min(out_pad, s - 1)
        x = rng.integers(-128, 128, (1, c, hw, hw + 1)).astype(np.int8)
        w = rng.integers(-128, 128, (c, o, k, k)).astype(np.int8)
        op = TransposeOp("t", x.shape, w, (s, s), (pad, 0, 0, pad), (out_pad, out_pad), (d, d),
                         1, (TailOp("SHR", imm=4), TailOp("MAX", imm=-128),
                             TailOp("MIN", imm=127)), (), "int8")
        if min(op.out_shape[2:]) < 1:
            return
        _check_transpose(cfg, op, x)
    run()


def _check_transpose(cfg, op, x):
    from compiler.emit import build_program, run_linked
    from compiler.packing import pack_activation, unpack_activation
    from compiler.transpose import lower_transpose, reference_transpose
    program, geos, _ = lower_transpose(op, cfg)
    params = {f"weights{i}": g.packed_weight for i, g in enumerate(geos)}
    params["consts"] = geos[0].packed_consts
    n, o, oh, ow = op.out_shape
    shapes = {"data": (geos[0].nb, geos[0].cb) + x.shape[2:] + (cfg.batch, cfg.block_in),
              "out": (geos[0].nb, geos[0].ob, oh, ow, cfg.batch, cfg.block_out)}
    image = build_program(cfg, program, shapes, params, "t")
    raw = run_linked(image, {"data": pack_activation(x, cfg.batch, cfg.block_in)},
                     __import__("driver").get_backend("functional"))
    np.testing.assert_array_equal(unpack_activation(raw, n, o), reference_transpose(op, x))


@pytest.mark.parametrize("cfg_name", ["default", "small"])
def test_random_int8_elementwise(cfg_name):
    from compiler.packing import pack_activation
    from compiler.vector import EltwiseOp, lower_eltwise, reference_eltwise
    cfg = load_config(cfg_name)

    @settings(max_examples=8, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(["ADD", "MUL"]), st.integers(1, 3), st.integers(1, 40),
           st.integers(1, 9), st.integers(1, 9), st.integers(0, 999))
    def run(alu, n, c, h, w, seed):
        rng = np.random.default_rng(seed)
        a, b = (rng.integers(-128, 128, (n, c, h, w)).astype(np.int8) for _ in range(2))
        op = EltwiseOp("e", alu, a.shape, (TailOp("SHR", imm=int(rng.integers(0, 8))),
                                           TailOp("MAX", imm=-128), TailOp("MIN", imm=127)))
        out = _run_vector(cfg, lower_eltwise(op, cfg), {
            "data": pack_activation(a, cfg.batch, cfg.block_out),
            "data2": pack_activation(b, cfg.batch, cfg.block_out)}, a.shape)
        np.testing.assert_array_equal(out, reference_eltwise(op, a, b))
    run()


# ------------------------------------------------------------------ padding taps, ACC set by ALU

def _valid_tap_pixels(op) -> int:
    """(output pixel, kernel tap) pairs whose input pixel lies inside the image, counted by
    numpy on a padded mask (independent of compiler/schedule.py's closed form)."""
    n, c, h, w = op.data_shape
    _, _, kh, kw = op.weight.shape
    (sh, sw), (dh, dw) = op.strides, op.dilation
    pt, pl, pb, pr = op.padding
    _, _, oh, ow = op.out_shape
    mask = np.pad(np.ones((h, w), np.int64), ((pt, pb), (pl, pr)))
    return sum(int(mask[ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                        kx * dw:kx * dw + sw * (ow - 1) + 1:sw].sum())
               for ky in range(kh) for kx in range(kw))


def _gemm_executions(program) -> int:
    from compiler.program import Op
    return sum(program.kernels[k].executions for k in program.commands[
        program.commands[:, 0] == Op.GEMM, 1] if not program.kernels[k].reset)


@pytest.mark.parametrize("strides,padding,dilation,layout", [
    ((1, 1), (1, 1, 1, 1), (1, 1), "A"), ((2, 2), (1, 1, 1, 1), (1, 1), "B"),
    ((1, 2), (2, 0, 1, 3), (2, 1), "A"), ((1, 1), (1, 1, 1, 1), (1, 1), "B")])
def test_gemm_skips_the_taps_that_read_padding(strides, padding, dilation, layout):
    """The GEMM multiplies only (pixel, tap) pairs inside the image (plus nothing: with 4 x 2
    blocks per tap every split pays for its instruction), and the result stays exact."""
    cfg = load_config("default")
    rng = np.random.default_rng(11)
    w = rng.integers(-128, 128, (4 * cfg.block_out, 2 * cfg.block_in, 3, 3)).astype(np.int8)
    x = rng.integers(-128, 128, (1, w.shape[1], 9, 10)).astype(np.int8)
    op = ConvOp("c", "conv2d", x.shape, w, strides, padding, dilation, 1,
                (TailOp("SHR", imm=9),), (), "int8")
    geo = geometry(op, cfg)
    oh, ow = op.out_shape[2:]
    s = Schedule(tco=4, th=min(oh, 4), tw=ow, tci=2, vt=2, layout=layout)
    program = lower_conv(geo, s)
    full = op.out_shape[2] * op.out_shape[3] * 9
    assert _gemm_executions(program) == _valid_tap_pixels(op) * 4 * 2 < full * 4 * 2
    _check(cfg, op, x, None, s)


def _alu_kernels(program, alu):
    from compiler.program import Op
    from isa.encoding import AluOp
    return [program.kernels[k] for k in program.commands[program.commands[:, 0] == Op.ALU, 1]
            if program.kernels[k].alu_op == AluOp[alu]]


@pytest.mark.parametrize("tail,init", [
    ((TailOp("ADD", imm=128), TailOp("SHR", imm=8), TailOp("MAX", imm=-128),
      TailOp("MIN", imm=127)), ("MAX", 128)),
    ((TailOp("ADD", imm=-300), TailOp("SHR", imm=4), TailOp("MIN", imm=50),
      TailOp("MAX", imm=-100)), ("MIN", -300)),
    ((TailOp("ADD", imm=100), TailOp("SHR", imm=4), TailOp("MAX", imm=-100)), None),
    ((TailOp("ADD", const=0), TailOp("ADD", residual=True), TailOp("SHR", imm=7),
      TailOp("MAX", imm=0), TailOp("MIN", imm=127)), ("MAX", None))])
def test_accumulator_set_by_one_alu_step(tail, init):
    """After the first tile of each half, the rows a tile stored are set to the tail's leading
    ADD constant by MAX/MIN (none when the stored values straddle it) instead of a GEMM
    reset, that ADD is dropped; exact and race-free on both simulators."""
    cfg = load_config("default")
    rng = np.random.default_rng(12)
    w = rng.integers(-128, 128, (2 * cfg.block_out, cfg.block_in, 3, 3)).astype(np.int8)
    x = rng.integers(-128, 128, (1, w.shape[1], 8, 8)).astype(np.int8)
    bias = rng.integers(-3000, 3000, w.shape[0]).astype(np.int32)
    op = ConvOp("c", "conv2d", x.shape, w, (1, 1), (1, 1, 1, 1), (1, 1), 1, tail,
                (bias,) if tail[0].const is not None else (), "int8")
    res = rng.integers(-128, 128, op.out_shape).astype(np.int8) if op.residual else None
    s = Schedule(tco=1, th=4, tw=8, vt=2, layout="A")          # 4 tiles on 2 halves
    program = lower_conv(geometry(offset_for_init(op), cfg), s)
    from compiler.program import Op
    n_resets = sum(1 for k in program.commands[program.commands[:, 0] == Op.GEMM, 1]
                   if program.kernels[k].reset)
    if init is None:
        assert n_resets == 4
    else:
        assert n_resets == 2
        inits = [k for k in _alu_kernels(program, init[0]) if k.imm == init[1]]
        # (init[1] None: MAX of the bias, which offset_for_init moved above what is stored)
        assert sum(k.executions for k in inits) == 2 * 32      # two tiles of 32 rows
        # the leading ADD on the first two tiles only (and the residual's on all four)
        adds = _alu_kernels(program, "ADD")
        assert sum(k.executions for k in adds) == 2 * 32 + 4 * 32 * op.residual
    for backend in ("functional", "cycle"):
        stats = _check(cfg, op, x, res, s, backend)
        if backend == "functional":
            for image in stats.images:
                find_race(image, schedules=4)


def _alu_executions(k):
    """(dst, src) index arrays of an ALU kernel's micro-op executions, in loop order."""
    loops = list(k.loops) + [(1, 0, 0, 0)] * (2 - len(k.loops))
    (eo, do, so, _), (ei, di, si, _) = loops
    dst = [u[0] + i * do + j * di for i in range(eo) for j in range(ei) for u in k.uops]
    src = [u[1] + i * so + j * si for i in range(eo) for j in range(ei) for u in k.uops]
    return np.array(dst), np.array(src)


@pytest.mark.parametrize("cfg_name", ["small"])
def test_lowered_alu_passes_never_stall(cfg_name):
    """No ALU micro-op of a lowered convolution reads what the one just ahead writes, so the
    schedule's estimate (one cycle per ALU micro-op) holds with the hardware's stall."""
    from isa.arch import AluOp, alu_stalls
    seen = []

    @SETTINGS
    @given(conv_ops(cfg_name))
    def run(case):
        cfg, op, _, _ = case
        geo = geometry(offset_for_init(op), cfg)
        for k in lower_conv(geo, choose(geo)).kernels:
            if k.mode == "alu":
                dst, src = _alu_executions(k)
                mul = k.alu_op == AluOp.MUL         # MUL: also none two behind its producer
                assert not alu_stalls(dst, None if k.imm is not None else src, mul).any(), k
                seen.append(k)
    run()
    assert seen            # the cases had tails
