"""A tensor subclass whose ``__torch_dispatch__`` writes its result in place before returning
it (torchao's int8 weight-only linear: ``y = torch.mm(x, w.int_data) * w.scale; y += bias;
return y``): the op's value is the value written, through thunder.jit, the torch.compile
executor and thunderfx, with gradients, over several calls (``SubclassOps._run`` in
``thunder/frontend/subclasses/ops.py``). The written value was recorded as a new value while
the op still returned the old one, and dead-code elimination dropped the op
(``NameError``/``UnboundLocalError`` at the first call)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_map

import thunder
from thunder.dynamo import thunderfx


class Quantized(torch.Tensor):
    """An int8 weight with a scale per output row, as torchao's weight-only int8 tensor
    (``transposed``: the view ``F.linear`` takes before its matmul)."""

    @staticmethod
    def __new__(cls, data, scale, transposed=False):
        shape = data.shape[::-1] if transposed else data.shape
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=scale.dtype, device=data.device)

    def __init__(self, data, scale, transposed=False):
        self.data_int, self.scale, self.transposed = data, scale, transposed

    @classmethod
    def of(cls, w):
        scale = w.abs().amax(1) / 127
        return cls(torch.round(w / scale[:, None]).to(torch.int8), scale)

    def __tensor_flatten__(self):
        return ["data_int", "scale"], self.transposed

    @staticmethod
    def __tensor_unflatten__(inner, transposed, outer_size, outer_stride):
        return Quantized(inner["data_int"], inner["scale"], transposed)

    def __repr__(self):
        return f"Quantized({tuple(self.shape)})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.t.default:
            w = args[0]
            return Quantized(w.data_int, w.scale, not w.transposed)
        if func in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
            bias, (x, w) = (args[0], args[1:]) if func is torch.ops.aten.addmm.default else (None, args)
            data = w.data_int.to(x.dtype)
            if w.transposed:  # x @ W.T (F.linear); else g @ W (the input's gradient)
                y = torch.mm(x, data.t())
                y *= w.scale
            else:
                y = torch.mm(x * w.scale, data)
            if bias is not None:
                y += bias
            return y
        raise NotImplementedError(f"Quantized: {func}")


class Plain(torch.Tensor):
    """The 20-line reproduction: ``y = torch.mm(x, w.a); y += 1; return y``."""

    @staticmethod
    def __new__(cls, a):
        return torch.Tensor._make_wrapper_subclass(cls, a.shape, dtype=a.dtype, device=a.device)

    def __init__(self, a):
        self.a = a

    def __tensor_flatten__(self):
        return ["a"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return Plain(inner["a"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.mm.default:
            y = torch.mm(args[0], args[1].a)
            y += 1
            return y
        unwrap = lambda t: t.a if isinstance(t, Plain) else t  # noqa: E731
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))


def _modes():
    return {
        "jit": lambda f: thunder.jit(f),
        "torchcompile": lambda f: thunder.jit(f, executors=["torchcompile"]),
        "thunderfx": lambda f: thunderfx(f),
    }


@pytest.mark.parametrize("mode", list(_modes()))
def test_a_dispatch_that_writes_its_result_returns_the_written_value(mode):
    w = Plain(torch.randn(3, 4))

    def f(x, w):
        return torch.mm(x, w) * 2

    jfn = _modes()[mode](f)
    for n in (2, 2, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(jfn(x, w), f(x, w))


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("mode", list(_modes()))
def test_a_weight_only_int8_linear_equals_eager_with_the_gradient_of_its_input(mode, bias):
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 6, bias=bias)
    q = Quantized.of(lin.weight.detach())

    def f(x):
        return F.gelu(F.linear(x, q, lin.bias if bias else None)).sum(-1)

    jfn = _modes()[mode](f)
    for _ in range(3):
        x = torch.randn(4, 8)
        xe, xt = x.clone().requires_grad_(), x.clone().requires_grad_()
        want, got = f(xe), jfn(xt)
        torch.testing.assert_close(got, want)
        want.sum().backward()
        got.sum().backward()
        torch.testing.assert_close(xt.grad, xe.grad)
        if bias:
            assert lin.bias.grad is not None
            lin.bias.grad = None
