"""FSDP2 training steps on 2 CPU processes (gloo): eager ``fully_shard`` against ``thunder.jit``
of the same sharded model, measured in one run.

A step is the forward of the model, the loss (eager, outside the model), ``backward`` (the
reduce-scatter of the gradients), the Adam step on the DTensor parameters and ``zero_grad``.
Per step: CPU time of the process (``time.process_time``: gloo's threads included), the
median over repeats, the two models taking turns (each rank runs the same sequence, as the
collectives need). Model: the 4-block GPT of ``bench/training.py`` (d=128, 4 heads, T=64,
batch 2, vocab 256), ``fully_shard`` on each block, then the root. Also thunder's first step
(the trace and passes, on top of the step).

    python bench/fsdp.py [--steps 20] [--blocks 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
from support.distributed import run_ranks  # noqa: E402


def _model(blocks: int, reshard: bool):
    from support.models import GPT  # (the GPT of the tests, at benchmark size)
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = GPT(vocab=256, d=128, heads=4, layers=blocks, ctx=64)
    for block in model.blocks:
        fully_shard(block, reshard_after_forward=reshard)
    fully_shard(model)
    return model


def _rank(rank: int, world: int, steps: int, blocks: int, reshard: bool) -> dict:
    import thunder

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(rank)
    x = torch.randint(0, 256, (2, 64), generator=gen)
    runs = {}
    for name in ("eager", "thunder"):
        model = _model(blocks, reshard)
        run = thunder.jit(model) if name == "thunder" else model
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(run=run, opt=opt):
            F.cross_entropy(run(x).flatten(0, 1), x.flatten()).backward()
            opt.step()
            opt.zero_grad()

        runs[name] = step
    t0 = time.perf_counter()
    runs["thunder"]()
    first = time.perf_counter() - t0
    for _ in range(3):  # warm up: the optimizer's states, the allocator
        for step in runs.values():
            step()
    times = {name: [] for name in runs}
    for _ in range(steps):
        for name, step in runs.items():
            t0 = time.process_time()
            step()
            times[name].append(time.process_time() - t0)
    return {"first": first, **{name: statistics.median(t) for name, t in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="reshard_after_forward=False on the blocks")
    opts = parser.parse_args()
    results = run_ranks(_rank, opts.steps, opts.blocks, not opts.keep, timeout=600)
    print(
        f"torch {torch.__version__}, 2 gloo ranks, 1 thread each, CPU time per training step (median of "
        f"{opts.steps}), GPT {opts.blocks}x128 T=64 B=2, reshard_after_forward={not opts.keep}"
    )
    print(f"{'rank':>4} {'eager ms':>9} {'thunder ms':>11} {'ratio':>6} {'first s':>8}")
    for rank, r in enumerate(results):
        e, t = r["eager"] * 1e3, r["thunder"] * 1e3
        print(f"{rank:4d} {e:9.2f} {t:11.2f} {t / e:6.3f} {r['first']:8.2f}")


if __name__ == "__main__":
    main()
