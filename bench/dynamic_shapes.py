"""Programs whose sizes change between calls, measured in one run: eager, thunder.jit (torch
executor), thunder.jit with the torch.compile executor (Inductor regions with symbolic sizes)
and torch.compile, each over the same sequence of calls (CPU time of the whole sequence,
compilations included: "first pass"; for thunder + Inductor the CPU time of its helper process,
which compiles the regions, is added), and the same sequence again ("again", after the helper's
compilations are loaded); ratios to eager's time for the sequence, and how many times each
compiled (thunder: cache entries; torch.compile: Dynamo's graphs).

Programs (tiny configurations, one thread):

- HF Llama ``generate()``, 120 new tokens, the default cache (it grows every token);
- HF Llama ``generate()``, 6 prompts of 5-10 tokens, 16 new tokens each;
- a 4-block GPT, 24 training steps on batches of their own length (16-60);
- a 4-layer MLP served at 40 batch sizes, 200 calls.

Targets (issue 37): first pass at most 2x eager and ahead of torch.compile's first pass, again
at most 1.05x eager, for the first three; the MLP again at most 1.2x.

    python bench/dynamic_shapes.py [--programs NAME ...] [--no-compile]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]  # (the repository first: tests/explorer is no package)
from support.models import GPT  # noqa: E402  (the GPT of the tests, at benchmark size)

import thunder  # noqa: E402


def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


# -- the programs: each gives (make the runner's model, run the sequence with it, count) ---------------
def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval()


def _generate(model, prompts, new_tokens):
    out = []
    with torch.no_grad():
        for ids in prompts:
            kwargs = {"max_new_tokens": new_tokens, "min_new_tokens": new_tokens, "do_sample": False}
            out.append(model.generate(ids, **kwargs))
    return out


def long_generation():
    model = _llama()
    prompts = [torch.arange(1, 6)[None]]
    return model, lambda m: _generate(m, prompts, 120)


def prompts_of_their_own_length():
    model = _llama()
    rng = random.Random(0)
    prompts = [
        torch.randint(3, 128, (1, rng.randint(5, 10)), generator=torch.Generator().manual_seed(i))
        for i in range(6)
    ]
    return model, lambda m: _generate(m, prompts, 16)


def gpt_training():
    torch.manual_seed(0)
    model = GPT(vocab=256, d=128, heads=4, layers=4, ctx=64)
    rng = random.Random(0)
    batches = [
        torch.randint(0, 256, (2, rng.randint(16, 60)), generator=torch.Generator().manual_seed(i))
        for i in range(24)
    ]

    def run(m):
        for ids in batches:
            m.zero_grad(set_to_none=True)
            F.cross_entropy(m(ids).flatten(0, 1), ids.flatten()).backward()

    return model, run


def mlp_serving():
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    model = nn.Sequential(*layers).eval()
    rng = random.Random(0)
    sizes = list(range(1, 41))
    xs = [torch.randn(rng.choice(sizes), 64) for _ in range(200)]

    def run(m):
        with torch.no_grad():
            for x in xs:
                m(x)

    return model, run


PROGRAMS = {
    "generate 120 tokens": long_generation,
    "generate 6 prompts": prompts_of_their_own_length,
    "GPT 24 batches": gpt_training,
    "MLP 40 batch sizes": mlp_serving,
}


def _compiled(model, runner: str):
    if runner == "thunder":
        return thunder.jit(model)
    if runner == "thunder+inductor":
        return thunder.jit(model, executors=["torchcompile", "torch"])
    torch._dynamo.reset()
    if hasattr(model, "generate"):  # transformers: the forward compiled, generate() as it is
        model = _fresh(model)
        model.forward = torch.compile(model.forward)
        return model
    return torch.compile(_fresh(model))


def _fresh(model):
    import copy

    return copy.deepcopy(model)


def _helper_cpu() -> float:
    """CPU seconds the Inductor helper process has used (0 where none runs)."""
    from thunder.executors.inductor import executor as torchcompileex

    proc = torchcompileex._helper.proc
    if proc is None or proc.poll() is not None:
        return 0.0
    with open(f"/proc/{proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _compilations(runner: str, m) -> str:
    if runner.startswith("thunder"):
        return str(thunder.compile_stats(m).cache_misses)
    if runner == "torch.compile":
        from torch._dynamo.utils import counters

        return str(counters["stats"].get("unique_graphs", 0))
    return "-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--programs", nargs="*", default=list(PROGRAMS))
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    import transformers

    transformers.logging.set_verbosity_error()
    runners = ["thunder"] + ([] if opts.no_compile else ["thunder+inductor", "torch.compile"])
    print(f"torch {torch.__version__}, 1 thread; CPU seconds of the whole sequence, ratio to eager's")
    print(
        f"{'program':22} {'eager s':>8} "
        + " ".join(f"{r + ' first':>20} {'again':>12} {'compiled':>8}" for r in runners)
    )
    for name in opts.programs:
        model, run = PROGRAMS[name]()
        run(model)  # (eager's own first call: torch's lazy initialisation is not counted as anyone's)
        eager = min(_cpu(lambda run=run, model=model: run(model)) for _ in range(2))
        cells = []
        for runner in runners:
            m = _compiled(model, runner)
            if runner == "torch.compile":
                from torch._dynamo.utils import counters

                counters.clear()
            helper = _helper_cpu()
            first = _cpu(lambda m=m, run=run: run(m))
            if runner == "thunder+inductor":
                from thunder.executors.registry import wait_for_compilations

                # loading what the helper compiled is this process's, the compiling the helper's
                first += _cpu(wait_for_compilations) + _helper_cpu() - helper
            again = min(_cpu(lambda m=m, run=run: run(m)) for _ in range(2))
            cells.append(
                f"{first:8.2f} ({first / eager:6.2f}x) {again:6.2f} ({again / eager:4.2f}x) {_compilations(runner, m):>8}"
            )
        print(f"{name:22} {eager:8.2f} " + " ".join(cells))


if __name__ == "__main__":
    main()
