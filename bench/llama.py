"""A tiny transformers Llama with a StaticCache through thunder.jit: the first call (trace +
passes) and the cached per-call time of a decoding step against eager, measured in one run.

    python bench/llama.py
"""

from __future__ import annotations

import inspect
import statistics
import time
import warnings

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

import thunder


def main() -> None:
    transformers.logging.set_verbosity_error()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    cfg = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    kw = "past_key_values" if "past_key_values" in inspect.signature(model.forward).parameters else "cache"

    def step(m, cache, pos):
        ids = torch.tensor([[pos % 128]])
        return m(input_ids=ids, use_cache=True, cache_position=torch.tensor([pos]), **{kw: cache})

    jm = thunder.jit(model)
    steps = 24
    with torch.no_grad():
        for name, m in (("eager", model), ("thunder", jm)):
            firsts, per_step = [], []
            for _ in range(3):
                cache = StaticCache(config=cfg, max_cache_len=32)
                t0 = time.perf_counter()
                step(m, cache, 0)  # the cache initialises itself on its first use
                firsts.append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                for pos in range(1, steps + 1):
                    step(m, cache, pos)
                per_step.append((time.perf_counter() - t0) / steps * 1e3)
            print(
                f"{name:8} first call {firsts[0]:8.1f} ms (later caches {statistics.median(firsts[1:]):6.2f} ms)"
                f"   decode step {statistics.median(per_step):6.2f} ms"
            )
    stats = thunder.compile_stats(jm)
    print(f"thunder: {len(stats.entries)} compilations, {stats.cache_hits} cache hits")
    print(f"final computation trace: {len(thunder.last_traces(jm)[-1].bound_symbols)} bound symbols")


if __name__ == "__main__":
    main()
