"""Everything a cached program read is guarded: a call after the state changed gives eager's
answer (a cache miss and a new trace), never the old program's.

Module state (train/eval, plain attributes, hooks, submodule types, a config object held by
a module), globals and closure cells the user's code reads (tensors by identity, Python
values by value)."""

from __future__ import annotations

import functools
import types
from random import uniform as _bound_uniform  # bound at import, as a model file does

import pytest
import torch
from numpy.random import rand as _bound_np_rand
from torch import nn
from torch.nn import functional as F

import thunder
from thunder.core.errors import UnsupportedOpError


def _check(jm, m, *args):
    torch.manual_seed(0)
    got = jm(*args)
    torch.manual_seed(0)
    torch.testing.assert_close(got, m(*args))


def _dropped_out(out, full) -> bool:
    """``out`` is ``full`` with some elements zeroed and the rest doubled (dropout, p=0.5)."""
    kept = out != 0
    return bool(kept.any() and (~kept).any() and torch.allclose(out[kept], 2 * full[kept]))


def test_train_eval_toggle_dropout():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    jm = thunder.jit(m)
    x = torch.randn(16, 4)
    full = m[0](x).detach()
    assert _dropped_out(jm(x).detach(), full)
    m.eval()
    torch.testing.assert_close(jm(x), m(x))  # no dropout now
    m.train()
    assert _dropped_out(jm(x).detach(), full)
    assert thunder.compile_stats(jm).cache_misses == 2


def test_train_eval_toggle_batchnorm():
    torch.manual_seed(0)
    m, ref = nn.BatchNorm1d(4), nn.BatchNorm1d(4)
    jm = thunder.jit(m)
    x = torch.randn(8, 4)
    for mode in ("train", "eval", "train", "eval"):
        getattr(m, mode)()
        getattr(ref, mode)()
        torch.testing.assert_close(jm(x), ref(x))
        torch.testing.assert_close(m.running_mean, ref.running_mean)
        assert int(m.num_batches_tracked) == int(ref.num_batches_tracked)


def test_train_eval_of_a_submodule_only():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(1.0))
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    assert torch.count_nonzero(jm(x)) == 0
    m[1].eval()
    torch.testing.assert_close(jm(x), m(x))


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = 1.0
        self.use_relu = False

    def forward(self, x):
        y = self.fc(x) * self.scale
        return y.relu() if self.use_relu else y


@pytest.mark.parametrize("attr, value", [("scale", 2.0), ("scale", 2), ("use_relu", True)])
def test_plain_attribute_changed(attr, value):
    m = Scaled()
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    setattr(m, attr, value)
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 2


@pytest.mark.parametrize("kind", ["forward", "pre", "submodule"])
def test_hook_added_after_the_first_call(kind):
    m = Scaled()
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    if kind == "forward":
        handle = m.register_forward_hook(lambda mod, args, out: out + 10)
    elif kind == "pre":
        handle = m.register_forward_pre_hook(lambda mod, args: (args[0] * 3,))
    else:
        handle = m.fc.register_forward_hook(lambda mod, args, out: out - 5)
    _check(jm, m, x)
    handle.remove()
    _check(jm, m, x)


def test_global_module_hook_added_after_the_first_call():
    m = Scaled()
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    handle = nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: out * 2 if isinstance(mod, nn.Linear) else None
    )
    try:
        _check(jm, m, x)
    finally:
        handle.remove()
    _check(jm, m, x)


def test_submodule_replaced_by_another_type_retraces():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    m[1] = nn.Tanh()
    _check(jm, m, x)
    m[0] = nn.Identity()  # a submodule with parameters replaced by one without
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 3


class ClassDefaults(nn.Module):
    scale = 2.0  # read as self.scale: the class's value until the instance has one

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * self.scale


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3)])
        self.seq = nn.Sequential(nn.Linear(3, 3))
        self.named = nn.ModuleDict({"a": nn.Linear(3, 3)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(3))])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        x = self.seq(x)
        for layer in self.named.values():
            x = layer(x)
        for s in self.scales:
            x = x * s
        return x


def _changed_after_the_first_call(make, change):
    """``make()`` compiled, called, changed by ``change`` and called again, both calls against
    eager; the second traced anew. Returns the compiled module."""
    torch.manual_seed(0)
    m = make()
    jm = thunder.jit(m)
    x = torch.randn(2, 3)
    _check(jm, m, x)
    change(m)
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 2
    return jm


