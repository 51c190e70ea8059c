"""Gradient rules of the operators the frontends added, against numeric differences."""
import numpy as np
import pytest

import relay
from relay.grad import GradientError, gradient
from tests.relay.test_grad import check_gradient, f64


def test_matmul_gradient_with_broadcast_batch():
    mod = relay.parse('''
def @main(%a: Tensor[(2, 1, 3, 4), float64], %b: Tensor[(5, 4, 2), float64]) { nn.matmul(%a, %b) }''')
    check_gradient(mod, [f64((2, 1, 3, 4)), f64((5, 4, 2))])


def test_strided_slice_gradient():
    mod = relay.parse('''
def @main(%x: Tensor[(3, 5, 4), float64]) {
  strided_slice(%x, begin=[1, -3], end=[100, 4], axes=[0, 1]) * 2.0f64
}''')
    check_gradient(mod, [f64((3, 5, 4))])


def test_strided_slice_with_steps_has_no_gradient():
    mod = relay.parse('def @main(%x: Tensor[(6), float64]) { strided_slice(%x, begin=[0], end=[6], strides=[2]) }')
    with pytest.raises(GradientError, match="unit strides"):
        gradient(mod, "main")


@pytest.mark.parametrize("mode,rounding,size", [("half_pixel", "round_prefer_floor", (7, 5)),
                                               ("asymmetric", "floor", (6, 9)),
                                               ("align_corners", "round_prefer_ceil", (3, 4))])
def test_resize2d_nearest_gradient(mode, rounding, size):
    """Upsampling adds each input pixel's copies, downsampling drops the pixels nobody copies."""
    mod = relay.parse(f'''
def @main(%x: Tensor[(1, 2, 4, 6), float64]) {{
  image.resize2d(%x, size=[{size[0]}, {size[1]}], coordinate_transformation_mode="{mode}",
                 rounding_method="{rounding}") * image.resize2d(%x, size=[{size[0]}, {size[1]}],
                 coordinate_transformation_mode="{mode}", rounding_method="{rounding}")
}}''')
    check_gradient(mod, [f64((1, 2, 4, 6))])


@pytest.mark.parametrize("size,axis", [(3, 1), (4, 1), (5, -1)])
def test_lrn_gradient(size, axis):
    """Odd and even windows (ONNX's: one more channel above than below), on either axis."""
    mod = relay.parse(f'''
def @main(%x: Tensor[(2, 6, 3, 4), float64]) {{
  nn.lrn(%x, size={size}, axis={axis}, alpha=0.3f64, beta=0.75f64, bias=1.5f64) * %x
}}''')
    check_gradient(mod, [f64((2, 6, 3, 4))])


def _numeric_data_grad(mod, x, idx, eps=1e-6):
    """Central differences of sum(@main(x, idx)) in x only (perturbing integer indices would
    move them)."""
    g = np.zeros(x.shape)
    for at in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[at] += eps
        minus[at] -= eps
        g[at] = (np.sum(relay.run(mod, plus, idx)) - np.sum(relay.run(mod, minus, idx))) / (2 * eps)
    return g


TAKE_CASES = [
    # data shape, axis, indices (repeats must add; negatives clamp to 0 or wrap), dtype, mode
    ((5, 3), 0, [[1, 4, 1], [-1, 7, 1]], "int32", "clip"),
    ((2, 4, 3), 1, [3, -1, 3, 0, -5], "int64", "wrap"),
    ((2, 3, 4), -1, [[2], [2]], "uint8", "fast"),
    ((2, 3, 4), -1, -1, "int32", "wrap"),        # scalar index: the axis disappears
    ((2, 3, 4), 0, -3, "int64", "clip"),
    ((3, 4), None, [[0, 11], [11, -2]], "int32", "wrap"),   # no axis: the flattened data
]


@pytest.mark.parametrize("shape,axis,indices,dtype,mode", TAKE_CASES)
def test_take_gradient(shape, axis, indices, dtype, mode):
    """Against numeric differences in the data (the indices are runtime inputs, held fixed), and
    against numpy's unbuffered scatter-add (np.add.at)."""
    idx = np.asarray(indices, dtype)
    dims = ", ".join(map(str, idx.shape)) + ("," if idx.ndim == 1 else "")
    ity = f"Tensor[({dims}), {dtype}]" if idx.ndim else dtype
    ax = "" if axis is None else f"axis={axis}, "
    mod = relay.parse(f'''
def @main(%x: Tensor[({', '.join(map(str, shape))}), float64], %i: {ity}) {{
  %0 = take(%x, %i, {ax}mode="{mode}");
  %0 * %0
}}''')
    x = f64(shape)
    g = gradient(mod, "main")
    relay.check_module(g)
    value, (dx, di) = relay.run(g, x, idx, name="main_grad")
    np.testing.assert_allclose(value, relay.run(mod, x, idx), rtol=1e-12)
    assert di.dtype == idx.dtype and not di.any()
    np.testing.assert_allclose(dx, _numeric_data_grad(mod, x, idx), rtol=1e-5, atol=1e-6)
    n = x.size if axis is None else shape[axis]
    where = idx.astype(np.int64) % n if mode == "wrap" else np.clip(idx.astype(np.int64), 0, n - 1)
    want = np.zeros(x.size if axis is None else shape)
    out = 2 * np.take(x.reshape(-1) if axis is None else x, where, axis=0 if axis is None else axis)
    np.add.at(want, (where,) if axis is None else (slice(None),) * (axis % x.ndim) + (where,), out)
    np.testing.assert_allclose(dx, want.reshape(shape), rtol=1e-12)


def test_take_gradient_of_constant_indices_and_second_derivative():
    """Gather's form (indices a constant).  The rule is linear in the output gradient, so the
    first gradient differentiates again; dx adds 2 x once at row 0 and three times at row 2."""
    from relay.ir import Function, IRModule, Var, const, op_call
    from relay.ty import TensorType
    x = Var("x", TensorType((4, 3), "float64"))
    t = op_call("take", x, const(np.array([2, 0, 2, 2], "int64")), axis=0)
    base = gradient(IRModule.from_expr(Function([x], op_call("multiply", t, t))), "main")
    mod = base.update(relay.parse("def @second(%x: Tensor[(4, 3), float64]) -> float64 "
                                  "{ sum(@main_grad(%x).1.0 * %x) }", base=base))
    xv = f64((4, 3))
    check_gradient(mod, [xv], name="second")
    _, (dx,) = relay.run(base, xv, name="main_grad")
    np.testing.assert_allclose(dx, xv * np.array([[2], [0], [6], [0]]), rtol=1e-12)


def test_take_gradient_of_no_indices_and_of_unknown_shapes():
    mod = relay.parse("def @main(%x: Tensor[(3, 2), float64], %i: Tensor[(0), int32]) { take(%x, %i, axis=1) }")
    _, (dx, _) = relay.run(gradient(mod, "main"), np.ones((3, 2)), np.zeros(0, "int32"), name="main_grad")
    assert dx.shape == (3, 2) and not dx.any()
    mod = relay.parse("def @main(%x: Tensor[(3, ?), float64], %i: int32) { take(%x, %i, axis=0) }")
    with pytest.raises(GradientError, match="take gradient needs static shapes"):
        gradient(mod, "main")
