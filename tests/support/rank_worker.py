"""One worker of a small distributed run (gloo, CPU) for the rank tests: it jits a program,
times its lines and saves its rank with ``explorer.save_rank``; next to that file it writes
what its own (live) model renders, for the test to compare the loaded model's views with.

    python tests/support/rank_worker.py RANK WORLD_SIZE PORT FOLDER
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist

import explorer
import thunder
from explorer.measure.runner import measure
from explorer.views.graph import graph_dot
from explorer.views.html import model_html


def program(x):
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    z = x.sin().cos()  # overlaps the all_reduce
    work.wait()
    gathered = torch.empty(x.shape[0] * dist.get_world_size(), dtype=x.dtype)
    dist.all_gather_single(gathered, z)
    scattered = torch.empty(x.shape[0] // dist.get_world_size(), dtype=x.dtype)
    dist.reduce_scatter_single(scattered, y)
    return gathered, scattered


def main(rank: int, world: int, port: str, folder: str) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world, init_method=f"tcp://127.0.0.1:{port}")
    try:
        jfn = thunder.jit(program)
        x = torch.full((64,), float(rank + 1))
        jfn(x)
        model = measure(jfn, (x,), repeat=1).attach(explorer.model_of(jfn))
        explorer.save_rank(model, folder)
        views = {
            "html": model_html(model),
            "dots": {k: graph_dot(s.final, s.proxies, depth=2)[0] for k, s in model.series.items()},
        }
        with open(os.path.join(folder, f"views{rank}.json"), "w", encoding="utf-8") as f:
            json.dump(views, f)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
