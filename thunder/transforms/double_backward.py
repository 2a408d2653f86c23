"""The backward as a computation of its own, for a backward of the backward (double backward).

``torch.autograd.grad(out, x, create_graph=True)`` asks for gradients that are themselves
differentiable: a gradient penalty, a Hessian-vector product. The compiled backward reads
values the forward saved without recording how they depend on the inputs, so it cannot be
differentiated as it is. This pass makes, from the joint trace (``grad.py``), the program
``(inputs, cotangents) -> gradients``: the forward recomputed, then the backward. Its ops are
recorded again under grad mode, so each value requires grad where it depends on an input or
a cotangent that does (the backward was recorded under no_grad). The runtime runs it through
the grad pipeline like any computation: its own backward is the backward of the backward.

Before (the joint trace)::

    def joint(x, g_t0):
      t0 = ltorch.sin(x)
      t1 = prims.cos(x)          # backward
      t2 = prims.mul(g_t0, t1)   # backward
      return ((t0,), (t2,))

After::

    def backward_computation(x, g_t0):   # x and g_t0 require grad
      t0 = ltorch.sin(x)                 # (dce removes what the gradients do not use)
      t3 = prims.cos(x)                  # t3 requires grad
      t4 = prims.mul(g_t0, t3)
      return (t4,)
"""

from __future__ import annotations

import torch

from thunder.core.context import tracectx
from thunder.core.errors import ThunderError
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_leaves, tree_map
from thunder.core.subclass import SubclassProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.transforms.dce import dce


class DoubleBackwardUnsupported(ThunderError, NotImplementedError):
    """A program whose backward thunder cannot differentiate; the message says why."""


def _leaves(b: BoundSymbol):
    yield b
    for s in b.subsymbols:
        yield from _leaves(s)


def _why_not(joint: Trace) -> str | None:
    if joint.info.writebacks:
        return "it writes into its inputs"
    if any(isinstance(p, SubclassProxy) for p in joint.args):
        return "it takes tensor-subclass inputs"
    for b in joint.bound_symbols:
        if b.info.recorded_backward is not None:
            return f"it applies a custom torch.autograd.Function ({b.sym.id})"
        if any(Tag.RANDOM in s.sym.tags for s in _leaves(b)):
            return f"it draws random numbers ({b.sym.id}), which recomputing the forward would draw again"
    return None


def backward_from_inputs(joint: Trace) -> tuple[Trace, list[int]]:
    """``(inputs, cotangents) -> gradients`` of the inputs that get one, as ``joint`` records
    them (not differentiable: for a backward traced for other cotangents than the entry's,
    which recomputes its forward); and the positions of those inputs."""
    if joint.info.writebacks:
        raise DoubleBackwardUnsupported(
            "thunder: a backward from the inputs of a function that writes into them"
        )
    _, grads = joint.output
    trace = joint.derive("Backward from the inputs")
    trace.name = "backward_from_inputs"
    trace.info.cotangents = None
    trace.bound_symbols = list(joint.bound_symbols)
    positions = [i for i, g in enumerate(grads) if g is not None]
    trace.output = tuple(grads[i] for i in positions)
    return dce(trace), positions


def differentiable_backward(joint: Trace) -> tuple[Trace, list[int]]:
    """``(inputs, cotangents) -> gradients`` of the inputs that get one, recorded under grad
    mode with every floating cotangent requiring grad; and the positions of those inputs."""
    why = _why_not(joint)
    if why is not None:
        raise DoubleBackwardUnsupported(
            f"thunder: the backward of this function is not differentiable here: {why}"
        )
    n_ct = len(joint.info.cotangents)
    fw_args = joint.args[: len(joint.args) - n_ct]
    _, grads = joint.output
    trace = joint.derive("Backward as a computation (for a double backward)")
    trace.name = "backward_computation"
    trace.info.cotangents = None
    trace.info.writebacks = []
    trace.grad_enabled = True
    swap: dict[str, Proxy] = {}
    args = list(fw_args)
    for c in joint.args[len(fw_args) :]:
        new = TensorProxy(c.name, c.meta_shape, c.meta_dtype, c.meta_device, c.meta_dtype.is_floating_point)
        swap[c.name] = new
        args.append(new)

    def sub(x):
        return tree_map(lambda v: swap.get(v.name, v) if isinstance(v, Proxy) else v, x)

    with tracectx(trace), torch.enable_grad():
        for b in joint.bound_symbols:
            with torch.no_grad() if Tag.NO_GRAD in b.tags else torch.enable_grad():
                out = b.sym(*sub(b.args), **sub(b.kwargs))
            for old, new in zip(tree_leaves(b.output), tree_leaves(out)):
                if isinstance(old, Proxy) and new is not old:
                    swap[old.name] = new
    positions = [i for i, g in enumerate(grads) if g is not None]
    trace.args = args
    trace.output = tuple(sub(grads[i]) for i in positions)
    return dce(trace), positions
