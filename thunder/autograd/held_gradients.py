"""A backward that averages gradients across ranks, for parameters that already hold a ``.grad``.

``thunder.jit`` of a DistributedDataParallel (``transforms/ddp.py``) averages gradients in the
backward, and must average what the parameters' ``.grad`` will hold, as DDP does: where a
parameter already holds a gradient (accumulated under ``no_sync()``), a variant of the backward
takes it, adds it in before the all-reduce, and the result is stored in ``.grad`` (in place)
instead of being handed to autograd to add. The entry's autograd Function
(``thunder/autograd/function.py``) runs such a variant, made on first use, one per set of
parameters holding a ``.grad``. Apart from the general bridge: only such an entry has them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class HeldGradients:
    """The backwards for parameters that already hold a ``.grad`` when a backward that
    averages gradients across ranks runs. ``positions``: the parameters' positions among the
    inputs. ``make(held)`` (``held``: the positions whose ``.grad`` is set) returns
    ``(callable, taken, traces)``: the callable takes the saved values, the cotangents and the
    ``.grad`` of the parameters at ``taken`` (the held ones this backward makes a gradient
    for), and returns the gradients, averaged, those at ``taken`` including the held ones;
    ``traces`` (its traces, first to last) are kept in ``self.traces[held]``."""

    def __init__(
        self,
        positions: tuple[int, ...],
        make: Callable[[frozenset[int]], tuple[Callable, list[int], list]],
        counted: bool = False,
    ):
        self.positions = positions
        self.make = make
        # (``find_unused_parameters``: the backwards' last output counts the ranks that used
        # each parameter, in the order of ``positions``; ``settle`` reads it)
        self.counted = counted
        self.made: dict[frozenset[int], tuple[Callable, list[int]]] = {}
        self.traces: dict[frozenset[int], list] = {}

    def held(self, params: tuple) -> frozenset[int]:
        return frozenset(i for i, p in zip(self.positions, params) if p.grad is not None)

    def gradients(self, held: frozenset[int], params: tuple, values, cotangents) -> tuple:
        made = self.made.get(held)
        if made is None:
            fn, taken, self.traces[held] = self.make(held)
            made = self.made[held] = fn, taken
        fn, taken = made
        of = dict(zip(self.positions, params))
        grads = list(self.settle(fn(*values, *cotangents, *[of[i].grad for i in taken])))
        with torch.no_grad():
            for i in taken:  # the average of the accumulated gradient: stored, not added
                if grads[i] is not None:  # (None: no rank used it, its .grad stays as it is)
                    of[i].grad.copy_(grads[i])
                grads[i] = None
        return tuple(grads)

    def settle(self, grads: tuple) -> tuple:
        """The gradients of a backward's outputs: with ``counted``, the last output (how many
        ranks used each parameter) taken off, and None for a parameter no rank used, whose
        ``.grad`` DDP leaves alone (zeros would still move it: momentum, weight decay)."""
        if not self.counted:
            return grads
        *grads, users = grads
        for i, n in zip(self.positions, users.tolist()):
            if n == 0:
                grads[i] = None
        return tuple(grads)
