"""Object inputs (seed 001): reads with provenance, setattr write-back, in-place writes into
input tensors, item writes into input containers, module attribute writes, and the epilogue
returning the very input object. Every case is checked against eager; failures leave the
inputs exactly as they were."""

from __future__ import annotations

import copy
import threading
import types
from dataclasses import dataclass

import pytest
import torch
from support.checks import no_proxies

import thunder
from thunder.core.errors import DataDependentError, UnsupportedOpError, UnsupportedValueError
from thunder.core.verify import verify


def _verify_all(jfn):
    for t in thunder.last_traces(jfn) + thunder.last_prologue_traces(jfn) + thunder.last_epilogue_traces(jfn):
        verify(t)


class KVCache:
    def __init__(self, n=4):
        self.k = torch.zeros(2, n)
        self.pos = 0

    def update(self, new):
        self.k[:, self.pos] = new
        self.pos = self.pos + 1
        return self.k


@dataclass
class Output:
    logits: torch.Tensor
    past: object


Output.__module__ = "__main__"  # prints as __main___Output, like a script's class


def step(x, cache):
    k = cache.update(x.sin())
    cache.last = x * 2
    return Output(logits=k.sum(0) + 1, past=cache)


SETATTR_EPILOGUE = """\
# Constructed by Transform for execution
import torch
import thunder.executors.pythonex as pythonex

def epilogue(last, logits, cache):
  # last: "cpu f32[2]"
  # logits: "cpu f32[4]"
  pythonex.python_setattr(cache, 'pos', 1)
    # prims.python_setattr(cache, 'pos', 1)
  pythonex.python_setattr(cache, 'last', last)
    # prims.python_setattr(cache, 'last', last)
  any0 = __main___Output(logits=logits, past=cache)
    # any0 = __main___Output(logits=logits, past=cache)
  return any0
"""

SETATTR_PROLOGUE_FIRST = """\
import torch
import thunder.ops.prims as prims

def prologue(*args, **kwargs):
  prims.check_len(args, 2)
  prims.check_keys(kwargs, ())
  cache = prims.unpack_item(args, 1)  # cache: "tests.test_objects.KVCache"
  prims.check_type(cache, {cls})
  cache_pos = prims.unpack_attr(cache, 'pos')  # cache_pos: "int"
  prims.check_literal(cache_pos, 0)
  x = prims.unpack_item(args, 0)  # x: "cpu f32[2]"
  prims.check_tensor(x, (2,), torch.float32, 'cpu', False)
  t_cache_k = prims.unpack_attr(cache, 'k')  # t_cache_k: "cpu f32[2, 4]"
  prims.check_tensor(t_cache_k, (2, 4), torch.float32, 'cpu', False)
  prims.check_no_alias(t_cache_k, x, written=1)
  prims.check_items(g_{mod}, _g_{mod}_state)  # Output=__main___Output
  prims.check_class(cls_Output, _cls_Output_state)
  prims.check_grad_enabled(True)
  prims.check_autocast(())
  prims.check_default_dtype(torch.float32)
  return ((x, t_cache_k), (cache,))
"""


def test_setattr_golden_and_state_against_eager():
    cache, eager_cache = KVCache(), KVCache()
    jfn = thunder.jit(step)
    x = torch.randn(2)
    out, expected = jfn(x, cache), step(x, eager_cache)
    assert type(out) is Output and out.past is cache  # the input object itself
    torch.testing.assert_close(out.logits, expected.logits)
    torch.testing.assert_close(cache.k, eager_cache.k)  # the in-place write reached the tensor
    torch.testing.assert_close(cache.last, eager_cache.last)
    assert cache.pos == eager_cache.pos == 1
    assert str(thunder.last_epilogue_traces(jfn)[-1]) == SETATTR_EPILOGUE
    from thunder.core.printing import class_name

    pro = str(thunder.last_prologue_traces(jfn)[0])
    assert pro == SETATTR_PROLOGUE_FIRST.replace("{cls}", class_name(KVCache)).replace(
        "tests.test_objects.KVCache", f"{KVCache.__module__}.KVCache"
    ).replace("{mod}", KVCache.__module__.replace(".", "_"))  # the globals step reads (Output)
    _verify_all(jfn)
    # the next position: pos changed, so the prologue misses and the function is traced again
    for _ in range(2):
        out, expected = jfn(x + 1, cache), step(x + 1, eager_cache)
        torch.testing.assert_close(out.logits, expected.logits)
        torch.testing.assert_close(cache.k, eager_cache.k)
        assert cache.pos == eager_cache.pos and out.past is cache
    assert thunder.compile_stats(jfn).cache_misses == 3
    # the same state again: a cache hit
    cache2, eager2 = KVCache(), KVCache()
    cache2.last = eager2.last = torch.zeros(2)
    jfn(x, cache2), step(x, eager2)
    torch.testing.assert_close(cache2.k, eager2.k)
    assert cache2.pos == 1


