"""Gradient rules of the operators the frontends added, against numeric differences."""
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
