"""Fusion, measured in one run: eager, torch.compile, thunder with the torch executor, thunder
with the torch.compile executor (and with nvFuser where it runs), as ratios to eager.

Programs (``PROGRAMS``): an elementwise chain (``[256, 256]``), a GELU MLP (4 layers,
``[16, 64]``), layer norm and softmax (``[64, 256]``), one GPT block (``d=128``, ``T=64``,
batch 2) and a 4-block GPT (``d=128``, ``T=64``, batch 2, vocabulary 256); each under
``torch.no_grad()`` and as a training step (forward, ``out.float().sum().backward()``,
gradients reset). Every runner's output is checked against eager first.

Per row: the cached call's time and its ratio to eager: the minimum over ``--repeat`` runs of
``--number`` calls, the runners taking turns so that a busy machine slows them alike. On CPU
the time is the process's CPU time (one thread, so other programs running on the machine
count less); on CUDA it is wall-clock time with the device synchronised. With ``--first``,
also each runner's first call (making the runner, ``torch.compile(model)`` or
``thunder.jit(model)``, and the compilation included) in a fresh process with an empty
Inductor cache ("cold"), then again with the cache that process filled ("warm"). Thunder's
torch.compile executor compiles in a helper process by default, its first calls running the
regions as torch calls meanwhile; "compiled" gives the seconds until its compiled regions
were ready and loaded (for the other runners it is the first call). The row "...on the
calling thread" is the same executor with ``torchcompileex.compile_in_background(False)``:
Inductor compiles before the first call returns.

Targets (issue 11): thunder with its best executor at or below eager and torch.compile on
every row; its first call under half of torch.compile's.

    python bench/fusion.py [--device cpu|cuda] [--programs NAME ...] [--number N] [--repeat R] [--first]

``--first-call PROGRAM MODE RUNNER`` is the child process that measures one first call.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import thunder  # noqa: E402
from thunder.executors.inductor import executor as torchcompileex  # noqa: E402

MODES = ("no-grad", "train step")
# first calls only (a process of its own): the torch.compile executor compiling on the
# calling thread, before the first call returns
SYNC = "thunder torchcompile, compiling on the calling thread"


class Chain(nn.Module):
    """Elementwise ops and one reduction: what fusion saves most on (memory traffic)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(256))

    def forward(self, x):
        y = torch.sin(x) * self.scale + 1
        y = F.gelu(y).exp().tanh() * x
        return y - y.mean(-1, keepdim=True)


class GeluMLP(nn.Module):
    def __init__(self, d=64, layers=4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = F.gelu(layer(x))
        return x


class Softmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(256))

    def forward(self, x):
        return torch.softmax(x * self.scale, dim=-1)


def programs() -> dict:
    """name -> (make model and input); seeded, so every process makes the same ones."""
    from support.models import GPT, Block

    return {
        "chain [256,256]": lambda: (Chain(), torch.randn(256, 256)),
        "GELU MLP 4x64": lambda: (GeluMLP(), torch.randn(16, 64)),
        "layer norm [64,256]": lambda: (nn.LayerNorm(256), torch.randn(64, 256)),
        "softmax [64,256]": lambda: (Softmax(), torch.randn(64, 256)),
        "GPT block d=128": lambda: (Block(d=128, heads=4), torch.randn(2, 64, 128)),
        "GPT 4x128 T=64": lambda: (
            GPT(vocab=256, d=128, heads=4, layers=4, ctx=64),
            torch.randint(0, 256, (2, 64)),
        ),
    }


def make(name: str, device: str):
    torch.manual_seed(0)
    model, x = programs()[name]()
    return model.to(device), x.to(device)


def runners(device: str) -> tuple[str, ...]:
    from thunder.executors.nvfuser.executor import executor as nvfuser

    names = ("eager", "torch.compile", "thunder torch", "thunder torchcompile")
    return names + (("thunder nvfuser",) if device == "cuda" and nvfuser.unavailable_reason() is None else ())


def runner(name: str, model: nn.Module):
    if name == "eager":
        return model
    if name == "torch.compile":
        return torch.compile(model)
    if name == SYNC:
        torchcompileex.compile_in_background(False)
        return thunder.jit(model, executors=["torchcompile"])
    if name.startswith("thunder "):
        return thunder.jit(model, executors=[name.split()[1]])
    raise ValueError(name)


def call(fn, model, x, mode: str):
    if mode == "no-grad":
        with torch.no_grad():
            return fn(x)
    out = fn(x)
    out.float().sum().backward()
    for p in model.parameters():
        p.grad = None
    return out


