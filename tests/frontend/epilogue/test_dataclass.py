"""Dataclass outputs (seed 000) and dataclass inputs: goldens of the whole traces, and
values, identity and key order against eager."""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass, field
from typing import NamedTuple

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedValueError
from thunder.core.printing import class_name
from thunder.core.verify import verify


@dataclass
class MyContainer:
    res: torch.Tensor
    num: int


# As in the seed, where the example runs as a script: the class prints as __main___MyContainer.
MyContainer.__module__ = "__main__"


def _verify_all(jfn):
    for t in thunder.last_traces(jfn) + thunder.last_prologue_traces(jfn) + thunder.last_epilogue_traces(jfn):
        verify(t)


SEED_COMPUTATION = """\
# Constructed by Delete Last Used
import torch

def computation(x):
  # x: "cpu f32[3]"
  return (x,)
"""

SEED_EPILOGUE = """\
# Constructed by Transform for execution
import torch

def epilogue(x):
  # x: "cpu f32[3]"
  any0 = __main___MyContainer(res=x, num=1)
    # any0 = __main___MyContainer(res=x, num=1)
  return any0
"""


def test_seed_000_golden():
    jfn = thunder.jit(lambda x: MyContainer(x, 1))
    x = torch.ones(3)
    out = jfn(x)
    assert type(out) is MyContainer and out == MyContainer(x, 1)
    assert out.res is x  # the input itself, as in eager
    out2 = jfn(x + 1)
    assert torch.equal(out2.res, x + 1) and out2.num == 1
    assert thunder.compile_stats(jfn).cache_misses == 1
    assert str(thunder.last_traces(jfn)[-1]) == SEED_COMPUTATION
    assert str(thunder.last_epilogue_traces(jfn)[-1]) == SEED_EPILOGUE
    _verify_all(jfn)


COMPUTED_COMPUTATION = """\
# Constructed by Delete Last Used
import torch

def computation(x):
  # x: "cpu f32[3]"
  t0 = torch.sin(x)  # t0: "cpu f32[3]"
    # t0 = ltorch.sin(x)  # t0: "cpu f32[3]"
      # t0 = prims.sin(x)  # t0: "cpu f32[3]"
  res = torch.mul(t0, 2)  # res: "cpu f32[3]"
    # res = ltorch.mul(t0, 2)  # res: "cpu f32[3]"
      # res = prims.mul(t0, 2)  # res: "cpu f32[3]"
  del t0
  return (res,)
"""

COMPUTED_EPILOGUE = """\
# Constructed by Transform for execution
import torch

def epilogue(res):
  # res: "cpu f32[3]"
  any0 = __main___MyContainer(res=res, num=1)
    # any0 = __main___MyContainer(res=res, num=1)
  return any0
"""


def test_computed_field_is_named_after_it():
    def fn(x):
        return MyContainer(res=x.sin() * 2, num=1)

    jfn = thunder.jit(fn)
    x = torch.randn(3)
    out = jfn(x)
    assert type(out) is MyContainer and out.num == 1
    torch.testing.assert_close(out.res, fn(x).res)
    assert str(thunder.last_traces(jfn)[-1]) == COMPUTED_COMPUTATION
    assert str(thunder.last_epilogue_traces(jfn)[-1]) == COMPUTED_EPILOGUE
    # the computation returns only tensors: the class lives in the epilogue alone
    assert all(isinstance(o, torch.Tensor) for o in thunder.last_traces(jfn)[-1].output)
    _verify_all(jfn)


def test_same_class_name_in_two_modules_does_not_collide():
    A = dataclasses.make_dataclass("Box", [("v", torch.Tensor)])
    B = dataclasses.make_dataclass("Box", [("v", torch.Tensor)])
    A.__module__, B.__module__ = "pkg.one", "pkg.two"
    jfn = thunder.jit(lambda x: (A(x + 1), B(x + 2)))
    a, b = jfn(torch.zeros(2))
    assert type(a) is A and type(b) is B
    assert torch.equal(a.v, torch.ones(2)) and torch.equal(b.v, torch.full((2,), 2.0))
    epi = str(thunder.last_epilogue_traces(jfn)[-1])
    assert "pkg_one_Box(v=" in epi and "pkg_two_Box(v=" in epi
    assert class_name(A) == "pkg_one_Box"


