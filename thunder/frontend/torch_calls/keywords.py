"""Operands given by keyword (``torch.mul(x, other=t)``, ``x.mul(other=t)``, ``torch.mul(input=x,
other=t)``, ``F.relu(input=x)``): bound to positions by the torch callable's own signature, its
aten schema for a C function (``aten::mul.Tensor(Tensor self, Tensor other)``, where
``input`` is ``self``) and ``inspect.signature`` for a Python one. Used only when a thunder op
refuses the keywords as given (thunder's ops name their parameters ``a``, ``b``), so the usual
call pays nothing."""

from __future__ import annotations

import functools
import inspect

import torch


def rebind(func, args: tuple, kwargs: dict) -> list[tuple[tuple, dict]]:
    """The ways ``func(*args, **kwargs)`` reads with keyword operands moved to their positions
    (keyword-only parameters stay keywords); one per schema that accepts the names."""
    out = []
    for params in _signatures(func):
        bound = _bind(params, args, kwargs)
        if bound is not None and bound not in out:
            out.append(bound)
    return out


def _bind(params: list[tuple[str, bool, bool, object]], args: tuple, kwargs: dict):
    """``params``: (name, keyword-only, has a default, default) in order."""
    positional = [p for p in params if not p[1]]
    if len(args) > len(positional):
        return None
    given = {
        ("self" if k == "input" and any(p[0] == "self" for p in params) else k): v for k, v in kwargs.items()
    }
    names = {p[0] for p in params}
    if any(k not in names for k in given):
        return None
    last = max((i for i, p in enumerate(positional) if p[0] in given), default=-1)
    bound = list(args)
    for p in positional[len(args) : last + 1]:
        if p[0] in given:
            bound.append(given.pop(p[0]))
        elif p[2]:
            bound.append(p[3])
        else:
            return None
    return tuple(bound), given


@functools.cache
def _signatures(func) -> tuple:
    if inspect.isfunction(func):
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            return ()
        return (
            tuple(
                (p.name, p.kind is p.KEYWORD_ONLY, p.default is not p.empty, p.default)
                for p in sig.parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ),
        )
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return ()
    out = []
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{name}"):
        args = schema.arguments
        if any(a.name == "out" for a in args):
            continue
        out.append(
            tuple(
                (
                    a.name,
                    a.kwarg_only,
                    a.has_default_value(),
                    a.default_value if a.has_default_value() else None,
                )
                for a in args
            )
        )
    return tuple(out)
