"""Layout queries (``stride()``, ``is_contiguous()`` in every memory format,
``storage_offset()``) give eager's answers while tracing, for inputs, views of them and computed
values, and the prologue checks what the answer rested on: a later call laid out otherwise
traces again."""

import pytest
import torch

import thunder

CL = torch.channels_last


def _inputs():
    base = torch.arange(120.0).reshape(2, 3, 4, 5)
    return [
        base,
        base.to(memory_format=CL),
        base.transpose(1, 3),
        base[:, 1:, ::2],
        torch.arange(12.0).view(3, 4)[1:],
        torch.rand(50)[::2].reshape(25, 1, 1, 1).expand(25, 2, 1, 3),
    ]


QUERIES = {
    "is_contiguous": lambda x: (
        x.is_contiguous(),
        (x * 2).is_contiguous(),
        x.t().is_contiguous() if x.dim() == 2 else None,
    ),
    "channels_last": lambda x: (
        x.is_contiguous(memory_format=CL) if x.dim() == 4 else None,
        (x + 1).is_contiguous(memory_format=CL) if x.dim() == 4 else None,
        x.is_contiguous(memory_format=torch.contiguous_format),
    ),
    "stride": lambda x: (x.stride(), x.stride(0), x.stride(-1), (x.sin() * 3).stride(), x[1:].stride()),
    "storage_offset": lambda x: (x.storage_offset(), x[1:].storage_offset(), (x * 1).storage_offset()),
}


# Values the program lays out itself: eager's contiguous(memory_format=...) and
# to(memory_format=...) return the tensor where it is laid out so already, else a copy laid out so
# (thunder's values have no layout: the copy is decided on eager's layout, replayed).
QUERIES["laid_out_by_the_program"] = lambda x: (
    x.contiguous(memory_format=CL).stride() if x.dim() == 4 else None,
    x.to(memory_format=CL).stride() if x.dim() == 4 else None,
    x.to(torch.float64, memory_format=CL).stride() if x.dim() == 4 else None,
    (x.contiguous(memory_format=CL) * 2).stride() if x.dim() == 4 else None,
    (x.contiguous(memory_format=CL) * 2).contiguous().stride() if x.dim() == 4 else None,
    x.contiguous(memory_format=CL).contiguous().is_contiguous() if x.dim() == 4 else None,
    x.to(memory_format=torch.contiguous_format).stride(),
)


@pytest.mark.parametrize("query", list(QUERIES))
def test_layout_queries_give_eager_answers_on_every_call(query):
    f = QUERIES[query]
    jf = thunder.jit(f)
    for _ in range(3):
        for x in _inputs():
            assert jf(x) == f(x), (query, x.shape, x.stride())


def test_a_stride_used_as_a_value_is_checked():
    def f(x):
        return x * x.stride(0)

    jf = thunder.jit(f)
    for x in [torch.ones(3, 4), torch.ones(4, 3).t(), torch.ones(3, 4), torch.ones(3, 8)[:, ::2]]:
        torch.testing.assert_close(jf(x), f(x))
    assert thunder.compile_stats(jf).cache_misses == 3
    assert "check_strides" in str(thunder.last_prologue_traces(jf)[-1])


def test_a_storage_offset_read_is_checked():
    def f(x):
        return x + x.storage_offset()

    base = torch.arange(12.0)
    jf = thunder.jit(f)
    for x in [base[1:5], base[2:6], base[1:5]]:
        torch.testing.assert_close(jf(x), f(x))
    assert thunder.compile_stats(jf).cache_misses == 2
    assert "check_storage_offset" in str(thunder.last_prologue_traces(jf)[-1])


def test_branching_on_contiguity_follows_eager():
    def f(x):
        return x + 1 if x.is_contiguous() else x.contiguous() * 10

    jf = thunder.jit(f)
    for x in [torch.rand(50)[::2], torch.rand(25), torch.rand(50)[::2]]:
        torch.testing.assert_close(jf(x), f(x))


@torch.library.custom_op("thunder_test::cpu_only_double", mutates_args=())
def _cpu_only_double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_cpu_only_double.register_fake
def _(x):
    if x.device.type != "cpu":  # an op whose layout cannot be replayed on meta tensors
        raise RuntimeError("cpu only")
    return torch.empty_like(x)


def test_a_layout_that_cannot_be_replayed_is_refused():
    def f(x):
        y = torch.ops.thunder_test.cpu_only_double(x)
        return y * y.stride(0)

    with pytest.raises(Exception, match=r"torch.Tensor.stride on .*its layout in eager cannot be worked out"):
        thunder.jit(f)(torch.ones(2, 3))


def _same_start(a, b):
    return a.data_ptr() == b.data_ptr()


_ADDRESS_CASES = {
    # (function, arguments of each call): data_ptr() comparisons as eager answers them
    "tied_or_not": (
        lambda x, y: x * 2 if _same_start(x, y) else x * 3,
        lambda base: [(base, base), (base, base.clone()), (base, base)],
    ),
    "views_of_an_argument": (
        lambda x, y: (
            x + int(_same_start(x[0], x)) + int(_same_start(x[1], x)) + int(x.data_ptr() != y.data_ptr())
        ),
        lambda base: [(base, base[1:]), (base, base), (base, base[1:])],
    ),
    "two_views_passed": (
        lambda x, y: x * 2 if _same_start(x[1:], y) else x * 3,
        lambda base: [(base, base[1:]), (base, base[2:]), (base.clone(), base[1:])],
    ),
    "computed_values": (
        lambda x, y: x + int(_same_start(x * 1, x)) + int(_same_start((x * 1)[0], x)),
        lambda base: [(base, base)] * 3,
    ),
}


