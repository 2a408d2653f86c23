"""Hooks that ``forward`` registers on a submodule while tracing (transformers installs its
output-capturing hooks this way, the first time ``output_hidden_states`` is asked for): they
run in the trace as in eager, and the epilogue registers them on the user's modules, so the
next calls (thunder's or eager's) find them. Each case against eager, call after call.
"""

from __future__ import annotations

import contextvars
import copy

import pytest
import torch
from torch import nn

import thunder
from thunder.core.errors import UnsupportedValueError

COLLECTED = contextvars.ContextVar("collected", default=None)


def _collect(module, args, output):
    found = COLLECTED.get()
    if found is not None:
        found.append(output)


class Capturing(nn.Module):
    """Installs a collecting hook on each layer once (a flag says so), then collects the
    layers' outputs through a context variable, as transformers' ``capture_outputs``."""

    def __init__(self, prepend: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
        self.prepend = prepend

    def forward(self, x):
        if not getattr(self, "_hooks_installed", False):
            for layer in self.layers:
                layer.register_forward_hook(_collect, prepend=self.prepend)
            self._hooks_installed = True
        found = []
        token = COLLECTED.set(found)
        try:
            for layer in self.layers:
                x = torch.tanh(layer(x))
        finally:
            COLLECTED.reset(token)
        return x, tuple(found)


def _same(a, b):
    (x, xs), (y, ys) = a, b
    torch.testing.assert_close(x, y)
    assert len(xs) == len(ys)
    for u, v in zip(xs, ys):
        torch.testing.assert_close(u, v)


@pytest.mark.parametrize("prepend", [False, True])
def test_hooks_registered_in_forward_run_and_stay_registered(prepend):
    torch.manual_seed(0)
    eager = Capturing(prepend)
    m = copy.deepcopy(eager)
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    for _ in range(3):  # the first call registers; the second retraces with them; the third is cached
        _same(jm(x), eager(x))
        assert len(m.layers[0]._forward_hooks) == len(eager.layers[0]._forward_hooks) == 1
    first, second = (str(e.epilogue_traces[-1]) for e in thunder.compile_stats(jm).entries)
    assert first.count("prims.set_module_hook(m_layers_") == 2  # the first entry registered them
    assert "set_module_hook" not in second  # the entry traced with them registers nothing more
    # eager calls of the user's module find the hooks too
    _same(m(x), eager(x))


class Outer(nn.Module):
    """Registers, once, a hook that doubles the inner layer's output, before or after the
    one the layer has (which adds 1): the order shows in the result."""

    def __init__(self, prepend: bool):
        super().__init__()
        self.inner = nn.Linear(2, 2)
        self.inner.register_forward_hook(lambda mod, a, out: out + 1)
        self.prepend = prepend

    def forward(self, x):
        if not getattr(self, "done", False):
            self.inner.register_forward_hook(lambda mod, a, out: out * 2, prepend=self.prepend)
            self.inner.register_forward_hook(lambda mod, a, out: out - 3, prepend=self.prepend)
            self.done = True
        return self.inner(x)


@pytest.mark.parametrize("prepend", [False, True])
def test_hook_registered_before_or_after_an_existing_one_keeps_eager_order(prepend):
    torch.manual_seed(0)
    eager = Outer(prepend)
    m = copy.deepcopy(eager)
    jm = thunder.jit(m)
    x = torch.randn(1, 2)
    for _ in range(2):
        torch.testing.assert_close(jm(x), eager(x))
    torch.testing.assert_close(m.inner(x), eager.inner(x))  # the user's module afterwards
    assert len(m.inner._forward_hooks) == 3


def test_hook_registered_and_removed_in_forward_leaves_none():
    class Scoped(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            handle = self.fc.register_forward_hook(lambda mod, a, out: out * 10)
            y = self.fc(x)
            handle.remove()
            return y + self.fc(x)

    torch.manual_seed(0)
    eager = Scoped()
    m = copy.deepcopy(eager)
    jm = thunder.jit(m)
    x = torch.randn(1, 2)
    for _ in range(2):
        torch.testing.assert_close(jm(x), eager(x))
    assert not m.fc._forward_hooks and "set_module_hook" not in str(thunder.last_epilogue_traces(jm)[-1])


def test_hook_registered_before_the_call_and_removed_in_forward_is_refused():
    class Once(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.handle = self.fc.register_forward_hook(lambda mod, a, out: out * 10)

        def forward(self, x):
            y = self.fc(x)
            if self.handle is not None:
                self.handle.remove()
                self.handle = None
            return y + self.fc(x)

    m = Once()
    hooks = {name: dict(m.fc.__dict__[name]) for name in ("_forward_hooks", "_forward_hooks_always_called")}
    with pytest.raises(UnsupportedValueError, match="removes a hook of Linear registered before the call"):
        thunder.jit(m)(torch.randn(1, 2))
    assert all(m.fc.__dict__[name] == table for name, table in hooks.items()) and m.handle is not None


def test_hook_that_holds_the_traced_module_is_refused_and_nothing_changes():
    class Keeps(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            self.seen = []
            self.fc.register_forward_hook(lambda mod, a, out: self.seen.append(out))
            return self.fc(x)

    m = Keeps()
    with pytest.raises(UnsupportedValueError, match=r"_forward_hooks\[\d+\].*'self' it captures"):
        thunder.jit(m)(torch.randn(1, 2))
    assert not m.fc._forward_hooks and "seen" not in m.__dict__


def test_transformers_hidden_states_captured_on_the_first_call():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.SegformerConfig(
        num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
        num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2],
        decoder_hidden_size=16, num_labels=3,
    )  # fmt: skip
    eager = transformers.SegformerForSemanticSegmentation(cfg).eval()
    model = copy.deepcopy(eager)  # never called eagerly: the capturing hooks are not installed yet
    jm = thunder.jit(model)
    x = torch.randn(2, 3, 32, 32)
    for _ in range(2):
        torch.testing.assert_close(jm(pixel_values=x).logits, eager(pixel_values=x).logits)
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4
        )
    ).eval()
    eager = copy.deepcopy(bert)
    jb = thunder.jit(bert)
    ids = torch.randint(0, 64, (2, 8))
    for _ in range(2):
        got, want = jb(ids, output_hidden_states=True), eager(ids, output_hidden_states=True)
        assert len(got.hidden_states) == len(want.hidden_states) == 3
        for a, b in zip(got.hidden_states, want.hidden_states):
            torch.testing.assert_close(a, b)
    assert len(bert(ids, output_hidden_states=True).hidden_states) == 3  # the user's model afterwards
