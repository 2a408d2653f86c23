"""``thunder.jit`` of a ``DistributedDataParallel``: its module traced with DDP's semantics made
explicit, instead of DDP's ``forward``.

DDP's ``forward`` prepares its C++ reducer for the backward, and the reducer averages the
gradients from autograd hooks on the parameters: nothing a trace can record, and a cached
program would not call it again (so gradients would silently stay local). Here the wrapped
module (``ddp.module``) is traced as the jitted module, its parameters named as its own
(``t_0_weight``), with what DDP does around it:

- Buffers: where DDP syncs them before this forward (``broadcast_buffers``, the module has
  buffers, and the previous call synced gradients: ``require_forward_param_sync``), each
  buffer is broadcast from the group's first rank, ``dist.broadcast(buf, src, group)`` in the
  trace: an in-place write into the buffer, as eager's. The epilogue sets
  ``require_forward_param_sync`` as DDP's forward does.
- ``ddp.require_backward_grad_sync`` (what ``ddp.no_sync()`` sets to False) is checked by the
  prologue: a call under ``no_sync`` runs a program of its own, whose backward leaves the
  gradients local.
- A call that syncs gradients (grad mode on, no ``no_sync``) notes a ``DataParallel`` record
  on the computation trace: the pass ``transforms/ddp.py`` puts the bucketed all-reduces into
  the backward, on ``ddp.process_group``.
- ``find_unused_parameters=True``: a forward may use some parameters on one rank and not on
  another (a branch on the data). Every parameter is then an input of the program, so that
  every rank reduces the same buckets (zeros for what it did not use), and a count of the ranks
  that used each parameter is all-reduced with them: where no rank did, ``.grad`` is left as it
  was, as DDP's reducer leaves a globally unused parameter's.

DDP's features that change what is communicated and cannot be traced this way are refused
with the attribute that asks for them (communication hooks, mixed precision, the Python
reducer, ``Join``, sparse gradients, hooks on the DDP object itself).
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedValueError
from thunder.core.passinfo import DataParallel
from thunder.core.proxies import AnyProxy
from thunder.frontend.distributed.collectives import checked_group
from thunder.frontend.stand_ins.unpack import ATTR, Unpack
from thunder.frontend.stand_ins.writes import SetAttr
from thunder.ops import python as pyops

_WHAT = "torch.nn.parallel.DistributedDataParallel"


def data_parallel(module) -> torch.nn.Module | None:
    """``module`` if it is a ``DistributedDataParallel``, else None."""
    if not torch.distributed.is_available():
        return None
    from torch.nn.parallel import DistributedDataParallel  # lazy: only DDP users import it

    return module if isinstance(module, DistributedDataParallel) else None


class DataParallelCall:
    """One trace of a DDP call: its prologue checks, the traced forward (``__call__``), the
    epilogue's write and the ``DataParallel`` record. Made once the module's shadows exist."""

    def __init__(self, state, ddp, shadow):
        _refuse_unsupported(ddp)
        self.state, self.ddp, self.shadow = state, ddp, shadow
        inputs = state.inputs
        holder = AnyProxy(inputs.prologue.add_name("ddp"), type(ddp))
        inputs.prologue.ctx_objects = {**inputs.prologue.ctx_objects, holder.name: ddp}
        self.holder = holder
        # the program is the module's: a DDP given another module misses
        inner = AnyProxy(inputs.computation.add_name("ddp_module"), type(ddp.module))
        inputs.prologue.names.add(inner.name)
        inputs.sources[inner.name] = (inner, Unpack(holder, ATTR, "module"), ddp.module)
        inputs.checks.add_check(pyops.check_is, inner, inputs.module_proxy, always=True)
        inputs.guard_attr(holder, "require_backward_grad_sync", ddp.require_backward_grad_sync)
        self.group = checked_group(inputs.checks, ddp.process_group, _WHAT)
        self.ignored = set(ddp.parameters_to_ignore)
        has_buffers = any(n not in self.ignored for n, _ in ddp.module.named_buffers())
        self.broadcast = False
        if has_buffers:  # (without buffers DDP's buffer sync does nothing: no check, no write)
            inputs.guard_attr(holder, "forward_sync_buffers", ddp.forward_sync_buffers)
            if ddp.forward_sync_buffers:
                inputs.guard_attr(holder, "require_forward_param_sync", ddp.require_forward_param_sync)
                self.broadcast = ddp.require_forward_param_sync
        self.has_buffers = has_buffers
        self.sync = torch.is_grad_enabled() and ddp.require_backward_grad_sync
        self.find_unused = self.sync and bool(getattr(ddp, "find_unused_parameters", False))

    def __call__(self, *args, **kwargs):
        if self.broadcast:
            import torch.distributed as dist

            pg = self.ddp.process_group
            src = dist.get_global_rank(pg, 0)  # DDP's authoritative rank: the group's first
            for name, buf in self.shadow.named_buffers():
                if name not in self.ignored:
                    dist.broadcast(buf, src, group=pg)
        out = self.shadow(*args, **kwargs)
        if self.find_unused:  # (the shadows of modules the forward did not reach: their parameters' inputs)
            for _ in self.shadow.parameters():
                pass
        return out

    def unused_inputs(self, used: list) -> list:
        """With ``find_unused_parameters``: the parameters DDP reduces that this forward did
        not use (not among ``used``), as more inputs of the program."""
        if not self.find_unused:
            return []
        names = {p.name for p in used}
        out = []
        for p in self._reduced():
            if p.name not in names:
                names.add(p.name)
                out.append(p)
        return out

    def _reduced(self) -> list:
        """The proxies of the parameters DDP reduces, in its order."""
        tensors = self.state.shadows.tensors
        return [
            tensors[id(p)]
            for name, p in self.ddp.module.named_parameters()
            if p.requires_grad and name not in self.ignored and id(p) in tensors
        ]

    def finish(self) -> None:
        """DDP's forward leaves ``require_forward_param_sync`` saying whether this call
        synced gradients: the next call syncs buffers only then. Written where it changes."""
        ddp = self.ddp
        if self.has_buffers and ddp.require_forward_param_sync != self.sync:
            self.state.shadows.writes.append(SetAttr(self.holder, "require_forward_param_sync", self.sync))

    def record(self, used: list) -> DataParallel | None:
        """The gradient averaging for the pass, over the parameters the computation takes
        (``used``: its inputs); None for a call that does not sync gradients."""
        if not self.sync:
            return None
        ddp = self.ddp
        position = {p.name: i for i, p in enumerate(used)}
        reduced = [p for p in self._reduced() if p.name in position]
        if not reduced:
            return None
        world_size = torch.distributed.get_world_size(ddp.process_group)
        return DataParallel(
            self.group,
            world_size,
            tuple(position[p.name] for p in reduced),
            tuple(p.name for p in reduced),
            _bucket_caps(ddp),
            find_unused=self.find_unused,
            metas=tuple((tuple(p.meta_shape), p.meta_dtype, p.meta_device) for p in reduced),
        )


def _bucket_caps(ddp) -> tuple[int, ...]:
    """The bucket caps of DDP's reducer once it rebuilt its buckets in the order gradients are
    made (from the second step on): ``bucket_cap_mb_list`` if given, else a first bucket of
    ``first_bucket_bytes_cap`` (1 MiB with the default ``bucket_cap_mb``), so that the first
    all-reduce starts early, then ``bucket_bytes_cap``."""
    caps = getattr(ddp, "bucket_bytes_cap_list", None)
    if caps:
        return tuple(int(c) for c in caps)
    cap = int(ddp.bucket_bytes_cap)
    first = getattr(getattr(ddp, "_bucket_config", None), "first_bucket_bytes_cap", cap)
    return (int(min(first, cap)), cap)


def _refuse_unsupported(ddp) -> None:
    def refuse(why: str) -> None:
        raise UnsupportedValueError(
            f"thunder: thunder.jit of a {_WHAT} with {why} is not supported (thunder traces the wrapped module "
            "and averages the gradients in its own backward); use DistributedDataParallel(thunder.jit(module)), "
            "which runs DDP's own reducer around the compiled module"
        )

    if getattr(ddp, "_comm_hooks", None):
        refuse("a communication hook (register_comm_hook)")
    if hasattr(ddp, "buffer_hook"):
        refuse("a buffer communication hook (_register_buffer_comm_hook)")
    if getattr(ddp, "mixed_precision", None) is not None:
        refuse("mixed_precision")
    if getattr(ddp, "_use_python_reducer", False) or getattr(ddp, "_delay_all_reduce_all_params", False):
        refuse("the Python reducer (compiled autograd or delayed all-reduce)")
    join = getattr(ddp, "_join_config", None)
    if join is not None and join.enable:
        refuse("Join (uneven inputs)")
    for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks"):
        if getattr(ddp, name, None):
            refuse(f"hooks registered on the DDP object itself ({name}); register them on ddp.module")
    for name, m in ddp.module.named_modules():
        if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and m.sparse:
            refuse(f"sparse gradients (the {type(m).__name__} {name or '(root)'} has sparse=True)")