@pytest.mark.parametrize("case", sorted(_ADDRESS_CASES))
def test_data_ptr_comparisons_are_eager_s_and_checked(case):
    fn, calls = _ADDRESS_CASES[case]
    jf = thunder.jit(fn)
    for args in calls(torch.arange(4.0)):
        torch.testing.assert_close(jf(*args), fn(*args))


def test_tied_weights_by_data_ptr_in_a_module():
    class Tied(torch.nn.Module):
        def __init__(self, tie):
            super().__init__()
            self.a, self.b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
            if tie:
                self.b.weight = self.a.weight

        def forward(self, x):
            shared = self.a.weight.data_ptr() == self.b.weight.data_ptr()
            return self.a(x) * (2 if shared else 3)

    for tie in (True, False):
        m = Tied(tie)
        x = torch.randn(2, 3)
        torch.testing.assert_close(thunder.jit(m)(x), m(x))


@pytest.mark.parametrize(
    "use, what",
    [
        (lambda x: x * (x.data_ptr() % 16 == 0), "arithmetic"),
        (lambda x: x * int(x.data_ptr() > 0), "ordering"),
        (lambda x: x * (x.data_ptr() == 12345), "comparing a number"),
        (lambda x: x * len({x.data_ptr()}), "hashing"),
    ],
)
def test_other_uses_of_an_address_are_refused_with_the_line(use, what):
    with pytest.raises(Exception, match=rf"thunder: {what}.* data_ptr\(\).*\n  at .*test_layout_queries.py"):
        thunder.jit(use)(torch.ones(2))


def test_a_layout_the_program_chooses_decides_aliasing_as_eager():
    """``y.contiguous(memory_format=...)`` is ``y`` itself where ``y`` is laid out so already
    (a write into it reaches ``y``), else a copy (a write stays in it); memory is read in the
    copy's layout (as_strided refuses a layout other than the elements in order)."""

    def same(x):
        y = x * 1
        z = y.contiguous(memory_format=CL)
        return z is y, z.add_(1), y

    def back(x):
        y = x.contiguous(memory_format=CL) * 2
        z = y.contiguous()
        z.add_(1)
        return z is y, y, z.view(-1)

    for f, make in [
        (same, lambda: torch.randn(2, 3, 4, 5)),
        (same, lambda: torch.randn(2, 3, 4, 5).to(memory_format=CL)),
        (back, lambda: torch.randn(2, 3, 4, 5)),
    ]:
        jf = thunder.jit(f)
        for _ in range(2):
            x = make()
            got, expected = jf(x.clone()), f(x.clone())
            assert got[0] == expected[0]
            for g, e in zip(got[1:], expected[1:]):
                torch.testing.assert_close(g, e)

    def read(x):
        return x.reshape(1, 4, 2, 2).contiguous(memory_format=CL).as_strided((4,), (1,))

    with pytest.raises(Exception, match="not contiguous in eager"):
        thunder.jit(read)(torch.randn(4, 4))
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        thunder.jit(lambda x: x.contiguous(memory_format=CL))(torch.randn(4, 4))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: (x * 2).transpose(1, 3).contiguous(),
        lambda x: x.transpose(1, 3).contiguous(),
        lambda x: (x * 2).contiguous(memory_format=CL),
        lambda x: (x * 2).to(memory_format=CL),
        lambda x: x.permute(0, 2, 3, 1).contiguous(memory_format=CL),
        lambda x: (x * 2).transpose(1, 2).contiguous().view(2, 12, 5),
        lambda x: x.double(memory_format=CL),
        lambda x: x.double().double(memory_format=CL),
        lambda x: x.permute(0, 2, 3, 1).half(memory_format=torch.contiguous_format),
        lambda x: torch.permute_copy(x, (0, 2, 3, 1)),
        lambda x: torch.transpose_copy(x * 2, 1, 3),
    ],
)
def test_a_layout_the_program_chooses_is_the_returned_tensor_s(f):
    """What the caller gets from ``contiguous()``, ``to(memory_format=...)``, a cast with a
    memory format and a ``*_copy`` op is laid out as eager's (a copy of a transposed tensor kept
    the transposed strides once, and a cast dropped its memory format: a stride read, ``view``
    or ``is_contiguous()`` after the call disagreed with eager's)."""
    x = torch.randn(2, 3, 4, 5)
    expected, got = f(x), thunder.jit(f)(x)
    assert got.stride() == expected.stride()
    assert got.is_contiguous() == expected.is_contiguous()
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
def test_a_value_that_reaches_an_input_twice_has_eager_s_layout(transposed):
    # ``x * x.abs().max()`` reaches x twice (a diamond in the dataflow, not a cycle): float8
    # training's scaling asks for the stride of such a value
    def f(x):
        y = x * x.abs().max()
        return y + y.stride()[0] + 10 * y.stride()[1], y.is_contiguous()

    x = torch.randn(4, 3).t() if transposed else torch.randn(3, 4)
    got, want = thunder.jit(f)(x), f(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1]


def test_the_layout_of_an_inner_tensor_a_dispatch_computed_is_eager_s():
    from torch.testing._internal.two_tensor import TwoTensor

    def f(t):
        z = t.t() * 2  # (the dispatch multiplies each inner tensor, laid out as t.t())
        return z.a + z.a.stride()[0] + 10 * z.b.stride()[1]

    t = TwoTensor(torch.randn(3, 4), torch.randn(3, 4))
    torch.testing.assert_close(thunder.jit(f)(t), f(t))
