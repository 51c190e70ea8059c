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
