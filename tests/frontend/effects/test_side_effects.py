"""Python around the torch calls behaves as in eager: writes to state the function did not make
(lists, dicts, sets, deques, objects reached through globals, closures, default arguments,
modules, hooks and callbacks; rebound globals and nonlocals), prints, log records and warnings
happen on every call with that call's values; no proxy ever reaches the user's objects; what
cannot be replayed is a clear error."""

from __future__ import annotations

import collections
import io
import logging
import threading
import time
import warnings

import pytest
import torch
from torch import nn

import thunder
from thunder.core.proxies import Proxy


def _proxies(root, seen=None) -> list:
    """Every proxy reachable from ``root`` (containers, object attributes)."""
    seen = set() if seen is None else seen
    if id(root) in seen:
        return []
    seen.add(id(root))
    if isinstance(root, Proxy):
        return [root]
    if isinstance(root, (str, bytes, int, float, type(None), torch.Tensor, type)):
        return []
    found = []
    if isinstance(root, dict):
        for k, v in root.items():
            found += _proxies(k, seen) + _proxies(v, seen)
    elif isinstance(root, (list, tuple, set, frozenset, collections.deque)):
        for v in root:
            found += _proxies(v, seen)
    d = getattr(root, "__dict__", None)
    if isinstance(d, dict) and not isinstance(root, type):
        found += _proxies(d, seen)
    return found


def _same(a, b) -> None:
    """``a`` (thunder's state) equals ``b`` (eager's), tensors by value."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple, collections.deque)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def _three_calls(make, x=None):
    """``make()`` -> (function, its state getter); the jitted copy and an eager copy are called
    three times; values and state agree after each call and no proxy is left anywhere."""
    x = torch.arange(3.0) if x is None else x
    fe, state_e = make()
    want = [(fe(x + i), _snap(state_e())) for i in range(3)]
    fj, state_j = make()
    jf = thunder.jit(fj)
    for i in range(3):
        got = jf(x + i)
        _same(got, want[i][0])
        _same(_snap(state_j()), want[i][1])
        assert _proxies(state_j()) == [], state_j()
    return jf


def _snap(v):
    if isinstance(v, torch.Tensor):
        return v.clone()
    if isinstance(v, collections.defaultdict):
        return collections.defaultdict(v.default_factory, {k: _snap(x) for k, x in v.items()})
    if isinstance(v, dict):
        return type(v)({k: _snap(x) for k, x in v.items()})
    if isinstance(v, (list, tuple)):
        return type(v)(_snap(x) for x in v)
    if isinstance(v, collections.deque):
        return collections.deque((_snap(x) for x in v), v.maxlen)
    if isinstance(v, set):
        return set(v)
    if isinstance(v, _Config):
        return ("object", _snap(vars(v)))
    return v


G_LIST: list = []
G_DICT: dict = {}
G_SET: set = set()
G_DEQUE: collections.deque = collections.deque(maxlen=2)
G_DEFAULT = collections.defaultdict(list)
G_N = 0
G_INTS: list = []


def test_global_list_append_is_replayed_and_compiled_once():
    def make():
        G_LIST.clear()

        def f(x):
            G_LIST.append(x * 2)
            return x + 1

        return f, lambda: G_LIST

    jf = _three_calls(make)
    assert thunder.compile_stats(jf).cache_misses == 1
    assert len(G_LIST) == 3 and all(type(t) is torch.Tensor for t in G_LIST)


def test_closure_list_append():
    def make():
        acc = []

        def f(x):
            acc.append(x.sin())
            return x

        return f, lambda: acc

    jf = _three_calls(make)
    assert thunder.compile_stats(jf).cache_misses == 1


def test_global_dict_set_and_defaultdict():
    def make():
        G_DICT.clear()
        G_DEFAULT.clear()

        def f(x):
            G_DICT["last"] = x * 3
            G_DEFAULT["acts"].append(x + 1)
            return x

        return f, lambda: (G_DICT, G_DEFAULT)

    _three_calls(make)


def test_activations_collected_in_a_defaultdict_are_compiled_twice():
    """``acts[name].append(o)``: the first call makes the key's list (a read of the dict), the
    later ones only append to it, reached by its path."""

    def make():
        acts = collections.defaultdict(list)

        def f(x):
            acts["fc"].append(x * 2)
            return x

        return f, lambda: acts

    jf = _three_calls(make)
    assert thunder.compile_stats(jf).cache_misses == 2


def test_a_list_read_through_a_dict_key_is_checked_by_its_contents():
    def make():
        acts = {"fc": []}

        def f(x):
            acts["fc"].append(1)
            return x * len(acts["fc"])

        return f, lambda: acts

    _three_calls(make)


def test_mutable_default_argument():
    def make():
        def f(x, acc=[]):  # noqa: B006 - the point of the test
            acc.append(x * 2)
            return x

        return f, lambda: f.__defaults__[0]

    jf = _three_calls(make)
    assert thunder.compile_stats(jf).cache_misses == 1


def test_global_set_and_deque():
    def make():
        G_SET.clear()
        G_DEQUE.clear()

        def f(x):
            G_SET.add("seen")
            G_DEQUE.append(x * 2)
            return x

        return f, lambda: (G_SET, G_DEQUE)

    _three_calls(make)


def test_list_read_cleared_and_appended():
    def make():
        G_LIST.clear()
        G_LIST.append(1)

        def f(x):
            n = len(G_LIST)
            G_LIST.clear()
            G_LIST.append(n)
            G_LIST.append(x * n)
            return x * n

        return f, lambda: G_LIST

    _three_calls(make)


@pytest.mark.parametrize(
    "read",
    [
        lambda x: torch.cat(G_LIST),
        lambda x: torch.cat([x] + G_LIST),
        lambda x: x + len(set(G_SET)),
    ],
    ids=["torch.cat(L)", "[x] + L", "set(S)"],
)
def test_a_container_read_by_torch_or_by_c_code_is_checked_by_its_contents(read):
    """Reads that do not call the container's methods: its contents are still checked."""

    def make():
        G_LIST.clear()
        G_SET.clear()

        def f(x):
            G_LIST.append(x * 1)
            G_SET.add(float(x.shape[0]) + len(G_SET))
            return read(x)

        return f, lambda: (G_LIST, G_SET)

    _three_calls(make, torch.ones(1))


