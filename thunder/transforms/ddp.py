"""Gradient averaging of a ``DistributedDataParallel``, made explicit in the backward trace.

The backward returns one gradient per input of the forward; the parameters DDP reduces are
noted by acquisition (``DataParallel``, ``frontend/distributed/ddp.py``). They are put in buckets as DDP's
reducer does: in reverse order (about the order their gradients are made), a bucket closed
once it holds its cap in bytes (``bucket_caps``: a small first bucket, so that communication
starts early), one dtype per bucket. A bucket's gradients are flattened and concatenated,
scaled by 1/world size and all-reduced with a sum: the start (``prims.all_reduce``) right
after the last of them is made, so the rest of the backward overlaps the communication; every
wait comes at the end, where the reduced buffer is split back into the gradients. A parameter whose gradient the backward does not make (unused by
this forward) is left out, as DDP leaves a globally unused parameter's ``.grad`` alone. With
``find_unused_parameters=True`` (``plan.find_unused``) every parameter is in the buckets, a zero
gradient for the ones this rank did not use, and an all-reduce of one flag per parameter counts
the ranks that used it: the backward's last output, by which the autograd bridge leaves the
``.grad`` of a parameter no rank used alone (``HeldGradients.settle``).

``held``: positions of parameters whose ``.grad`` already holds gradients accumulated under
``no_sync()``. Eager DDP averages the accumulated ``.grad``, not this backward's part alone,
so that variant takes those as more inputs (``grad_<name>``) and adds them in before the
bucket is reduced; the caller stores the result in ``.grad`` instead of adding it there
(``HeldGradients``, ``thunder/autograd/held_gradients.py``).

Before (two buckets: caps below a weight's bytes)::

    def backward(x, t_1_weight, t2, g_t3):
      t6 = ltorch.matmul(t5, t2)        # t_1_weight's gradient
      t7 = ltorch.sum(g_t3, (0,))       # t_1_bias's
      t12 = ltorch.matmul(t11, x)       # t_0_weight's
      t13 = ltorch.sum(t9, (0,))        # t_0_bias's
      return (None, t12, t13, t6, t7)

After (a 1-d gradient needs no reshape)::

      t6 = ltorch.matmul(t5, t2)
      t7 = ltorch.sum(g_t3, (0,))
      t14 = ltorch.reshape(t6, (-1,))
      t15 = ltorch.cat([t7, t14])
      t16 = ltorch.mul(t15, 0.5)
      t17 = prims.all_reduce(t16, 'sum', '0')
      t12 = ltorch.matmul(t11, x)       # (overlaps the all-reduce of t17)
      t13 = ltorch.sum(t9, (0,))
      ...
      t21 = prims.all_reduce(t20, 'sum', '0')
      t22 = prims.wait(t17)
      (t23, t24) = ltorch.split(t22, [2, 16])
      t25 = ltorch.reshape(t24, (2, 8))
      t26 = prims.wait(t21)
      ...
      return (None, t29, t27, t25, t23)
"""

from __future__ import annotations

import torch

from thunder.core.context import tracectx
from thunder.core.passinfo import DataParallel
from thunder.core.proxies import TensorProxy
from thunder.core.trace import Trace
from thunder.ops import ltorch, prims


def average_gradients(backward: Trace, plan: DataParallel, held: frozenset[int] = frozenset()) -> Trace:
    grads = list(backward.output)
    made = [isinstance(grads[i], TensorProxy) for i in plan.positions]
    present = [
        (i, name) for (i, name), m in zip(zip(plan.positions, plan.parameters), made) if m or plan.find_unused
    ]
    if not present:
        return backward
    out = backward.derive("Average gradients (DistributedDataParallel)")
    made_at: dict[str, int] = {}  # value name -> the index of the BoundSymbol that makes it
    for k, b in enumerate(backward.bound_symbols):
        for p in b.flat_proxy_outs:
            made_at.setdefault(p.name, k)
    after: dict[int, list] = {}  # BoundSymbol index -> the buckets that start after it
    counted = None
    if plan.find_unused:  # zeros for what this forward did not use, and who used what
        ops, (zeros, counted) = _record(out, lambda: _unused(plan, made))
        after[-1] = ops
        for i, z in zeros.items():
            grads[i] = z
    names = dict(present)
    priors = {
        i: out.tensor(grads[i].meta_shape, grads[i].meta_dtype, grads[i].meta_device, name=f"grad_{names[i]}")
        for i in taken_gradients(backward, plan, held)
    }
    buckets = _buckets([i for i, _ in reversed(present)], grads, plan.bucket_caps)

    started = []
    ready = -1
    for bucket in buckets:
        # (in order, as DDP's reducer launches them: every rank runs the same collectives in
        # the same order, whichever gradients its forward made first)
        ready = max(ready, *(made_at.get(grads[i].name, -1) for i in bucket))
        ops, value = _record(out, lambda bucket=bucket: _start(bucket, grads, priors, plan))
        after.setdefault(ready, []).extend(ops)
        started.append(value)
    bsyms = list(after.get(-1, ()))
    for k, b in enumerate(backward.bound_symbols):
        bsyms.append(b)
        bsyms += after.get(k, ())
    reduced = list(grads)
    for bucket, value in zip(buckets, started):
        ops, parts = _record(out, lambda bucket=bucket, value=value: _finish(bucket, value, grads))
        bsyms += ops
        for i, part in zip(bucket, parts):
            reduced[i] = part
    if counted is not None:
        ops, users = _record(out, lambda: prims.wait(counted))
        bsyms += ops
        reduced.append(users)  # (the last output: HeldGradients.settle reads it)
    out.bound_symbols = bsyms
    out.args = list(backward.args) + list(priors.values())
    out.output = tuple(reduced)
    return out


