"""thunderfx and the state around a piece: a piece thunder cannot take runs eagerly with the
user's line and leaves functorch's levels and autocast as they were; an autocast region inside a
piece compiles; a ``thunder.jit`` module inside a thunderfx model runs its own program."""

from __future__ import annotations

import torch

import thunder
from thunder.dynamo import thunderfx


def _grad_of_square_sine(x):
    g = torch.func.grad(lambda t: (t.sin() ** 2).sum())(x)
    return g * 2


def test_a_functorch_transform_piece_falls_back_and_leaves_no_level_entered():
    f = thunderfx(_grad_of_square_sine)
    for _ in range(3):
        x = torch.randn(4)
        out = f(x)
        assert type(out) is torch.Tensor  # (not a GradTrackingTensor of a level left entered)
        torch.testing.assert_close(out, _grad_of_square_sine(x))
        assert torch._C._functorch.maybe_current_level() is None
    (fallback,) = f.fallbacks
    assert "test_global_state.py" in fallback.user_line  # the user's line, not functorch's


def _autocast_region(x, w):
    y = x.sin()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = y @ w
        with torch.autocast("cpu", enabled=False):
            u = y @ w
    return z, u, (z.float() + u).sum()


def test_an_autocast_region_inside_a_piece_compiles_with_eager_s_casts():
    f = thunderfx(_autocast_region)
    for _ in range(2):
        x, w = torch.randn(4, 4), torch.randn(4, 4)
        got, expected = f(x, w), _autocast_region(x, w)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g, e)
    assert not f.fallbacks and len(f.pieces) == 1
    assert not torch.is_autocast_enabled("cpu")


class _Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


class _Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = thunder.jit(_Inner())
        self.out = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.out(self.inner(x))


def test_a_jitted_module_inside_a_thunderfx_model_runs_its_own_program():
    torch.manual_seed(0)
    m = _Outer()
    f = thunderfx(m)
    for _ in range(3):
        x = torch.randn(3, 4)
        torch.testing.assert_close(f(x), m(x))
    assert thunder.compile_stats(m.inner).cache_misses == 1
    assert not f.fallbacks
