"""DistributedDataParallel with thunder, on 2 CPU processes with gloo, each rank with its own
data: ``thunder.jit(DDP(m))`` (the gradients averaged by all-reduces in thunder's backward
trace) and ``DDP(thunder.jit(m))`` (DDP's own reducer around the compiled module) train as
eager DDP does (parameters after optimizer steps, SGD with momentum and Adam); ``no_sync()``
accumulates locally and the next synced backward averages the accumulated gradients;
buffers are broadcast from rank 0 before the forward as DDP does (BatchNorm); the backward
trace starts each bucket's all-reduce as soon as its gradients exist and waits at the end.

Each test spawns the ranks once (about 3 s) and makes several checks there.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from support.distributed import run_ranks
from torch import nn

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


def _assert_close(got, want, what: str) -> None:
    try:
        torch.testing.assert_close(got, want)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))


class TinyTransformer(nn.Module):
    """Embedding, causal attention (scaled_dot_product_attention), layer norms, an MLP, a head."""

    def __init__(self, vocab: int = 17, dim: int = 16, heads: int = 2, length: int = 5):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(length, dim) * 0.1)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(
            dim, 3 * dim, bias=False
        )  # (a key bias has a zero gradient: Adam would scale noise)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        x = self.embed(idx) + self.pos
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        x = x + self.mlp(self.ln2(x))
        return self.head(x)


def _mlp_batch(rank, step):
    g = torch.Generator().manual_seed(100 * rank + step)
    return torch.randn(4, 6, generator=g), torch.randn(4, 3, generator=g)


def _transformer_batch(rank, step):
    g = torch.Generator().manual_seed(100 * rank + step)
    idx = torch.randint(0, 17, (3, 5), generator=g)
    return idx, torch.randint(0, 17, (3, 5), generator=g)


def _mlp_loss(out, y):
    return F.mse_loss(out, y)


def _transformer_loss(out, y):
    return F.cross_entropy(out.flatten(0, 1), y.flatten())


MODELS = {
    "mlp": (_mlp, _mlp_batch, _mlp_loss),
    "transformer": (TinyTransformer, _transformer_batch, _transformer_loss),
}
OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=0.01),
}
FORMS = ("eager", "jit(DDP)", "DDP(jit)")


def _wrapped(form: str, model: nn.Module, **ddp_kwargs):
    """The module to call, and the DDP object (``no_sync`` is on it)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    import thunder

    if form == "eager":
        ddp = DDP(model, **ddp_kwargs)
        return ddp, ddp
    if form == "jit(DDP)":
        ddp = DDP(model, **ddp_kwargs)
        return thunder.jit(ddp), ddp
    ddp = DDP(thunder.jit(model), **ddp_kwargs)
    return ddp, ddp


def _train(rank, world_size):
    """Each model, optimizer and form: the parameters after 3 steps."""
    results = {}
    for model_name, (make, batch, loss_fn) in MODELS.items():
        torch.manual_seed(rank)  # different initial values per rank: DDP broadcasts rank 0's
        base = make()
        for opt_name, make_opt in OPTIMIZERS.items():
            for form in FORMS:
                model = copy.deepcopy(base)
                fn, _ = _wrapped(form, model)
                opt = make_opt(model.parameters())
                for step in range(3):
                    x, y = batch(rank, step)
                    opt.zero_grad()
                    loss_fn(fn(x), y).backward()
                    opt.step()
                results[model_name, opt_name, form] = [p.detach().clone() for p in model.parameters()]
    return results


def test_training_steps_equal_eager_ddp_on_every_rank():
    ranks = run_ranks(_train)
    for results in ranks:
        for (model, opt, form), params in results.items():
            if form == "eager":
                continue
            for i, (got, want) in enumerate(zip(params, results[model, opt, "eager"])):
                _assert_close(got, want, f"{model} {opt} {form} parameter {i}")
    for key, params in ranks[0].items():  # the replicas stay equal
        for a, b in zip(params, ranks[1][key]):
            torch.testing.assert_close(a, b)