def test_every_attribute_set_is_written_back_with_its_final_value():
    class Obj:
        def __init__(self):
            self.a = torch.ones(2)
            self.n = 0
            self.gone = "x"

    def f(o, x):
        o.n = 1
        setattr(o, "b", x + 1)  # noqa: B010 - a new attribute, through setattr()
        object.__setattr__(o, "c", x * 3)
        o.n = o.n + 1  # set twice: the last value counts
        o.a = o.a + x
        del o.gone
        return o.n

    o, oe = Obj(), Obj()
    jfn = thunder.jit(f)
    x = torch.randn(2)
    assert jfn(o, x) == f(oe, x) == 2
    assert o.n == 2 and not hasattr(o, "gone")
    for name in ("a", "b", "c"):
        torch.testing.assert_close(getattr(o, name), getattr(oe, name))
    assert list(vars(o)) == list(vars(oe))
    epi = str(thunder.last_epilogue_traces(jfn)[-1])
    assert epi.count("pythonex.python_setattr(o, ") == 4 and "pythonex.python_delattr(o, 'gone')" in epi
    _verify_all(jfn)


def test_lightning_writes_only_the_first_attribute_we_write_all():
    class State:
        def __init__(self):
            self.x = torch.zeros(2)
            self.y = torch.zeros(2)
            self.count = 0

    def f(s, t):
        s.x = t + 1
        s.y = t + 2
        s.count = 7
        return t

    s = State()
    thunder.jit(f)(s, torch.ones(2))
    assert torch.equal(s.x, torch.full((2,), 2.0)) and torch.equal(s.y, torch.full((2,), 3.0))
    assert s.count == 7


def test_methods_properties_super_and_isinstance_see_the_wrapper():
    class Base:
        def scale(self):
            return self.factor

    class Scaled(Base):
        def __init__(self):
            self._w = torch.ones(3)
            self.factor = 3

        @property
        def w(self):
            return self._w

        @w.setter
        def w(self, value):
            self._w = value

        def scale(self):
            return super().scale() * 2

        def __len__(self):
            return 3

    def f(s, x):
        assert isinstance(s, Scaled) and isinstance(s, Base) and s.__class__ is Scaled
        assert type(s).__name__ == "Scaled" and len(s) == 3
        s.w = s.w * s.scale() + x  # the property setter runs with the wrapper as self
        return s.w

    s, se = Scaled(), Scaled()
    jfn = thunder.jit(f)
    x = torch.randn(3)
    torch.testing.assert_close(jfn(s, x), f(se, x))
    torch.testing.assert_close(s._w, se._w)
    assert "t_s__w = s._w" in str(thunder.last_prologue_traces(jfn)[-1])


def test_inplace_writes_into_input_tensors_reach_the_user():
    class Cache:
        def __init__(self):
            self.k = torch.zeros(2, 5)
            self.v = torch.zeros(2, 5)
            self.n = torch.zeros((), dtype=torch.int64)
            self.acc = torch.zeros(2)

    def f(c, new, pos):
        c.k[:, pos] = new  # setitem through a view of the attribute
        c.v.index_copy_(1, torch.tensor([pos]), new[:, None])
        c.n.add_(1)
        c.acc.copy_(new * 2)
        return c.k.sum() + c.v.sum()

    c, ce = Cache(), Cache()
    k, v = c.k, c.v
    jfn = thunder.jit(f)
    for pos in (1, 3):
        new = torch.randn(2)
        torch.testing.assert_close(jfn(c, new, pos), f(ce, new, pos))
        for name in ("k", "v", "n", "acc"):
            torch.testing.assert_close(getattr(c, name), getattr(ce, name))
    assert c.k is k and c.v is v  # written in place, as in eager
    _verify_all(jfn)


def test_item_writes_into_input_dicts_and_lists():
    def f(d, items, x):
        d["a"] = d["a"] * 2
        d["new"] = x
        del d["gone"]
        items[0] = x + 1
        items.append(x)
        return d, items

    d, items = {"a": torch.ones(2), "gone": 1}, [torch.ones(2)]
    de, itemse = {"a": torch.ones(2), "gone": 1}, [torch.ones(2)]
    x = torch.randn(2)
    od, oitems = thunder.jit(f)(d, items, x)
    f(de, itemse, x)
    assert od is d and oitems is items  # the same containers, updated
    assert list(d) == list(de) == ["a", "new"]
    torch.testing.assert_close(d, de)
    torch.testing.assert_close(items, itemse)


