"""``torch.distributed`` calls while tracing: each collective becomes a start and a wait in the
trace (``thunder/ops/collectives.py``), with eager's semantics.

- ``dist.all_reduce(t)``, ``dist.broadcast(t, src)``: write into ``t``; ``dist.all_gather(list,
  t)``: into each tensor of the list; ``dist.all_gather_single
  (out, t)`` (and its old name ``all_gather_into_tensor``), ``dist.reduce_scatter_single(out,
  t)`` (``reduce_scatter_tensor``), ``dist.all_to_all_single(out, t, ...)``: write into ``out``.
  Each write is an in-place write as ``t.copy_(...)`` is (``thunder/frontend/torch_calls/inplace.py``): a
  written input reaches the caller's tensor through the epilogue.
- With ``async_op=True`` the call returns a handle whose ``wait()`` ends the collective: the
  tensor holds the result from the wait on, and what the function computes in between overlaps
  the communication. A handle not waited for is ended when the function returns.
- The functional collectives (``torch.distributed._functional_collectives``: ``all_reduce``,
  ``all_gather_tensor``, ``reduce_scatter_tensor``, ``all_to_all_single``, ``broadcast``,
  ``wait_tensor``, and the differentiable ``*_autograd`` forms) are out of place: their torch
  operators map to the start, and ``wait_tensor`` to the wait; the ``AsyncCollectiveTensor``
  eager returns is waited for where it is made, and its ``wait()`` is the value itself.

The process group is named in the trace (``'0'``), and the prologue checks on every call that
it still exists with the size and this process's rank it had when traced
(``prims.check_process_group``). A group given as an argument is also checked by identity.
"""

from __future__ import annotations

import importlib
import inspect
import math

import torch

from thunder.core.errors import UnsupportedOpError, UnsupportedValueError, at, describe
from thunder.core.source import user_location
from thunder.ops import ltorch, prims
from thunder.ops import python as pyops
from thunder.ops.collectives import group_of

_REDUCE_NAMES = {"SUM": "sum", "AVG": "avg", "PRODUCT": "product", "MIN": "min", "MAX": "max"}


def _dist():
    import torch.distributed as dist  # lazy: only programs that communicate import it

    return dist


def _reduce_op(op, func) -> str:
    if isinstance(op, str) and op.lower() in _REDUCE_NAMES.values():
        return op.lower()
    name = getattr(op, "name", None) or str(op).rsplit(".", 1)[-1]
    if name in _REDUCE_NAMES:
        return _REDUCE_NAMES[name]
    raise UnsupportedOpError(
        f"thunder: {describe(func)} with the reduction {op!r} is not supported (supported: "
        f"{', '.join(_REDUCE_NAMES)})" + at(user_location())
    )


def group_name(mode, group, func) -> str:
    """The name of ``group`` (None: the default group), which the prologue checks from now on."""
    return checked_group(mode.state.inputs.checks, group, describe(func))


def checked_group(checks, group, what: str) -> str:
    """The name of ``group`` (None: the default group) used by ``what``; ``checks`` (the
    prologue's) gets the check that it still exists with its size and this process's rank."""
    dist = _dist()
    if group is None:
        if not dist.is_initialized():
            raise UnsupportedValueError(
                f"thunder: {what}: torch.distributed is not initialised (call "
                "torch.distributed.init_process_group before the compiled function)" + at(user_location())
            )
        group = dist.distributed_c10d._get_default_group()
    if isinstance(group, str):
        name = group
    elif isinstance(group, dist.ProcessGroup):
        try:
            name = group.group_name
        except RuntimeError as e:
            raise UnsupportedValueError(
                f"thunder: {what}: the process group is unknown to torch.distributed (destroyed?): {e}"
                + at(user_location())
            ) from None
    else:
        raise UnsupportedValueError(
            f"thunder: {what}: the group {group!r} is not a torch.distributed.ProcessGroup"
            + at(user_location())
        )
    try:
        real = group_of(name)
    except Exception as e:
        raise UnsupportedValueError(f"{e}" + at(user_location())) from None
    guard_group(checks, name, real)
    return name


def guard_group(checks, name: str, group) -> None:
    """The prologue checks that the process group ``group`` named ``name`` still exists with
    its size and this process's rank in it (once per group)."""
    args = (name, group.size(), group.rank())
    if not any(b.sym is pyops.check_process_group and b.args == args for b in checks.of_globals):
        checks.add_global_check(pyops.check_process_group, *args)