def test_global_counter_and_ints_and_pop():
    def make():
        global G_N
        G_N = 0
        G_INTS[:] = [5, 6, 7, 8]

        def f(x):
            global G_N
            G_N += 1
            G_INTS.append(G_N)
            first = G_INTS.pop(0)
            return x + G_N + first

        return f, lambda: (G_N, list(G_INTS))

    _three_calls(make)


def test_nonlocal_counter():
    def make():
        n = 0

        def f(x):
            nonlocal n
            n += 1
            return x * n

        return f, lambda: n

    _three_calls(make)


def test_forward_hook_collects_activations():
    def make():
        torch.manual_seed(0)
        m = nn.Linear(3, 3)
        acts = []
        m.register_forward_hook(lambda mod, i, o: acts.append(o.detach()))
        return m, lambda: acts

    jm = _three_calls(make)
    assert thunder.compile_stats(jm).cache_misses == 1


def test_forward_hook_added_after_the_first_call():
    torch.manual_seed(0)
    m = nn.Linear(3, 3)
    jm = thunder.jit(m)
    x = torch.randn(2, 3)
    jm(x)
    acts = []
    m.register_forward_hook(lambda mod, i, o: acts.append(o.detach()))
    for _ in range(3):
        jm(x)
    assert len(acts) == 3 and _proxies(acts) == []
    torch.testing.assert_close(acts[-1], m(x))


