"""FSDP2's unsharding of a parameter group as one op: ``fsdp.unshard(shards, shapes, group)``.

``torch.distributed.fsdp.fully_shard`` keeps each parameter as a ``DTensor`` sharded on dim 0
over a 1-D mesh: rank ``r`` holds rows ``[r*c, (r+1)*c)`` of the parameter's ``shape[0]``
rows, ``c = ceil(shape[0] / world size)`` (``torch.chunk``'s split: only the last ranks hold
fewer rows, maybe none). Before a module's forward, eager FSDP all-gathers every parameter of
its group in one collective: each rank's shards, padded to ``c`` rows and flattened, laid
end to end; the gathered buffer holds the ranks' buffers in rank order, from which each
parameter is copied out and its padding dropped. This op is that, from the local shards
(``shards``, one per parameter) and the parameters' full ``shapes``, over the process group
named ``group``; it returns the unsharded parameters, in order::

    (t0, t1) = fsdp.unshard([t_qkv_weight, t_qkv_bias], [(24, 8), (24,)], '0')
      # t2 = prims.reshape(t_qkv_weight, (96,))
      # ...
      # t5 = prims.all_gather(t4, '0')
      # t6 = prims.wait(t5)
      # ...

Its gradient (``thunder/ops/vjp/collectives.py``) is FSDP's: the parameters' gradients padded
and laid out the same way, reduce-scattered with averaging over the ranks (``'avg'``), each
rank's part cut back into its shards. The frontend records one per FSDP module call
(``thunder/frontend/distributed/fsdp.py``).
"""

from __future__ import annotations

import math

from thunder.core.symbol import Symbol, register
from thunder.ops import prims
from thunder.ops.collectives import group_size
from thunder.ops.meta import ShapeError, device_of, dtype_of, is_tensor, shape_of


def padded_rows(rows: int, world: int) -> int:
    """The rows each rank's shard is padded to (``torch.chunk``'s chunk size)."""
    return -(-rows // world)


def _check(shards, shapes, world: int) -> None:
    if len(shards) != len(shapes) or not shards:
        raise ShapeError(f"fsdp.unshard: {len(shards)} shards for {len(shapes)} parameter shapes")
    dtypes = {dtype_of(s) for s in shards if is_tensor(s)}
    if len(dtypes) != 1 or not all(is_tensor(s) for s in shards):
        raise ShapeError(f"fsdp.unshard: expected tensors of one dtype, got {sorted(map(str, dtypes))}")
    for s, shape in zip(shards, shapes):
        local = shape_of(s)
        if not shape or len(local) != len(shape) or local[1:] != tuple(shape[1:]):
            raise ShapeError(
                f"fsdp.unshard: a shard of shape {local} does not shard a parameter of shape {shape}"
            )
        if local[0] > padded_rows(shape[0], world):
            raise ShapeError(
                f"fsdp.unshard: a shard of {local[0]} rows of a parameter of {shape[0]} rows over {world} ranks "
                f"(at most {padded_rows(shape[0], world)})"
            )


def _reshaped(a, shape: tuple):
    return a if shape_of(a) == shape else prims.reshape(a, shape)


def _pad_rows(a, rows: int):
    """``a`` with zero rows added at the end up to ``rows`` rows."""
    s = shape_of(a)
    if s[0] == rows:
        return a
    zeros = prims.full((rows - s[0], *s[1:]), 0, dtype=dtype_of(a), device=device_of(a))
    return prims.cat([a, zeros], 0)


def _unshard(shards, shapes, group):
    world = group_size(group)
    shapes = [tuple(s) for s in shapes]
    _check(shards, shapes, world)
    rows = [padded_rows(shape[0], world) for shape in shapes]
    sizes = [r * math.prod(shape[1:]) for r, shape in zip(rows, shapes)]
    flat = [_reshaped(_pad_rows(s, r), (n,)) for s, r, n in zip(shards, rows, sizes)]
    buffer = flat[0] if len(flat) == 1 else prims.cat(flat, 0)
    gathered = prims.wait(prims.all_gather(buffer, group))  # rank 0's buffer, rank 1's, ...
    total = sum(sizes)
    by_rank = prims.reshape(gathered, (world, total)) if len(flat) > 1 else None
    out, offset = [], 0
    for shape, r, n in zip(shapes, rows, sizes):
        if by_rank is None:
            whole = _reshaped(gathered, (world * r, *shape[1:]))
        else:
            mine = prims.slice_prim(by_rank, (0, offset), (world, offset + n))
            whole = prims.reshape(mine, (world * r, *shape[1:]))
        if world * r != shape[0]:  # the padding is at the end: the last ranks' shards are short
            whole = prims.slice_prim(whole, (0,) * len(shape), shape)
        out.append(whole)
        offset += n
    return tuple(out)


unshard = register(Symbol("unshard", "fsdp", decomposition=_unshard, module_path="thunder.ops.fsdp"))


def reduce_scatter_grads(grads, shards, shapes, group):
    """The gradients of ``shards`` from the gradients ``grads`` of the unsharded parameters,
    averaged over the ranks as FSDP does: padded, laid out as ``unshard`` gathers,
    reduce-scattered (``'avg'``), cut into shards. A parameter no gradient reached (``None``)
    takes zeros in the reduce-scatter and gets None, as in eager FSDP."""
    world = group_size(group)
    shapes = [tuple(s) for s in shapes]
    rows = [padded_rows(shape[0], world) for shape in shapes]
    sizes = [r * math.prod(shape[1:]) for r, shape in zip(rows, shapes)]
    parts = []
    for g, s, r, n in zip(grads, shards, rows, sizes):
        if g is None:
            parts.append(prims.full((world, n), 0, dtype=dtype_of(s), device=device_of(s)))
        else:
            parts.append(prims.reshape(_pad_rows(g, world * r), (world, n)))
    buffer = parts[0] if len(parts) == 1 else prims.cat(parts, 1)  # rank-major, as gathered
    buffer = _reshaped(buffer, (world * sum(sizes),))
    mine = prims.wait(prims.reduce_scatter(buffer, "avg", group))
    out, offset = [], 0
    for g, s, shape, r, n in zip(grads, shards, shapes, rows, sizes):
        if g is None:  # (eager FSDP leaves the gradient of a parameter the loss does not reach None)
            out.append(None)
            offset += n
            continue
        piece = mine if len(sizes) == 1 else prims.slice_prim(mine, (offset,), (offset + n,))
        piece = _reshaped(piece, (r, *shape[1:]))
        local = shape_of(s)
        if local[0] != r:
            piece = prims.slice_prim(piece, (0,) * len(local), local)
        out.append(piece)
        offset += n
    return out