class PendingCollective:
    """What a collective called with ``async_op=True`` returns while tracing (eager returns a
    ``Work``): ``wait()`` ends it, writing its result into the tensor it targets."""

    def __init__(self, mode, target, started, op: str, pieces=None):
        self._mode, self._target, self._started, self._op = mode, target, started, op
        self._pieces = pieces  # a list of targets: ``pieces(result)`` gives each its value
        mode.state.pending_collectives.append(self)

    def wait(self, timeout=None) -> bool:
        if self._started is not None:
            state = self._mode.state
            state.inplace.mark_op_start()
            _land(state, self._target, prims.wait(self._started), self._op, self._pieces)
            self._started = None
            state.pending_collectives.remove(self)
        return True

    def is_completed(self):
        raise UnsupportedOpError(
            "thunder: Work.is_completed() depends on timing, which a traced program cannot know; call wait()"
            + at(user_location())
        )

    def get_future(self):
        raise UnsupportedOpError(
            "thunder: Work.get_future() is not supported while tracing; call wait()" + at(user_location())
        )


def finish_pending(state) -> None:
    """End the collectives the function started and never waited for (eager finishes them too)."""
    for p in list(state.pending_collectives):
        p.wait()


def _bind(func, args, kwargs) -> dict:
    sig = inspect.signature(inspect.unwrap(func))
    b = sig.bind(*args, **kwargs)
    b.apply_defaults()
    return b.arguments


def _write(mode, func, target, started, async_op: bool, pieces=None):
    """Write the collective ``started`` into ``target`` (a list of tensors: ``pieces(result)``
    gives each its value): now (a wait follows the start at once), or when the returned handle
    is waited for."""
    op = describe(func)
    if async_op:
        return PendingCollective(mode, target, started, op, pieces)
    _land(mode.state, target, prims.wait(started), op, pieces)
    return None


def _land(state, target, result, op: str, pieces) -> None:
    if pieces is None:
        state.inplace.rebind(target, result, op)
        return
    for t, value in zip(target, pieces(result)):
        state.inplace.rebind(t, value, op)


def _all_gather_list(mode, func, args, kwargs):
    """``dist.all_gather(tensor_list, tensor)``: one all_gather of ``tensor`` with a leading
    dimension of 1, each rank's row written into its tensor of the list."""
    a = _bind(func, args, kwargs)
    group = group_name(mode, a["group"], func)
    t, outs = a["tensor"], list(a["tensor_list"])
    n = group_of(group).size()
    if len(outs) != n:
        raise UnsupportedValueError(
            f"thunder: {describe(func)}: tensor_list has {len(outs)} tensors for a group of {n} ranks"
            + at(user_location())
        )
    shape = tuple(t.shape)
    started = prims.all_gather(ltorch.reshape(t, (1, *shape)), group)
    return _write(
        mode, func, outs, started, a["async_op"], lambda r: [ltorch.getitem(r, i) for i in range(n)]
    )


def _read(mode, t):
    return mode.state.inplace.read_for_write(t)


def _all_reduce(mode, func, args, kwargs):
    a = _bind(func, args, kwargs)
    group = group_name(mode, a["group"], func)
    started = prims.all_reduce(_read(mode, a["tensor"]), _reduce_op(a["op"], func), group)
    return _write(mode, func, a["tensor"], started, a["async_op"])


def _broadcast(mode, func, args, kwargs):
    a = _bind(func, args, kwargs)
    group = group_name(mode, a["group"], func)
    src = a["src"]
    if a.get("group_src") is not None:
        src = _dist().get_global_rank(group_of(group), a["group_src"])
    started = prims.broadcast(_read(mode, a["tensor"]), src, group)
    return _write(mode, func, a["tensor"], started, a["async_op"])


def _all_gather_single(mode, func, args, kwargs):
    a = _bind(func, args, kwargs)
    group = group_name(mode, a["group"], func)
    started = prims.all_gather(a["input_tensor"], group)
    return _write(mode, func, a["output_tensor"], _fit(started, a["output_tensor"], func), a["async_op"])


def _reduce_scatter_single(mode, func, args, kwargs):
    a = _bind(func, args, kwargs)
    group = group_name(mode, a["group"], func)
    started = prims.reduce_scatter(a["input"], _reduce_op(a["op"], func), group)
    return _write(mode, func, a["output"], _fit(started, a["output"], func), a["async_op"])


