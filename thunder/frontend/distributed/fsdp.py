"""Modules sharded with FSDP2 (``torch.distributed.fsdp.fully_shard``) while tracing.

Eager FSDP2 keeps each parameter as a ``DTensor`` sharded on dim 0 and runs hooks around each
sharded module's forward: before it, the all-gather of the module's parameter group (the
unsharded parameters are registered on the modules), after it the resharding (the sharded
ones registered again). While tracing, FSDP's own hooks do not run (they would communicate
with real tensors); what they do is recorded instead:

- a sharded parameter is an input as its local shard: the prologue unpacks the DTensor
  parameter, checks it (``check_dtensor_shard``: placed ``Shard(0)`` over the group, its
  global shape) and takes ``DTensor.to_local()`` (``unpack_local_shard``), whose gradient
  reaches the parameter as a DTensor of its placements, as eager FSDP's does;
- the module's pre-forward hook becomes the unshard of its group (``fsdp.unshard``:
  ``thunder/ops/fsdp.py``: one all-gather, a start and its wait, per group and call, in the
  module's scope, as eager's), whose outputs the module's forward sees as its parameters;
  its gradient is FSDP's reduce-scatter, averaged over the ranks;
- the post-forward hook registers the shards again. A group that reshards after forward
  (``reshard_after_forward=True``, every module but the root by default) has its unshard
  tagged ``recompute_in_backward``: the backward all-gathers again rather than keeping the
  unsharded parameters (``thunder/transforms/remat.py``). One that does not is unsharded once
  per trace; its unsharded parameters are saved for the backward.

FSDP's lazy initialisation (what eager's first forward does first: the root's state, the
groups' padding) runs before the first trace; a module an eager forward left unsharded (the
root, after a forward without backward) is resharded (``FSDPModule.reshard()``). What thunder does not do as eager FSDP yet is
refused by name: mixed precision, CPU offloading, HSDP and 2-D meshes, sharding on another
dim, resharding to another world size, gradient accumulation without reduction
(``set_requires_gradient_sync(False)``), custom collectives, several modules in one
``fully_shard`` call.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import Any

import torch

from thunder.core.errors import UnsupportedValueError
from thunder.core.proxies import AnyProxy, TensorProxy
from thunder.core.tags import Tag
from thunder.frontend.distributed.collectives import guard_group
from thunder.frontend.stand_ins.unpack import LOCAL_SHARD, Unpack
from thunder.ops import fsdp as fsdp_ops
from thunder.ops import python as pyops


@dataclasses.dataclass
class _Group:
    """One FSDP parameter group: its parameters (torch's ``FSDPParam``s), their full shapes, the
    process group's name, whether it reshards after forward, and its unsharded parameters
    while it does not."""

    params: list
    shapes: list[tuple[int, ...]]
    group: str
    reshard: bool
    unsharded: tuple | None = None


class Sharding:
    """The FSDP states of one trace's modules: their sharded parameters (by the id of the
    DTensor parameter) and what runs in place of their hooks (by the id of the hook)."""

    def __init__(self, state):
        self.state = state  # the Acquisition
        self.params: dict[int, tuple[Any, _Group]] = {}  # id(DTensor parameter) -> (FSDPParam, group)
        self.shards: dict[int, TensorProxy] = {}  # id(DTensor parameter) -> its local shard's proxy
        self.hooks: dict[int, Callable] = {}
        self._states: set[int] = set()

    # -- before the shadows are made --------------------------------------------------------
    def discover(self, module: torch.nn.Module, prefix: str = "") -> None:
        """Find the modules sharded with ``fully_shard`` in ``module``'s tree (initialised as
        eager's first forward initialises them)."""
        fsdp = sys.modules.get("torch.distributed.fsdp")  # (a program that shards imported it)
        # (while another thread imports it, e.g. Inductor compiling, it is there half made,
        # without FSDPModule yet: no module can have been sharded with it then)
        fsdp_module = getattr(fsdp, "FSDPModule", None)
        if fsdp_module is None:
            return
        for path, mod in module.named_modules():
            if not isinstance(mod, fsdp_module):
                continue
            st = mod._get_fsdp_state()
            if id(st) in self._states:
                continue
            self._states.add(id(st))
            where = ".".join(p for p in (prefix, path) if p) or f"<root> ({type(mod).__qualname__})"
            if len(st._modules) != 1:
                raise _refused(where, "other modules in one call (fully_shard([a, b]))")
            if st._is_root is None:
                st._lazy_init()  # (idempotent; eager's first forward calls it)
            if not all(g.is_sharded for g in st._fsdp_param_groups):
                # (an eager forward without its backward leaves the root unsharded)
                if st._training_state.name != "IDLE":
                    raise UnsupportedValueError(
                        f"thunder: the module {where} (sharded with fully_shard) is in the middle of an eager "
                        "forward or backward; call the compiled module outside it"
                    )
                mod.reshard()
            for g in st._fsdp_param_groups:
                self._add_group(g, where)
            for table, hook, run in (
                (mod._forward_pre_hooks, st._pre_forward, self._pre_forward),
                (mod._forward_hooks, st._post_forward, self._post_forward),
            ):
                for h in table.values():
                    if h == hook:
                        self.hooks[id(h)] = functools.partial(run, st)

    def _add_group(self, g, where: str) -> None:
        _check_group(g, where)
        mesh = g.mesh_info.mesh
        pg = mesh.get_group()
        guard_group(self.state.inputs.checks, pg.group_name, pg)
        post = g.post_forward_mesh_info
        info = _Group(
            params=list(g.fsdp_params),
            shapes=[tuple(fp._orig_size) for fp in g.fsdp_params],
            group=pg.group_name,
            reshard=post is not None,
        )
        for fp in g.fsdp_params:
            self.params[id(fp.sharded_param)] = (fp, info)

    def substitute(self, hook: Callable) -> Callable:
        """What runs in place of ``hook`` while tracing (``hook`` itself unless it is FSDP's)."""
        return self.hooks.get(id(hook), hook)

    # -- inputs ---------------------------------------------------------------------------
    def local_shard(self, t: torch.Tensor, path: str, unpack: Unpack) -> TensorProxy | None:
        """The input proxy of the local shard of ``t`` when it is a parameter FSDP shards
        (``path`` names it; ``unpack`` reaches the parameter); None for any other tensor."""
        found = self.params.get(id(t))
        if found is None:
            return None
        fp, info = found
        inputs = self.state.inputs
        holder = AnyProxy(inputs.computation.add_name(f"{path}_dtensor"), type(t))
        inputs.prologue.names.add(holder.name)
        inputs.sources[holder.name] = (holder, unpack, t)
        inputs.checks.add_check(pyops.check_dtensor_shard, holder, info.group, tuple(t.shape))
        local = t._local_tensor
        requires_grad = t.requires_grad and torch.is_grad_enabled()  # (as to_local() gives it)
        p = TensorProxy(
            inputs.computation.add_name(path), tuple(local.shape), local.dtype, local.device, requires_grad
        )
        p._is_param = (
            True  # ``isinstance(p, nn.Parameter)`` as for the parameter (frontend/effects/type_reads.py)
        )
        inputs.prologue.names.add(p.name)
        inputs.sources[p.name] = (p, Unpack(holder, LOCAL_SHARD, None), local)
        inputs.tensor_inputs.append(p)
        self.shards[id(t)] = p
        return p

    # -- FSDP's hooks, as recorded ---------------------------------------------------------
    def _pre_forward(self, fsdp_state, module, args, kwargs):
        for g in fsdp_state._fsdp_param_groups:
            _, info = self.params[id(g.fsdp_params[0].sharded_param)]
            unsharded = info.unsharded if info.unsharded is not None else self._unshard(info)
            for fp, p in zip(info.params, unsharded):
                self._register(fp, p)
        return None

    def _post_forward(self, fsdp_state, module, args, output):
        for g in fsdp_state._fsdp_param_groups:
            for fp in g.fsdp_params:
                self._register(fp, self.shards[id(fp.sharded_param)])
        return None

    def _unshard(self, info: _Group) -> tuple:
        shards = [self.shards[id(fp.sharded_param)] for fp in info.params]
        trace = self.state.computation
        unsharded = fsdp_ops.unshard(shards, info.shapes, info.group)
        made = trace.recording[-1]
        if info.reshard:
            trace.recording[-1] = made.from_bsym(tags=made.tags | {Tag.RECOMPUTE_IN_BACKWARD})
        else:
            info.unsharded = unsharded
        for p in unsharded:
            p._is_param = True  # (eager's unsharded parameters are nn.Parameters too)
        return unsharded

    def _register(self, fp, p: TensorProxy) -> None:
        """``p`` as the parameter of the modules that hold ``fp`` (their shadows), as FSDP's
        ``_setattr_on_modules``."""
        where = fp._module_info
        shadows = self.state.shadows
        for m, name in (
            (where.module, where.param_name),
            *zip(where.shared_modules, where.shared_param_names),
        ):
            shadows.by_id[id(m)].shadow.__dict__["_parameters"][name] = p


