"""Checks shared by the tensor-subclass tests: inputs made of
torch's ``TwoTensor``, deep copies of subclass instances, equality at every depth, no proxy left
in what a call returns or writes, no subclass left in a flattened trace, and ``check``: three
calls of ``thunder.jit(fn)`` against eager on copies of the arguments."""

from __future__ import annotations

import torch
from torch.testing._internal.two_tensor import TwoTensor

import thunder
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.subclass import SubclassProxy
from thunder.core.tags import Tag
from thunder.core.verify import verify


def two(*shape) -> TwoTensor:
    a = torch.randn(*shape)
    return TwoTensor(a, a * 3 + 1)


def walk(bsyms):
    for b in bsyms:
        yield b
        yield from walk(b.subsymbols)


def assert_flat(trace) -> None:
    """No subclass value or subclass op anywhere in ``trace``."""
    for b in walk(trace.bound_symbols):
        assert not b.has_tag(Tag.TENSOR_SUBCLASS), f"a subclass op is left: {b.sym.id}"
        for p in proxies_in((b.args, b.kwargs, b.output)):
            assert not isinstance(p, SubclassProxy), f"{b.sym.id} still uses the subclass value {p.name}"
    assert not any(isinstance(p, SubclassProxy) for p in proxies_in((trace.args, trace.output)))


def copy(t):
    """A copy of ``t`` with copies of every inner tensor, at every depth."""
    if not isinstance(t, torch.Tensor):
        return t
    if type(t) is torch.Tensor:
        return t.detach().clone().requires_grad_(t.requires_grad)
    names, ctx = t.__tensor_flatten__()
    out = type(t).__tensor_unflatten__({n: copy(getattr(t, n)) for n in names}, ctx, t.shape, t.stride())
    return out.requires_grad_(t.requires_grad) if out.requires_grad is not t.requires_grad else out


def assert_same(got, expected, where: str = "the result") -> None:
    """The same classes, flatten names and contexts, and values, at every depth."""
    if isinstance(expected, torch.Tensor) and type(expected) is not torch.Tensor:
        assert type(got) is type(expected), (
            f"{where}: {type(got).__qualname__} != {type(expected).__qualname__}"
        )
        names, ctx = expected.__tensor_flatten__()
        assert got.__tensor_flatten__() == (names, ctx), where
        assert (got.shape, got.dtype) == (expected.shape, expected.dtype), where
        for n in names:
            assert_same(getattr(got, n), getattr(expected, n), f"{where}.{n}")
    elif isinstance(expected, torch.Tensor):
        assert type(got) is torch.Tensor, f"{where}: {type(got).__qualname__}"
        torch.testing.assert_close(got.detach(), expected.detach(), msg=where)
    elif isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]")
    else:
        assert got == expected, f"{where}: {got!r} != {expected!r}"


def assert_same_objects(got, expected, args, eager_args) -> None:
    """Where eager returns one of its arguments, thunder returns the caller's object."""
    if isinstance(expected, (tuple, list)):
        for g, e in zip(got, expected):
            assert_same_objects(g, e, args, eager_args)
    for a, e in zip(args, eager_args):
        if expected is e:
            assert got is a, "eager returns its argument itself; thunder returns another object"


def assert_no_proxy(x, where: str) -> None:
    """No proxy is reachable from ``x``: through lists and tuples, and the attributes of a
    subclass instance, at every depth."""
    assert not isinstance(x, TensorProxy), f"{where} is a proxy"
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            assert_no_proxy(v, f"{where}[{i}]")
    elif isinstance(x, torch.Tensor) and type(x) is not torch.Tensor:
        for n, v in vars(x).items():
            assert_no_proxy(v, f"{where}.{n}")


def check(fn, *args):
    """Three calls of ``thunder.jit(fn)`` on ``args`` equal eager's on copies of them: results,
    the arguments after each call, identity; the traces verify and the executed one is flat
    (inside, where there is a backward)."""
    eager_args = [copy(a) for a in args]
    jfn = thunder.jit(fn)
    for call in range(3):
        expected = fn(*eager_args)
        got = jfn(*args)
        assert_same(got, expected, f"call {call}: the result")
        assert_same(list(args), list(eager_args), f"call {call}: the arguments after the call")
        assert_same_objects(got, expected, args, eager_args)
        assert_no_proxy((got, args), f"call {call}: the result and the arguments")
    assert thunder.compile_stats(jfn).cache_hits == 2
    for kind in (thunder.last_prologue_traces, thunder.last_traces, thunder.last_epilogue_traces):
        for t in kind(jfn):
            verify(t)
    if not thunder.last_backward_traces(jfn):  # (with one, autograd's instances stay at the boundary)
        assert_flat(thunder.last_traces(jfn)[-1])
    return jfn
