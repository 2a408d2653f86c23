"""The legacy ``Tensor.new`` (``thunder/ops/ltorch/spellings.py``): sizes, a ``torch.Size``,
a list of numbers, nothing; in the tensor's dtype and device, as eager."""

from __future__ import annotations

import pytest
import torch

import thunder


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.new(2, 3).fill_(1.5) * x,
        lambda x: x.new(torch.Size([3])).zero_() + x[0],
        lambda x: x.new([1, 2, 3]) * x,
        lambda x: x.new((4, 5, 6)) + x,
        lambda x: x.new().shape,
    ],
    ids=["sizes", "Size", "list", "tuple_is_data", "empty"],
)
@pytest.mark.parametrize("dtype", [torch.float64, torch.int32])
def test_tensor_new(fn, dtype):
    x = torch.arange(6, dtype=dtype).reshape(2, 3)
    got, expected = thunder.jit(fn)(x), fn(x)
    if isinstance(expected, torch.Tensor):
        assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected)


def test_tensor_new_from_a_tensor_is_a_clear_error():
    with pytest.raises(Exception, match="Tensor.new"):
        thunder.jit(lambda x: x.new(x))(torch.ones(2))
