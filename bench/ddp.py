"""Training-step time of DistributedDataParallel with thunder, on 2 gloo CPU processes.

A step is ``zero_grad``, the forward, a cross-entropy loss, ``backward`` (with the gradients'
all-reduces) and an AdamW step, of the small GPT of the tests (2 blocks, d=128, 4 heads, T=64,
batch 2 per rank, each rank its own data), three ways:

- eager: ``DistributedDataParallel(model)``;
- jit(DDP): ``thunder.jit(DistributedDataParallel(model))``, the all-reduces in thunder's
  backward trace;
- DDP(jit): ``DistributedDataParallel(thunder.jit(model))``, DDP's reducer hooks around the
  compiled module.

CPU time per step (``time.process_time`` of each rank's process, its gloo threads included),
the minimum and the median over repeats (the three taking turns within a round), one thread
per rank; rank 0's figures and the ratios against eager. Also the wall time of thunder's first
step (tracing and passes).

    python bench/ddp.py [--number 5] [--repeat 7]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "tests")]
from support.distributed import run_ranks  # noqa: E402
from support.models import GPT  # noqa: E402  (the GPT of the tests, at benchmark size)

FORMS = ("eager", "jit(DDP)", "DDP(jit)")


def _rank(rank: int, world_size: int, number: int, repeat: int) -> dict:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import thunder

    torch.set_num_threads(1)
    torch.manual_seed(0)
    base = GPT(vocab=256, d=128, heads=4, layers=2, ctx=64)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randint(0, 256, (2, 64), generator=g), torch.randint(0, 256, (2, 64), generator=g)
    steps, first = {}, {}
    for form in FORMS:
        model = copy.deepcopy(base)
        if form == "eager":
            fn = DDP(model)
        elif form == "jit(DDP)":
            fn = thunder.jit(DDP(model))
        else:
            fn = DDP(thunder.jit(model))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step(fn=fn, opt=opt):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(fn(x).flatten(0, 1), y.flatten()).backward()
            opt.step()

        dist.barrier()
        t0 = time.perf_counter()
        step()  # (thunder: trace, passes, then the step)
        first[form] = (time.perf_counter() - t0) * 1e3
        for _ in range(2):
            step()
        steps[form] = step
    times: dict[str, list[float]] = {form: [] for form in FORMS}
    for _ in range(repeat):
        for form, step in steps.items():
            dist.barrier()
            t0 = time.process_time()
            for _ in range(number):
                step()
            times[form].append((time.process_time() - t0) / number * 1e3)
    return {
        "min": {f: min(t) for f, t in times.items()},
        "median": {f: statistics.median(t) for f, t in times.items()},
        "first": first,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--number", type=int, default=5, help="steps per timed round")
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds")
    opts = parser.parse_args()
    ranks = run_ranks(_rank, opts.number, opts.repeat, timeout=1200)
    r = ranks[0]
    print(f"torch {torch.__version__}, 2 gloo CPU ranks, 1 thread each; CPU ms per training step (rank 0)")
    print(f"{'':10} {'min ms':>8} {'ratio':>6} {'median ms':>10} {'ratio':>6} {'first step ms':>14}")
    for form in FORMS:
        lo, med = r["min"][form], r["median"][form]
        first = "" if form == "eager" else f"{r['first'][form]:14.0f}"
        print(
            f"{form:10} {lo:8.2f} {lo / r['min']['eager']:6.3f} {med:10.2f} {med / r['median']['eager']:6.3f} {first}"
        )


if __name__ == "__main__":
    main()
