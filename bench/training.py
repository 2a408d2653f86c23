"""Training-step time through thunder's backward traces against eager and torch.compile,
measured in one run.

A step is ``zero_grad``, the forward of the model (jitted or not), the loss (eager, outside
the model, as a training loop computes it) and ``backward``; CPU time per step
(``time.process_time``, the minimum over repeats; "paired": the median over the repeats of
the ratio within one repeat, steadier on a shared machine), one thread. Models: the 4-layer MLP of
``bench/overhead.py`` on a [16, 64] batch (MSE loss), a 4-block GPT (d=128, 4 heads,
T=64, batch 2; cross-entropy loss), the same GPT with its attention through
``F.scaled_dot_product_attention`` at T=256 (eager: the CPU flash kernel, forward and backward),
and a tiny diffusers ``UNet2DConditionModel`` on 16x16 latents (GroupNorm, SiLU, convolutions,
cross-attention; MSE loss against the noise; skipped without diffusers). Also thunder's first step (trace, grad, split, passes,
the step itself: its CPU time in the table, as the steps', so that another process busy on the
machine does not count; its wall time and the compilation's largest passes below it), taken after eager's first step of the same model (timed too), so that what the
process pays once for the model's shapes is not counted as thunder's. With torch.compile also: thunder with the torch.compile executor
(``executors=["torchcompile", "torch"]``: Inductor compiles thunder's fusion regions, forward
and backward) against ``torch.compile`` of the model. Targets: thunder at most 1.0x eager, first
step under 100 ms, thunder's torch.compile executor ahead of torch.compile.

    python bench/training.py [--no-compile]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from support.models import GPT, Attention  # noqa: E402  (the GPT of the tests, at benchmark size)

import thunder  # noqa: E402
from thunder.executors.inductor import executor as torchcompileex  # noqa: E402


def mlp() -> nn.Module:
    layers = []
    for _ in range(4):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    return nn.Sequential(*layers)


def gpt_loss(logits, target):
    return F.cross_entropy(logits.flatten(0, 1), target.flatten())


class SDPAAttention(Attention):
    """The tests' causal self-attention through ``F.scaled_dot_product_attention`` (eager: its
    CPU flash kernel and that kernel's backward)."""

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))


def sdpa_gpt(**config) -> nn.Module:
    model = GPT(**config)
    for block in model.blocks:
        block.attn = SDPAAttention(config["d"], config["heads"])
    return model


class UNetStep(nn.Module):
    """A tiny diffusers ``UNet2DConditionModel`` (ResNet blocks with GroupNorm and SiLU,
    cross-attention transformer blocks through SDPA, up- and downsampling) called on a noisy
    latent, its timesteps and a text encoding: the noise prediction."""

    def __init__(self, size: int = 16):
        super().__init__()
        from diffusers import UNet2DConditionModel

        self.unet = UNet2DConditionModel(
            sample_size=size,
            in_channels=4,
            out_channels=4,
            layers_per_block=1,
            block_out_channels=(32, 64),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32,
            attention_head_dim=8,
            norm_num_groups=8,
        )
        self.register_buffer("timesteps", torch.tensor([10, 500]))
        self.register_buffer("text", torch.randn(2, 8, 32))

    def forward(self, latents):
        return self.unet(latents, self.timesteps, self.text).sample


def unet_case() -> tuple | None:
    """The UNet row, or None where diffusers is not installed."""
    try:
        import diffusers  # noqa: F401
    except ImportError:
        print("(diffusers not installed: no UNet row)")
        return None
    return (
        "diffusers UNet 16x16 B=2",
        UNetStep(16),
        torch.randn(2, 4, 16, 16),
        torch.randn(2, 4, 16, 16),
        F.mse_loss,
        3,
    )


def cases() -> list[tuple]:
    """The models measured: (name, model, input, target, loss function, steps per round)."""
    return [
        ("MLP 4x64 [16,64]", mlp(), torch.randn(16, 64), torch.randn(16, 64), F.mse_loss, 400),
        (
            "GPT 4x128 T=64 B=2",
            GPT(vocab=256, d=128, heads=4, layers=4, ctx=64),
            torch.randint(0, 256, (2, 64)),
            torch.randint(0, 256, (2, 64)),
            gpt_loss,
            20,
        ),
        (
            "SDPA GPT 4x128 T=256",
            sdpa_gpt(vocab=256, d=128, heads=4, layers=4, ctx=256),
            torch.randint(0, 256, (2, 256)),
            torch.randint(0, 256, (2, 256)),
            gpt_loss,
            5,
        ),
    ] + [c for c in (unet_case(),) if c is not None]


def step_fn(model, forward, x, target, loss_fn):
    def step():
        model.zero_grad(set_to_none=True)
        loss_fn(forward(x), target).backward()

    return step


