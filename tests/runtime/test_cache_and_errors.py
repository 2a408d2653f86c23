"""The cache (hits, retraces on shape/dtype/int changes) and errors on bad input.

Every error names the op and the user's source line, and leaves the inputs as they were.
"""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.errors import DataDependentError, UnsupportedOpError


def scale(x, n):
    return x * n


def test_same_inputs_hit_the_cache():
    jfn = thunder.jit(scale)
    x = torch.randn(3)
    jfn(x, 2)
    jfn(torch.randn(3), 2)
    stats = thunder.compile_stats(jfn)
    assert (stats.calls, stats.cache_hits, stats.cache_misses) == (2, 1, 1)
    assert len(stats.entries) == 1


@pytest.mark.parametrize(
    "second",
    [
        (torch.randn(4), 2),  # shape
        (torch.randn(3, dtype=torch.float64), 2),  # dtype
        (torch.randn(3), 3),  # a Python int
        (torch.randn(3, requires_grad=True), 2),  # requires_grad
    ],
)
def test_changed_inputs_retrace_and_stay_correct(second):
    jfn = thunder.jit(scale)
    jfn(torch.randn(3), 2)
    out = jfn(*second)
    torch.testing.assert_close(out, scale(*second))
    stats = thunder.compile_stats(jfn)
    assert stats.cache_misses == 2 and len(stats.entries) == 2
    # the new entry says which prologue check rejected the older one
    (reason,) = stats.entries[-1].miss_reasons
    assert reason.startswith("entry 0: pythonex.check_")
    # and the old entry still serves the old inputs
    jfn(torch.randn(3), 2)
    assert stats.cache_hits == 1


def test_a_torch_size_argument_is_checked_as_a_size():
    """A ``torch.Size`` prints as ``torch.Size([...])``, so the prologue's check compares a
    Size with a Size (it used to print as a tuple and fail on the first call)."""
    jfn = thunder.jit(lambda x, size: x.reshape(size) * 2)
    x = torch.randn(6)
    torch.testing.assert_close(jfn(x, torch.Size([2, 3])), x.reshape(2, 3) * 2)
    jfn(x, torch.Size([2, 3]))
    jfn(x, (2, 3))  # a tuple is another input: eager code may tell them apart
    jfn(x, torch.Size([3, 2]))
    stats = thunder.compile_stats(jfn)
    assert (stats.cache_hits, stats.cache_misses) == (1, 3)


def test_a_returned_torch_size_stays_a_size():
    out = thunder.jit(lambda x: (x * 2, x.shape))(torch.randn(2, 3))[1]
    assert type(out) is torch.Size and out == (2, 3)


def test_grad_mode_is_checked():
    jfn = thunder.jit(scale)
    jfn(torch.randn(3), 2)
    with torch.no_grad():
        jfn(torch.randn(3), 2)
    assert thunder.compile_stats(jfn).cache_misses == 2


def test_unsupported_op_names_op_and_line():
    def f(x):
        # a general (non-symmetric) eigendecomposition: thunder has no op for it
        return torch.linalg.eig(x)  # unsupported-op-line

    with pytest.raises(UnsupportedOpError, match=r"torch\.linalg\.eig is not supported") as e:
        thunder.jit(f)(torch.randn(3, 3))
    assert "unsupported-op-line" in str(e.value)
    assert "test_cache_and_errors.py" in str(e.value)


def test_data_dependent_control_flow():
    def f(x):
        if x.sum() > 0:  # data-dependent-line
            return x
        return -x

    with pytest.raises(DataDependentError, match=r"torch\.Tensor\.__bool__") as e:
        thunder.jit(f)(torch.randn(4))
    assert "data-dependent-line" in str(e.value)


def test_item_is_data_dependent():
    def f(x):
        return x * x.max().item()  # item-line

    with pytest.raises(DataDependentError, match=r"torch\.Tensor\.item") as e:
        thunder.jit(f)(torch.randn(4))
    assert "item-line" in str(e.value)


def test_tensors_on_different_devices():
    def f(x, y):
        return x + y  # devices-line

    with pytest.raises(ValueError, match=r"same device.*cpu.*meta|same device.*meta.*cpu") as e:
        thunder.jit(f)(torch.randn(4), torch.empty(4, device="meta"))
    assert "devices-line" in str(e.value)


def test_wrong_number_of_arguments_on_a_cached_call():
    jfn = thunder.jit(scale)
    jfn(torch.randn(3), 2)
    with pytest.raises(TypeError, match="argument"):
        jfn(torch.randn(3))
    assert len(thunder.compile_stats(jfn).entries) == 1


def test_failed_trace_leaves_inputs_unchanged():
    def f(x):
        x.add_(1)
        return torch.linalg.eig(x)

    x = torch.zeros(2, 2)
    with pytest.raises(UnsupportedOpError, match=r"torch\.linalg\.eig"):
        thunder.jit(f)(x)
    assert torch.equal(x, torch.zeros(2, 2))