def test_object_attribute_lists_are_written_back():
    class Layers:
        def __init__(self):
            self.layers = [torch.zeros(2), torch.ones(2)]

    def f(obj, x):
        obj.layers[1] = obj.layers[1] + x
        for t in obj.layers:
            t.add_(1)
        return len(obj.layers)

    o, oe = Layers(), Layers()
    x = torch.randn(2)
    assert thunder.jit(f)(o, x) == f(oe, x) == 2
    torch.testing.assert_close(o.layers, oe.layers)


def test_same_object_reached_twice_is_one_wrapper_and_is_checked():
    class Holder:
        def __init__(self, inner):
            self.inner = inner

    class Inner:
        def __init__(self):
            self.t = torch.ones(2)

    def f(a, b):
        a.inner.t.mul_(2)
        return a.inner is b.inner, b.inner.t + 1

    shared = Inner()
    jfn = thunder.jit(f)
    same, out = jfn(Holder(shared), Holder(shared))
    assert same is True and torch.equal(out, torch.full((2,), 3.0))
    assert torch.equal(shared.t, torch.full((2,), 2.0))
    # two distinct inner objects: the alias check misses the cache
    same, _ = jfn(Holder(Inner()), Holder(Inner()))
    assert same is False and thunder.compile_stats(jfn).cache_misses == 2


def test_module_attribute_and_buffer_writes_in_forward():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.register_buffer("running", torch.zeros(3))
            self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
            self.calls = 0

        def forward(self, x):
            self.calls += 1  # a Python int: specialised, the trace checks the old value
            self.steps += 1  # a buffer updated in place
            y = self.lin(x)
            self.running = 0.9 * self.running + 0.1 * y.mean(0)  # a buffer replaced
            self.last = y * 2  # a new attribute
            return y

    m = Counter()
    me = copy.deepcopy(m)
    jm = thunder.jit(m)
    x = torch.randn(2, 3)
    for _ in range(3):
        torch.testing.assert_close(jm(x), me(x))
        assert m.calls == me.calls and m.steps == me.steps
        torch.testing.assert_close(m.running, me.running)
        torch.testing.assert_close(m.last, me.last)
        assert "running" in m._buffers and type(m.running) is torch.Tensor
        assert no_proxies(m)
    epi = str(thunder.last_epilogue_traces(jm)[-1])
    assert "pythonex.python_setattr(module, 'running', running)" in epi
    assert "pythonex.python_setattr(module, 'last', last)" in epi


class BiasCache(torch.nn.Module):
    """What LeViT's attention does in eval mode: a dict of computed tensors, filled in place."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(4))
        self.cache = {}
        self.seen = []

    def forward(self, x):
        self.seen.append(tuple(x.shape))  # a Python list that grows on every call
        key = str(x.device)
        if key not in self.cache:
            self.cache[key] = self.bias * 2
        return x + self.cache[key]


def test_module_lists_and_dicts_changed_in_place_in_forward():
    m = BiasCache()
    me = copy.deepcopy(m)
    jm = thunder.jit(m)
    for n in (2, 2, 3, 2):
        x = torch.randn(n, 4)
        with torch.no_grad():
            torch.testing.assert_close(jm(x), me(x))
        assert m.seen == me.seen
        assert list(m.cache) == ["cpu"] and type(m.cache["cpu"]) is torch.Tensor
        torch.testing.assert_close(m.cache["cpu"], me.cache["cpu"])
        assert no_proxies(m)
    m.cache.clear()  # the user empties the cache: an entry that fills it again
    me.cache.clear()
    with torch.no_grad():
        torch.testing.assert_close(jm(x), me(x))
    assert m.seen == me.seen and list(m.cache) == ["cpu"]


def test_a_failed_trace_leaves_module_lists_and_dicts_as_they_were():
    class Fails(BiasCache):
        def forward(self, x):
            self.seen.append(1)
            self.cache["k"] = x * 2
            return x.nonzero()  # data-dependent: the trace fails

    m = Fails()
    with pytest.raises(DataDependentError):
        thunder.jit(m)(torch.randn(2, 4))
    assert m.seen == [] and m.cache == {}


def test_an_object_held_by_a_module_changed_by_forward_is_written_per_call():
    class Stats:
        def __init__(self):
            self.count = 0
            self.items = []
            self.inner = types.SimpleNamespace(total=1.0)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stats = Stats()

        def forward(self, x):
            self.stats.count += 1
            self.stats.items.append(x.shape[0])
            self.stats.inner.total *= 2
            return x * self.stats.count

    m = M()
    items, inner = m.stats.items, m.stats.inner
    jm = thunder.jit(m)
    for i in range(1, 4):
        torch.testing.assert_close(jm(torch.ones(2)), torch.full((2,), float(i)))
        # as eager leaves it, down to the identity of the list and the object it holds
        assert m.stats.count == i and m.stats.items == [2] * i and m.stats.items is items
        assert m.stats.inner is inner and inner.total == 2.0**i


def test_objects_in_a_list_or_deeper_held_by_a_module_are_written_per_call():
    """``self.meters[0].n`` and three objects down (``self.state.run.deep.steps``)."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.meters = [types.SimpleNamespace(n=0)]
            self.state = types.SimpleNamespace(run=types.SimpleNamespace(deep=types.SimpleNamespace(steps=0)))

        def forward(self, x):
            self.meters[0].n += 1
            self.state.run.deep.steps += 2
            return x * 2

    m = M()
    jm = thunder.jit(m)
    for i in range(1, 4):
        jm(torch.ones(2))
        assert m.meters[0].n == i and m.state.run.deep.steps == 2 * i


