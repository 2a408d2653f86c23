"""Out-of-place writes: copies, setitem, writes through a detached tensor
(``thunder/ops/ltorch/inplace.py``)."""

from __future__ import annotations

import torch

from thunder.ops import ltorch

from .entries import ALL, FLOAT, b8, f64, i32, op, s

# -- out-of-place writes --------------------------------------------------------------------


def _setitem(a, key, value):
    a = a.clone()
    a[key] = value
    return a


def _copy(dst, src):
    return dst.clone().copy_(src)


def _copy_to(dst, src):
    # called directly (no torch function maps to it), so outside the acquisition mode's reach
    with torch._C.DisableTorchFunction():
        return ltorch.copy_to(dst, src)


op(
    "copy_to",
    _copy_to,
    lambda m: [s(m(3, 4), m(4, dtype=f64)), s(m(3, 4), m.scalar()), s(m(2), m(1, dtype=i32))],
    ALL,
    ref=_copy,
)
op("copy_to", _copy_to, lambda m: [s(m(3, 4), m(3, 4))], ALL, ref=_copy, variant="noop", noop=True)


def _write_through_detach(base, value):
    # called directly, as _copy_to (frontends record it for a write into ``y.detach()``)
    with torch._C.DisableTorchFunction():
        return ltorch.write_through_detach(base, value)


def _straight_through(base, value):
    """Eager's value and gradient for it: the values written, the gradient passing to ``base``."""
    return base + (value.expand_as(base) - base).detach()


op(
    "write_through_detach",
    _write_through_detach,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(2, 3), m(3))],
    FLOAT,
    ref=_straight_through,
    rule_only_grad=True,
)
op(
    "setitem",
    _setitem,
    lambda m: [
        s(m(4, 5, 6), 0, m(5, 6)),
        s(m(4, 5, 6), -1, m.scalar()),
        s(m(4, 5, 6), (slice(1, 3),), m(2, 5, 6)),
        s(m(4, 5, 6), (slice(None), 2), m(6)),
        s(m(4, 5, 6), (Ellipsis, 1), m(4, 5)),
        s(m(4, 5, 6), (slice(None, None, 2), slice(1, 5, 3), 0), m(2, 2)),
        s(m(4, 5, 6), (None, 1), m(1, 5, 6)),
        s(m(4, 5, 6), Ellipsis, m(6)),
        s(m(4, 5, 6), (m.index(4, 3),), m(3, 5, 6)),
        s(m(4, 5, 6), (slice(None), torch.tensor([0, 3, -1])), m(4, 3, 6)),
        s(m(4, 5, 6), (1, slice(None), torch.tensor([[0, 1], [2, 3]])), m(5, 2, 2)),
        s(m(3, 4), m(3, 4, dtype=b8), m.scalar()),
        s(m(3, 4), m(3, dtype=b8), m(4)),
        s(m(4, 5, 6), 2, m(1, 1, 6, dtype=f64)),
        s(m(4, 5, 6), (torch.tensor([0, 2]), torch.tensor([1, -1])), m(2, 6)),
        s(m(4, 5, 6), (torch.tensor([0, 2]), slice(None), torch.tensor([[1], [5]])), m(2, 2, 5)),
        s(m(4, 5, 6), (slice(None), torch.tensor([0, -1]), torch.tensor([[1], [2]])), m.scalar()),
        s(m(4, 5, 6), (1, torch.tensor([0, 4]), torch.tensor([2, 3])), m(2)),
        s(m(4, 5, 6), (None, torch.tensor([0, 2]), slice(1, 3)), m(1, 2, 2, 6)),
        s(m(4, 5, 6), (Ellipsis, [-2], slice(None)), m(4, 1, 6)),
        s(m(4, 5, 6), ([0, 2], slice(None), [True, False, False, False, False, True]), m.scalar()),
    ],
    ALL,
)
op(
    "setitem",
    _setitem,
    lambda m: [s(m(4, 5, 6), (slice(2, 2),), m.scalar())],
    ALL,
    variant="noop",
    noop=True,
)
