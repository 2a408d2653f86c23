"""thunderfx next to torch.compile and thunder.jit, in one run: first call and cached call.

Programs: the GELU MLP and the 4-block GPT of ``bench/fusion.py``, under ``torch.no_grad()``
and as a training step (forward, ``out.float().sum().backward()``). Runners:

- ``eager``; ``torch.compile`` (Dynamo + Inductor); ``dynamo, eager backend``
  (``torch.compile(backend="eager")``: Dynamo's own cost per call, for reference);
- ``thunder.jit`` (thunder's default executors) and ``thunder.jit torchcompile`` (its
  torch.compile fusion executor, compiling on the calling thread);
- ``thunderfx`` (``thunder.dynamo.thunderfx``: Dynamo's graphs compiled by thunder.jit) and
  ``thunderfx torchcompile`` (the same with the torch.compile fusion executor);
- ``thunderfx, thunder's checks``: ``thunderfx`` with each piece's full thunder prologue on
  every call instead of the one that leaves Dynamo's guards to Dynamo (the cost it saves).

The cached call: the minimum over ``--repeat`` runs of ``--number`` calls, runners taking
turns, process CPU time on one thread (as ``bench/fusion.py``). The first call: making the
runner and its first call, in a fresh process with an empty Inductor cache (wall clock).

    python bench/thunderfx.py [--programs NAME ...] [--number N] [--repeat R] [--no-first]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]

import torch  # noqa: E402
from fusion import ROOT, call, make  # noqa: E402

import thunder  # noqa: E402
from thunder.executors.inductor import executor as torchcompileex  # noqa: E402

# Inductor compiles before a first call returns: the first call is the time until compiled
torchcompileex.compile_in_background(False)

PROGRAMS = ("GELU MLP 4x64", "GPT 4x128 T=64")
MODES = ("no-grad", "train step")
RUNNERS = (
    "eager",
    "torch.compile",
    "dynamo, eager backend",
    "thunder.jit",
    "thunder.jit torchcompile",
    "thunderfx",
    "thunderfx torchcompile",
    "thunderfx, thunder's checks",
)
FULL_CHECKS = "thunderfx, thunder's checks"


def runner(name: str, model):
    if name == "eager":
        return model
    if name == "torch.compile":
        return torch.compile(model)
    if name == "dynamo, eager backend":
        return torch.compile(model, backend="eager")
    executors = {"executors": ["torchcompile"]} if name.endswith(" torchcompile") else {}
    if name.startswith("thunder.jit"):
        return thunder.jit(model, **executors)
    if name.startswith("thunderfx"):
        from thunder.dynamo import thunderfx  # imports Dynamo: counted in the first call

        return thunderfx(model, **executors)
    raise ValueError(name)


def full_checks(fn) -> None:
    """Make every piece of a thunderfx program call its thunder function (whose prologue checks
    everything) instead of the entry with Dynamo's guards left to Dynamo."""
    for piece in fn.pieces:
        piece._fast = None
        piece.static = False


def per_call_us(fns: dict, model, x, mode: str, number: int, repeat: int) -> dict[str, float]:
    for fn in fns.values():
        for _ in range(max(number // 5, 3)):
            call(fn, model, x, mode)
    full_checks(fns[FULL_CHECKS])
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.process_time()
            for _ in range(number):
                call(fn, model, x, mode)
            best[name] = min(best[name], (time.process_time() - t0) / number * 1e6)
    return best


def first_call(program: str, mode: str, name: str) -> None:
    """Child process: one first call, printed in seconds (wall clock)."""
    torch.set_num_threads(1)
    model, x = make(program, "cpu")
    model.train(mode != "no-grad")
    t0 = time.perf_counter()
    call(runner(name, model), model, x, mode)
    print(f"{time.perf_counter() - t0:.3f}")


def first_call_s(program: str, mode: str, name: str) -> float:
    cache = tempfile.mkdtemp(prefix="inductor-thunderfx-")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": ROOT}
    cmd = [sys.executable, __file__, "--first-call", program, mode, name]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"{name} on {program} ({mode}) failed:\n{res.stderr[-3000:]}")
    return float(res.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--programs", nargs="*", help="name prefixes (default: both)")
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-first", action="store_true", help="skip the first calls (fresh processes)")
    parser.add_argument("--first-call", nargs=3, metavar=("PROGRAM", "MODE", "RUNNER"))
    opts = parser.parse_args()
    if opts.first_call:
        first_call(*opts.first_call)
        return
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))
    torch.set_num_threads(1)
    names = [n for n in PROGRAMS if not opts.programs or any(n.startswith(p) for p in opts.programs)]
    print(
        f"torch {torch.__version__} on cpu; cached call: min of {opts.repeat} x {opts.number} calls "
        "(process CPU time, 1 thread); first call: fresh process, empty Inductor cache (wall clock)"
    )
    print(
        f"{'program':16} {'mode':10} {'runner':28} {'cached us':>10} {'/eager':>7} {'first s':>8}", flush=True
    )
    for program in names:
        for mode in MODES:
            torch._dynamo.reset()
            model, x = make(program, "cpu")
            model.train(mode != "no-grad")
            expected = call(model, model, x, mode)
            fns = {name: runner(name, model) for name in RUNNERS}
            for name, fn in fns.items():
                torch.testing.assert_close(
                    call(fn, model, x, mode),
                    expected,
                    rtol=1e-4,
                    atol=1e-4,
                    msg=lambda m, n=name: f"{n}: {m}",
                )
            times = per_call_us(fns, model, x, mode, opts.number, opts.repeat)
            for name in fns:
                us = times[name]
                line = f"{program:16} {mode:10} {name:28} {us:10.1f} {us / times['eager']:6.2f}x"
                if not opts.no_first and name != FULL_CHECKS:
                    line += f" {first_call_s(program, mode, name):8.2f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
