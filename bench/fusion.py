"""Fusion on CPU: eager, torch.compile, thunder (torch executor), thunder (torch.compile
executor), measured in one run.

Programs: the 4-layer MLP of the tests on a [16, 64] input and a 4-block GPT (d=128, 4
heads, T=64, batch 2, vocabulary 256), each under ``torch.no_grad()`` and as a training step
(forward, ``out.sum().backward()``, gradients reset). Printed per row: the cached call's time
and its ratio to eager (best of ``--repeat`` runs of ``--number`` calls, wall clock, one
thread, the runners taking turns), and each runner's first call (the compilation included) in a fresh process with an
empty Inductor cache ("cold") and then again with the cache the first process filled
("warm"). Targets (issue 11): thunder with its best executor at or below eager and
torch.compile on every row; its first call under half of torch.compile's.

    python bench/fusion.py [--number N] [--repeat R] [--no-first]

``--first MODEL MODE RUNNER`` is the child process that measures one first call.
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

import thunder  # noqa: E402

RUNNERS = ("eager", "torch.compile", "thunder torch", "thunder torchcompile")
MODES = ("no-grad", "train step")


def models():
    from test_models import GPT, MLP

    torch.manual_seed(0)
    return {
        "MLP 4x64 [16,64]": (MLP(64, 4), torch.randn(16, 64)),
        "GPT 4x128 T=64 b=2": (
            GPT(vocab=256, d=128, heads=4, layers=4, ctx=64),
            torch.randint(0, 256, (2, 64)),
        ),
    }


def runner(name: str, model: torch.nn.Module):
    if name == "eager":
        return model
    if name == "torch.compile":
        return torch.compile(model)
    if name == "thunder torch":
        return thunder.jit(model, executors=["torch"])
    if name == "thunder torchcompile":
        return thunder.jit(model, executors=["torchcompile"])
    raise ValueError(name)


def call(fn, model, x, mode: str):
    if mode == "no-grad":
        with torch.no_grad():
            return fn(x)
    out = fn(x)
    out.sum().backward()
    for p in model.parameters():
        p.grad = None
    return out


def per_call_us(fns: dict, model, x, mode, number: int, repeat: int) -> dict[str, float]:
    """Best time per call of each runner; the runners take turns, so a busy machine slows
    them alike."""
    for fn in fns.values():
        for _ in range(max(number // 5, 3)):
            call(fn, model, x, mode)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                call(fn, model, x, mode)
            best[name] = min(best[name], (time.perf_counter() - t0) / number * 1e6)
    return best


def first_call(model_name: str, mode: str, name: str) -> None:
    """Child process: one first call, printed in seconds."""
    torch.set_num_threads(1)
    model, x = models()[model_name]
    model.train(mode != "no-grad")
    fn = runner(name, model)
    t0 = time.perf_counter()
    call(fn, model, x, mode)
    print(f"{time.perf_counter() - t0:.3f}")


def first_call_s(model_name: str, mode: str, name: str, cache: str) -> float:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": ROOT}
    cmd = [sys.executable, __file__, "--first", model_name, mode, name]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"{name} on {model_name} ({mode}) failed:\n{res.stderr[-3000:]}")
    return float(res.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--number", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-first", action="store_true", help="skip the first-call processes")
    parser.add_argument("--first", nargs=3, metavar=("MODEL", "MODE", "RUNNER"))
    opts = parser.parse_args()
    if opts.first:
        first_call(*opts.first)
        return
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))
    torch.set_num_threads(1)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread, cached call: best of {opts.repeat} x {opts.number} calls"
    )
    head = f"{'program':20} {'mode':10} {'runner':22} {'cached us':>10} {'/eager':>7}"
    if not opts.no_first:
        head += f" {'first cold s':>12} {'first warm s':>12}"
    print(head)
    for model_name, (model, x) in models().items():
        for mode in MODES:
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
            for name in RUNNERS:
                us = times[name]
                line = f"{model_name:20} {mode:10} {name:22} {us:10.1f} {us / times['eager']:6.2f}x"
                if not opts.no_first:
                    cache = tempfile.mkdtemp(prefix="inductor-first-")
                    cold = first_call_s(model_name, mode, name, cache)
                    warm = first_call_s(model_name, mode, name, cache)
                    line += f" {cold:12.2f} {warm:12.2f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