def test_a_failed_trace_leaves_objects_held_by_a_module_as_they_were():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.meters = [types.SimpleNamespace(n=0)]

        def forward(self, x):
            self.meters[0].n += 1
            return x.nonzero()  # data-dependent: the trace fails

    m = M()
    with pytest.raises(DataDependentError):
        thunder.jit(m)(torch.ones(2))
    assert m.meters[0].n == 0


def test_module_argument_state_is_swapped_and_written_back():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.seen = 0

        def forward(self, x):
            self.seen += 1
            return self.lin(x)

    def f(model, x):
        return model(x) * 2

    m = M()
    x = torch.randn(2, 3)
    jfn = thunder.jit(f)
    torch.testing.assert_close(jfn(m, x), m.lin(x) * 2)
    assert m.seen == 1 and no_proxies(m)
    assert "t_model_lin_weight = m_model_lin._parameters['weight']" in str(
        thunder.last_prologue_traces(jfn)[-1]
    )


# -- failures leave everything as it was ------------------------------------------------------


class Box:
    def __init__(self):
        self.t = torch.ones(2)
        self.n = 1
        self.items = [torch.zeros(2)]


def _snapshot(box):
    return dict(vars(box)), box.t.clone(), list(box.items)


def _assert_unchanged(box, snap):
    attrs, t, items = snap
    assert vars(box).keys() == attrs.keys()
    assert all(vars(box)[k] is v for k, v in attrs.items())
    assert torch.equal(box.t, t) and box.items == items
    assert no_proxies(box)


def test_unsupported_op_after_setattr_leaves_the_object_as_it_was():
    def f(b, x):
        b.n = 5
        b.t.add_(1)
        b.items.append(x)
        b.new = x * 2
        return torch.linalg.eig(x)  # thunder has no general eigendecomposition

    b = Box()
    snap = _snapshot(b)
    with pytest.raises(UnsupportedOpError, match=r"torch\.linalg\.eig is not supported"):
        thunder.jit(f)(b, torch.ones(2, 2))
    _assert_unchanged(b, snap)


def test_unsupported_return_leaves_the_object_as_it_was():
    class Locked:
        def __init__(self):
            self.lock = threading.Lock()  # C state: the epilogue cannot rebuild it

    def f(b, x):
        b.n = 5
        b.t.mul_(3)
        b.items[0] = x
        return Locked()

    b = Box()
    snap = _snapshot(b)
    with pytest.raises(UnsupportedValueError, match=r"the result\.lock is a _thread\.lock object"):
        thunder.jit(f)(b, torch.ones(2))
    _assert_unchanged(b, snap)

    def g(b, x):
        b.child = Locked()  # an attribute set to something the epilogue cannot rebuild

    with pytest.raises(UnsupportedValueError, match=r"b\.child\.lock is a _thread\.lock"):
        thunder.jit(g)(b, torch.ones(2))
    _assert_unchanged(b, snap)


def test_failed_module_forward_restores_the_module():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.zeros(2))
            self.n = 0

        def forward(self, x):
            self.n += 1
            self.b = self.b + x
            self.tmp = x
            return torch.linalg.eig(self.b)

    m = M()
    b = m.b
    with pytest.raises(UnsupportedOpError, match=r"torch\.linalg\.eig"):
        thunder.jit(m)(torch.ones(2, 2))
    assert m.n == 0 and m.b is b and "tmp" not in vars(m) and no_proxies(m)


def test_wrapped_inputs_cannot_be_copied_while_traced():
    def f(b):
        return copy.copy(b)

    with pytest.raises(TypeError, match="cannot be copied or pickled"):
        thunder.jit(f)(Box())