def _unused(plan: DataParallel, made: list[bool]):
    """Zero gradients for the parameters this backward does not make (by position), and the
    all-reduce that counts, per parameter, the ranks whose backward made one."""
    zeros = {
        i: ltorch.full(shape, 0.0, dtype=dtype, device=device)
        for i, m, (shape, dtype, device) in zip(plan.positions, made, plan.metas)
        if not m
    }
    device = plan.metas[0][2]
    runs: list[list[int]] = []  # [flag, how many in a row]
    for m in made:
        if runs and runs[-1][0] == int(m):
            runs[-1][1] += 1
        else:
            runs.append([int(m), 1])
    flags = [ltorch.full((n,), m, dtype=torch.int32, device=device) for m, n in runs]
    return zeros, prims.all_reduce(flags[0] if len(flags) == 1 else ltorch.cat(flags), "sum", plan.group)


def taken_gradients(backward: Trace, plan: DataParallel, held: frozenset[int]) -> list[int]:
    """The positions of the held gradients the variant for ``held`` takes, in the order of its
    extra inputs: those of parameters the backward makes a gradient for."""
    return sorted(
        i
        for i in held
        if i in plan.positions and (plan.find_unused or isinstance(backward.output[i], TensorProxy))
    )


def _buckets(order: list[int], grads: list, caps: tuple[int, ...]) -> list[list[int]]:
    """The gradients at positions ``order`` in buckets of one dtype and device, each closed
    once it reaches its cap in bytes (``caps``, the last one repeating), as DDP's
    ``_compute_bucket_assignment_by_size`` does: per dtype and device, the n-th bucket's cap
    is ``caps[n]``."""
    open_: dict[tuple, tuple[list[int], list[int]]] = {}  # (dtype, device) -> (positions, [bytes])
    closed: dict[tuple, int] = {}  # (dtype, device) -> how many of its buckets are closed
    done: list[list[int]] = []
    for i in order:
        g = grads[i]
        key = (g.meta_dtype, g.meta_device)
        positions, size = open_.setdefault(key, ([], [0]))
        positions.append(i)
        size[0] += _numel(g) * g.meta_dtype.itemsize
        n = closed.get(key, 0)
        if size[0] >= caps[min(n, len(caps) - 1)]:
            done.append(positions)
            closed[key] = n + 1
            del open_[key]
    done += [positions for positions, _ in open_.values()]
    return done


def _numel(t: TensorProxy) -> int:
    n = 1
    for d in t.meta_shape:
        n *= d
    return n


def _record(trace: Trace, fn) -> tuple[list, object]:
    """Run ``fn`` recording into a scratch trace that shares ``trace``'s names; its
    BoundSymbols and its result."""
    scratch = trace.scratch(grad_enabled=False)
    with tracectx(scratch), torch.no_grad():
        value = fn()
    return scratch.bound_symbols, value


def _start(bucket: list[int], grads: list, priors: dict, plan: DataParallel):
    flat = []
    for i in bucket:
        g = grads[i] if i not in priors else ltorch.add(priors[i], grads[i])  # (as AccumulateGrad adds)
        flat.append(ltorch.reshape(g, (-1,)))
    joined = flat[0] if len(flat) == 1 else ltorch.cat(flat)
    # DDP's reducer multiplies by 1/world size while it copies into the bucket, then sums
    scaled = ltorch.mul(joined, 1.0 / plan.world_size)
    return prims.all_reduce(scaled, "sum", plan.group)


def _finish(bucket: list[int], started, grads: list) -> list:
    done = prims.wait(started)
    sizes = [_numel(grads[i]) for i in bucket]
    parts = [done] if len(bucket) == 1 else ltorch.split(done, sizes)
    return [ltorch.reshape(part, grads[i].meta_shape) for i, part in zip(bucket, parts)]
