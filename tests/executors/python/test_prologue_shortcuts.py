"""The prologue's shortcuts (``thunder/executors/python/shortcuts.py``): the compiled prologue
tests each check's shortcut on the check's line and calls the check only where it is false.
A cached call of an unchanged model calls no check; every change a check catches is still
caught (the shortcut is false there, and the check then raises); a change that the checks let
through (a submodule replaced by one alike) still passes, with the new module's tensors; the
printed trace shows the calls alone."""

from __future__ import annotations

import contextlib
import re

import pytest
import torch
from torch import nn

import thunder
import thunder.executors.pythonex as pythonex
from thunder.executors.python.checks import PrologueCheckFailed
from thunder.executors.python.shortcuts import SHORTCUTS


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x):
        return self.body(x) * 2.0


def _entry(jm):
    return jm._jfn._cache.order[-1]


def _jitted():
    model = Model()
    jm = thunder.jit(model)
    x = torch.randn(5, 4)
    for _ in range(2):
        jm(x).sum().backward()
    return model, jm, x


@contextlib.contextmanager
def _counted_checks():
    """Every check of ``pythonex`` counted where the compiled prologue calls it."""
    names = [n for n in dir(pythonex) if n.startswith("check_")]
    calls = dict.fromkeys(names, 0)
    saved = {n: getattr(pythonex, n) for n in names}

    def counting(name, fn):
        def check(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return check

    for n in names:
        setattr(pythonex, n, counting(n, saved[n]))
    try:
        yield calls
    finally:
        for n, fn in saved.items():
            setattr(pythonex, n, fn)


def test_a_cached_call_of_an_unchanged_model_calls_no_check():
    model, jm, x = _jitted()
    prologue = _entry(jm).prologue
    source = prologue.__thunder_program__.source
    # every check of this prologue has a shortcut, tested on its own line
    checks = [ln.strip() for ln in source.splitlines() if "pythonex.check_" in ln]
    assert checks and all(re.match(r"if not \(.*\): pythonex\.check_\w+\(", ln) for ln in checks), checks
    with _counted_checks() as calls:
        cargs, _ = prologue(x)
        jm(x)
    assert sum(calls.values()) == 0, calls
    assert cargs[0] is x and any(t is model.body[0].weight for t in cargs)
    # the printed trace shows the calls alone
    trace = thunder.last_prologue_traces(jm)[-1]
    prims = {b.subsymbols[0].sym for b in trace.bound_symbols if b.sym.name.startswith("check_")}
    assert prims and prims <= set(SHORTCUTS)
    shown = str(trace)
    assert "if not" not in shown and "_fast_d" not in shown and "  pythonex.check_module(module," in shown


def _changes(model, x):
    """(what changes, the call's arguments, how to undo it): each one the prologue rejects."""
    lin = model.body[0]

    def attr(obj, name, value):
        old = getattr(obj, name)
        setattr(obj, name, value)
        return lambda: setattr(obj, name, old)

    def hook(register):
        handle = register(lambda *a: None)
        return handle.remove

    def requires_grad():
        lin.weight.requires_grad_(False)
        return lambda: lin.weight.requires_grad_(True)

    def default_dtype():
        torch.set_default_dtype(torch.float64)
        return lambda: torch.set_default_dtype(torch.float32)

    def grad_mode():
        prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        return lambda: torch.set_grad_enabled(prev)

    def autocast():
        ctx = torch.autocast("cpu", dtype=torch.bfloat16)
        ctx.__enter__()
        return lambda: ctx.__exit__(None, None, None)

    def added_submodule():
        model.body.add_module("extra", nn.Identity())
        return lambda: model.body._modules.pop("extra")

    def weight_data():
        old = lin.weight.data
        lin.weight.data = torch.randn(8, 5)
        return lambda: setattr(lin.weight, "data", old)

    def nothing():
        return lambda: None

    return [
        ("an attribute of a submodule", (x,), {}, lambda: attr(lin, "training", False)),
        ("an attribute of the model", (x,), {}, lambda: attr(model, "training", False)),
        ("a forward hook", (x,), {}, lambda: hook(lin.register_forward_hook)),
        ("a forward pre-hook on the container", (x,), {}, lambda: hook(model.body.register_forward_pre_hook)),
        ("a global forward hook", (x,), {}, lambda: hook(nn.modules.module.register_module_forward_hook)),
        ("a parameter's requires_grad", (x,), {}, requires_grad),
        ("a parameter's shape", (x,), {}, weight_data),
        ("a submodule added", (x,), {}, added_submodule),
        ("the default dtype", (x,), {}, default_dtype),
        ("grad mode", (x,), {}, grad_mode),
        ("autocast", (x,), {}, autocast),
        ("the argument's shape", (torch.randn(6, 4),), {}, nothing),
        ("the argument's dtype", (x.double(),), {}, nothing),
        ("the argument's requires_grad", (x.clone().requires_grad_(),), {}, nothing),
        ("a keyword argument", (x,), {"scale": 3.0}, nothing),  # (one it was not called with)
        ("another argument", (x, x), {}, nothing),
    ]


@pytest.mark.parametrize("i", range(16))
def test_every_change_a_check_catches_is_still_caught(i):
    model, jm, x = _jitted()
    prologue = _entry(jm).prologue
    what, args, kwargs, change = _changes(model, x)[i]
    undo = change()
    try:
        with pytest.raises((PrologueCheckFailed, KeyError, TypeError)):
            prologue(*args, **kwargs)
    finally:
        undo()
    prologue(x)  # (the unchanged state fits again)
    with _counted_checks() as calls:
        prologue(x)
    assert sum(calls.values()) == 0, (what, calls)


def test_a_submodule_replaced_by_one_alike_passes_with_its_own_tensors():
    model, jm, x = _jitted()
    prologue = _entry(jm).prologue
    new = nn.Linear(4, 8)
    model.body[0] = new
    with _counted_checks() as calls:
        cargs, _ = prologue(x)
    assert calls["check_module"] >= 1  # (the container's table changed: its full check ran)
    assert any(t is new.weight for t in cargs) and any(t is new.bias for t in cargs)
    expected = model(x)
    torch.testing.assert_close(jm(x), expected)
    assert thunder.compile_stats(jm).cache_misses == 1


def test_arguments_named_as_the_prologue_s_own_names_shadow_none_of_them():
    """An argument is a local of the compiled prologue: one named as a builtin a shortcut calls
    (``type``, ``len``), as a module the code imports (``pythonex``, ``torch``) or as an object
    the shortcuts name (``_dict_version``, ``_fast_d``) still leaves every check working."""

    def f(type, len, tuple, pythonex, torch_, _dict_version, _fast_d, _fast_g, _tensor_types, _len, **kw):
        return (
            type
            + len * 2
            + tuple
            + pythonex
            + torch_
            + _dict_version
            + _fast_d
            + _fast_g
            + _tensor_types
            + _len
        )

    def torch_named(torch, x):
        return torch * 2 + x

    names = [
        "type",
        "len",
        "tuple",
        "pythonex",
        "torch_",
        "_dict_version",
        "_fast_d",
        "_fast_g",
        "_tensor_types",
        "_len",
    ]
    args = [torch.randn(3) for _ in names]
    jfn = thunder.jit(f)
    for _ in range(3):
        torch.testing.assert_close(jfn(*args, extra=1), f(*args, extra=1))
    assert thunder.compile_stats(jfn).cache_misses == 1
    with _counted_checks() as calls:
        jfn(*args, extra=1)
    assert sum(calls.values()) == 0, calls
    # a changed argument still misses
    changed = [*args[:-1], args[-1].double()]
    torch.testing.assert_close(jfn(*changed, extra=1), f(*changed, extra=1))
    assert thunder.compile_stats(jfn).cache_misses == 2

    jt = thunder.jit(torch_named)
    a, b = torch.randn(2), torch.randn(2)
    for _ in range(2):
        torch.testing.assert_close(jt(a, b), torch_named(a, b))
    assert thunder.compile_stats(jt).cache_misses == 1


def test_an_argument_named_as_a_builtin_the_program_prints_shadows_none():
    """``float('-inf')`` in the computation, ``len`` and ``type`` in the prologue: with arguments
    of those names the programs name the builtins otherwise, and only then."""

    def f(x, float, len, type):
        return x.masked_fill(x > 0, -torch.inf) + float + len + type

    args = [torch.randn(3) for _ in range(4)]
    jfn = thunder.jit(f)
    for _ in range(2):
        torch.testing.assert_close(jfn(*args), f(*args))
    assert thunder.compile_stats(jfn).cache_misses == 1
    computation = thunder.last_traces(jfn)[-1]
    assert "_float('-inf')" in str(computation)

    def g(x):
        return x.masked_fill(x > 0, -torch.inf)

    jg = thunder.jit(g)
    jg(args[0])
    assert "float('-inf')" in str(thunder.last_traces(jg)[-1]) and "_float" not in str(
        thunder.last_traces(jg)[-1]
    )


def test_a_lone_tensor_s_check_is_one_guard_that_still_catches_every_change():
    # a function of one tensor: its check's shortcut is a C++ guard made when it first passed
    jfn = thunder.jit(lambda x: x * 2 + 1)
    x = torch.randn(3, 4)
    jfn(x)
    prologue = jfn._cache.last.prologue
    assert "_x_guard.check(x)" in prologue.__thunder_program__.source
    prologue(x)  # (the first pass in full makes the guard)
    with _counted_checks() as calls:
        prologue(x)
        prologue(torch.randn(3, 4))
        prologue(torch.randn(4, 3).t())  # (strides are not the check's: a trace that reads them checks them)
    assert sum(calls.values()) == 0, calls
    for other in (torch.randn(4, 3), x.double(), x.clone().requires_grad_(), x[None], 3.0, [x]):
        with pytest.raises(PrologueCheckFailed):
            prologue(other)
    # what the guard holds beyond the check (the class, the dispatch keys) falls back to the check
    with torch.inference_mode():
        y = torch.randn(3, 4)
    p = nn.Parameter(torch.randn(3, 4), requires_grad=False)
    with _counted_checks() as calls:
        for t in (y, p):
            torch.testing.assert_close(jfn(t), t * 2 + 1)
    assert calls["check_tensor"] == 2
    assert thunder.compile_stats(jfn).cache_misses == 1
