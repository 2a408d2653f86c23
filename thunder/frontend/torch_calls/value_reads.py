"""Reads of a tensor's value while tracing: ``int(t)``, ``t.item()``, a tensor given as a size
or a slice bound (``torch.ones(1, n)`` with a 0-d ``n``; OPT's ``x[:, past_seen_tokens:]``
where transformers' StaticCache answers ``get_seq_length()`` with a tensor).

A 0-d integer tensor that is an input (an argument, an attribute of one, a captured tensor)
is a number kept as a tensor: its value at this call is known, the trace uses it (and what a
few ops compute from it, ``past_seen_tokens + 1``) and the prologue checks it on every call
(``pythonex.check_tensor_value(t_cache_layers_0_cumulative_length, 5)``), so a call with
another value traces again. Any other value (computed from data, a float, ``input_ids``) is
not known while tracing: a clear error that says it is data-dependent and names the line.

Such reads come two ways: user code calls ``t.item()`` / ``int(t)`` (the acquisition mode
sees them), or torch's C code converts a proxy itself (``int(t)`` inside an op's argument
parsing), which reaches ``TensorProxy.__torch_dispatch__``; acquisition installs
``dispatch_handler`` there while it traces.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from thunder.core import proxies
from thunder.core.context import tracectx
from thunder.core.errors import DataDependentError, at, describe
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten, tree_leaves, tree_map
from thunder.core.source import user_location
from thunder.core.tags import Tag

aten = torch.ops.aten
# aten ops whose result depends on a tensor's values (a Python scalar, or a data-dependent shape)
_VALUE_OPS = {
    aten._local_scalar_dense, aten.is_nonzero, aten.item, aten.equal, aten.nonzero, aten.masked_select,
    aten._unique2, aten.unique_consecutive, aten.unique_dim, aten.argwhere,
}  # fmt: skip
# the ones that read one scalar: answered for an input's known value
_SCALAR_READS = {aten._local_scalar_dense: None, aten.item: None, aten.is_nonzero: bool}


def read_scalar(state, t: TensorProxy, what: str, convert=None):
    """The value of the one-element tensor ``t`` if it is an input or computed from small
    inputs only (which the prologue checks from now on); otherwise a DataDependentError
    naming ``what`` and the user's line. ``t`` is read as it is now, after the in-place writes
    traced so far (``n.add_(1); float(n)`` reads the new value, as eager does)."""
    if isinstance(t, TensorProxy):
        t = state.inplace.current(t)
    real = known_value(state, t) if isinstance(t, TensorProxy) else None
    if real is None or real.numel() != 1:
        raise DataDependentError(
            f"thunder: {what} needs the value of the tensor {getattr(t, 'name', t)}, which the traced program "
            "computes: it is data-dependent and not known while tracing (Python control flow on a tensor, "
            "`.item()`, or a tensor used as a size or an index bound); express it with tensor ops such as "
            "torch.where, or pass the value as a Python number" + at(user_location())
        )
    value = real.item()
    return convert(value) if convert is not None else value


_MAX_OPS = 64


def _scalar_counter(real) -> bool:
    """A 0-d integer tensor: a number kept as a tensor (a cache length), whose value the
    prologue can check on every call. Data (``input_ids``, activations) never qualifies: a
    branch on it stays a data-dependent error rather than a retrace on every new value."""
    return (
        isinstance(real, torch.Tensor)
        and real.dim() == 0
        and not (real.is_floating_point() or real.is_complex())
    )


def known_value(state, t: TensorProxy) -> torch.Tensor | None:
    """The real value of ``t`` at this call when it is a 0-d integer input tensor, or computed
    by a few deterministic ops from such inputs (``past_seen_tokens + 1`` where
    ``past_seen_tokens`` is a StaticCache's length): the ops run again on the real values,
    and the prologue checks each input's value. None when it depends on anything else."""
    producers = {}
    for bsym in state.computation.bound_symbols:
        for out in bsym.flat_proxy_outs:
            producers[out.name] = bsym
    leaves: dict[str, tuple] = {}
    needed: dict[int, object] = {}
    todo = [t]
    while todo:
        p = todo.pop()
        if p.name in leaves:
            continue
        src = state.inputs.sources.get(p.name)
        if src is not None:
            real = src[2]
            if not _scalar_counter(real):
                return None
            leaves[p.name] = (p, real)
            continue
        bsym = producers.get(p.name)
        if bsym is None or Tag.RANDOM in bsym.sym.tags or len(needed) >= _MAX_OPS:
            return None
        if id(bsym) not in needed:
            needed[id(bsym)] = bsym
            todo += [a for a in bsym.flat_proxy_args if isinstance(a, TensorProxy)]
    env = {name: real for name, (_, real) in leaves.items()}
    order = {id(b): i for i, b in enumerate(state.computation.bound_symbols)}
    try:
        with tracectx(None), torch.no_grad():
            for bsym in sorted(needed.values(), key=lambda b: order[id(b)]):
                args, kwargs = tree_map(
                    lambda x: env[x.name] if isinstance(x, TensorProxy) else x, (bsym.args, bsym.kwargs)
                )
                outs = tree_flatten(bsym.sym.eager(*args, **kwargs))[0]
                for proxy, value in zip(tree_leaves(bsym.output), outs):
                    if isinstance(proxy, TensorProxy):
                        env[proxy.name] = value
    except Exception:
        return None  # an op without an eager form here: the value stays unknown
    for p, real in leaves.values():
        state.inputs.guard_value(p, real.tolist())
        state.touched[id(p)] = p  # the prologue passes the tensor on to check it
    return env[t.name]


def _dispatch(state):
    def handler(func, args, kwargs):
        packet = getattr(func, "overloadpacket", None)
        if packet not in _VALUE_OPS:
            return NotImplemented  # the proxy's own error: an operation below torch's Python API
        handling = getattr(state, "handling", None)
        what = describe(handling) if handling is not None else f"torch's {packet.__name__}"
        if packet in _SCALAR_READS and args and isinstance(args[0], TensorProxy):
            return read_scalar(state, args[0], what, _SCALAR_READS[packet])
        raise DataDependentError(
            f"thunder: {what} reads tensor values ({packet.__name__}): a data-dependent result, not known while "
            "tracing; express it with tensor ops such as torch.where" + at(user_location())
        )

    return handler


@contextmanager
def value_reads(state):
    """While tracing: proxies that reach torch's dispatcher for a value read come here."""
    old = proxies.dispatch_handler
    proxies.dispatch_handler = _dispatch(state)
    try:
        yield
    finally:
        proxies.dispatch_handler = old
