"""Module scopes: each BoundSymbol knows the nn.Module call it was recorded in, through every pass."""

from __future__ import annotations

import torch
from support.models import GPT
from torch import nn

import thunder
from thunder.core.tags import Tag


def _walk(bsyms):
    for b in bsyms:
        yield b
        yield from _walk(b.subsymbols)


def test_scopes_of_the_gpt_through_every_pass():
    model = GPT()
    jm = thunder.jit(model)
    jm(torch.randint(0, 50, (2, 8)))
    traces = thunder.last_traces(jm)
    for trace in traces:
        paths = {b.scope.path for b in _walk(trace.bound_symbols) if b.scope is not None}
        assert {"", "tok", "pos", "blocks.0.attn.qkv", "blocks.1.mlp.0", "blocks.1.mlp.1", "head"} <= paths
        for b in trace.bound_symbols:
            if Tag.DEL not in b.tags:
                assert b.scope is not None, f"{trace.provenance}: {b.sym.id} has no scope"
    final = traces[-1]
    (qkv,) = [b for b in final.bound_symbols if b.scope and b.scope.path == "blocks.0.attn.qkv"]
    assert qkv.sym.id == "torch.nn.functional.linear"
    assert [s.path for s in qkv.scope.chain()] == ["", "blocks.0", "blocks.0.attn", "blocks.0.attn.qkv"]
    assert [s.cls for s in qkv.scope.chain()] == ["GPT", "Block", "Attention", "Linear"]
    # the op recorded in Attention.forward itself (not in a submodule)
    softmax = [b for b in final.bound_symbols if "softmax" in b.sym.name]
    assert softmax and all(b.scope.path.endswith(".attn") for b in softmax)
    # subsymbols carry their parent's scope; a fusion region's members keep their own, each
    # inside the region's
    for b in _walk(final.bound_symbols):
        for sub in b.subsymbols:
            if b.has_tag(Tag.FUSION):
                assert b.scope is None or any(s is b.scope for s in sub.scope.chain())
            else:
                assert sub.scope is b.scope


def test_a_module_passed_as_an_argument_is_named_by_its_parameter():
    lin = nn.Linear(3, 3)

    def fn(layer, x):
        return layer(x).relu()

    jfn = thunder.jit(fn)
    jfn(lin, torch.randn(2, 3))
    scopes = {b.scope.path if b.scope else None for b in thunder.last_traces(jfn)[-1].bound_symbols}
    assert "layer" in scopes and None in scopes  # relu is outside any module


def test_a_module_made_inside_forward_is_named_below_its_caller():
    class M(nn.Module):
        def forward(self, x):
            return nn.Identity()(x) * 2 + nn.Softplus()(x)

    jm = thunder.jit(M())
    x = torch.randn(3)
    torch.testing.assert_close(jm(x), M()(x))
    paths = [b.scope.path for b in thunder.last_traces(jm)[-1].bound_symbols if b.scope]
    assert "<Softplus>" in paths


def test_no_scope_leaks_after_tracing_or_to_eager_calls():
    model = GPT()
    jm = thunder.jit(model)
    jm(torch.randint(0, 50, (1, 4)))
    assert not torch.nn.modules.module._global_forward_hooks
    assert not torch.nn.modules.module._global_forward_pre_hooks