def cpu_us(steps: dict, *, number: int, repeat: int = 15) -> tuple[dict, list[dict]]:
    """CPU time per call of each step, in us: the minimum over ``repeat`` rounds, the steps
    taking turns within a round (so a busy moment on the machine hits them all alike), in the
    opposite order every other round (so no step always runs first); and each round's times (for
    ``paired``)."""
    for step in steps.values():
        for _ in range(max(number // 4, 3)):
            step()
    best = dict.fromkeys(steps, math.inf)
    rounds = []
    for r in range(repeat):
        times = {}
        for name in list(steps) if r % 2 == 0 else list(steps)[::-1]:
            step = steps[name]
            t0 = time.process_time()
            for _ in range(number):
                step()
            times[name] = (time.process_time() - t0) / number
            best[name] = min(best[name], times[name])
        rounds.append(times)
    return {name: t * 1e6 for name, t in best.items()}, rounds


def paired(rounds: list[dict], a: str, b: str) -> float:
    """``a``'s time over ``b``'s, the median over the rounds of the ratio within a round: on a
    shared machine the minima of two steps may come from rounds the machine ran at different
    speeds, a round's pair from the same moment."""
    return statistics.median(t[a] / t[b] for t in rounds)


def first_step(jm, wall_ms: float) -> str:
    """Where the first step's time went: its wall time, the compilation's (wall: tracing, the
    passes, the Python code of the traces) and its largest passes, acquisition included."""
    stats = thunder.compile_stats(jm)
    passes: dict[str, float] = {}
    for _, pass_name, seconds in stats.last_pass_times:
        passes[pass_name] = passes.get(pass_name, 0.0) + seconds * 1e3
    largest = sorted(passes.items(), key=lambda kv: -kv[1])[:4]
    return (
        f"{wall_ms:.1f} ms wall; compiling {stats.last_trace_seconds * 1e3:.1f} ms wall, largest passes: "
        + ", ".join(f"{n} {ms:.1f}" for n, ms in largest)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread, CPU time per training step (first: thunder's first step)"
    )
    print(
        f"{'model':20} {'eager us':>10} {'thunder us':>11} {'ratio':>6} {'paired':>6} {'compile us':>11} "
        f"{'ratio':>6} {'first ms':>9}"
        + ("" if opts.no_compile else f" {'thunder+tc us':>14} {'ratio':>6} {'vs compile':>10} {'paired':>6}")
    )
    details = []
    for name, model, x, target, loss_fn, number in cases():
        # eager's first step of this model: what the process pays once for its shapes (the
        # allocator, the matmul library's first calls), which thunder's first step then does not
        c0 = time.process_time()
        step_fn(model, model, x, target, loss_fn)()
        eager_first = (time.process_time() - c0) * 1e3
        # thunder's first step: trace, grad, split and the other passes, then the step itself
        jm = thunder.jit(model)
        t0, c0 = time.perf_counter(), time.process_time()
        step_fn(model, jm, x, target, loss_fn)()
        first = (time.process_time() - c0) * 1e3
        details.append(
            f"{name}: {first_step(jm, (time.perf_counter() - t0) * 1e3)} (eager's first step before it: "
            f"{eager_first:.1f} ms CPU)"
        )
        steps = {
            "eager": step_fn(model, model, x, target, loss_fn),
            "thunder": step_fn(model, jm, x, target, loss_fn),
        }
        if not opts.no_compile:
            cm = torch.compile(model)
            steps["compile"] = step_fn(model, cm, x, target, loss_fn)
            steps["compile"]()
            jtc = thunder.jit(model, executors=["torchcompile", "torch"])
            steps["thunder+tc"] = step_fn(model, jtc, x, target, loss_fn)
            steps["thunder+tc"]()
            # its regions compile in a helper process meanwhile: the timed steps are Inductor's
            torchcompileex.wait()
            steps["thunder+tc"]()
        t, rounds = cpu_us(steps, number=number)
        assert thunder.last_backward_traces(jm), "thunder's gradients come from its backward trace"
        eager, th, comp = t["eager"], t["thunder"], t.get("compile", math.nan)
        line = (
            f"{name:20} {eager:10.1f} {th:11.1f} {th / eager:6.3f} {paired(rounds, 'thunder', 'eager'):6.3f} "
            f"{comp:11.1f} {comp / eager:6.3f} {first:9.1f}"
        )
        if not opts.no_compile:
            tc = t["thunder+tc"]
            line += f" {tc:14.1f} {tc / eager:6.3f} {tc / comp:10.3f} {paired(rounds, 'thunder+tc', 'compile'):6.3f}"
        print(line)
    print("first step:")
    for line in details:
        print(f"  {line}")


if __name__ == "__main__":
    main()