def test_global_module_hook_collects_outputs():
    seen = []
    handle = nn.modules.module.register_module_forward_hook(
        lambda mod, i, o: seen.append(o.detach()) if isinstance(mod, nn.Linear) else None
    )
    try:
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        jm = thunder.jit(m)
        x = torch.randn(2, 3)
        for i in range(3):
            jm(x)
            assert len(seen) == i + 1 and _proxies(seen) == []
        torch.testing.assert_close(seen[-1], m[0](x))
    finally:
        handle.remove()


def test_forward_pre_hook_with_a_counter():
    def make():
        torch.manual_seed(0)
        m = nn.Linear(3, 3)
        state = {"n": 0}

        def pre(mod, args):
            state["n"] += 1
            return (args[0] * state["n"],)

        m.register_forward_pre_hook(pre)
        return m, lambda: state

    _three_calls(make)


def test_callback_arguments():
    """A function and a list's bound ``append`` passed as callbacks."""
    rec_e, rec_j, direct_e, direct_j = [], [], [], []

    def f(x, callback, sink):
        callback(x + 1)
        sink(x * 3)
        return x

    jf = thunder.jit(f)
    for i in range(3):
        x = torch.arange(3.0) + i
        f(x, lambda v: rec_e.append(v * 2), direct_e.append)
        jf(x, lambda v: rec_j.append(v * 2), direct_j.append)
        _same(rec_j, rec_e)
        _same(direct_j, direct_e)
        assert _proxies(rec_j) == [] and _proxies(direct_j) == []