def test_failed_module_trace_restores_parameters():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))
            self.register_buffer("b", torch.zeros(3))

        def forward(self, x):
            return torch.linalg.eig(x * self.w + self.b)

    m = M()
    w, b = m.w, m.b
    with pytest.raises(UnsupportedOpError, match=r"torch\.linalg\.eig"):
        thunder.jit(m)(torch.ones(3, 3))
    assert m.w is w and m.b is b
    assert type(m._parameters["w"]) is torch.nn.Parameter


def test_inplace_on_input_reaches_the_user_tensor():
    def f(x):
        x.mul_(2)
        x[0] = 5
        return x + 1

    x, xe = torch.arange(4.0), torch.arange(4.0)
    out = thunder.jit(f)(x)
    expected = f(xe)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(x, xe)


def test_captured_tensor_becomes_an_input():
    w = torch.randn(3)

    def f(x):
        return x * w

    jfn = thunder.jit(f)
    x = torch.randn(3)
    torch.testing.assert_close(jfn(x), f(x))
    names = [p.name for p in thunder.last_traces(jfn)[-1].args]
    assert names == ["x", "c0"]


def test_jit_rejects_non_callables():
    with pytest.raises(TypeError, match="function or an nn.Module"):
        thunder.jit(3)


def test_more_inplace_methods_and_plain_value_calls():
    def f(x, s):
        y = torch.zeros(2, device=torch.device("cpu"))
        x.zero_()
        x.fill_(3.0)
        return x[s] + y[:1]

    x = torch.ones(2)
    out = thunder.jit(f)(x, slice(0, 1))
    torch.testing.assert_close(out, torch.tensor([3.0]))
    torch.testing.assert_close(x, torch.full((2,), 3.0))


def test_uniform_and_normal_in_place():
    def f(x):
        x.uniform_(2.0, 3.0)
        return x.clone().normal_(0.0, 1.0)

    x = torch.zeros(1000)
    thunder.jit(f)(x)
    assert 2.0 <= x.min() and x.max() <= 3.0


def test_views_see_later_writes_to_their_base_as_in_eager():
    def f(x):
        row, xt = x[0], x.t()
        x.add_(1)  # eager: row and xt alias x and see this
        col = x[:, 1]
        col.mul_(3)  # writes through to x, and so to row and xt
        return row * 2, xt, x

    x, xe = torch.zeros(2, 2), torch.zeros(2, 2)
    out = thunder.jit(f)(x)
    expected = f(xe)
    for a, b in zip(out, expected):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(x, xe)


def test_indexing_with_tensors_or_lists_copies_as_in_eager():
    def f(x, i):
        picked, listed = x[i], x[:, [0, 2]]  # advanced indexing: copies, not views
        picked.add_(1)  # stays in ``picked``
        x.mul_(2)  # does not reach ``listed``
        listed.sub_(1)
        return picked, listed, x

    x, xe, i = torch.ones(3, 3), torch.ones(3, 3), torch.tensor([0, 2])
    for a, b in zip(thunder.jit(f)(x, i), f(xe, i)):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(x, xe)


def test_torch_assert_checks_python_conditions_while_tracing():
    def f(x):
        torch._assert(x.dim() == 2, "expected a matrix")
        return x * 2

    jfn = thunder.jit(f)
    torch.testing.assert_close(jfn(torch.ones(2, 3)), torch.ones(2, 3) * 2)
    with pytest.raises(AssertionError, match="expected a matrix"):
        jfn(torch.ones(3))  # another shape retraces, and the assert fails as in eager


def test_torch_assert_on_a_tensor_is_a_data_dependent_error():
    def f(x):
        torch._assert(x.sum() > 0, "positive")  # tensor-assert-line
        return x

    with pytest.raises(Exception, match=r"torch\._assert.*data-dependent") as e:
        thunder.jit(f)(torch.ones(2))
    assert "tensor-assert-line" in str(e.value)


def test_write_into_an_expanded_view_is_a_clear_error():
    def f(x):
        x[0].expand(2, 2).add_(1)  # view-write-line
        return x

    x = torch.zeros(2, 2)
    with pytest.raises(UnsupportedOpError, match="view made by expand") as e:
        thunder.jit(f)(x)
    assert "view-write-line" in str(e.value)
    assert torch.equal(x, torch.zeros(2, 2))


def test_many_retraces_warn_with_the_reason():
    jfn = thunder.jit(scale)
    with pytest.warns(UserWarning, match=r"compiled 8 times.*check_literal\(n, 6\)"):
        for n in range(8):
            jfn(torch.ones(2), n)


def test_vmap_names_the_dispatcher_and_the_line():
    def f(x):
        return torch.vmap(lambda r: r.sin())(x)  # vmap-line

    x = torch.ones(2, 2)
    with pytest.raises(RuntimeError, match="reached torch's dispatcher") as e:
        thunder.jit(f)(x)
    assert "vmap-line" in str(e.value)


def test_formatting_and_iterating_proxies():
    def f(x):
        label = f"{x}"  # formatting a proxy during tracing must work, reading no values
        assert "TensorProxy" in label and repr(x) == label
        return sum(row for row in x) * len(x)

    x = torch.arange(6.0).reshape(3, 2)
    torch.testing.assert_close(thunder.jit(f)(x), x.sum(0) * 3)
