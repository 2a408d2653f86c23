"""A cached call whose compiled program raises on this call's values (a matrix that is not
positive-definite) says which of its writes were not made, where eager would have made those
its code wrote before the failing line; the calls after it go on from the state as it is."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import thunder

N = 0


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, m):
        self.calls += 1
        x.add_(1)
        return torch.linalg.cholesky(m) * x.sum()


def spd(n: int) -> torch.Tensor:
    a = torch.randn(n, n, generator=torch.Generator().manual_seed(n))
    return a @ a.T + n * torch.eye(n)


@pytest.mark.parametrize("dynamic", [None, False])
def test_a_call_that_raises_names_the_writes_it_did_not_make(dynamic):
    m, x = Counting(), torch.zeros(3)
    em, ex = Counting(), torch.zeros(3)
    jm = thunder.jit(m, dynamic=dynamic)
    for n in (2, 3, 5, 3):  # sizes that change: hits and misses before the failure
        torch.testing.assert_close(jm(x, spd(n)), em(ex, spd(n)))
        assert m.calls == em.calls and torch.equal(x, ex)
    with pytest.raises(torch.linalg.LinAlgError) as info:
        jm(x, -torch.eye(3))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "module.calls" in notes and "x (in place)" in notes, notes
    assert m.calls == 4 and torch.equal(x, torch.full((3,), 4.0))  # (none of them made)
    # the next call goes on from that state, as eager would from the same state
    em.calls, ex = m.calls, x.clone()
    torch.testing.assert_close(jm(x, spd(4)), em(ex, spd(4)))
    assert m.calls == em.calls == 5 and torch.equal(x, ex)


def bump(m):
    global N
    N += 1
    return torch.linalg.cholesky(m)


def test_a_global_the_program_writes_is_named():
    global N
    N = 0
    jfn = thunder.jit(bump)
    jfn(spd(2))
    jfn(spd(2))
    assert N == 2
    with pytest.raises(torch.linalg.LinAlgError) as info:
        jfn(-torch.eye(2))
    assert "N" in "\n".join(info.value.__notes__)
    assert N == 2


def test_a_program_with_no_writes_raises_its_error_as_it_is():
    jfn = thunder.jit(lambda m: torch.linalg.cholesky(m) + 1)
    jfn(spd(2))
    with pytest.raises(torch.linalg.LinAlgError) as info:
        jfn(-torch.eye(2))
    assert not getattr(info.value, "__notes__", None)


def test_every_in_place_write_the_program_makes_after_its_ops_is_named_and_left_unmade():
    def f(x, y, m):
        x.mul_(2)  # eager: made before the op that raises
        z = torch.linalg.cholesky(m * x.sum())
        y.add_(1)
        return z + y.sum()

    jfn = thunder.jit(f)
    x, y = torch.ones(2), torch.zeros(2)
    jfn(x, y, spd(2))
    with pytest.raises(torch.linalg.LinAlgError) as info:
        jfn(x, y, -torch.eye(2))
    notes = "\n".join(info.value.__notes__)
    assert "x (in place)" in notes and "y (in place)" in notes, notes
    assert torch.equal(x, torch.full((2,), 2.0)) and torch.equal(y, torch.ones(2))  # as the note says
