"""Objects made inside the traced function: traced as real objects holding proxies, rebuilt
by the epilogue from the computed tensors (allocated without ``__init__``, attributes in
order), with aliasing and cycles kept; what cannot be rebuilt is a clear error."""

from __future__ import annotations

import threading

import pytest
import torch
from support.checks import no_proxies

import thunder
from thunder.core.errors import UnsupportedValueError
from thunder.core.printing import class_name
from thunder.core.verify import verify


def _verify_all(jfn):
    for t in thunder.last_traces(jfn) + thunder.last_prologue_traces(jfn) + thunder.last_epilogue_traces(jfn):
        verify(t)


class Layer:
    made = 0  # counts __init__ runs: as eager's (the epilogue sets it; it does not run __init__)

    def __init__(self):
        Layer.made += 1
        self.keys = None
        self.ready = False

    def update(self, k):
        self.keys = k if self.keys is None else torch.cat([self.keys, k])
        self.ready = True
        return self.keys


class Cache:
    def __init__(self, n):
        self.layers = [Layer() for _ in range(n)]
        self.steps = 0


Layer.__module__ = Cache.__module__ = "__main__"


def step(x):
    cache = Cache(2)
    for i, layer in enumerate(cache.layers):
        assert isinstance(layer, Layer)  # real objects while tracing
        layer.update(x * (i + 1))
    cache.steps += 1
    return x.sum(), cache


EPILOGUE = """\
# Constructed by Transform for execution
import torch
import thunder.executors.pythonex as pythonex

def epilogue(t2, keys, keys_1, obj_type):
  # t2: "cpu f32[]"
  # keys: "cpu f32[3]"
  # keys_1: "cpu f32[3]"
  pythonex.python_setattr(obj_type, 'made', {made})
    # prims.python_setattr(obj_type, 'made', {made})
  any0 = pythonex.object_new({layer}, keys=keys, ready=True)  # any0: "__main__.Layer"
    # any0 = prims.object_new({layer}, keys=keys, ready=True)  # any0: "__main__.Layer"
  any1 = pythonex.object_new({layer}, keys=keys_1, ready=True)  # any1: "__main__.Layer"
    # any1 = prims.object_new({layer}, keys=keys_1, ready=True)  # any1: "__main__.Layer"
  any2 = pythonex.object_new({cache}, layers=[any0, any1], steps=1)  # any2: "__main__.Cache"
    # any2 = prims.object_new({cache}, layers=[any0, any1], steps=1)  # any2: "__main__.Cache"
  return (t2, any2)
"""


def test_objects_made_inside_are_rebuilt_without_init():
    jfn = thunder.jit(step)
    x = torch.randn(3)
    before = Layer.made
    total, cache = jfn(x)
    assert Layer.made == before + 2  # (as eager: two layers made)
    expected_total, expected = step(x)
    torch.testing.assert_close(total, expected_total)
    assert type(cache) is Cache and [type(layer) for layer in cache.layers] == [Layer, Layer]
    assert list(vars(cache)) == list(vars(expected)) and cache.steps == 1
    for layer, ref in zip(cache.layers, expected.layers):
        assert list(vars(layer)) == list(vars(ref)) and layer.ready
        torch.testing.assert_close(layer.keys, ref.keys)
    assert no_proxies(cache)
    assert str(thunder.last_epilogue_traces(jfn)[-1]) == EPILOGUE.format(
        layer=class_name(Layer), cache=class_name(Cache), made=before + 2
    )
    _verify_all(jfn)
    # a later call builds new objects from the new tensors, without running __init__ (the class's
    # counter, which the trace wrote, is as eager's: the program is traced again for its new value)
    made = Layer.made
    _, again = jfn(x + 1)
    assert Layer.made == made + 2
    assert again is not cache and again.layers[0] is not cache.layers[0]
    torch.testing.assert_close(again.layers[1].keys, (x + 1) * 2)


