"""Backwards made on demand from the forward's inputs (kept by the entry's Function, with their versions).

A backward asked to record its graph (``create_graph=True``) runs the backward as a
differentiable computation (``DoubleBackward``, ``transforms/double_backward.py``), and a
plain gradient of a tensor-subclass output runs a backward traced for it
(``CotangentBackwards``). Both recompute from the inputs, so an input written in place since
the call is an error. Apart from ``thunder/autograd_bridge.py``: its ``backward`` reaches them
only off its common path.
"""

from __future__ import annotations

from collections.abc import Callable

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
    compiled the first time a backward is asked to record its graph: ``make()`` returns
    ``(computation, positions)`` (the gradients it returns are those of the inputs at
    ``positions``), or raises why it cannot."""

    def __init__(self, make: Callable[[], tuple[Callable, list[int]]]):
        self.make = make
        self.made: tuple[Callable, list[int]] | None = None
        self.error: Exception | None = None

    def gradients(self, name: str, inputs: tuple, cotangents: tuple, n_args: int) -> tuple:
        if self.made is None and self.error is None:
            try:
                self.made = self.make()
            except Exception as e:
                self.error = e
        if self.error is not None:
            raise _double_backward(name, str(self.error)) from self.error
        computation, positions = self.made
        grads = [None] * n_args
        for i, g in zip(positions, computation(*inputs, *cotangents)):
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
    ctx, double, name, cotangents, unreached, n_args, diff, all_diff, leaf, caller_writable
) -> tuple:
    """A backward that records its own graph: the forward's inputs and the cotangents through
    the backward as a differentiable computation (its own autograd Function)."""
    try:
        ctx.saved_tensors  # noqa: B018 (torch's error once freed: a second backward without retain_graph)
    except RuntimeError as e:  # torch's version check: the caller wrote a saved input or output
        if "modified by an inplace operation" not in str(e):
            raise
        raise SavedValueOverwrittenError(f"{e}\n{caller_writable}") from e
    _check_versions(ctx, name)
    if not all_diff:
        cotangents = [cotangents[j] for j in diff]
    grads = double.gradients(name, ctx.inputs, tuple(cotangents), n_args)
    if unreached:
        grads = tuple(None if i in unreached else g for i, g in enumerate(grads))
    return grads if leaf is None else (*grads, None)