@pytest.mark.parametrize(
    "grow, changed",
    [
        (lambda m: m.layers.append(nn.Linear(3, 3)), "m_layers"),
        (lambda m: m.seq.add_module("extra", nn.ReLU()), "m_seq"),
        (lambda m: m.named.update({"b": nn.Linear(3, 3)}), "m_named"),
        (lambda m: m.scales.append(nn.Parameter(torch.full((3,), 2.0))), "m_scales"),
        (lambda m: m.named.update({"b": m.named.pop("a")}), "m_named"),  # the same layer, renamed
    ],
    ids=["ModuleList.append", "Sequential.add_module", "ModuleDict item", "ParameterList.append", "renamed"],
)
def test_a_container_module_grown_after_the_first_call(grow, changed):
    """The cached program ran the layers there were at the trace: one added since was skipped."""
    jm = _changed_after_the_first_call(Stack, grow)
    (reason,) = thunder.compile_stats(jm).entries[-1].miss_reasons
    assert f"check_module({changed}," in reason


class Regularized(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        out = self.fc(x)
        for child in self.children():  # every submodule there is
            out = out + child(x)
        return out.sum() + sum(p.square().sum() for p in self.parameters())  # every parameter


@pytest.mark.parametrize(
    "grow",
    [
        lambda m: m.register_parameter("extra", nn.Parameter(torch.ones(3))),
        lambda m: m.fc.register_parameter("extra", nn.Parameter(torch.ones(3))),
        lambda m: setattr(m, "second", nn.Linear(3, 3)),
    ],
    ids=["parameter", "parameter of a submodule", "submodule"],
)
def test_parameters_or_submodules_iterated_by_forward_added_after_the_first_call(grow):
    """``self.parameters()`` and ``self.children()`` in forward: what they gave at the trace was
    taken as all there is."""
    jm = _changed_after_the_first_call(Regularized, grow)
    (reason,) = thunder.compile_stats(jm).entries[-1].miss_reasons
    assert "changed since it was traced: added 'extra'" in reason or "added 'second'" in reason


class OptionalMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", None)
        self.fc = nn.Linear(3, 3, bias=False)

    def forward(self, x):
        y = self.fc(x)
        return y if self.mask is None else y * self.mask


@pytest.mark.parametrize(
    "set_it",
    [
        lambda m: setattr(m, "mask", torch.zeros(3)),
        lambda m: setattr(m.fc, "bias", nn.Parameter(torch.ones(3))),
    ],
    ids=["buffer", "parameter"],
)
def test_a_buffer_or_parameter_that_was_none_set_after_the_first_call(set_it):
    """Traced while None: a tensor set there since was one the cached program never read."""
    _changed_after_the_first_call(OptionalMask, set_it)


def _tables_checked(jm) -> dict:
    """holder name -> the tables its check_module line compares (None: none)."""
    prologue = thunder.last_prologue_traces(jm)[-1]
    bsyms = [b for b in prologue.bound_symbols for b in [b, *b.subsymbols]]
    return {b.args[0].name: b.args[-1].tables for b in bsyms if b.sym.id.endswith("check_module")}


def test_tables_are_checked_only_where_forward_read_them_whole():
    """Reading ``self.fc`` by name needs no check of the other names (a layer added beside it
    changes nothing forward reads); ``self.children()`` and ``self.parameters()`` do."""
    torch.manual_seed(0)
    jm = thunder.jit(WithConfig())
    jm(torch.randn(3))
    assert set(_tables_checked(jm).values()) == {None}
    jr = thunder.jit(Regularized())
    jr(torch.randn(2, 3))
    tables = _tables_checked(jr)
    assert tables["module"] == (("_modules", ("fc",)), ("_parameters", ()))
    assert dict(tables["m_fc"])["_parameters"] == ("weight", "bias")


def test_forward_replaced_on_the_instance_after_the_first_call():
    # what accelerate's hooks and many patching tools do: ``module.forward = new_forward``
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    m[0].forward = lambda inp, lin=m[0]: F.linear(inp, lin.weight) * 2
    _check(jm, m, x)
    del m[0].forward
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 2  # the third call is the first entry again


def test_instance_attribute_that_shadows_a_class_attribute_added_after_the_first_call():
    m = ClassDefaults()
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    m.scale = -3.0
    _check(jm, m, x)
    m.fc.bias_scale = 1.0  # an attribute nothing reads: a new entry, still eager's values
    _check(jm, m, x)


def test_class_attribute_or_method_of_the_users_class_changed():
    m = ClassDefaults()
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    _check(jm, m, x)
    forward = ClassDefaults.forward
    try:
        ClassDefaults.scale = 5.0
        _check(jm, m, x)
        ClassDefaults.forward = lambda self, x: self.fc(x) - self.scale
        _check(jm, m, x)
    finally:
        ClassDefaults.scale = 2.0
        ClassDefaults.forward = forward
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 3  # the last call is the first entry again
    assert "check_class(cls_ClassDefaults" in str(thunder.last_prologue_traces(jm)[-1])


def test_config_attribute_added_after_the_first_call():
    # transformers reads optional settings as ``getattr(config, "name", default)``
    class Optional(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = Config()

        def forward(self, x):
            return x * getattr(self.config, "extra", 1.0) + getattr(self.config.inner, "bias", 0.0)

    m = Optional()
    jm = thunder.jit(m)
    x = torch.randn(3)
    _check(jm, m, x)
    m.config.extra = 4.0
    _check(jm, m, x)
    m.config.inner.bias = 2.0
    _check(jm, m, x)
    del m.config.extra
    _check(jm, m, x)


class Config:
    def __init__(self):
        self.mult = 2.0
        self.inner = type("Inner", (), {})()
        self.inner.shift = 1.0


class WithConfig(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()

    def forward(self, x):
        return x * self.config.mult + self.config.inner.shift


def test_config_object_attributes_changed():
    m = WithConfig()
    jm = thunder.jit(m)
    x = torch.randn(3)
    _check(jm, m, x)
    m.config.mult = 5.0
    _check(jm, m, x)
    m.config.inner.shift = -1.0
    _check(jm, m, x)


def test_config_attributes_four_objects_down_are_checked():
    """``config.vision.rope.scale``: a value of an object held by an object held by the config
    changed after the first call (it was taken as it was at the trace)."""
    m = WithConfig()
    m.config.vision = types.SimpleNamespace(rope=types.SimpleNamespace(scale=3.0, parent=None))
    m.config.vision.rope.parent = m.config  # a back-reference: checked by identity, not walked again
    m.forward = types.MethodType(lambda self, x: x * self.config.vision.rope.scale, m)
    jm = thunder.jit(m)
    x = torch.randn(3)
    _check(jm, m, x)
    m.config.vision.rope.scale = 5.0
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 2


class Specs(nn.Module):
    def __init__(self):
        super().__init__()
        self.specs = [types.SimpleNamespace(scale=2.0), types.SimpleNamespace(scale=3.0)]
        self.named = {"a": types.SimpleNamespace(shift=1.0)}

    def forward(self, x):
        for spec in self.specs:
            x = x * spec.scale
        return x + self.named["a"].shift


def test_objects_in_a_list_or_dict_held_by_a_module_changed():
    m = Specs()
    jm = thunder.jit(m)
    x = torch.randn(3)
    _check(jm, m, x)
    m.specs[1].scale = 10.0
    _check(jm, m, x)
    m.named["a"].shift = -1.0
    _check(jm, m, x)
    assert thunder.compile_stats(jm).cache_misses == 3


G_CFG = types.SimpleNamespace(scale=2.0, inner=types.SimpleNamespace(shift=1.0))
G_SPECS = [types.SimpleNamespace(k=3.0)]


def _reads_global_objects(x):
    return x * G_CFG.scale + G_CFG.inner.shift + G_SPECS[0].k


class Scaler:
    def __init__(self):
        self.scale = 2.0

    def __call__(self, x):
        return x * self.scale


def _scaled(x, spec):
    return x * spec.scale


def _closure_over(spec):
    return lambda x: x * spec.scale


@pytest.mark.parametrize(
    "make, change",
    [
        (lambda: _reads_global_objects, lambda f: setattr(G_CFG, "scale", 5.0)),
        (lambda: _reads_global_objects, lambda f: setattr(G_CFG.inner, "shift", 7.0)),
        (lambda: _reads_global_objects, lambda f: setattr(G_SPECS[0], "k", 9.0)),
        (
            lambda: _closure_over(types.SimpleNamespace(scale=2.0)),
            lambda f: setattr(f.__closure__[0].cell_contents, "scale", 4.0),
        ),
        (lambda: Scaler(), lambda f: setattr(f, "scale", 6.0)),
        (
            lambda: functools.partial(_scaled, spec=types.SimpleNamespace(scale=2.0)),
            lambda f: setattr(f.keywords["spec"], "scale", 3.0),
        ),
    ],
    ids=[
        "global object",
        "object in a global object",
        "object in a global list",
        "closure object",
        "callable object",
        "partial argument",
    ],
)
def test_objects_read_through_globals_closures_or_the_callable_changed(make, change):
    """Objects the traced code reads that are no module's: their attributes were taken as
    they were at the trace."""
    saved = (G_CFG.scale, G_CFG.inner.shift, G_SPECS[0].k)
    try:
        fn = make()
        jfn = thunder.jit(fn)
        x = torch.randn(3)
        _check(jfn, fn, x)
        change(fn)
        _check(jfn, fn, x)
        assert thunder.compile_stats(jfn).cache_misses == 2
    finally:
        G_CFG.scale, G_CFG.inner.shift, G_SPECS[0].k = saved


def test_an_object_read_from_a_closure_and_changed_by_the_traced_code_is_written_per_call():
    counter = types.SimpleNamespace(n=0)

    def counts(x):
        counter.n += 1
        return x * counter.n

    jf = thunder.jit(counts)
    for i in range(1, 4):
        torch.testing.assert_close(jf(torch.ones(2)), torch.full((2,), float(i)))
        assert counter.n == i


G_TENSOR = torch.ones(4)
G_FLAG = True
G_SCALE = 2


def _helper(x):
    return x * G_SCALE  # read through a helper the traced function calls


def uses_globals(x):
    y = _helper(x) + G_TENSOR
    return y if G_FLAG else -y


def test_global_tensor_rebound():
    global G_TENSOR
    jfn = thunder.jit(uses_globals)
    x = torch.randn(4)
    old = G_TENSOR
    try:
        torch.testing.assert_close(jfn(x), uses_globals(x))
        G_TENSOR = torch.full((4,), 7.0)  # same metadata, another tensor
        torch.testing.assert_close(jfn(x), uses_globals(x))
        G_TENSOR.add_(1)  # written in place: the program reads the tensor itself
        torch.testing.assert_close(jfn(x), uses_globals(x))
    finally:
        G_TENSOR = old


@pytest.mark.parametrize("name, value", [("G_FLAG", False), ("G_SCALE", 3), ("G_SCALE", 2.0)])
def test_global_flag_or_number_changed(name, value):
    jfn = thunder.jit(uses_globals)
    x = torch.randn(4)
    old = globals()[name]
    try:
        torch.testing.assert_close(jfn(x), uses_globals(x))
        globals()[name] = value
        torch.testing.assert_close(jfn(x), uses_globals(x))
        assert thunder.compile_stats(jfn).cache_misses == 2
    finally:
        globals()[name] = old


def uses_an_imported_module(x):
    return F.gelu(x)


def test_a_global_name_of_an_imported_module_rebound():
    global F
    jfn = thunder.jit(uses_an_imported_module)
    x = torch.randn(4)
    old = F
    try:
        torch.testing.assert_close(jfn(x), uses_an_imported_module(x))
        F = types.SimpleNamespace(gelu=torch.sigmoid)
        torch.testing.assert_close(jfn(x), uses_an_imported_module(x))
        assert thunder.compile_stats(jfn).cache_misses == 2
    finally:
        F = old


def test_closure_variables_rebound():
    bias = torch.ones(3)
    scale = 2.0

    def f(x):
        return x * scale + bias

    jfn = thunder.jit(f)
    x = torch.randn(3)
    torch.testing.assert_close(jfn(x), f(x))
    bias = torch.zeros(3)
    torch.testing.assert_close(jfn(x), f(x))
    scale = -1.0
    torch.testing.assert_close(jfn(x), f(x))
    assert thunder.compile_stats(jfn).cache_misses == 3


def test_a_module_forward_reads_a_global():
    class M(nn.Module):
        def forward(self, x):
            return x * G_SCALE

    global G_SCALE
    m = M()
    jm = thunder.jit(m)
    x = torch.randn(3)
    old = G_SCALE
    try:
        _check(jm, m, x)
        G_SCALE = 10
        _check(jm, m, x)
    finally:
        G_SCALE = old


def test_unchanged_state_hits_the_cache():
    m = nn.Sequential(Scaled(), nn.Dropout(0.0), WithConfig())
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    for _ in range(3):
        _check(jm, m, x)
    jfn = thunder.jit(uses_globals)
    for _ in range(3):
        jfn(torch.randn(4))
    assert thunder.compile_stats(jm).cache_misses == 1 and thunder.compile_stats(jfn).cache_misses == 1


def test_a_failed_trace_leaves_the_module_as_it_was():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            self.fc.weight.data.zero_()
            self.last = x
            if x.sum() > 0:  # data-dependent: the trace fails here
                return x
            return self.fc(x)

    m = Counter()
    w = m.fc.weight.detach().clone()
    before = dict(vars(m))
    with pytest.raises(Exception, match="data-dependent"):
        thunder.jit(m)(torch.ones(2))
    assert vars(m) == before and "last" not in vars(m) and m.calls == 0
    assert torch.equal(m.fc.weight, w)


settings = types.ModuleType("settings")  # stands for the user's own config module
settings.__file__ = __file__
settings.SCALE = 2.0
settings.ENABLED = True


def uses_settings(x):
    return x * settings.SCALE if settings.ENABLED else x


def test_attributes_of_the_users_own_module_changed():
    jfn = thunder.jit(uses_settings)
    x = torch.randn(3)
    try:
        torch.testing.assert_close(jfn(x), uses_settings(x))
        settings.SCALE = 5.0
        torch.testing.assert_close(jfn(x), uses_settings(x))
        settings.ENABLED = False
        torch.testing.assert_close(jfn(x), uses_settings(x))
    finally:
        settings.SCALE, settings.ENABLED = 2.0, True


def test_a_call_under_autocast_misses_an_entry_traced_without_it():
    # the cached program computes in float32; under autocast eager's matmul is bfloat16, so
    # the entry must not answer: the call under autocast makes an entry of its own
    def f(x, w):
        return (x @ w).sum(-1)

    jf = thunder.jit(f)
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    assert jf(x, w).dtype is torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert f(x, w).dtype is torch.bfloat16
        assert jf(x, w).dtype is torch.bfloat16
    torch.testing.assert_close(jf(x, w), f(x, w))
    assert jf.stats.cache_misses == 2 and jf.stats.cache_hits == 1
    first, second = (e.prologue_traces[-1] for e in thunder.compile_stats(jf).entries)
    assert "check_autocast(())" in str(first)
    assert "check_autocast((('cpu', torch.bfloat16),))" in str(second)


def scaled_by_default(x, opts={"scale": 2.0}, *, shift=(1.0,)):  # noqa: B006 (the mutable default is the point)
    return x * opts["scale"] + shift[0]


def test_default_arguments_changed_after_the_first_call():
    jfn = thunder.jit(scaled_by_default)
    x = torch.randn(3)
    torch.testing.assert_close(jfn(x), scaled_by_default(x))
    scaled_by_default.__defaults__[0]["scale"] = 5.0  # the default dict changed in place
    try:
        torch.testing.assert_close(jfn(x), scaled_by_default(x))
        scaled_by_default.__kwdefaults__["shift"] = (-1.0,)
        torch.testing.assert_close(jfn(x), scaled_by_default(x))
    finally:
        scaled_by_default.__defaults__[0]["scale"] = 2.0
        scaled_by_default.__kwdefaults__["shift"] = (1.0,)
    assert thunder.compile_stats(jfn).cache_misses == 3


def test_host_randomness_and_reseeding_inside_are_refused_with_the_line():
    import random

    import numpy as np

    def layer_drop(x):
        return x if random.random() < 0.5 else -x  # would be decided once, at trace time

    def np_scale(x):
        return x * float(np.random.rand())

    def reseeds(x):
        torch.manual_seed(0)  # would reseed the trace only, not the calls
        return x + torch.randn(3)

    for fn, what in (
        (layer_drop, "random.random"),
        (np_scale, "numpy.random.rand"),
        (reseeds, "torch.manual_seed"),
    ):
        with pytest.raises(UnsupportedOpError, match=f"thunder: {what} inside the compiled function") as e:
            thunder.jit(fn)(torch.randn(3))
        assert f"in {fn.__name__}" in str(e.value)
    # outside a trace they are the real functions again
    random.seed(1)
    a = random.random()
    random.seed(1)
    assert random.random() == a and torch.manual_seed(3) is torch.default_generator


def _draw_bound_before(x):
    return x * _bound_uniform(1.0, 2.0)  # the module attribute is not read: a name bound at import


def _np_draw_bound_before(x):
    return x + float(_bound_np_rand())


def test_host_randomness_through_names_bound_before_tracing_is_refused_and_undone():
    import random

    import numpy as np

    for fn, line in (
        (_draw_bound_before, "return x * _bound_uniform(1.0, 2.0)"),
        (_np_draw_bound_before, "return x + float(_bound_np_rand())"),
    ):
        state, np_key = random.getstate(), np.random.get_state()[1].copy()
        # (the name bound at import is the refusing replacement while tracing, as the module
        # attribute is; the draw is refused by name)
        with pytest.raises(UnsupportedOpError, match=r"\.(uniform|rand) inside the compiled function") as e:
            thunder.jit(fn)(torch.randn(3))
        assert f"in {fn.__name__}: {line}" in str(e.value)
        # the trace's draws are undone: the generators are as the call found them
        assert random.getstate() == state and (np.random.get_state()[1] == np_key).all()


def test_a_draw_by_another_thread_while_tracing_is_not_the_trace_s(monkeypatch):
    """The generator's state changed during the first trace, not by the traced code (as when
    another thread draws meanwhile): the second trace, which draws nothing, is the trace."""
    from thunder.frontend.effects import host_state

    states, calls = host_state._states, []

    def states_with_a_draw_in_between(generators):
        calls.append(1)
        if len(calls) == 2:  # the end of the first trace: another thread drew
            import random

            random._inst.random()  # (what another thread reaches: the real function)
        return states(generators)

    monkeypatch.setattr(host_state, "_states", states_with_a_draw_in_between)
    jfn = thunder.jit(lambda x: x * 2)
    torch.testing.assert_close(jfn(torch.ones(3)), torch.full((3,), 2.0))
    assert len(calls) >= 4 and thunder.compile_stats(jfn).cache_misses == 1


class Weighted(nn.Module):
    """A module holding a list it reads (compared by value) and a config object."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.weights = [1.0, 2.0]
        self.scale = 1.5
        self.config = Config()

    def forward(self, x):
        return self.fc(x) * self.scale * self.weights[1] + self.config.mult


def _state_checks(jfn):
    from thunder.ops.python import StateCheck

    entry = jfn._jfn._cache.order[-1]
    return [a for b in entry.prologue_traces[-1].bound_symbols for a in b.args if isinstance(a, StateCheck)]


def test_an_unchanged_module_passes_by_its_dict_version_and_any_change_is_still_seen():
    """A cached call accepts a module (and an object it holds) whose ``__dict__`` is unchanged
    since it last passed on CPython's version tag of that dict alone; every change made after
    many such calls is still seen: a value re-set (also to the original object), a list the
    module holds changed in place (not a change of the module's dict), a hook (a dict of its
    own), a config attribute, another module of the same class."""
    from torch._C._dynamo.guards import dict_version

    torch.manual_seed(0)
    m = Weighted()
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    for _ in range(3):
        _check(jm, m, x)
    # the shortcut is what the cached calls took, except for the module holding a list: the
    # list is compared by value, so that module is checked in full on every call
    versions = {c.names: c.version for c in _state_checks(jm)}
    assert versions[("training", "in_features", "out_features")] == dict_version(m.fc.__dict__)
    assert versions[("mult", "inner")] == dict_version(m.config.__dict__)
    assert versions[("training", "weights", "scale", "config")] is None
    original = m.scale

    def scale_back():
        m.scale = original

    changes = [
        lambda: setattr(m, "scale", 3.0),
        scale_back,
        lambda: m.weights.__setitem__(1, 5.0),  # in place: the module's dict keeps its tag
        lambda: m.fc.register_forward_hook(lambda mod, args, out: out * 2),
        lambda: m.fc._forward_hooks.clear(),
        lambda: setattr(m.config, "mult", 7.0),
        lambda: setattr(m, "fc", nn.Linear(4, 4)),
        lambda: m.train(False),
    ]
    for change in changes:
        change()
        for _ in range(3):  # (the first call of each takes the full check, then the shortcut again)
            _check(jm, m, x)
    # two instances of the class taking turns through one jitted function: each call passes
    # only the entry made for its own module
    a, b = Weighted(), Weighted()
    b.scale = 4.0
    jf = thunder.jit(_call_module)
    for mod in (a, b, a, b, a):
        torch.testing.assert_close(jf(mod, x), mod(x))
    b.weights[1] = -1.0
    for mod in (a, b):
        torch.testing.assert_close(jf(mod, x), mod(x))
    assert thunder.compile_stats(jf).cache_misses == 3


def _call_module(mod, x):
    return mod(x)
