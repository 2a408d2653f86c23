"""The checks a piece's prologue leaves to Dynamo.

Dynamo guards every graph it hands a backend: the tensor inputs' shapes, strides, dtypes,
devices and ``requires_grad`` (for a graph with static shapes), the number of inputs, grad
mode, autocast and the default dtype (its global-state guard). The ``GraphModule`` itself is
the backend's own object: nothing else changes it. A thunder prologue for such a graph checks
all of that again on every call; ``without_dynamo_checks`` drops those checks and keeps the
unpacking and every check Dynamo does not make (values of Python numbers, aliasing of written
arguments, subclass layouts, ...).

    before:  args_0 = args[0]; pythonex.check_tensor(args_0, (4, 4), torch.float32, 'cpu', True)
    after:   args_0 = args[0]
"""

from __future__ import annotations

import torch

from thunder.core.trace import Trace
from thunder.ops import python as pyops

# checks of what Dynamo guards itself (for a graph with static shapes), or of the GraphModule
DYNAMO_COVERS = frozenset(
    {
        pyops.check_len,
        pyops.check_keys,
        pyops.check_tensor,
        pyops.check_tensors,
        pyops.check_strides,
        pyops.check_grad_enabled,
        pyops.check_torch_flag,
        pyops.check_autocast,
        pyops.check_default_dtype,
        pyops.check_hasattr,
        pyops.check_module,
        pyops.check_state,
        pyops.check_items,
        pyops.check_class,
        pyops.check_defaults,
        pyops.check_cell,
        pyops.check_no_module_hooks,
    }
)


def without_dynamo_checks(prologue: Trace) -> Trace:
    """``prologue`` less the checks in ``DYNAMO_COVERS``."""
    trimmed = prologue.derive("Leave to Dynamo the checks its guards make")
    trimmed.bound_symbols = [b for b in prologue.bound_symbols if not _covered(b)]
    return trimmed


def _covered(bsym) -> bool:
    # after claiming, a check is the executor's symbol with the check prim as its one subsymbol
    subs = bsym.subsymbols
    return bsym.sym in DYNAMO_COVERS or (len(subs) == 1 and subs[0].sym in DYNAMO_COVERS)


def has_static_inputs(gm: torch.fx.GraphModule, example_inputs) -> bool:
    """Every input is a plain tensor of static shape: Dynamo's guards then pin each one's
    metadata, and one thunder compilation fits every call Dynamo lets through. (With dynamic
    shapes, or a Python number as an input, thunder's own checks stay: it specialises.)"""
    if not all(type(x) in (torch.Tensor, torch.nn.Parameter) for x in example_inputs):
        return False
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if value is None or not isinstance(value, torch.Tensor):
            return False
        if not all(type(s) is int for s in value.shape):
            return False
    return True