def _accumulate(rank, world_size):
    """no_sync for a micro-batch, then a synced one: the gradients and the parameters after a
    step, twice (the second time .grad is zeros rather than None: every parameter holds one);
    and the backward traces of the synced and the no_sync calls."""
    import thunder
    from thunder.core.verify import verify

    torch.manual_seed(0)
    base = _mlp()
    results, traces = {}, {}
    for form in FORMS:
        model = copy.deepcopy(base)
        fn, ddp = _wrapped(form, model, bucket_cap_mb=600 / 2**20)  # 600 bytes: several buckets
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        grads = []
        for it in range(2):
            opt.zero_grad(set_to_none=it == 0)
            x, y = _mlp_batch(rank, 2 * it)
            with ddp.no_sync():
                _mlp_loss(fn(x), y).backward()
            x, y = _mlp_batch(rank, 2 * it + 1)
            _mlp_loss(fn(x), y).backward()
            grads.append([p.grad.clone() for p in model.parameters()])
            opt.step()
        results[form] = grads, [p.detach().clone() for p in model.parameters()]
        if form == "jit(DDP)":
            stats = thunder.compile_stats(fn)
            # (per entry: whether its prologue asks for a call under no_sync, and its backward)
            traces = {
                "check_literal(ddp_require_backward_grad_sync, False)" in str(e.prologue_traces[-1]): str(
                    e.backward_traces[-1]
                )
                for e in stats.entries
            }
            traces["computation"] = str(stats.entries[0].computation_traces[-1])
            (held,) = [e.held_gradients for e in stats.entries if e.held_gradients is not None]
            traces["held"] = str(next(iter(held.traces.values()))[-1])  # (.grad held: the variant ran)
            every = [t for e in stats.entries for t in (*e.computation_traces, *e.backward_traces)]
            every += [t for ts in held.traces.values() for t in ts]
            for t in every:
                verify(t)
    return results, traces


def test_no_sync_then_sync_averages_the_accumulated_gradients():
    for results, traces in run_ranks(_accumulate):
        want_grads, want_params = results["eager"]
        for form in ("jit(DDP)", "DDP(jit)"):
            grads, params = results[form]
            for it, (got_it, want_it) in enumerate(zip(grads, want_grads)):
                for i, (g, w) in enumerate(zip(got_it, want_it)):
                    _assert_close(g, w, f"{form} iteration {it} grad {i}")
            for g, w in zip(params, want_params):
                torch.testing.assert_close(g, w)
        synced, local = traces[False], traces[True]
        assert "all_reduce(" not in local and "wait(" not in local
        # names stay the module's own
        assert "t_0_weight" in traces["computation"] and "t_4_bias" in traces["computation"]
        code = [ln.strip() for ln in synced.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        starts = [i for i, ln in enumerate(code) if "all_reduce(" in ln]
        waits = [i for i, ln in enumerate(code) if ".wait(" in ln]
        assert len(starts) >= 2 and len(starts) == len(waits), synced
        assert max(starts) < min(waits), "every wait comes after the last start"
        between = code[starts[0] + 1 : waits[0]]
        assert any("matmul(" in ln or "torch.mm(" in ln for ln in between), (
            "backward work overlaps the first bucket's all-reduce"
        )
        # the variant for held .grad takes them as inputs and adds them in before the all-reduce
        held = traces["held"].splitlines()
        signature = next(ln for ln in held if ln.startswith("def backward("))
        assert "grad_t_0_weight" in signature and "grad_t_4_bias" in signature, signature
        first_add = next(i for i, ln in enumerate(held) if "torch.add(grad_t_" in ln)
        assert first_add < next(i for i, ln in enumerate(held) if "all_reduce(" in ln)


def _bn_model():
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def _buffers(rank, world_size):
    """A model with BatchNorm buffers (DDP broadcasts them from rank 0 before a forward that
    follows a synced call): buffers and parameters after each call, through a no_sync call
    (the synced call after it does not broadcast, as in eager), and the output in eval mode;
    and the error for a DDP with a communication hook."""
    torch.manual_seed(rank)
    base = _bn_model()
    results = {}
    for form in FORMS:
        model = copy.deepcopy(base)
        fn, ddp = _wrapped(form, model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        states = []
        for step, sync in enumerate((True, True, False, True, True)):
            g = torch.Generator().manual_seed(10 * rank + step)
            x = torch.randn(6, 4, generator=g) * (rank + 1) + rank
            opt.zero_grad(set_to_none=sync)
            if sync:
                fn(x).square().mean().backward()
                opt.step()
            else:
                with ddp.no_sync():
                    fn(x).square().mean().backward()
            states.append([t.detach().clone() for t in (*model.parameters(), *model.buffers())])
        model.eval()
        with torch.no_grad():
            out = fn(torch.ones(2, 4))
        results[form] = states, out
    return results, _refusal()


def _refusal() -> str | None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    import thunder

    def hook(state, bucket):
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])

    ddp = DDP(_mlp())
    ddp.register_comm_hook(None, hook)
    try:
        thunder.jit(ddp)(torch.ones(2, 6))
    except Exception as e:
        return str(e)
    return None


def test_buffers_broadcast_from_rank_0_as_eager():
    for results, refusal in run_ranks(_buffers):
        want_states, want_out = results["eager"]
        for form in ("jit(DDP)", "DDP(jit)"):
            states, out = results[form]
            for step, (got, want) in enumerate(zip(states, want_states)):
                for i, (a, b) in enumerate(zip(got, want)):
                    _assert_close(a, b, f"{form} step {step} tensor {i}")
            torch.testing.assert_close(out, want_out)
        # what thunder cannot trace of DDP is a clear error that names it and the other form
        assert refusal is not None and "communication hook" in refusal, refusal
        assert "DistributedDataParallel(thunder.jit(module))" in refusal


