"""Collectives of torch.distributed inside a compiled function, on 2 CPU processes with gloo:
results equal eager's on every rank, over several calls; in-place semantics (the caller's
tensor is written); async handles as a start and a wait in the trace; gradients of the
functional collectives as torch's; a process group as a checked input; and mismatched
collectives across ranks or a destroyed group as clear errors, never a hang."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from support.distributed import run_ranks

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


def _each_collective(rank, ws, device="cpu"):
    import thunder

    if device == "cuda":
        torch.cuda.set_device(rank)

    def f(x):
        y = x * 2
        dist.all_reduce(y)
        b = x + 1
        dist.broadcast(b, src=ws - 1)
        gathered = torch.empty(x.shape[0] * ws, *x.shape[1:], device=x.device)
        dist.all_gather_into_tensor(gathered, x)
        scattered = torch.empty(x.shape[0] // ws, *x.shape[1:], device=x.device)
        dist.reduce_scatter_tensor(scattered, x * 3)
        swapped = torch.empty_like(x)
        dist.all_to_all_single(swapped, x)
        m = x.clone()
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        loss = (x * x).sum()
        losses = [torch.empty_like(loss) for _ in range(ws)]
        dist.all_gather(losses, loss)  # the list form: a 0-d tensor from each rank
        return y, b, gathered, scattered, swapped, m, torch.stack(losses)

    jf = thunder.jit(f)
    out = []
    for step in range(3):  # a new value each call: the cached program communicates again
        x = torch.arange(8.0, device=device).reshape(4, 2) + 10 * rank + step
        out.append((f(x.clone()), jf(x.clone())))
    return out, str(thunder.last_traces(jf)[-1])


def test_each_collective_as_eager_on_both_ranks():
    for out, trace in run_ranks(_each_collective):
        for eager, got in out:
            for e, g in zip(eager, got):
                torch.testing.assert_close(g, e, rtol=0, atol=0)
        for name in ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all_single", "wait"):
            assert f"prims.{name}(" in trace, name


@pytest.mark.cuda
@pytest.mark.skipif(
    not torch.cuda.is_available() or not dist.is_nccl_available(), reason="needs CUDA and NCCL"
)
def test_each_collective_on_nccl_with_one_rank():
    ((out, trace),) = run_ranks(_each_collective, "cuda", world_size=1, backend="nccl")
    for eager, got in out:
        for e, g in zip(eager, got):
            torch.testing.assert_close(g, e, rtol=0, atol=0)
    assert "prims.all_reduce(" in trace


def _inplace_input_and_async(rank, ws):
    import thunder

    def g(x, w):
        dist.all_reduce(x, op=dist.ReduceOp.SUM)  # writes into the caller's tensor
        y = w * 2
        work = dist.all_reduce(y, async_op=True)
        z = w.sin()  # overlaps the communication of y
        work.wait()
        return y + z

    jg = thunder.jit(g)
    results = []
    for step in range(2):
        x1 = torch.full((3,), float(rank + step))
        x2 = x1.clone()
        w = torch.arange(3.0) + rank
        e = g(x1, w)
        t = jg(x2, w)
        results.append((x1, x2, e, t))
    lines = [ln.strip() for ln in str(thunder.last_traces(jg)[-1]).splitlines()]
    return results, lines


def test_inplace_on_the_callers_tensor_and_async_overlap():
    for results, lines in run_ranks(_inplace_input_and_async):
        for x_eager, x_thunder, e, t in results:
            torch.testing.assert_close(x_thunder, x_eager, rtol=0, atol=0)
            torch.testing.assert_close(t, e)
        code = [ln for ln in lines if not ln.startswith("#")]
        starts = [i for i, ln in enumerate(code) if "all_reduce(" in ln]
        waits = [i for i, ln in enumerate(code) if "wait(" in ln]
        sin = next(i for i, ln in enumerate(code) if "torch.sin(" in ln)
        assert len(starts) == 2 and len(waits) == 2
        assert starts[1] < sin < waits[1], "the sin overlaps the async all_reduce"


def _functional_grads(rank, ws):
    import torch.distributed._functional_collectives as fc

    import thunder

    group = dist.group.WORLD

    def h(x, w):
        full = fc.all_gather_tensor_autograd(x * w, 0, group)
        part = fc.reduce_scatter_tensor_autograd(full.sin() * 3, "sum", 0, group)
        moved = fc.all_to_all_single_autograd(part.cos(), None, None, group)
        total = fc.wait_tensor(fc.all_reduce(moved.detach().sum(), "sum", group))
        return (moved * moved).sum() + total

    torch.manual_seed(rank)
    x = torch.randn(4, 3, requires_grad=True)
    w = torch.randn(4, 3, requires_grad=True)
    e = h(x, w)
    e.backward()
    ge = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    jh = thunder.jit(h)
    t = jh(x, w)
    t.backward()
    return e.detach(), t.detach(), ge, (x.grad, w.grad), str(thunder.last_backward_traces(jh)[-1])


def test_functional_collectives_and_their_gradients():
    for e, t, ge, gt, backward in run_ranks(_functional_grads):
        torch.testing.assert_close(t, e)
        for a, b in zip(gt, ge):
            torch.testing.assert_close(a, b)
        assert "reduce_scatter(" in backward and "all_gather(" in backward  # each other's transpose


def _group_argument(rank, ws):
    import thunder

    pg = dist.new_group([0, 1])

    def f(x, group):
        dist.all_reduce(x, group=group)
        return x * 2

    jf = thunder.jit(f)
    first = jf(torch.ones(2) * (rank + 1), pg)
    prologue = str(thunder.last_prologue_traces(jf)[-1])

    import torch.distributed._functional_collectives as fc
    from torch.distributed.device_mesh import init_device_mesh

    def g(x, mesh):  # a device mesh as an argument, as the functional collectives take it
        return fc.all_reduce(x * 2, "sum", mesh) + 1

    mesh = init_device_mesh("cpu", (ws,))
    jg = thunder.jit(g)
    meshed = (jg(torch.ones(2) * (rank + 1), mesh), g(torch.ones(2) * (rank + 1), mesh))
    prologue += str(thunder.last_prologue_traces(jg)[-1])
    dist.destroy_process_group(pg)
    try:
        jf(torch.ones(2), pg)
        error = None
    except Exception as e:  # the group is gone: the prologue's check fails, the trace meets eager's error
        error = str(e)
    return first, prologue, error, meshed


def test_a_process_group_or_a_device_mesh_is_a_checked_input():
    for first, prologue, error, (meshed, eager) in run_ranks(_group_argument):
        torch.testing.assert_close(first, torch.full((2,), 6.0))
        assert "check_is(group" in prologue and "check_process_group(" in prologue
        torch.testing.assert_close(meshed, eager)
        assert "check_is(mesh" in prologue
        assert error is not None and "not initialized" in error


def _mismatched_shapes(rank, ws):
    import thunder

    def f(x):
        y = x + 1
        dist.all_reduce(y)
        return y

    try:
        thunder.jit(f)(torch.ones(3 + rank))
    except Exception as e:
        return type(e).__name__, str(e)
    return None, "no error"


def test_mismatched_shapes_across_ranks_are_a_clear_error():
    for kind, msg in run_ranks(_mismatched_shapes, timeout=60):
        assert kind == "CollectiveMismatchError", msg
        assert "float32[3]" in msg and "float32[4]" in msg and "rank 0" in msg and "rank 1" in msg
        assert "test_collectives.py" in msg and "dist.all_reduce(y)" in msg


def test_without_a_process_group_the_error_says_so():
    import thunder

    def f(x):
        dist.all_reduce(x)
        return x

    x = torch.ones(2)
    with pytest.raises(Exception, match="not initialised"):
        thunder.jit(f)(x)
    torch.testing.assert_close(x, torch.ones(2))  # the failed trace left the input alone


def _async_collective_tensor_wait(rank, ws):
    import torch.distributed._functional_collectives as fc

    import thunder

    def f(x):
        y = fc.all_reduce(x * 2, "sum", dist.group.WORLD)  # eager: an AsyncCollectiveTensor
        return y.wait() + 1

    jfn = thunder.jit(f)
    out = []
    for step in range(2):
        x = torch.arange(3.0) + rank + step
        out.append((jfn(x), f(x)))
    return out


def test_an_async_collective_tensor_s_wait_is_its_value():
    for results in run_ranks(_async_collective_tensor_wait):
        for got, expected in results:
            assert type(got) is torch.Tensor
            torch.testing.assert_close(got, expected)