def clock(device: str):
    if device == "cuda":

        def wall():
            torch.cuda.synchronize()
            return time.perf_counter()

        return wall
    return time.process_time


def per_call_us(fns: dict, model, x, mode, number: int, repeat: int, device: str) -> dict[str, float]:
    """Minimum time per call of each runner; the runners take turns."""
    now = clock(device)
    for fn in fns.values():
        for _ in range(max(number // 5, 3)):
            call(fn, model, x, mode)
    torchcompileex.wait()  # the cached calls are Inductor's, not the torch calls run meanwhile
    for fn in fns.values():
        call(fn, model, x, mode)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = now()
            for _ in range(number):
                call(fn, model, x, mode)
            best[name] = min(best[name], (now() - t0) / number * 1e6)
    return best


def first_call(program: str, mode: str, name: str, device: str) -> None:
    """Child process: one first call, printed in seconds (wall clock)."""
    torch.set_num_threads(1)
    model, x = make(program, device)
    model.train(mode != "no-grad")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    fn = runner(name, model)  # torch.compile imports Dynamo and Inductor here, thunder on its first call
    call(fn, model, x, mode)
    sync()
    first = time.perf_counter() - t0
    torchcompileex.wait()  # thunder's Inductor regions compile in a helper process meanwhile
    print(f"{first:.3f} {time.perf_counter() - t0:.3f}")


def first_call_s(program: str, mode: str, name: str, device: str, cache: str) -> tuple[float, float]:
    """The first call's seconds, and the seconds until every compilation it started is done."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": ROOT}
    cmd = [sys.executable, __file__, "--device", device, "--first-call", program, mode, name]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"{name} on {program} ({mode}) failed:\n{res.stderr[-3000:]}")
    first, done = res.stdout.strip().splitlines()[-1].split()
    return float(first), float(done)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--programs", nargs="*", help="names or name prefixes (default: all)")
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--first", action="store_true", help="also measure first calls (fresh processes)")
    parser.add_argument("--first-call", nargs=3, metavar=("PROGRAM", "MODE", "RUNNER"))
    opts = parser.parse_args()
    device = opts.device
    if opts.first_call:
        first_call(*opts.first_call, device)
        return
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))
    torch.set_num_threads(1)
    names = [n for n in programs() if not opts.programs or any(n.startswith(p) for p in opts.programs)]
    what = "wall clock, device synchronised" if device == "cuda" else "process CPU time, 1 thread"
    print(
        f"torch {torch.__version__} on {device}; cached call: min of {opts.repeat} x {opts.number} calls ({what})"
    )
    head = f"{'program':20} {'mode':10} {'runner':22} {'cached us':>10} {'/eager':>7}"
    if opts.first:
        head += f" {'first cold s':>12} {'first warm s':>12} {'compiled cold/warm s':>21}"
    print(head, flush=True)
    for program in names:
        for mode in MODES:
            model, x = make(program, device)
            model.train(mode != "no-grad")
            expected = call(model, model, x, mode)
            fns = {name: runner(name, model) for name in runners(device)}
            for name, fn in fns.items():
                torch.testing.assert_close(
                    call(fn, model, x, mode),
                    expected,
                    rtol=1e-4,
                    atol=1e-4,
                    msg=lambda m, n=name: f"{n}: {m}",
                )
            times = per_call_us(fns, model, x, mode, opts.number, opts.repeat, device)
            for name in fns:
                us = times[name]
                line = f"{program:20} {mode:10} {name:22} {us:10.1f} {us / times['eager']:6.2f}x"
                if opts.first:
                    cache = tempfile.mkdtemp(prefix="inductor-first-")
                    cold, cold_done = first_call_s(program, mode, name, device, cache)
                    warm, warm_done = first_call_s(program, mode, name, device, cache)
                    line += f" {cold:12.2f} {warm:12.2f} {cold_done:10.2f}/{warm_done:<10.2f}"
                print(line, flush=True)
                if opts.first and name == "thunder torchcompile":
                    cache = tempfile.mkdtemp(prefix="inductor-first-")
                    cold, cold_done = first_call_s(program, mode, SYNC, device, cache)
                    warm, warm_done = first_call_s(program, mode, SYNC, device, cache)
                    print(
                        f"{'':20} {mode:10} {'  ...on the calling thread':22} {'':10} {'':7} {cold:12.2f} "
                        f"{warm:12.2f} {cold_done:10.2f}/{warm_done:<10.2f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