def _train_on_cuda(rank, world_size):
    """The transformer, Adam, every form, on CUDA (NCCL): the parameters after 3 steps."""
    torch.cuda.set_device(rank)
    results = {}
    torch.manual_seed(0)
    base = TinyTransformer().cuda()
    for form in FORMS:
        model = copy.deepcopy(base)
        fn, _ = _wrapped(form, model, device_ids=[rank])
        opt = OPTIMIZERS["adam"](model.parameters())
        for step in range(3):
            x, y = (t.cuda() for t in _transformer_batch(rank, step))
            opt.zero_grad()
            _transformer_loss(fn(x), y).backward()
            opt.step()
        results[form] = [p.detach().cpu() for p in model.parameters()]
    return results


@pytest.mark.cuda
@pytest.mark.skipif(
    not torch.cuda.is_available() or not dist.is_nccl_available(), reason="needs CUDA and NCCL"
)
def test_training_steps_on_nccl_with_one_rank():
    (results,) = run_ranks(_train_on_cuda, world_size=1, backend="nccl")
    for form in FORMS[1:]:
        for i, (got, want) in enumerate(zip(results[form], results["eager"])):
            _assert_close(got, want, f"{form} parameter {i} on CUDA")


def _uneven_last_batch(rank, world_size):
    """A last batch smaller on one rank (a dataset that does not divide evenly): that rank
    traces again alone; its plan reduces the same gradients, so it runs at once."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    import thunder

    torch.manual_seed(0)
    model = _mlp()
    eager_model = copy.deepcopy(model)
    fn, eager = thunder.jit(DDP(model)), DDP(eager_model)
    for step in range(3):
        n = 3 if (step == 2 and rank == 1) else 8
        x = torch.randn(n, 6, generator=torch.Generator().manual_seed(10 * rank + step))
        for f in (fn, eager):
            f(x).pow(2).mean().backward()
    return [(p.grad.clone(), q.grad.clone()) for p, q in zip(model.parameters(), eager_model.parameters())]


def test_an_uneven_last_batch_on_one_rank_trains_as_eager():
    for grads in run_ranks(_uneven_last_batch, timeout=60):
        for got, expected in grads:
            _assert_close(got, expected, "gradient")


class _Branchy(nn.Module):
    """A layer used on rank 0 only (``side``), one used on no rank (``spare``) and one used on
    every rank: DDP with ``find_unused_parameters=True`` trains it."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 8)
        self.side = nn.Linear(8, 8)
        self.spare = nn.Linear(8, 2)
        self.head = nn.Linear(8, 3)

    def forward(self, x, use_side: bool):
        h = torch.tanh(self.body(x))
        if use_side:
            h = h + self.side(h)
        return self.head(h)


def _unused_parameters(rank, world_size):
    """Four steps of thunder.jit(DDP(m, find_unused_parameters=True)) and of eager DDP, where
    the side layer is used on rank 0 only (on both at the third step; the fourth accumulates a
    backward under ``no_sync()`` first): the gradients and parameters after each step, and which
    ``.grad`` is None."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    import thunder

    torch.manual_seed(0)
    model = _Branchy()
    eager_model = copy.deepcopy(model)
    ddp = DDP(model, find_unused_parameters=True)
    fn = thunder.jit(ddp)
    eager = DDP(eager_model, find_unused_parameters=True)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, eager_model)]
    steps = []
    for step in range(4):
        use_side = rank == 0 or step == 2
        x = torch.randn(4, 6, generator=torch.Generator().manual_seed(10 * rank + step))
        for f, d, opt in zip((fn, eager), (ddp, eager), opts):
            opt.zero_grad()
            if step == 3:  # accumulated under no_sync (the side layer on rank 1 only), then synced
                with d.no_sync():
                    f(x, rank == 1).pow(2).mean().backward()
            f(x, use_side).pow(2).mean().backward()
            opt.step()
        steps.append(
            [
                (name, p.grad is None, q.grad is None, p.grad, q.grad, p.detach().clone(), q.detach().clone())
                for (name, p), q in zip(model.named_parameters(), eager_model.parameters())
            ]
        )
    return steps


def test_find_unused_parameters_trains_a_layer_used_on_one_rank_as_eager():
    for steps in run_ranks(_unused_parameters, timeout=90):
        for step, params in enumerate(steps):
            for name, none, eager_none, grad, eager_grad, value, eager_value in params:
                assert none == eager_none, f"step {step}: {name}.grad is None: {none}, eager: {eager_none}"
                if not none:
                    _assert_close(grad, eager_grad, f"step {step}: {name}.grad")
                _assert_close(value, eager_value, f"step {step}: {name}")
