"""VJP rules of the collectives and of FSDP's ``unshard``: the ones with torch's own gradients
(all_gather and reduce_scatter transposes of each other, all_to_all_single its own), and
``NO_TORCH_GRADIENT``, the ones torch gives none, where a gradient reaching one is an error.
"""

from __future__ import annotations

from thunder.ops import fsdp, prims
from thunder.ops.meta import shape_of
from thunder.ops.vjp.table import rule_for

# Collectives whose gradient torch does not define either (all_reduce, broadcast: which rank's
# loss a value reaches is the program's business): a gradient reaching one is a NoVJPError that
# names it and the user's line, as in eager, which has no autograd formula for them.
NO_TORCH_GRADIENT = frozenset({prims.all_reduce, prims.broadcast})


# The collectives with torch's own gradients (torch.distributed._functional_collectives):
# all_gather and reduce_scatter are each other's transpose, all_to_all_single its own with the
# splits swapped. A start's gradient is a start and its wait: a wait passes the gradient on.
@rule_for(prims.all_gather)
def _all_gather(g, out, a, group):
    return (prims.wait(prims.reduce_scatter(g, "sum", group)), None)


@rule_for(prims.reduce_scatter)
def _reduce_scatter(g, out, a, op, group):
    if op not in ("sum", "avg"):
        return NotImplemented
    ga = prims.wait(prims.all_gather(g, group))
    if op == "avg":
        ga = prims.div(ga, float(shape_of(a)[0] // shape_of(out)[0]))
    return (ga, None, None)


@rule_for(prims.all_to_all_single)
def _all_to_all_single(g, out, a, output_split_sizes, input_split_sizes, group):
    return (
        prims.wait(prims.all_to_all_single(g, input_split_sizes, output_split_sizes, group)),
        None,
        None,
        None,
    )


@rule_for(prims.wait)
def _wait(g, out, a):
    return (g,)


@rule_for(fsdp.unshard)
def _unshard(g, out, shards, shapes, group):
    """FSDP's gradient of its parameters' shards: reduce-scattered, averaged over the ranks."""
    g = g if isinstance(g, tuple) else (g,)
    return (fsdp.reduce_scatter_grads(list(g), shards, shapes, group), None, None)
