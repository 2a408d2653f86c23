"""``Tensor.sum_to_size`` (``thunder/ops/ltorch/spellings.py``) as eager: the sum's dtype
(bool and integers sum to int64), the tensor itself when nothing is summed, and the gradient."""

from __future__ import annotations

import pytest
import torch

import thunder


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.int64, torch.float32])
@pytest.mark.parametrize("size", [(1, 3), (2, 1), (1, 1), (3,), (2, 3)], ids=str)
def test_sum_to_size_gives_eagers_values_and_dtype(dtype, size):
    x = torch.randint(0, 3, (2, 3)).to(dtype)
    expected = x.sum_to_size(*size)
    got = thunder.jit(lambda a: a.sum_to_size(*size))(x)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected)
    got_tuple = thunder.jit(lambda a: a.sum_to_size(size))(x)
    torch.testing.assert_close(got_tuple, expected)


def test_sum_to_size_gradient_is_the_broadcast_cotangent():
    x = torch.randn(2, 3, requires_grad=True)
    y = x.detach().clone().requires_grad_()
    thunder.jit(lambda a: a.sum_to_size(1, 3))(x).backward(torch.tensor([[1.0, 2.0, 3.0]]))
    y.sum_to_size(1, 3).backward(torch.tensor([[1.0, 2.0, 3.0]]))
    torch.testing.assert_close(x.grad, y.grad)


def test_sum_to_size_refuses_a_size_the_tensor_does_not_broadcast_from():
    with pytest.raises(
        Exception, match=r"Tensor.sum_to_size: size \[4\] is not expandable to the tensor's shape \(2, 3\)"
    ):
        thunder.jit(lambda a: a.sum_to_size(4))(torch.randn(2, 3))
