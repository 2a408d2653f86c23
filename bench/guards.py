"""What the cached call spends on checking that its program still fits: the prologue (input
unpacking, metadata checks and the guards on module state, globals and aliasing) against the
whole call, for the small GPT of the tests; torch.compile's guard evaluation beside it.

    python bench/guards.py [--no-compile]

CPU time (``time.process_time``), the minimum of repeats, under ``torch.no_grad()``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

import thunder

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support.models import GPT  # noqa: E402


def per_call_us(f, *args, repeat: int = 9, number: int = 500) -> float:
    for _ in range(50):
        f(*args)
    runs = []
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            f(*args)
        runs.append((time.process_time() - t0) / number * 1e6)
    return min(runs)


def compile_guard_us(model, idx) -> float | None:
    """The time torch.compile's guards take to accept ``model.forward``'s frame (its guard
    manager, called directly), or None where this torch does not expose it."""
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:
        return None
    compiled = torch.compile(model, backend="eager")
    compiled(idx)
    entries = _debug_get_cache_entry_list(type(model).forward.__code__)
    if not entries or not hasattr(entries[0], "guard_manager"):
        return None
    manager = entries[0].guard_manager
    frame = {"self": model, "idx": idx}
    if not manager.check(frame):
        return None
    return per_call_us(manager.check, frame)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile's guards")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT().eval()
    idx = torch.randint(0, 50, (2, 8))
    with torch.no_grad():
        jm = thunder.jit(model)
        jm(idx)
        entry = thunder.compile_stats(jm).entries[-1]
        prologue = entry.prologue
        lines = [b for b in entry.prologue_traces[-1].bound_symbols]
        whole = per_call_us(jm, idx)
        pro = per_call_us(prologue, idx)
        eager = per_call_us(model, idx)
        guard = None if opts.no_compile else compile_guard_us(model, idx)
    print(f"torch {torch.__version__}, 1 thread; small GPT (2 blocks, d=32), idx [2, 8]")
    print(f"prologue lines {len(lines)}")
    print(f"eager call            {eager:9.2f} us")
    print(f"thunder cached call   {whole:9.2f} us")
    print(f"  of which prologue   {pro:9.2f} us ({pro / whole:.0%})")
    if guard is not None:
        print(f"torch.compile guards  {guard:9.2f} us")
    elif not opts.no_compile:
        print("torch.compile guards  not separable on this torch")


if __name__ == "__main__":
    main()
