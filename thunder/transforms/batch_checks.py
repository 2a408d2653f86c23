"""Batch tensor checks: the prologue's ``check_tensor`` lines of several plain tensors become
one ``check_tensors`` line, which a cached call runs as one C++ check (``check_tensors`` in
``thunder/executors/python/checks.py``) instead of one Python call per tensor.

Before::

    t_fc_weight = m_fc._parameters['weight']  # t_fc_weight: "cpu f32[64, 64]"
    prims.check_tensor(t_fc_weight, (64, 64), torch.float32, 'cpu', True)
    t_fc_bias = m_fc._parameters['bias']  # t_fc_bias: "cpu f32[64]"
    prims.check_tensor(t_fc_bias, (64,), torch.float32, 'cpu', True)
    prims.check_no_module_hooks()

After::

    t_fc_weight = m_fc._parameters['weight']  # t_fc_weight: "cpu f32[64, 64]"
    t_fc_bias = m_fc._parameters['bias']  # t_fc_bias: "cpu f32[64]"
    prims.check_tensors(_tensors, t_fc_weight, t_fc_bias)  # shapes, dtypes and devices as unpacked; requires_grad=True
    prims.check_no_module_hooks()

A check moves down past the unpacking of other inputs only, and not past a line that reads
its tensor: every other line (a check of a module or of global state, of strides, of a
value, the return) comes after the checks before it, as it did. So the order in which an
entry that does not fit fails stays the acquisition's (the arguments first: a decoding loop
tries entries made for other cache lengths, each failing at the argument's shape before it
checks any module). A check with no other to join keeps its line as it was, as does the check
of a tensor with symbolic sizes (``check_tensor(x, (s0, 8), ...)``: torch's C++ check would hold
it to the sizes of the call that made it).
"""

from __future__ import annotations

from thunder.core.proxies import proxies_in
from thunder.core.symbol import BoundSymbol
from thunder.core.symbolic import sizes_are_static
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.ops import python as pyops


def _batched(bsym: BoundSymbol) -> bool:
    return bsym.sym is pyops.check_tensor and sizes_are_static(bsym.args[1])


def batch_tensor_checks(trace: Trace) -> Trace:
    if sum(_batched(b) for b in trace.bound_symbols) < 2:
        return trace
    new: list[BoundSymbol] = []
    pending: list[BoundSymbol] = []
    names: set[str] = set()  # the tensors of ``pending``
    for bsym in trace.bound_symbols:
        if _batched(bsym):
            pending.append(bsym)
            names.add(bsym.args[0].name)
            continue
        if pending and (
            not bsym.has_tag(Tag.UNPACK) or any(p.name in names for p in proxies_in((bsym.args, bsym.kwargs)))
        ):
            new.append(_joined(pending))
            pending, names = [], set()
        new.append(bsym)
    if pending:
        new.append(_joined(pending))
    out = trace.derive("Batch tensor checks")
    out.bound_symbols = new
    return out


def _joined(checks: list[BoundSymbol]) -> BoundSymbol:
    if len(checks) == 1:
        return checks[0]
    tensors = tuple(b.args[0] for b in checks)
    state = pyops.TensorChecks([t.name for t in tensors], [tuple(b.args[1:]) for b in checks])
    return BoundSymbol(pyops.check_tensors, (state, *tensors), {}, None)
