"""A tiny transformers Llama through thunder.jit, against eager, measured in one run:

- a StaticCache: the first call (trace + passes) and the cached per-call time of a decoding step;
- the default cache (a DynamicCache the model makes in its first forward and returns): a
  decoding step while the sequence grows (each new length is a new shape, so a new trace),
  and the same lengths again (every step a cache hit);
- ``generate()`` of 16 tokens with each cache: compilations per sequence and time per sequence
  (the first sequence compiles, a second one of the same lengths hits).

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

TOKENS = 16


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def static_cache(model, jm, cfg, kw) -> None:
    def step(m, cache, pos):
        ids = torch.tensor([[pos % 128]])
        return m(input_ids=ids, use_cache=True, cache_position=torch.tensor([pos]), **{kw: cache})

    steps = 24
    print("StaticCache, a decoding step (one token):")
    ratios = []
    for name, m in (("eager", model), ("thunder", jm)):
        firsts, per_step = [], []
        for _ in range(3):
            cache = StaticCache(config=cfg, max_cache_len=32)
            t0 = time.perf_counter()
            step(m, cache, 0)  # the cache initialises itself on its first use
            firsts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for pos in range(1, steps + 1):
                step(m, cache, pos)
            per_step.append((time.perf_counter() - t0) / steps)
        print(
            f"  {name:8} first call {_ms(firsts[0])} (later caches {_ms(statistics.median(firsts[1:]))})"
            f"   decode step {_ms(statistics.median(per_step))}"
        )
        ratios.append(statistics.median(per_step))
    print(f"  decode step ratio thunder / eager {ratios[1] / ratios[0]:5.2f}")
    stats = thunder.compile_stats(jm)
    print(f"  thunder: {len(stats.entries)} compilations, {stats.cache_hits} cache hits")


def default_cache(model, cfg, kw) -> None:
    """The cache the model makes itself: the prefill returns it, each step passes it back."""

    def sequence(m) -> float:
        out = m(input_ids=torch.arange(1, 6)[None])
        t0 = time.perf_counter()
        for pos in range(TOKENS):
            out = m(input_ids=torch.tensor([[pos % 128]]), **{kw: out.past_key_values})
        return (time.perf_counter() - t0) / TOKENS

    jm = thunder.jit(model)
    print(f"Default cache (DynamicCache made by the model), a decoding step over {TOKENS} tokens:")
    eager = statistics.median(sequence(model) for _ in range(3))
    first = sequence(jm)
    misses = thunder.compile_stats(jm).cache_misses
    again = statistics.median(sequence(jm) for _ in range(3))
    print(f"  eager                         decode step {_ms(eager)}")
    print(
        f"  thunder, first sequence       decode step {_ms(first)}   ({misses} compilations with the prefill: "
        "one per length)"
    )
    print(f"  thunder, same lengths again   decode step {_ms(again)}   (ratio to eager {again / eager:5.2f})")


def generate(model, cfg) -> None:
    print(f"generate() of {TOKENS} tokens (greedy), thunder.jit(model).generate(...):")
    ids = torch.arange(1, 6)[None]
    for cache in (None, "static"):
        jm = thunder.jit(model)
        kwargs = {"max_new_tokens": TOKENS, "min_new_tokens": TOKENS, "do_sample": False}
        if cache:
            kwargs["cache_implementation"] = cache
        times, misses = {}, []
        for name, m in (("eager", model), ("thunder", jm)):
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                tokens = m.generate(ids, **kwargs)
                runs.append(time.perf_counter() - t0)
                if m is jm:
                    misses.append(thunder.compile_stats(jm).cache_misses)
            times[name] = runs
        assert tokens.tolist() == model.generate(ids, **kwargs).tolist()
        label = "StaticCache" if cache else "default cache"
        eager, again = statistics.median(times["eager"]), statistics.median(times["thunder"][1:])
        print(
            f"  {label:13}  eager {_ms(eager)}   thunder first {_ms(times['thunder'][0])}   thunder again "
            f"{_ms(again)} (ratio to eager {again / eager:5.2f})   compilations: {misses[0]} in the first "
            f"sequence ({TOKENS} forwards), {misses[-1] - misses[0]} in the next two"
        )


def main() -> None:
    transformers.logging.set_verbosity_error()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    cfg = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    kw = "past_key_values" if "past_key_values" in inspect.signature(model.forward).parameters else "cache"
    jm = thunder.jit(model)
    with torch.no_grad():
        static_cache(model, jm, cfg, kw)
        print(f"  final computation trace: {len(thunder.last_traces(jm)[-1].bound_symbols)} bound symbols")
        default_cache(model, cfg, kw)
        generate(model, cfg)


if __name__ == "__main__":
    main()
