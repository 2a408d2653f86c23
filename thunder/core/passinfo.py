"""The typed records passes leave for later passes, the runtime and the explorer.

``Trace.info`` is a ``TraceInfo`` (what the grad passes learnt about a gradient computation),
``BoundSymbol.info`` a ``BoundSymbolInfo`` (which executor took the call and who declined it,
which step of the grad pass made it). One field per fact, so that a misspelt name is an
AttributeError and every reader of a fact can be found by its name. Neither is printed.

    t = split_forward_backward(joint)[0]
    t.info.saved_for_backward          # ['x', 't0']
    t.bound_symbols[0].info.claimed_by  # 'torch' (after the claim pass)

Also here: ``SubclassDispatch``, what acquisition lends the grad pass through the pass
context (``PassContext.subclass_dispatch``: a pass does not import acquisition).

``core/symbol.py`` and ``core/trace.py`` build on this module; it imports only ``core/versions.py``.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any

from thunder.core.versions import Versions


@dataclasses.dataclass(frozen=True)
class OverwrittenSave:
    """A value saved for backward that a later in-place write overwrote
    (``transforms/saved_versions.py``): the error eager's backward would raise, and the
    positions of the cotangents whose backward reaches the op that saved it."""

    message: str
    cotangents: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class DataParallel:
    """The gradient averaging of a ``DistributedDataParallel`` whose call syncs gradients,
    noted by acquisition (``frontend/distributed/ddp.py``) for the pass that puts it in the backward
    (``transforms/ddp.py``): each parameter's gradient becomes the mean over the ranks of
    ``group``, reduced in buckets, the parameters taken in reverse order (about the order
    their gradients are made) and a bucket closed once it holds its cap in bytes: the first
    of ``bucket_caps`` for the first bucket, and so on, the last one for the rest (DDP's
    ``first_bucket_bytes_cap`` then ``bucket_bytes_cap``, or ``bucket_cap_mb_list``)."""

    group: str  # the process group's name (``ProcessGroup.group_name``)
    world_size: int
    # the parameters DDP reduces, in its order: their positions among the computation's
    # inputs (so among the backward's gradients) and their names there
    positions: tuple[int, ...]
    parameters: tuple[str, ...]
    bucket_caps: tuple[int, ...]
    # ``find_unused_parameters=True``: every parameter is reduced, a zero gradient where this
    # forward did not use it, and a count of the ranks that used each one is all-reduced too
    # (the backward's last output, ``HeldGradients.settle``: ``.grad`` left alone where none did)
    find_unused: bool = False
    # (shape, dtype, device) of each parameter, in the order above (for the zero gradients)
    metas: tuple = ()


@dataclasses.dataclass(slots=True)
class TraceInfo:
    """What acquisition and the grad passes note on a computation trace; each trace derived
    from it starts with a copy (``Trace.derive``)."""

    # the in-place writes acquisition recorded per value
    versions: Versions | None = None
    # the joint trace's cotangent inputs (grad pass); None: no joint forward-and-backward trace
    cotangents: list[str] | None = None
    # values written back into inputs: (output position, input position) each (grad pass)
    writebacks: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    # what the forward hands the backward, by name (split, remat); None before the split
    saved_for_backward: list[str] | None = None
    # forward values a double backward reads saved instead of recomputing them (grad pass,
    # transforms/double_backward.py): random draws and inputs the function writes into (their
    # values from before the write); split saves them too
    kept_for_double_backward: list[str] = dataclasses.field(default_factory=list)
    # values the backward recomputes instead of reading them saved (remat)
    rematerialized: list[str] = dataclasses.field(default_factory=list)
    # inputs saved only to recompute values eager saves instead (remat)
    saved_to_recompute: list[str] = dataclasses.field(default_factory=list)
    # saved values a later in-place write overwrote, the latest op first (saved_versions)
    overwritten_saves: list[OverwrittenSave] = dataclasses.field(default_factory=list)
    # a DistributedDataParallel call that averages gradients across ranks (acquisition)
    data_parallel: DataParallel | None = None
    # the symbolic sizes among the arguments (``s0``, core/symbolic/), by name: every trace
    # made from it takes them (the backward too), so that any line may compute with them
    symbols: tuple[str, ...] = ()

    def copy(self) -> TraceInfo:
        """A copy whose fields can be set without touching this one (the values are shared)."""
        return dataclasses.replace(self)


@dataclasses.dataclass(slots=True)
class BoundSymbolInfo:
    """What passes note on one BoundSymbol. ``None``: not noted."""

    claimed_by: str | None = None  # the executor that runs it (claim, fuse)
    declined: dict[str, str] | None = None  # executor name -> why it did not take it
    accumulates: str | None = None  # a sum of a value's gradients from several uses (grad)
    # the forward op (by its outputs) whose backward it is part of (grad)
    differentiates: tuple[str, ...] | None = None
    vjp: str | None = None  # the op whose rule made it (grad)
    # the forward op (by its outputs) it recomputes in the backward (grad, remat)
    recomputes: tuple[str, ...] | None = None
    # a custom autograd.Function's backward, recorded while tracing its forward
    # (frontend/torch_calls/autograd_functions.py): {"outputs": [...], "cotangents": [...], ...}
    recorded_backward: dict | None = None
    # a custom autograd.Function's backward marked @once_differentiable, replayed (grad): the
    # Function's name and the cotangents its backward takes (transforms/double_backward.py)
    once_differentiable: tuple | None = None

    def noted(self) -> dict[str, Any]:
        """The fields that are set, by name, in declaration order (what the explorer lists)."""
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}

    def merged(self, over: BoundSymbolInfo) -> BoundSymbolInfo:
        """A new record: these notes, with what ``over`` notes in their place."""
        return dataclasses.replace(self, **over.noted())

    def copy(self) -> BoundSymbolInfo:
        """A record of the same notes that can be changed without touching this one (about a
        fifth of ``dataclasses.replace``'s time: every BoundSymbol copy makes one)."""
        return BoundSymbolInfo(*_info_fields(self))

    def claimed(self, executor: str) -> BoundSymbolInfo:
        """A copy that notes ``executor`` as the one that runs it (claiming copies every
        BoundSymbol of a trace: ``copy`` rather than ``dataclasses.replace``)."""
        info = self.copy()
        info.claimed_by = executor
        return info


_info_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(BoundSymbolInfo)))


@dataclasses.dataclass(frozen=True)
class SubclassDispatch:
    """Acquisition's way to run an op on tensor-subclass values after tracing
    (``thunder/frontend/subclasses/dispatch.py``), for the grad pass's backward of subclass ops."""

    # (symbol, args, kwargs) -> whether the symbol runs whole on tensors (else its
    # decomposition is resolved op by op)
    dispatchable: Callable[[Any, tuple, dict], bool]
    # (symbol, args, kwargs) -> its output proxies, recorded in the current trace as the
    # subclass's ``__torch_dispatch__`` resolves it
    dispatch: Callable[[Any, tuple, dict], Any]