def test_print_logging_and_warnings_every_call(capsys, caplog):
    log = logging.getLogger("thunder_test_side_effects")

    def f(x):
        y = x * 2
        print("y is", y)
        log.warning("value %s", y)
        warnings.warn("careful", stacklevel=1)
        return y

    jf = thunder.jit(f)
    with caplog.at_level(logging.WARNING, logger="thunder_test_side_effects"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(3):
                jf(torch.full((2,), float(i)))
    out = capsys.readouterr().out
    assert out.splitlines() == [f"y is {torch.full((2,), 2.0 * i)}" for i in range(3)]
    assert [r.getMessage() for r in caplog.records] == [
        f"value {torch.full((2,), 2.0 * i)}" for i in range(3)
    ]
    assert [str(w.message) for w in caught if "careful" in str(w.message)] == ["careful"] * 3
    assert all(w.filename == __file__ for w in caught if "careful" in str(w.message))


def test_a_tensor_formatted_as_text_is_refused_with_the_line():
    def f(x):
        y = x * 2
        print(f"y is {y}")
        return y

    with pytest.raises(Exception, match=r"formatted as text(.|\n)*test_side_effects.py.*print"):
        thunder.jit(f)(torch.ones(2))


def test_host_clock_is_refused_with_the_line():
    def f(x):
        return x * time.time()

    with pytest.raises(
        Exception, match=r"time\.time inside the compiled function(.|\n)*test_side_effects.py"
    ):
        thunder.jit(f)(torch.ones(2))


class _Recorder(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None
        self.calls = 0

    def forward(self, x):
        self.last = x * 2
        self.calls += 1
        return x + 1


def test_module_attribute_set_in_forward():
    def make():
        m = _Recorder()
        return m, lambda: (m.last, m.calls)

    _three_calls(make)


class _History(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []
        self.stats = {"n": 0}

    def forward(self, x):
        self.history.append(x * 2)
        self.stats["n"] += 1
        return x + self.stats["n"]


def test_containers_a_module_holds_are_written_in_place():
    def make():
        m = _History()
        history = m.history
        return m, lambda: (m.history, m.stats, m.history is history)

    _three_calls(make)


class _Config:
    def __init__(self):
        self.problem_type = None
        self.items = []
        self.count = 0


class _Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = _Config()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        if self.config.problem_type is None:
            self.config.problem_type = "single_label"
        return self.fc(x)


def test_write_into_an_object_a_module_holds():
    def make():
        torch.manual_seed(0)
        m = _Classifier()
        return m, lambda: m.config

    jm = _three_calls(make)
    assert thunder.compile_stats(jm).cache_misses == 2  # traced again once the config changed


def test_attributes_set_on_an_input_tensor():
    def f(x):
        x.tag = "seen"
        x.double = x * 2
        return x + 1

    jf = thunder.jit(f)
    for i in range(3):
        x = torch.full((2,), float(i))
        jf(x)
        assert x.tag == "seen" and type(x.double) is torch.Tensor
        torch.testing.assert_close(x.double, x * 2)


class _Slotted:
    __slots__ = ("value", "calls")

    def __init__(self):
        self.value = None
        self.calls = 0


G_SLOTTED = _Slotted()
G_ORDERED: collections.OrderedDict = collections.OrderedDict()


def test_writes_into_an_object_with_slots_and_an_ordered_dict_from_globals():
    def make():
        G_SLOTTED.value, G_SLOTTED.calls = None, 0
        G_ORDERED.clear()

        def f(x):
            G_SLOTTED.value = x * 2
            G_SLOTTED.calls += 1
            G_ORDERED["last"] = x + 1
            return x

        return f, lambda: (G_SLOTTED.value, G_SLOTTED.calls, G_ORDERED)

    _three_calls(make)


G_OBJ = _Config()


def test_writes_into_an_object_read_from_a_global():
    def make():
        G_OBJ.items, G_OBJ.count = [], 0

        def f(x):
            G_OBJ.items.append(x * 2)
            G_OBJ.count += 1
            return x + G_OBJ.count

        return f, lambda: G_OBJ

    _three_calls(make)


def test_no_proxy_left_after_a_failed_trace():
    acc = []

    def f(x):
        acc.append(x * 2)
        if x.sum() > 0:  # data-dependent: refused
            return x
        return x

    with pytest.raises(Exception, match="data-dependent|value"):
        thunder.jit(f)(torch.ones(2))
    assert acc == []


def test_a_value_that_cannot_be_replayed_is_refused_with_the_line():
    acc = []

    def f(x):
        acc.append(threading.Lock())
        return x + 1

    with pytest.raises(
        Exception,
        match=r"the value given to the closure variable acc.append\(\) is a _thread.lock(.|\n)*acc.append",
    ):
        thunder.jit(f)(torch.ones(2))
    assert acc == []


def test_a_deleted_closure_variable_is_refused():
    n = 1

    def f(x):
        nonlocal n
        y = x * n
        del n
        return y

    with pytest.raises(Exception, match="the closure variable n"):
        thunder.jit(f)(torch.ones(2))
    assert n == 1


def test_threads_do_not_lose_module_updates():
    m = _Recorder()
    jm = thunder.jit(m)
    x = torch.ones(2)
    jm(x)
    m.calls = 0

    def work():
        for _ in range(10):
            jm(x)

    threads = [threading.Thread(target=work) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.calls == 100


def test_an_object_with_slots_holding_a_list_is_checked_by_identity_of_the_list():
    # torch's pytree TreeSpec (slots, a list of children specs) read through a closure: the
    # prologue checked the list against a printed copy of it, which rebuilt LeafSpec with
    # arguments its __init__ does not take, and every call failed
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten((torch.ones(2), (1,), {}))

    def rebuild(ts):
        return pytree.tree_unflatten([ts[0], 1], spec)

    def f(x):
        a, _, _ = rebuild([x])
        return a.abs()

    jf = thunder.jit(f)
    for _ in range(3):
        x = torch.randn(2)
        torch.testing.assert_close(jf(x), f(x))
    assert thunder.compile_stats(jf).cache_misses == 1


def test_host_clock_imported_under_its_own_name_is_refused():
    from time import perf_counter

    def f(x):  # a closure holding the clock: not reached through the time module
        return x * perf_counter()

    with pytest.raises(
        Exception, match=r"time\.perf_counter inside the compiled function(.|\n)*test_side_effects.py"
    ):
        thunder.jit(f)(torch.ones(2))
    assert perf_counter is time.perf_counter  # put back after the trace


def test_host_clock_imported_as_a_global_is_refused():
    with pytest.raises(Exception, match=r"time\.time_ns inside the compiled function"):
        thunder.jit(_uses_imported_clock)(torch.ones(2))
    assert _imported_time_ns is time.time_ns
    assert _uses_imported_clock(torch.ones(2)).shape == (2,)  # the real clock again outside tracing


from time import time_ns as _imported_time_ns  # noqa: E402


def _uses_imported_clock(x):
    return x * (_imported_time_ns() > 0)


_LOG = io.StringIO()


def test_writes_to_a_global_file_are_made_on_every_call():
    def f(x):
        _LOG.write("step\n")
        _LOG.writelines(["a", "b\n"])
        return x + 1

    _LOG.seek(0)
    _LOG.truncate()
    jf = thunder.jit(f)
    for _ in range(3):
        jf(torch.ones(2))
    assert _LOG.getvalue() == "step\nab\n" * 3  # eager's, not one line from the trace


def test_a_file_in_a_closure_written_per_call_and_its_state_refused(tmp_path):
    path = tmp_path / "log.txt"
    with open(path, "w") as fh:

        def f(x):
            fh.write("called\n")
            return x * 2

        def g(x):
            fh.tell()
            return x

        jf = thunder.jit(f)
        jf(torch.ones(2))
        jf(torch.ones(2))
        with pytest.raises(Exception, match=r"tell of the file(.|\n)*test_side_effects.py"):
            thunder.jit(g)(torch.ones(2))
    assert path.read_text() == "called\n" * 2


_PRINTED = []


def test_a_printed_container_shows_its_contents_at_the_print(capsys):
    def f(x):
        print("before", _PRINTED)
        _PRINTED.append(len(_PRINTED))
        print("after", _PRINTED, {"n": _PRINTED})
        return x + 1

    for _ in range(3):  # eager's output, from the same start
        f(torch.ones(1))
    eager = capsys.readouterr().out
    _PRINTED.clear()
    jf = thunder.jit(f)
    for _ in range(3):
        jf(torch.ones(1))
    assert capsys.readouterr().out == eager
    assert _PRINTED == [0, 1, 2]


_COUNT = 0


def _count_calls(x):
    global _COUNT
    _COUNT += 1
    return x * 2


def test_a_global_counter_is_traced_as_a_value_after_its_first_change():
    global _COUNT
    _COUNT = 0
    jf = thunder.jit(_count_calls)
    for _ in range(6):
        jf(torch.ones(2))
    assert _COUNT == 6
    # traced twice: once with the value, then with the counter an input of the program
    assert thunder.compile_stats(jf).cache_misses == 2
    assert "['_COUNT']" in str(thunder.last_prologue_traces(jf)[-1])  # unpacked as an input
    _COUNT = 100  # set from outside: the program reads it as it is
    jf(torch.ones(2))
    assert _COUNT == 101 and thunder.compile_stats(jf).cache_misses == 2


def test_a_nonlocal_counter_and_a_counter_that_decides_a_branch_are_eager_s():
    def make():
        n = 0

        def f(x):
            nonlocal n
            n += 2
            if n > 6:
                return x * 3
            return x + n

        return f, lambda: n

    f, seen = make()
    eager = [f(torch.ones(2)) for _ in range(6)]
    f, seen = make()
    jf = thunder.jit(f)
    got = [jf(torch.ones(2)) for _ in range(6)]
    for g, e in zip(got, eager):
        torch.testing.assert_close(g, e)
    assert seen() == 12
