"""Operators a library registers with torch (``torch.library.custom_op``) are one opaque op each:
output metadata from their fake implementation, run whole by the torch executor; those that
cannot be traced soundly are errors naming them."""

from __future__ import annotations

import pytest
import torch
from support.custom_ops import scaled_rows

import thunder
from thunder.core.tags import Tag
from thunder.ops.custom import CustomOpError


@torch.library.custom_op("thunder_test::pair", mutates_args=())
def pair(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.sum(0), x.sum(1).to(torch.float64)


@pair.register_fake
def _(x):
    return x.new_empty(x.shape[1:]), x.new_empty(x.shape[:1], dtype=torch.float64)


@torch.library.custom_op("thunder_test::add_into", mutates_args=("out",))
def add_into(x: torch.Tensor, out: torch.Tensor) -> None:
    out.add_(x)


@torch.library.custom_op("thunder_test::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@torch.library.custom_op("thunder_test::nonzero_rows", mutates_args=())
def nonzero_rows(x: torch.Tensor) -> torch.Tensor:
    return x[x.sum(1) != 0]


@nonzero_rows.register_fake
def _(x):
    n = torch.library.get_ctx().new_dynamic_size()
    return x.new_empty((n, x.shape[1]))


def test_a_custom_op_runs_whole_with_shapes_from_its_fake():
    def f(x, s):
        y = torch.ops.thunder_test.scaled_rows(x.sin(), s, 2)
        a, b = torch.ops.thunder_test.pair.default(y)
        return y.cos() + 1, a, b

    jfn = thunder.jit(f)
    x, s = torch.randn(4, 3), torch.tensor(3.0)
    for _ in range(2):
        out, ref = jfn(x, s), f(x, s)
        torch.testing.assert_close(out, ref)
    assert thunder.compile_stats(jfn).cache_hits == 1
    trace = thunder.last_traces(jfn)[-1]
    text = str(trace)
    assert 'torch.ops.thunder_test.scaled_rows.default(t0, s, 2)  # t1: "cpu f32[2, 3]"' in text
    assert "torch.ops.thunder_test.pair.default(t1)" in text
    first = thunder.last_traces(jfn)[0]
    (bsym,) = [b for b in first.bound_symbols if b.sym.name == "scaled_rows.default"]
    assert bsym.has_tag(Tag.CUSTOM) and bsym.subsymbols == []
    # a new k is a new output shape: the literal is checked by the prologue
    torch.testing.assert_close(
        thunder.jit(lambda x, s: torch.ops.thunder_test.scaled_rows(x, s, 3))(x, s),
        scaled_rows(x, s, 3),
    )


def test_gradients_flow_through_a_custom_op_with_an_autograd_formula():
    def f(x, s):
        return (torch.ops.thunder_test.scaled_rows(x, s, 2) ** 2).sum()

    x = torch.randn(4, 3, requires_grad=True)
    s = torch.tensor(2.0, requires_grad=True)
    jfn = thunder.jit(f)
    jfn(x, s).backward()
    x2, s2 = x.detach().clone().requires_grad_(), s.detach().clone().requires_grad_()
    f(x2, s2).backward()
    torch.testing.assert_close((x.grad, s.grad), (x2.grad, s2.grad))
    # through the backward trace, which runs the operator's own formula
    (bsym,) = [
        b
        for b in thunder.last_backward_traces(jfn)[-1].bound_symbols
        if b.sym.id == "torchex.custom_op_backward"
    ]
    assert bsym.args[0] == "torch.ops.thunder_test.scaled_rows.default" and bsym.args[-1] == (0, 1)


def test_custom_ops_that_cannot_be_traced_are_named():
    x = torch.randn(3, 2)
    with pytest.raises(
        CustomOpError, match=r"torch\.ops\.thunder_test\.add_into\.default writes into its input"
    ):
        thunder.jit(lambda x, o: torch.ops.thunder_test.add_into(x, o))(x, torch.zeros(3, 2))
    with pytest.raises(CustomOpError, match=r"no_fake\.default has no usable fake .*register_fake") as e:
        thunder.jit(lambda x: torch.ops.thunder_test.no_fake(x))(x)  # no-fake-line
    assert "no-fake-line" in str(e.value)
    with pytest.raises(
        CustomOpError, match=r"nonzero_rows\.default: its output shape depends .* \(data-dependent\)"
    ):
        thunder.jit(lambda x: torch.ops.thunder_test.nonzero_rows(x))(x)
