"""Hand-built traces for the explorer's tests: every tag, and traces of any length."""

from __future__ import annotations

import dataclasses

import torch

from thunder.core.context import tracectx
from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.proxies import AnyProxy
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.tags import Tag
from thunder.core.trace import Provenance, Trace


@dataclasses.dataclass
class MyContainer:
    res: torch.Tensor
    num: int


def sin_container(x):
    return MyContainer(res=x.sin() * 2, num=1)


def small_fn(x, y):
    a = x.sin() * 2 + y
    return a.exp().softmax(-1)


SMALL_FN_LINE = small_fn.__code__.co_firstlineno + 1  # where sin, mul and add come from


def many_ops(x, n: int):
    """``n`` small elementwise ops in a row: a long, flat trace."""
    for i in range(n // 4):
        x = (x.sin() * 1.5 + 0.25).tanh() if i % 2 else (x.cos() - 0.5).relu() * 0.75
    return x


def make_symbol(name: str, module: str = "test", *, tags=(), executor=None, meta=None) -> Symbol:
    # not registered: these symbols exist only in hand-built traces
    return Symbol(name, module, meta=meta or (lambda *a, **k: None), tags=tags, executor=executor)


def tagged_passes() -> list[Trace]:
    """Two passes of a hand-built trace with a tensor-subclass op, a fusion region, a
    dataclass construction and a write-back; the second pass fuses two ops."""
    t = Trace("computation")
    x = t.tensor((2, 3), torch.float32, "cpu", name="x")
    t.args = [x]
    t0 = t.tensor((2, 3), torch.float32, "cpu")
    t1 = t.tensor((2, 3), torch.float32, "cpu")
    a0 = t.tensor((2, 3), torch.float32, "cpu", name="a")
    flat = BoundSymbol(
        make_symbol("flatten_tensor_subclass", "prims"),
        (x,),
        {},
        (a0,),
        tags=frozenset({Tag.FLATTEN_TENSOR_SUBCLASS}),
    )
    aten = BoundSymbol(make_symbol("add", "aten"), (a0, 1), {}, t0)
    unflat = BoundSymbol(
        make_symbol("unflatten_tensor_subclass", "prims"),
        (t0,),
        {},
        t0,
        tags=frozenset({Tag.UNFLATTEN_TENSOR_SUBCLASS}),
    )
    sub_add = BoundSymbol(
        make_symbol("MyTensorSubclass.torch.add", "ltorch"), (x, 1), {}, t0, [flat, aten, unflat]
    )
    mul = BoundSymbol(make_symbol("mul", "ltorch"), (t0, 2), {}, t1)
    obj = AnyProxy("any0", MyContainer)
    new = BoundSymbol(
        make_symbol("construct", "prims", tags=(Tag.DATACLASS_NEW,)),
        (MyContainer,),
        {"res": t1, "num": 1},
        obj,
    )
    wb = BoundSymbol(
        make_symbol("python_setattr", "prims", tags=(Tag.WRITEBACK,)), (x, "cache", t1), {}, None
    )
    t.bound_symbols = [sub_add, mul, new, wb]
    t.output = obj

    t2 = t.derive("fuse")
    t2.provenance = Provenance("fuse", 0.001)
    fusion = BoundSymbol(
        make_symbol("nvFusion0", "nvfuser", executor="nvfuser", tags=(Tag.FUSION,)),
        (x,),
        {},
        t1,
        [sub_add, mul],
        info=BoundSymbolInfo(declined={"torchcompile": "not available <here>"}),
    )
    t2.bound_symbols = [fusion, new, wb]
    return [t, t2]


def hand_trace(n: int = 3) -> Trace:
    """``x -> add -> mul -> ...`` with n ltorch ops, recorded for real."""
    import thunder.ops.ltorch as ltorch

    t = Trace()
    with tracectx(t):
        x = t.tensor((2, 3), torch.float32, "cpu", name="x")
        t.args = [x]
        y = x
        for i in range(n):
            y = ltorch.add(y, 1) if i % 2 == 0 else ltorch.mul(y, 2)
        t.output = y
    return t


def tiny_llama_config(layers: int = 2, **overrides):
    """A transformers ``LlamaConfig`` of hidden size 64, 4 heads (2 for keys and values) and a
    vocabulary of 256 (random weights, nothing downloaded)."""
    import transformers
    from transformers import LlamaConfig

    transformers.logging.set_verbosity_error()
    return LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=256,
        max_position_embeddings=128,
        **overrides,
    )


def tiny_llama_training_step(**overrides):
    """A jitted 2-layer ``LlamaForCausalLM`` after one training step (the loss of 8 tokens,
    backward); ``overrides``: of its config (``use_cache=False``)."""
    from transformers import LlamaForCausalLM

    import thunder

    config = tiny_llama_config(**overrides)
    torch.manual_seed(0)
    jllama = thunder.jit(LlamaForCausalLM(config))
    ids = torch.randint(0, 256, (1, 8))
    jllama(ids, labels=ids).loss.backward()
    return jllama


def tiny_llama(layers: int = 2):
    """A jitted transformers ``LlamaForCausalLM`` (``tiny_llama_config``) called once on 8
    tokens with a ``StaticCache``, as notebook 03 does."""
    from transformers import LlamaForCausalLM, StaticCache

    import thunder

    config = tiny_llama_config(layers)
    torch.manual_seed(0)
    llama = LlamaForCausalLM(config).eval()
    cache = StaticCache(config=config, max_cache_len=32)
    jllama = thunder.jit(llama)
    with torch.no_grad():
        jllama(
            torch.randint(0, 256, (1, 8)),
            past_key_values=cache,
            use_cache=True,
            cache_position=torch.arange(8),
        )
    return jllama


class Layer(torch.nn.Module):
    """Four elementwise ops, no parameters: a layer of ``Stack``."""

    def forward(self, x):
        return (x.sin() * 1.5 + 0.25).tanh()


class Stack(torch.nn.Module):
    """``n // 4`` Layers in an ``nn.Sequential``: ``n`` BoundSymbols, each in a module of
    its own (``layers.0`` ... ``layers.<n // 4 - 1>``)."""

    def __init__(self, n: int):
        super().__init__()
        self.layers = torch.nn.Sequential(*(Layer() for _ in range(n // 4)))

    def forward(self, x):
        return self.layers(x)