@dataclass
class Inner:
    a: torch.Tensor
    tag: str = "inner"


@dataclass
class Outer:
    inner: Inner
    pair: tuple
    extra: list = field(default_factory=list)
    n: int = 3


@dataclass(frozen=True)
class Frozen:
    x: torch.Tensor
    y: int = 0


@dataclass
class WithPost:
    x: torch.Tensor
    doubled: torch.Tensor = field(init=False)

    def __post_init__(self):
        self.doubled = self.x * 2


class Pair(NamedTuple):
    first: object
    second: object


def test_nested_frozen_defaults_and_containers_match_eager():
    def f(x):
        inner = Inner(x.sin())
        return (
            Outer(inner, (inner, x.cos()), [x + 1]),
            {"f": Frozen(x * 3)},
            Pair(WithPost(x + 2), collections.OrderedDict(k=Frozen(x, 5))),
        )

    jfn = thunder.jit(f)
    x = torch.randn(3)
    out, expected = jfn(x), f(x)
    assert type(out[0]) is Outer and type(out[0].inner) is Inner and out[0].inner.tag == "inner"
    assert out[0].pair[0] is out[0].inner  # one object in two places stays one object
    assert type(out[1]["f"]) is Frozen and out[1]["f"].y == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        out[1]["f"].y = 1
    assert type(out[2]) is Pair and type(out[2].second) is collections.OrderedDict
    assert out[2].second["k"].y == 5 and out[2].second["k"].x is x
    torch.testing.assert_close(out[0].inner.a, expected[0].inner.a)
    torch.testing.assert_close(out[0].pair[1], expected[0].pair[1])
    torch.testing.assert_close(out[0].extra[0], expected[0].extra[0])
    torch.testing.assert_close(out[1]["f"].x, expected[1]["f"].x)
    # __post_init__ is not run again on the rebuilt object: doubled is the traced value
    torch.testing.assert_close(out[2].first.doubled, expected[2].first.doubled)
    epi = str(thunder.last_epilogue_traces(jfn)[-1])
    assert f"pythonex.dataclass_new({class_name(WithPost)}, x=" in epi
    _verify_all(jfn)


def test_model_output_keys_and_order_match_eager():
    outputs = pytest.importorskip("transformers.modeling_outputs")

    def g(x):
        return outputs.CausalLMOutputWithPast(logits=x * 2)

    jfn = thunder.jit(g)
    x = torch.randn(3)
    out, expected = jfn(x), g(x)
    assert type(out) is type(expected)
    assert list(out.keys()) == list(expected.keys()) == ["logits"]
    torch.testing.assert_close(out[0], expected[0])
    assert "transformers_modeling_outputs_CausalLMOutputWithPast(loss=None, logits=logits" in str(
        thunder.last_epilogue_traces(jfn)[-1]
    )

    def h(x):
        o = outputs.BaseModelOutput(last_hidden_state=x * 2)
        o["attentions"] = (x,)  # after the constructor: a key order its fields do not give
        o["hidden_states"] = (x + 1,)
        return o

    jfn = thunder.jit(h)
    out, expected = jfn(x), h(x)
    assert list(out.keys()) == list(expected.keys()) == ["last_hidden_state", "attentions", "hidden_states"]
    assert out.to_tuple()[1][0] is x
    torch.testing.assert_close(out.hidden_states[0], expected.hidden_states[0])
    assert "mapping_new" in str(thunder.last_epilogue_traces(jfn)[-1])


# -- dataclass inputs -----------------------------------------------------------------------


@dataclass
class Batch:
    k: torch.Tensor
    v: torch.Tensor
    scale: float = 2.0


