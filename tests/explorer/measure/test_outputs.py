"""Outputs compared value by value: the first that differs is named by its path, with its largest
absolute and relative error."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from explorer.measure.outputs import difference, leaves


class Layer:
    def __init__(self, keys, values):
        self.keys, self.values = keys, values


class Cache:  # as transformers' DynamicCache: layers of keys and values
    def __init__(self, layers):
        self.layers = layers


class Output(dict):  # as transformers' ModelOutput: a dict whose keys read as attributes
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclasses.dataclass
class Pair:
    first: torch.Tensor
    second: int


def _output(scale: float = 1.0) -> Output:
    k = torch.arange(6.0).reshape(2, 3)
    layers = [Layer(k * scale, k + 1), Layer(k + 2, k + 3)]
    return Output(logits=torch.ones(2), past_key_values=Cache(layers))


def test_every_value_has_its_path():
    paths = [p for p, _ in leaves(_output())]
    assert paths == [
        "out.logits",
        "out.past_key_values.layers[0].keys",
        "out.past_key_values.layers[0].values",
        "out.past_key_values.layers[1].keys",
        "out.past_key_values.layers[1].values",
    ]
    plain = leaves((torch.zeros(1), {"scale": 2.0, 3: "x"}, Pair(torch.ones(1), 4)))
    assert [p for p, _ in plain] == [
        "out[0]",
        "out[1]['scale']",
        "out[1][3]",
        "out[2].first",
        "out[2].second",
    ]


def test_the_first_value_that_differs_is_named_with_its_errors():
    d = difference(leaves(_output()), leaves(_output(scale=1.5)))
    assert not d.matched and d.path == "out.past_key_values.layers[0].keys"
    assert d.abs_error == pytest.approx(2.5)  # 5 * 1.5 - 5
    assert d.rel_error == pytest.approx(0.5 / 1.5)  # every non-zero key off by a third of itself
    text = d.describe()
    assert text.startswith("out.past_key_values.layers[0].keys differs: max abs error 2.5")
    assert "max rel error 0.333" in text and "DynamicCache" not in text and "Cache(" not in text


def test_a_copy_is_kept_of_each_tensor_read():
    x = torch.zeros(3)
    kept = leaves((x,))
    x.add_(1)  # a later run writes the same storage
    assert torch.equal(kept[0][1], torch.zeros(3))


def test_shapes_counts_and_plain_values_that_differ_are_named():
    assert difference(leaves((torch.zeros(3),)), leaves((torch.zeros(4),))).path == "out[0]"
    d = difference(leaves((torch.zeros(3), 2)), leaves((torch.zeros(3),)))
    assert not d.matched and d.path == "out[1]" and "2 output values against 1" in d.why
    d = difference(leaves({"n": 1}), leaves({"n": 2}))
    assert d.describe() == "out['n'] differs: 1 against 2"
    assert difference(leaves(float("nan")), leaves(float("nan"))).matched  # NaN where NaN was
    nan = torch.tensor([float("nan"), 1.0])
    assert difference(leaves(nan), leaves(nan.clone())).matched


def test_values_within_float32_tolerance_match_with_their_largest_difference():
    x = torch.ones(4)
    d = difference(leaves(x), leaves(x + 1e-6))
    assert d.matched and 0 < d.max_abs < 2e-6


def test_a_transformers_cache_is_opened_layer_by_layer():
    transformers = pytest.importorskip("transformers")
    from transformers.cache_utils import DynamicCache

    def output(bump: float):
        cache = DynamicCache()
        k = torch.ones(1, 2, 3, 4)
        cache.update(k, k * 2, 0)
        cache.update(k + bump, k * 3, 1)
        return transformers.modeling_outputs.CausalLMOutputWithPast(
            logits=torch.zeros(2), past_key_values=cache
        )

    a, b = output(0.0), output(0.5)
    d = difference(leaves(a), leaves(b))
    key = next(k for k in a if a[k] is a.past_key_values)  # (transformers names it as it likes)
    assert d.path.startswith(f"out.{key}.layers[1].keys") and d.abs_error == pytest.approx(0.5)
