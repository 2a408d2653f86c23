"""The distributed training steps notebook 08 explores: 2 CPU processes on one gloo group.

Each process builds the same small GPT-style transformer (seed 0) and trains it for a few
steps on its own batches, twice:

- DDP: ``thunder.jit(DistributedDataParallel(model))``, against eager DDP on a copy;
- FSDP2: ``thunder.jit(model)`` of a model sharded with ``fully_shard`` (each block, then the
  root), against eager FSDP2 on a copy;

prints each step's loss and the largest difference between thunder's parameters and eager's,
then saves its compilation with every line timed on one more step's batch
(``explorer.save_rank``) under ``OUT/ddp`` and ``OUT/fsdp``, where the notebook loads both
ranks (``explorer.load_ranks``).

    python notebooks/distributed_step.py OUT [--steps 3]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import socket
import sys

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB, DIM, HEADS, BLOCKS, T, BATCH = 64, 32, 4, 2, 16, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        # (no bias on q, k, v: the key's bias gets a gradient of zero up to rounding, which Adam
        # would scale up to a step of lr, differently in any two programs)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM, bias=False), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(T, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.ln_f, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def batch(rank: int, step: int):
    g = torch.Generator().manual_seed(1000 * rank + step)
    idx = torch.randint(0, VOCAB, (BATCH, T), generator=g)
    return idx, torch.roll(idx, -1, dims=1)


def loss_of(model, idx, target):
    return F.cross_entropy(model(idx).reshape(-1, VOCAB), target.reshape(-1))


def train(model, rank: int, steps: int) -> list[float]:
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model, *batch(rank, step))
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 5))
    return losses


def largest_difference(a: nn.Module, b: nn.Module) -> float:
    diffs = []
    for p, q in zip(a.parameters(), b.parameters()):
        p, q = (x.full_tensor() if hasattr(x, "full_tensor") else x for x in (p.detach(), q.detach()))
        diffs.append((p - q).abs().max().item())
    return max(diffs)


def run(rank: int, world_size: int, port: int, out: str, steps: int) -> None:
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    sys.path.insert(0, ROOT)
    import explorer
    import thunder

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", rank=rank, world_size=world_size, init_method=f"tcp://127.0.0.1:{port}",
        timeout=datetime.timedelta(seconds=60),
    )  # fmt: skip
    report = {}
    try:
        torch.manual_seed(0)
        model = TinyGPT()
        # buckets of 32 KB (DDP's default is 25 MB): this small model gets several, so each
        # bucket's all-reduce overlaps the backward of the layers before it
        eager = DDP(copy.deepcopy(model), bucket_cap_mb=0.03)
        jitted = thunder.jit(DDP(model, bucket_cap_mb=0.03))
        report["ddp"] = {
            "thunder losses": train(jitted, rank, steps),
            "eager losses": train(eager, rank, steps),
            "largest parameter difference": largest_difference(model, eager.module),
        }
        explorer.save_rank(jitted, os.path.join(out, "ddp"), args=(batch(rank, steps)[0],))

        torch.manual_seed(0)
        model, reference = TinyGPT(), None
        reference = copy.deepcopy(model)
        for m in (model, reference):
            for blk in m.blocks:
                fully_shard(blk)
            fully_shard(m)
        jitted = thunder.jit(model)
        report["fsdp"] = {
            "thunder losses": train(jitted, rank, steps),
            "eager losses": train(reference, rank, steps),
            "largest parameter difference": largest_difference(model, reference),
        }
        explorer.save_rank(jitted, os.path.join(out, "fsdp"), args=(batch(rank, steps)[0],))
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out, f"report{rank}.json"), "w") as f:
        json.dump(report, f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(2, port, args.out, args.steps), nprocs=2, join=True)
    for rank in range(2):
        with open(os.path.join(args.out, f"report{rank}.json")) as f:
            for name, r in json.load(f).items():
                print(
                    f"rank {rank} {name}: thunder losses {r['thunder losses']}, eager {r['eager losses']}, "
                    f"largest parameter difference {r['largest parameter difference']:.2e}"
                )


if __name__ == "__main__":
    main()