def test_slots_cycles_and_shared_references_are_kept():
    class Slotted:
        __slots__ = ("a", "b", "unset")

    class Node:
        def __init__(self, value):
            self.value = value
            self.parent = None
            self.children = []

    def f(x):
        s = Slotted()
        s.a, s.b = x + 1, "b"
        root = Node(x * 2)
        child = Node(x * 3)
        child.parent = root  # a cycle: root -> children -> child -> parent -> root
        root.children.append(child)
        shared = [x.sin()]
        root.left = root.right = shared  # one list reached twice
        root.slotted = s
        root.again = child
        root.tags = {"a", "b"}  # a set: made anew on every call
        return root

    jfn = thunder.jit(f)
    x = torch.randn(2)
    root, ref = jfn(x), f(x)
    assert type(root) is type(ref) and list(vars(root)) == list(vars(ref))
    child = root.children[0]
    assert child.parent is root and root.again is child  # cycle and aliasing kept
    assert root.left is root.right and len(root.left) == 1  # the shared list is one list
    torch.testing.assert_close(root.left[0], ref.left[0])
    torch.testing.assert_close(child.value, ref.children[0].value)
    assert type(root.slotted).__slots__ == ("a", "b", "unset") and root.slotted.b == "b"
    torch.testing.assert_close(root.slotted.a, ref.slotted.a)
    assert not hasattr(root.slotted, "unset")
    assert no_proxies(root)
    epi = str(thunder.last_epilogue_traces(jfn)[-1])
    assert "pythonex.object_setattr(" in epi  # the cycle's back reference, set once both exist
    _verify_all(jfn)
    root2 = jfn(x + 1)
    assert thunder.compile_stats(jfn).cache_hits == 1 and root2.children[0].parent is root2
    assert root2.tags == root.tags == {"a", "b"} and root2.tags is not root.tags


def test_bound_methods_and_input_objects_inside_made_objects():
    class Box:
        def __init__(self):
            self.t = torch.zeros(2)

    class Made:
        def __init__(self, box, x):
            self.box = box  # an input object: the caller's very object
            self.x = x
            self.scale = self.double  # a bound method of the made object

        def double(self):
            return self.x * 2

    def f(box, x):
        m = Made(box, x + 1)
        box.made = m  # stored on an input: written back, rebuilt
        return m

    box = Box()
    m = thunder.jit(f)(box, torch.ones(2))
    assert m.box is box and box.made is m
    assert m.scale.__self__ is m and torch.equal(m.scale(), torch.full((2,), 4.0))
    assert no_proxies(m)


def test_what_cannot_be_rebuilt_is_a_clear_error_with_the_line_that_made_it():
    class Locked:
        def __init__(self, x):
            self.x = x
            self.lock = threading.Lock()

    def f(x):
        return {"out": Locked(x * 2)}  # made-here

    with pytest.raises(UnsupportedValueError) as e:
        thunder.jit(f)(torch.ones(2))
    msg = str(e.value)
    assert "the result['out'].lock is a _thread.lock object, implemented in C" in msg
    assert "held by a " in msg and "Locked made at" in msg and "# made-here" in msg

    class Mapping(dict):
        pass

    with pytest.raises(UnsupportedValueError, match=r"subclass of dict implemented in C"):
        thunder.jit(lambda x: Mapping(a=x))(torch.ones(2))
    with pytest.raises(UnsupportedValueError, match=r"generator object of gen \(.*test_made_objects\.py"):

        def gen(x):
            yield x

        thunder.jit(lambda x: gen(x))(torch.ones(2))
    with pytest.raises(UnsupportedValueError, match=r"the module ReLU made inside the function"):
        thunder.jit(lambda x: (x, torch.nn.ReLU()))(torch.ones(2))


class Settings:
    def __init__(self):
        self.scale = 2


SETTINGS = Settings()


def test_objects_read_not_made_are_returned_as_themselves():
    """An object read from a global (or a module attribute) is returned as the very object,
    as in eager, never a copy; one the function wrote a traced value into gets it on every call."""

    class Holder:
        def __init__(self, x):
            self.x = x
            self.settings = SETTINGS

    def f(x):
        return x * SETTINGS.scale, SETTINGS, Holder(x)

    out, settings, holder = thunder.jit(f)(torch.ones(2))
    assert settings is SETTINGS and holder.settings is SETTINGS
    torch.testing.assert_close(out, torch.full((2,), 2.0))

    def g(x):
        SETTINGS.last = x * 2  # written by the epilogue on every call, as eager writes it
        return SETTINGS

    try:
        jg = thunder.jit(g)
        for i in range(3):
            assert jg(torch.full((2,), float(i))) is SETTINGS
            assert type(SETTINGS.last) is torch.Tensor
            torch.testing.assert_close(SETTINGS.last, torch.full((2,), 2.0 * i))
    finally:
        vars(SETTINGS).pop("last", None)


def test_functions_capturing_traced_values_cannot_leave_the_trace():
    def f(x):
        y = x + 1
        return lambda: y  # the closure holds a proxy

    with pytest.raises(UnsupportedValueError, match=r"the variable 'y' it captures is a traced value"):
        thunder.jit(f)(torch.ones(2))
