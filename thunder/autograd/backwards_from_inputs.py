"""Backwards made on demand from the forward's inputs (kept by the entry's Function, with their versions).

A backward asked to record its graph (``create_graph=True``) runs the backward as a
differentiable computation (``DoubleBackward``, ``transforms/double_backward.py``), and a
plain gradient of a tensor-subclass output runs a backward traced for it
(``CotangentBackwards``). Both recompute from the inputs, so an input written in place since
the call is an error. Apart from ``thunder/autograd/function.py``: its ``backward`` reaches them
only off its common path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from thunder.transforms.saved_versions import SavedValueOverwrittenError


class DoubleBackwardError(RuntimeError):
    pass


class CotangentBackwards:
    """Backwards traced for cotangents of another class than the entry's backward expects: a
    plain tensor for a subclass output (what a loss computed from the output's values passes
    in eager). One per set of such outputs, made on first use by ``make(names)``, which returns
    ``(callable, positions)``: the callable takes the inputs and the cotangents (it recomputes
    the forward) and returns the gradients of the inputs at ``positions``."""

    def __init__(self, make: Callable[[frozenset[str]], tuple[Callable, list[int]]]):
        self.make = make
        self.made: dict[frozenset[str], tuple[Callable, list[int]]] = {}

    def gradients(self, plain: frozenset[str], inputs: tuple, cotangents: list, n_args: int) -> tuple:
        made = self.made.get(plain)
        if made is None:
            made = self.made[plain] = self.make(plain)
        fn, positions = made
        grads = [None] * n_args
        with torch.no_grad():
            for i, g in zip(positions, fn(*inputs, *cotangents)):
                grads[i] = g
        return tuple(grads)


def _double_backward(name: str, why: str) -> DoubleBackwardError:
    return DoubleBackwardError(
        f"thunder: the backward of {name} was asked to record its own graph (create_graph=True, a "
        f"double backward), and {why}. Call backward without create_graph, or compute higher-order "
        "gradients outside thunder.jit."
    )


class DoubleBackward:
    """The backward as a differentiable computation (``transforms/double_backward.py``),
    compiled the first time a backward is asked to record its graph, once per set of
    cotangents that require grad (``make(key)``, ``key``: per cotangent, whether it does; eager
    records the backward's dependence on a cotangent only where it requires grad). ``make``
    returns ``(computation, positions, reads)`` (the gradients it returns are those of the
    inputs at ``positions``; ``reads``, a ``SavedReads``: what it takes from the forward's saved
    values, the random draws and the values of inputs from before the function wrote into
    them), or raises why it cannot."""

    def __init__(self, make: Callable[[tuple[bool, ...]], tuple[Callable, list[int], Any]]):
        self.make = make
        self.made: dict[tuple[bool, ...], tuple[Callable, list[int], Any] | Exception] = {}

    def gradients(
        self, name: str, inputs: tuple, saved: list, cotangents: tuple, n_args: int, with_grad=frozenset()
    ) -> tuple:
        """The gradients of the ``n_args`` inputs (``with_grad``: the positions of those written
        into that required grad when the forward ran)."""
        key = tuple(isinstance(c, torch.Tensor) and c.requires_grad for c in cotangents)
        made = self.made.get(key)
        if made is None:
            try:
                made = self.make(key)
            except Exception as e:
                made = e
            self.made[key] = made
        if isinstance(made, Exception):
            raise _double_backward(name, str(made)) from made
        computation, positions, reads = made
        if reads.inputs:
            inputs = list(inputs)
            for (i, s), input_name in zip(reads.inputs, reads.input_names):
                if i in with_grad:  # (the copy the forward saved has none of its graph)
                    raise _double_backward(
                        name,
                        f"it writes into its input {input_name}, which requires grad: the recomputation reads its "
                        "value from before the write, a copy the forward saved without the input's graph",
                    )
                inputs[i] = saved[s]
        grads = [None] * n_args
        for i, g in zip(positions, computation(*inputs, *[saved[s] for s in reads.extra], *cotangents)):
            grads[i] = g
        return tuple(grads)


def _check_versions(ctx, name: str) -> None:
    """A backward that recomputes from the inputs: none may have been written since the call."""
    for a, v in zip(ctx.inputs, ctx.versions):
        if v is not None and a._version != v:
            raise SavedValueOverwrittenError(
                f"thunder: the backward of {name} recomputes its forward from its inputs (to record its graph, "
                "or for a gradient of another class than traced), and one of them was written in place since the call"
            )


def _plain_cotangents(kinds, cotangents) -> frozenset[str]:
    """The subclass outputs whose cotangent is a plain tensor; empty when another cotangent is
    of a class the backward was not traced for."""
    plain = set()
    for (name, cls), c in zip(kinds, cotangents):
        if cls is not None and type(c) is torch.Tensor:
            plain.add(name)
        elif cls is not None and type(c) is not cls:
            return frozenset()
    return frozenset(plain)


def _recorded_backward(
    ctx, double, name, saved, cotangents, unreached, n_args, diff, all_diff, leaf
) -> tuple:
    """A backward that records its own graph: the forward's inputs (``saved``: the values the
    forward saved, read by then, with torch's checks) and the cotangents through the backward
    as a differentiable computation (its own autograd Function)."""
    _check_versions(ctx, name)
    if not all_diff:
        cotangents = [cotangents[j] for j in diff]
    with_grad = getattr(ctx, "written_with_grad", frozenset())
    grads = double.gradients(name, ctx.inputs, saved, tuple(cotangents), n_args, with_grad)
    if unreached:
        grads = tuple(None if i in unreached else g for i, g in enumerate(grads))
    return grads if leaf is None else (*grads, None)