def _refused(where: str, what: str) -> UnsupportedValueError:
    return UnsupportedValueError(
        f"thunder: the module {where} is sharded by fully_shard with {what}, which thunder.jit does not "
        "support yet (supported: fully_shard on a 1-D mesh, Shard(0), without mixed precision or offloading)"
    )


def _check_group(g, where: str) -> None:
    """Refuse what the recorded unshard and reduce-scatter would not do as eager FSDP does."""
    mesh = g.mesh_info.mesh
    if type(g.mesh_info).__name__ != "FSDPMeshInfo" or mesh.ndim != 1:
        raise _refused(
            where, f"a {type(g.mesh_info).__name__} over a {mesh.ndim}-D mesh (HSDP or replication)"
        )
    post = g.post_forward_mesh_info
    if post is not None and post.shard_mesh_size != g.mesh_info.shard_mesh_size:
        raise _refused(where, "reshard_after_forward=<int> (resharding to another world size)")
    mp = g.mp_policy
    if mp.param_dtype is not None or mp.reduce_dtype is not None or mp.output_dtype is not None:
        raise _refused(where, f"mixed precision ({mp})")
    if type(g.offload_policy).__name__ != "OffloadPolicy":
        raise _refused(where, f"offloading ({type(g.offload_policy).__name__})")
    if not g.reduce_grads:
        raise _refused(where, "set_requires_gradient_sync(False) (gradients accumulated unreduced)")
    if g.gradient_divide_factor is not None:
        raise _refused(where, f"a gradient divide factor of {g.gradient_divide_factor}")
    if type(g._all_gather_comm).__name__ != "DefaultAllGather" or type(g._reduce_scatter_comm).__name__ != (
        "DefaultReduceScatter"
    ):
        raise _refused(where, "a custom all-gather or reduce-scatter")
    if g._all_reduce_hook is not None:
        raise _refused(where, "an all-reduce hook")
    for fp in g.fsdp_params:
        name = fp._module_info.param_name
        if fp.fsdp_placement.dim != 0:
            raise _refused(where, f"its parameter {name} sharded on dim {fp.fsdp_placement.dim}")
        if fp.is_dtensor:
            raise _refused(where, f"its parameter {name} a DTensor already (tensor parallelism)")
        if hasattr(fp._sharded_local_tensor, "fsdp_pre_all_gather"):
            raise _refused(where, f"its parameter {name} a tensor subclass with FSDP all-gather extensions")