def _all_to_all_single(mode, func, args, kwargs):
    a = _bind(func, args, kwargs)
    group = group_name(mode, a["group"], func)
    out_splits, in_splits = a["output_split_sizes"], a["input_split_sizes"]
    started = prims.all_to_all_single(
        a["input"], list(out_splits) if out_splits else None, list(in_splits) if in_splits else None, group
    )
    return _write(mode, func, a["output"], _fit(started, a["output"], func), a["async_op"])


def _fit(started, out, func):
    """The start whose result lands in ``out``: eager needs the same number of elements."""
    if math.prod(started.shape) != math.prod(out.shape):
        raise UnsupportedValueError(
            f"thunder: {describe(func)}: the output has shape {tuple(out.shape)}, but the collective gives "
            f"{tuple(started.shape)}" + at(user_location())
        )
    return started


# -- the functional collectives: out of place, the wait a call of its own -------------------
def _f_all_reduce(mode, func, args, kwargs):
    a, op, group = _positional(args, kwargs, ("input", "reduce_op", "group_name"))
    return prims.all_reduce(a, _reduce_op(op, func), group_name(mode, group, func))


def _f_all_gather(mode, func, args, kwargs):
    a, _size, group = _positional(args, kwargs, ("input", "group_size", "group_name"))
    return prims.all_gather(a, group_name(mode, group, func))


def _f_reduce_scatter(mode, func, args, kwargs):
    a, op, _size, group = _positional(args, kwargs, ("input", "reduce_op", "group_size", "group_name"))
    return prims.reduce_scatter(a, _reduce_op(op, func), group_name(mode, group, func))


def _f_all_to_all(mode, func, args, kwargs):
    a, out_splits, in_splits, group = _positional(
        args, kwargs, ("input", "output_split_sizes", "input_split_sizes", "group_name")
    )
    return prims.all_to_all_single(
        a, list(out_splits) if out_splits else None, list(in_splits) if in_splits else None,
        group_name(mode, group, func),
    )  # fmt: skip


def _f_broadcast(mode, func, args, kwargs):
    a, src, group = _positional(args, kwargs, ("input", "src", "group_name"))
    return prims.broadcast(a, src, group_name(mode, group, func))


def _f_wait(mode, func, args, kwargs):
    out = prims.wait(args[0] if args else kwargs["tensor"])
    out._thunder_waited = True  # (what eager returns is an AsyncCollectiveTensor: ``y.wait()`` is y)
    return out


def _positional(args, kwargs, names) -> list:
    return [*args, *(kwargs[n] for n in names[len(args) :])]


def calls() -> dict:
    """The torch callables this module traces, each with its handler (empty where this torch
    has no torch.distributed)."""
    if not torch.distributed.is_available():
        return {}
    dist = _dist()
    importlib.import_module("torch.distributed._functional_collectives")  # (registers _wrap_tensor_autograd)
    table = {
        dist.all_reduce: _all_reduce,
        dist.all_gather: _all_gather_list,
        dist.broadcast: _broadcast,
        dist.all_to_all_single: _all_to_all_single,
    }
    for name in ("all_gather_single", "all_gather_into_tensor"):
        if hasattr(dist, name):
            table[getattr(dist, name)] = _all_gather_single
    for name in ("reduce_scatter_single", "reduce_scatter_tensor"):
        if hasattr(dist, name):
            table[getattr(dist, name)] = _reduce_scatter_single
    functional = {
        "all_reduce": _f_all_reduce,
        "all_gather_into_tensor": _f_all_gather,
        "reduce_scatter_tensor": _f_reduce_scatter,
        "all_to_all_single": _f_all_to_all,
        "broadcast": _f_broadcast,
        "wait_tensor": _f_wait,
        # eager wraps a result in an AsyncCollectiveTensor (waited on first use or ``.wait()``)
        "_wrap_tensor_autograd": _f_wait,
    }
    for ns in ("_c10d_functional", "_c10d_functional_autograd"):
        for name, handler in functional.items():
            try:
                packet = getattr(getattr(torch.ops, ns), name)
            except (AttributeError, RuntimeError):
                continue
            table[packet] = handler
            table[packet.default] = handler
    return table
