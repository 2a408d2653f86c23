"""A cached call checked in two C calls: the entries whose prologue checks plain tensors alone.

Most of a small program's cached call is its prologue: a Python function that unpacks the
arguments and checks each tensor's shape, dtype, device and requires_grad, the grad mode, that
autocast is off and the default dtype. When that is all a prologue checks (``simple``: the
arguments are N plain tensors with fixed shapes, nothing else is read), the same checks are made
by torch's own C++ guard, as Dynamo makes it: ``TensorGuards`` (each tensor's dtype, device,
sizes, requires_grad and dispatch keys, which autocast being on changes), and by comparing the
grad mode and the default dtype with what they were. The guard is built from a call whose prologue
passed, so it holds where the prologue held (or more strictly: a dispatch key the prologue does not
look at): a call it rejects takes the prologue's path. The jitted callable tries it first
(``ThunderFunction.__call__``), unless a torch-function mode is on (thunder tracing another
function that calls this one, or the user's own mode), and runs the computation.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy
from thunder.core.trace import Trace
from thunder.ops import python as pyops

try:  # (torch's Dynamo guards; absent from some builds)
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # pragma: no cover
    TensorGuards = None

# what a simple prologue may hold, by the op an executor claimed
_ALLOWED = {
    pyops.check_len,
    pyops.check_keys,
    pyops.unpack_item,
    pyops.check_tensor,
    pyops.check_tensors,
    pyops.check_grad_enabled,
    pyops.check_autocast,
    pyops.check_default_dtype,
}


def simple(prologue: Trace) -> int | None:
    """The number of arguments when ``prologue`` checks N positional plain tensors and torch's
    global state alone and hands them to the computation as they came; else None."""
    if TensorGuards is None:
        return None
    n, unpacked, checked = None, [], set()
    for bsym in prologue.bound_symbols:
        b = bsym.subsymbols[0] if bsym.sym.executor is not None and len(bsym.subsymbols) == 1 else bsym
        if b.sym not in _ALLOWED:
            return None
        if b.sym is pyops.check_len:
            n = b.args[1]
        elif b.sym is pyops.check_keys and tuple(b.args[1]) != ():
            return None
        elif b.sym is pyops.unpack_item:
            if not isinstance(b.output, TensorProxy) or b.args[1] != len(unpacked):
                return None
            unpacked.append(b.output.name)
        elif b.sym is pyops.check_tensor:
            if not all(type(d) is int for d in b.args[1]):
                return None
            checked.add(b.args[0].name)
        elif b.sym is pyops.check_tensors:
            if not all(all(type(d) is int for d in meta[0]) for meta in b.args[0].metas):
                return None
            checked.update(t.name for t in b.args[1:])
        elif b.sym is pyops.check_autocast and tuple(b.args[0]) != ():
            return None
    out = prologue.output
    if (
        n is None
        or n != len(unpacked)
        or checked != set(unpacked)
        or not isinstance(out, tuple)
        or len(out) != 2
    ):
        return None
    cargs, eargs = out
    if tuple(eargs) != () or [getattr(p, "name", None) for p in cargs] != unpacked:
        return None
    return n


def guards(args: tuple):
    """The C check of ``args``, which just passed the prologue."""
    return TensorGuards(
        *args,
        dynamic_dims_sizes=[list(a.shape) for a in args],
        dynamic_dims_strides=[[None] * a.dim() for a in args],
    ).check