def test_dataclass_input_fields_are_unpacked_by_provenance():
    def f(b):
        return b.k * b.scale + 1

    jfn = thunder.jit(f)
    b = Batch(torch.randn(2, 3), torch.randn(2, 3))
    torch.testing.assert_close(jfn(b), f(b))
    pro = str(thunder.last_prologue_traces(jfn)[-1])
    assert "b = args[0]" in pro
    assert f"pythonex.check_type(b, {class_name(Batch)})" in pro
    assert "t_b_k = b.k" in pro
    assert "b_scale = b.scale" in pro and "check_literal(b_scale, 2.0)" in pro
    assert "t_b_v" not in pro  # a field the function never read is not unpacked
    assert [p.name for p in thunder.last_traces(jfn)[-1].args] == ["t_b_k"]
    # another value of a field that was read: a new trace; of one that was not: a cache hit
    jfn(Batch(b.k, torch.randn(5), scale=2.0))
    assert thunder.compile_stats(jfn).cache_misses == 1
    b3 = Batch(b.k, b.v, scale=3.0)
    torch.testing.assert_close(jfn(b3), f(b3))
    assert thunder.compile_stats(jfn).cache_misses == 2


def test_dataclass_input_returned_as_is_and_replaced():
    def f(b):
        return b, dataclasses.replace(b, k=b.k + 1), dataclasses.is_dataclass(b), isinstance(b, Batch)

    jfn = thunder.jit(f)
    b = Batch(torch.zeros(2), torch.ones(2))
    same, new, is_dc, is_inst = jfn(b)
    assert same is b and is_dc and is_inst
    assert type(new) is Batch and new is not b and new.v is b.v
    assert torch.equal(new.k, torch.ones(2)) and torch.equal(b.k, torch.zeros(2))


@dataclass(frozen=True)
class FrozenState:
    t: torch.Tensor
    step: int


def test_frozen_input_object_setattr_is_written_back():
    def f(s, x):
        object.__setattr__(s, "step", s.step + 1)
        return s.t + x

    jfn = thunder.jit(f)
    s = FrozenState(torch.ones(2), 0)
    torch.testing.assert_close(jfn(s, torch.ones(2)), torch.full((2,), 2.0))
    assert s.step == 1

    def g(s):
        s.step = 5  # frozen: the same error as eager, and nothing changes

    with pytest.raises(dataclasses.FrozenInstanceError):
        thunder.jit(g)(s)
    assert s.step == 1


def test_unsupported_return_types_are_clear_errors():
    import threading

    with pytest.raises(
        UnsupportedValueError, match=r"_thread\.lock object, implemented in C.*supported: tensors"
    ):
        thunder.jit(lambda x: threading.Lock())(torch.ones(2))
    with pytest.raises(UnsupportedValueError, match="generator object of <genexpr>"):
        thunder.jit(lambda x: (x for _ in range(2)))(torch.ones(2))
    with pytest.raises(UnsupportedValueError, match=r"the result\[1\]\.a is a _thread\.lock object"):

        @dataclass
        class Holder:
            a: object

        thunder.jit(lambda x: (x, Holder(threading.Lock())))(torch.ones(2))


def test_model_output_inputs_are_opened_like_dicts():
    from transformers.modeling_outputs import BaseModelOutput

    def f(enc, x):
        return enc[0] * x + enc.last_hidden_state.sum(), enc

    enc = BaseModelOutput(last_hidden_state=torch.randn(2, 3))
    jfn = thunder.jit(f)
    x = torch.randn(2, 3)
    (out, same), (expected, _) = jfn(enc, x), f(enc, x)
    torch.testing.assert_close(out, expected)
    assert same is enc  # the caller's object, not the copy tracing used
    jfn(BaseModelOutput(last_hidden_state=torch.randn(2, 3), hidden_states=(x,)), x)  # other keys: retrace
    assert thunder.compile_stats(jfn).cache_misses == 2

    @dataclass
    class Needs(dict):
        a: int

    with pytest.raises(UnsupportedValueError, match="cannot be made without arguments"):
        thunder.jit(lambda n: n)(Needs(1))
