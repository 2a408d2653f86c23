"""Per-call overhead of thunder against eager PyTorch and torch.compile, measured in one run.

Prints, for ``lambda x: x * 2 + 1`` on a 4-element tensor and for a 4-layer MLP
``nn.Module`` on a [16, 64] input under ``torch.no_grad()``: eager time, thunder's cached
per-call time and the ratio, torch.compile's cached per-call time, and thunder's first-call
time (trace + passes + callables). Targets: tiny <= 2.0x eager, MLP <= 1.3x, MLP first call
< 100 ms.

    python bench/overhead.py [--no-compile]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import thunder


def per_call_us(f, *args, repeat: int = 7, number: int = 2000) -> float:
    for _ in range(200):
        f(*args)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f(*args)
        runs.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(runs)


def first_call_ms(make, *args) -> float:
    f = make()
    t0 = time.perf_counter()
    f(*args)
    return (time.perf_counter() - t0) * 1e3


def mlp() -> torch.nn.Module:
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer")
    opts = parser.parse_args()
    torch.set_num_threads(1)

    def tiny(x):
        return x * 2 + 1

    model = mlp()
    cases = [
        ("tiny x*2+1 [4]", tiny, torch.ones(4), 2.0),
        ("MLP 4x64 [16,64]", model, torch.randn(16, 64), 1.3),
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread")
    print(
        f"{'program':20} {'eager us':>9} {'thunder us':>11} {'ratio':>6} {'target':>7} {'compile us':>11} {'first ms':>9}"
    )
    with torch.no_grad():
        for name, fn, x, target in cases:
            first = first_call_ms(lambda fn=fn: thunder.jit(fn), x)
            jfn = thunder.jit(fn)
            torch.testing.assert_close(jfn(x), fn(x))
            eager = per_call_us(fn, x)
            th = per_call_us(jfn, x)
            comp = float("nan")
            if not opts.no_compile:
                cfn = torch.compile(fn)
                cfn(x)
                comp = per_call_us(cfn, x, number=500)
            print(
                f"{name:20} {eager:9.2f} {th:11.2f} {th / eager:6.2f} {target:6.1f}x {comp:11.2f} {first:9.1f}"
            )


if __name__ == "__main__":
    main()
