"""The layout of the gradient a custom ``torch.autograd.Function``'s backward receives: thunder
passes a contiguous one (as eager's engine does after ``mean()`` or a matmul), so a backward
that asks ``grad.stride()`` or ``grad.is_contiguous()`` (torchao's float8 linear) is traced, with
eager's answers and gradients; a read of its memory (``as_strided``) is refused."""

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedOpError


class _ScaledByStride(torch.autograd.Function):
    """A backward whose value depends on its gradient's layout: a wrong answer changes it."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        flat = g.view(-1) if g.is_contiguous() else g.reshape(-1)  # (view() needs a contiguous g)
        return (flat * g.stride(0) + g.storage_offset()).view(g.shape)


def _loss(x):
    return _ScaledByStride.apply(x).square().mean()  # (eager's engine: a contiguous gradient)


@pytest.mark.parametrize("dynamic", [None, True], ids=["static", "dynamic"])
def test_a_backward_asking_its_gradient_s_layout_gets_eager_s_answer(dynamic):
    jf = thunder.jit(_loss, dynamic=dynamic)
    for n in (4, 4, 6):
        x = torch.randn(n, 8, requires_grad=True)
        want = x.detach().clone().requires_grad_()
        jf(x).backward()
        _loss(want).backward()
        torch.testing.assert_close(x.grad, want.grad, rtol=0, atol=0)


class _Addressed(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 if g.data_ptr() != x.data_ptr() else g  # (memory of its own, as eager's)


def test_a_backward_comparing_its_gradient_s_address_gets_eager_s_answer():
    def f(x):
        return _Addressed.apply(x).sum()

    x = torch.randn(3, 4, requires_grad=True)
    want = x.detach().clone().requires_grad_()
    thunder.jit(f)(x).backward()
    f(want).backward()
    torch.testing.assert_close(x.grad, want.grad, rtol=0, atol=0)


class _ReadsMemory(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g.as_strided(g.shape, g.stride()) * 2


def test_a_backward_reading_its_gradient_s_memory_is_refused():
    # after sum() eager's gradient is an expanded tensor: its memory is one element
    def f(x):
        return _ReadsMemory.apply(x).sum()

    x = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(UnsupportedOpError, match=r"as_strided reads the memory of .*gradient reaching") as e:
        thunder.jit(f)(x)
    assert "test_cotangent_layouts.py" in str(e.value)  # the backward's own line
