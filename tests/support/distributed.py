"""Run a function on N processes of one gloo process group, and get each rank's result.

``run_ranks(fn, *args, world_size=2)`` starts ``world_size`` fresh processes (spawn), each
joins a gloo group on a free port of 127.0.0.1, calls ``fn(rank, world_size, *args)`` and sends
back what it returns (tensors included). A rank that raises makes the whole run fail with its
traceback; a run that takes longer than ``timeout`` seconds is killed and fails with what each
rank had reported, so a test never hangs. ``fn`` must be importable by name (a module-level
function of a test module).

On a machine with CUDA and NCCL, ``backend="nccl"`` runs the same with world size 1.
"""

from __future__ import annotations

import datetime
import os
import pickle
import queue
import socket
import traceback

import torch.multiprocessing as mp

RANK_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world_size, port, backend, fn, args, results, timeout) -> None:
    import torch.distributed as dist

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        dist.init_process_group(
            backend,
            rank=rank,
            world_size=world_size,
            init_method=f"tcp://127.0.0.1:{port}",
            timeout=datetime.timedelta(seconds=timeout),
        )
        try:
            out = fn(rank, world_size, *args)
        finally:
            dist.destroy_process_group()
        results.put((rank, "ok", pickle.dumps(out)))  # (plain pickle: the data travels, not a shared fd)
    except BaseException:
        results.put((rank, "error", traceback.format_exc()))


def run_ranks(fn, *args, world_size: int = 2, backend: str = "gloo", timeout: float = RANK_TIMEOUT) -> list:
    """``[fn(0, world_size, *args), fn(1, world_size, *args), ...]``, each on its own process."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(
            target=_worker, args=(r, world_size, port, backend, fn, args, results, timeout), daemon=True
        )
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    got: dict[int, tuple] = {}
    errors: list[str] = []
    try:
        import time

        deadline = time.monotonic() + timeout + 30
        while len(got) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(world_size)) - set(got))
                raise AssertionError(
                    f"ranks {missing} did not finish within {timeout + 30:.0f} s; the others reported: {got}"
                )
            try:
                rank, status, out = results.get(timeout=min(left, 1.0))
            except queue.Empty:
                if errors and all(not p.is_alive() or r in got for r, p in enumerate(procs)):
                    break
                continue
            got[rank] = (status, out)
            if status == "error":
                errors.append(f"--- rank {rank} ---\n{out}")
                break  # one rank failed: the others may wait for it forever
    finally:
        for p in procs:
            p.join(timeout=5 if not errors else 0.5)
            if p.is_alive():
                p.kill()
                p.join()
    if errors:
        raise AssertionError("a rank failed:\n" + "\n".join(errors))
    return [pickle.loads(got[r][1]) for r in range(world_size)]
