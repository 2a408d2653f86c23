"""The prologue's checks: an input that does not fit what a cached trace was specialised on
raises ``PrologueCheckFailed``, which the cache reads as "this entry does not fit these
inputs".

Each check that fits passes as few tests as it can (a model's prologue runs one for each
parameter and module); one that does not is checked item by item, for the error that names
what differs.
"""

from __future__ import annotations

import operator

import torch
from torch.nn.modules import module as _module_module

from thunder.core.subclass import same_context, subclass_of
from thunder.executors.python.overlap import overlaps
from thunder.ops import python as pyops
from thunder.ops.autocast import autocast_state
from thunder.ops.collectives import group_of
from thunder.ops.python import same

_any_autocast_enabled = torch._C._is_any_autocast_enabled

try:  # torch.compile's check of tensors' metadata, in C++
    from torch._C._dynamo.guards import TensorGuards as _TensorGuards
except ImportError:  # (a torch without it: each tensor checked in Python)
    _TensorGuards = None

try:  # CPython's version tag of a dict (``ma_version_tag``), as torch.compile's guards read it
    from torch._C._dynamo.guards import dict_version as _dict_version
except ImportError:  # (a torch without it: a tag that equals none, so every check runs in full)

    def _dict_version(d):
        return object()


class PrologueCheckFailed(Exception):
    """An input does not match what a cached trace was specialised on."""


def check_len(seq, n):
    if len(seq) != n:
        raise PrologueCheckFailed(f"expected {n} values, got {len(seq)}")


def check_keys(d, keys):
    if tuple(d.keys()) != keys:
        raise PrologueCheckFailed(f"expected keys {keys}, got {tuple(d.keys())}")


_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)  # not a tensor subclass


def check_tensor(t, shape, dtype, device, requires_grad):
    """``device`` is a string (``'cpu'``, ``'cuda:0'``): a literal in the printed prologue, so
    the check builds no ``torch.device`` on every call. A tensor that fits passes one test
    (the fewest bytecodes: a model's prologue runs this for each parameter); one that does not
    is checked item by item, for the error that names what differs."""
    if (
        type(t) in _TENSOR_TYPES
        and t.shape == shape
        and t.dtype is dtype
        and t.requires_grad is requires_grad
        and t.device == _DEVICES.get(device)  # (None the first time: the full check makes it)
    ):
        return
    _check_tensor(t, shape, dtype, device, requires_grad)


def _check_tensor(t, shape, dtype, device, requires_grad):
    if type(t) not in _TENSOR_TYPES:
        raise PrologueCheckFailed(f"expected a tensor, got {type(t).__name__}")
    if t.shape != shape:
        raise PrologueCheckFailed(f"expected shape {shape}, got {tuple(t.shape)}")
    if t.dtype is not dtype:
        raise PrologueCheckFailed(f"expected dtype {dtype}, got {t.dtype}")
    if t.device != (_DEVICES.get(device) or _device(device)):
        raise PrologueCheckFailed(f"expected device {device}, got {t.device}")
    if t.requires_grad is not requires_grad:
        raise PrologueCheckFailed(f"expected requires_grad={requires_grad}, got {t.requires_grad}")


_DEVICES: dict[str, torch.device] = {}


class TensorGuard:
    """One plain tensor's ``check_tensor`` as one C++ call, the shortcut of its line in the
    compiled prologue (``shortcuts.py``): ``check`` is first the full test and, once a tensor
    has passed it, the ``check`` of torch's ``TensorGuards`` made from that tensor (its class,
    shape, dtype, device, requires_grad and dispatch keys; not its strides). False where the
    guard does not hold: the line's ``check_tensor`` then decides, and names what differs."""

    __slots__ = ("check", "meta")

    def __init__(self, shape, dtype, device, requires_grad):
        self.meta = (shape, dtype, device, requires_grad)
        self.check = self._first

    def _first(self, t) -> bool:
        try:
            check_tensor(t, *self.meta)
        except PrologueCheckFailed:
            return False
        if _TensorGuards is not None:
            shape = self.meta[0]
            self.check = _TensorGuards(
                t, dynamic_dims_sizes=[list(shape)], dynamic_dims_strides=[[None] * len(shape)]
            ).check
        return True


def check_sizes(symbols: dict, relations: tuple[str, ...]) -> None:
    """Every relation between the symbolic sizes (``symbols``: name -> this call's size) the
    compilation relied on holds (``relations``: Python expressions over the names, printed from
    a ``SizeRelations``); the error names the first that does not."""
    for r in relations:
        if not eval(r, {"max": max, "min": min, "__builtins__": {}}, symbols):  # (printed by thunder)
            at = ", ".join(f"{n} = {v}" for n, v in symbols.items())
            raise PrologueCheckFailed(f"expected {r} ({at})")


def check_tensors(checks, *ts):
    """``check_tensor`` of each of ``ts`` against ``checks.metas``, in one call (a model's
    prologue checks one tensor per parameter). Once they have passed in full, torch's
    ``TensorGuards`` made from them checks them in C++, in one pass: it holds each tensor to
    its class, shape, dtype, device and requires_grad (as the full check does) and to its
    dispatch keys (a conjugate view, or a call inside ``torch.inference_mode``, fails it: the
    full check decides then), and not to its strides (``check_strides`` does that where a
    trace read them). A tensor that does not fit is named in the error."""
    guards = checks.guards
    if guards is not None and guards.check(*ts):
        return
    for i, (name, t, (shape, dtype, device, requires_grad)) in enumerate(zip(checks.names, ts, checks.metas)):
        try:
            check_tensor(t, shape, dtype, device, requires_grad)
        except PrologueCheckFailed as e:
            failed = PrologueCheckFailed(f"{name}: {e}")
            failed.tensor = i  # (which one: a cache miss's reason names its check_tensor)
            raise failed from None
    if _TensorGuards is not None:
        checks.guards = _TensorGuards(
            *ts,
            dynamic_dims_sizes=[list(shape) for shape, *_ in checks.metas],
            dynamic_dims_strides=[[None] * len(shape) for shape, *_ in checks.metas],
        )


def _device(name: str) -> torch.device:
    return _DEVICES.setdefault(name, torch.device(name))


def check_literal(x, value):
    if type(x) is not type(value) or x != value:
        raise PrologueCheckFailed(f"expected {value!r}, got {x!r}")


def check_type(x, cls):
    if type(x) is not cls:
        raise PrologueCheckFailed(
            f"expected an object of type {cls.__qualname__}, got {type(x).__qualname__}"
        )


def check_process_group(name, size, rank):
    try:
        group = group_of(name)
    except Exception as e:
        raise PrologueCheckFailed(str(e)) from None
    if group.size() != size or group.rank() != rank:
        raise PrologueCheckFailed(
            f"expected process group {name!r} of size {size} with this process as rank {rank}, got size "
            f"{group.size()} and rank {group.rank()}"
        )


def check_dtensor_shard(x, group, shape):
    spec = getattr(x, "_spec", None)  # (a DTensor's; no import of torch.distributed.tensor per call)
    if spec is None or type(x).__name__ != "DTensor":
        raise PrologueCheckFailed(f"expected a DTensor, got {type(x).__qualname__}")
    placements = spec.placements
    if len(placements) != 1 or not placements[0].is_shard(0):
        raise PrologueCheckFailed(f"expected a DTensor placed as (Shard(dim=0),), got {placements}")
    if x.shape != shape:
        raise PrologueCheckFailed(f"expected a DTensor of shape {shape}, got {tuple(x.shape)}")
    if spec.mesh.get_group().group_name != group:
        raise PrologueCheckFailed(f"expected a DTensor over process group {group!r}")


def check_is(x, obj):
    if x is not obj:
        raise PrologueCheckFailed(f"expected the same object as when traced ({type(obj).__qualname__})")


_COMPARE = {symbol: getattr(operator, name) for name, symbol in pyops.COMPARE_OPS.items()}


def check_int_compare(x, op, bound, outcome):
    if type(x) is not int or _COMPARE[op](x, bound) is not outcome:
        raise PrologueCheckFailed(f"expected {x!r} {op} {bound} to be {outcome}")


def check_tensor_value(t, value):
    v = t.tolist()
    if v != value:
        raise PrologueCheckFailed(f"expected the value {value!r}, got {v!r}")


def check_grad_enabled(flag):
    if torch.is_grad_enabled() is not flag:
        raise PrologueCheckFailed(f"traced with grad {'enabled' if flag else 'disabled'}")


def check_torch_flag(name, value):
    if pyops.TORCH_FLAGS[name]() is not value:
        raise PrologueCheckFailed(f"traced with {name} {'on' if value else 'off'}")


def check_autocast(state):
    if not state and not _any_autocast_enabled():  # (off, as traced: no state read)
        return
    if autocast_state() != state:
        raise PrologueCheckFailed(
            f"traced with autocast {'on for ' + str(state) if state else 'off'}, now {autocast_state() or 'off'}"
        )


def check_default_dtype(dtype):
    if torch.get_default_dtype() is not dtype:
        raise PrologueCheckFailed(f"traced with default dtype {dtype}")


def check_tensor_subclass(x, cls, shape, dtype, device, requires_grad, names, ctx):
    cls = subclass_of(cls)
    if type(x) is not cls:
        raise PrologueCheckFailed(f"expected a {cls.__qualname__}, got {type(x).__qualname__}")
    if x.shape != shape:
        raise PrologueCheckFailed(f"expected shape {shape}, got {tuple(x.shape)}")
    if x.dtype is not dtype:
        raise PrologueCheckFailed(f"expected dtype {dtype}, got {x.dtype}")
    if x.device != device:
        raise PrologueCheckFailed(f"expected device {device}, got {x.device}")
    if requires_grad is not None and x.requires_grad is not requires_grad:  # (None: either)
        raise PrologueCheckFailed(f"expected requires_grad={requires_grad}, got {x.requires_grad}")
    got_names, got_ctx = x.__tensor_flatten__()
    if tuple(got_names) != names:
        raise PrologueCheckFailed(f"expected the inner tensors {names}, got {tuple(got_names)}")
    if not same_context(got_ctx, ctx):
        raise PrologueCheckFailed(f"expected the flatten context {ctx!r}, got {got_ctx!r}")


def check_hasattr(x, name, expected):
    if hasattr(x, name) is not expected:
        have = "has" if not expected else "has no"
        raise PrologueCheckFailed(
            f"the {type(x).__qualname__} object {have} attribute {name!r} (traced without)"
        )


_is = operator.is_
_NO_ENTRY = object()  # (an entry a module's table no longer has)


# a module's hook tables, and torch's global ones (which ``check_no_module_hooks`` reads)
HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
GLOBAL_HOOK_TABLES = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_forward_hooks_always_called",
)
_hooks_of = operator.itemgetter(*HOOK_TABLES)


def check_module(m, cls, state):
    """``m`` is a ``cls`` whose plain attributes are as recorded in ``state`` and that has no
    hooks (unless it was traced with them: then the hook dictionaries are among them).

    A module that passed in full and whose ``__dict__`` is unchanged since passes in one test
    (a model's prologue runs this for each of its modules): CPython gives a dict a new version
    tag, unique across all dicts, at every change that puts another object under a key (an
    attribute set to a value identical to the one it had keeps the tag, and passes the identity
    test anyway). The hook dictionaries are dicts of their own, read each time; so are the
    tables a container's check reads (its submodules' names), whose tags are compared too.
    Otherwise a module without tables or None entries to check passes one identity test of
    every recorded value, and anything else takes the full check. Only a state that passed the
    identity test records a tag: a value compared by value (a list the module holds) could
    change without its holder's dict changing."""
    d = m.__dict__
    version = _dict_version(d)  # (read before any test: a change made during one leaves a stale tag)
    if (
        type(m) is cls
        and state.version == version
        and not any(_hooks_of(d))
        and (state.plain or state.table_versions == _table_versions(d, state.watched))
    ):
        return
    try:
        if (
            type(m) is cls
            and state.plain
            and len(d) == state.size
            and not any(_hooks_of(d))
            and all(map(_is, state.get(d), state.values))
        ):
            state.version = version
            return
    except KeyError:  # (an attribute deleted and another set: the full check names it)
        pass
    if state.plain or state.hooks:
        _check_module(m, cls, state, d)
        return
    try:
        tables = _table_versions(d, state.watched)
    except KeyError:  # (a table deleted: the full check names it)
        tables = None
    if _check_module(m, cls, state, d) and tables is not None:
        state.version, state.table_versions = version, tables


def _table_versions(d, names) -> list:
    return [_dict_version(d[name]) for name in names]


def _check_module(m, cls, state, d) -> bool:
    """The full check; True when every recorded value passed the identity test."""
    if type(m) is not cls or (
        (d["_forward_hooks"] or d["_forward_pre_hooks"] or d["_backward_hooks"] or d["_backward_pre_hooks"])
        and not state.hooks
    ):
        _module_changed(m, cls)
    if len(d) != state.size:
        _attributes_changed(d, state, cls)
    if state.tables:
        for table, names in state.tables:
            if tuple(d[table]) != names:
                _items_changed(d[table], names, table, cls)
    if state.nones:
        for table, name in state.nones:
            if d[table].get(name, _NO_ENTRY) is not None:
                raise PrologueCheckFailed(f"{cls.__qualname__}.{name} was None when traced and is not now")
    return _check_items(d, state, cls.__qualname__)


def _items_changed(table, names, which: str, cls):
    now = tuple(table)
    added, removed = [n for n in now if n not in names], [n for n in names if n not in now]
    change = "; ".join(
        f"{verb} {', '.join(map(repr, items))}"
        for verb, items in (("added", added), ("removed", removed))
        if items
    )
    kind = {"_modules": "submodules", "_parameters": "parameters", "_buffers": "buffers"}[which]
    raise PrologueCheckFailed(
        f"the {kind} of the {cls.__qualname__} module changed since it was traced: {change or 'reordered'}"
    )


def _module_changed(m, cls):
    if type(m) is not cls:
        raise PrologueCheckFailed(f"expected a module of type {cls.__qualname__}, got {type(m).__qualname__}")
    raise PrologueCheckFailed(f"hooks were registered on the {cls.__qualname__} module since it was traced")


def _attributes_changed(d, state, cls):
    added = sorted(set(d) - state.keys)
    removed = sorted(state.keys - set(d))
    what = "; ".join(
        f"{verb} {', '.join(map(repr, names))}"
        for verb, names in (("added", added), ("removed", removed))
        if names
    )
    raise PrologueCheckFailed(
        f"attributes of the {cls.__qualname__} object changed since it was traced: {what}"
    )


def check_state(obj, cls, state):
    """``obj`` is a ``cls`` whose attributes are as recorded in ``state`` (all of them)."""
    if type(obj) is not cls:
        raise PrologueCheckFailed(
            f"expected an object of type {cls.__qualname__}, got {type(obj).__qualname__}"
        )
    d = obj.__dict__
    version = _dict_version(d)
    if state.version == version:  # (unchanged since it last passed: see check_module)
        return
    if len(d) != state.size:
        _attributes_changed(d, state, cls)
    if _check_items(d, state, cls.__qualname__):
        state.version = version


def check_items(d, state):
    """The dict ``d`` (a module's globals) holds what ``state`` recorded (at once when ``d``
    is unchanged since it last passed: see ``check_module``)."""
    version = _dict_version(d)
    if state.version == version:
        return
    if _check_items(d, state, "the globals"):
        state.version = version


def check_class(cls, state):
    """The user's class ``cls`` still holds what ``state`` recorded of its own attributes
    (``scale = 2.0`` read as ``self.scale``, its methods), and no attribute was added to it or
    removed (Python's own ``__dunder__`` entries, such as the ``__slotnames__`` copying a
    module caches, aside)."""
    d = cls.__dict__
    if len(d) != state.size:
        changed = {k for k in set(d) ^ state.keys if not (k.startswith("__") and k.endswith("__"))}
        if changed:
            _attributes_changed(d, state, cls)
    _check_items(d, state, f"the class {cls.__qualname__}")


def check_defaults(fn, state):
    """The function ``fn`` still has the default argument values it was traced with (a
    default list or dict changed in place, or ``fn.__defaults__`` replaced)."""
    for name, value in zip(state.names, state.values):
        v = getattr(fn, name)
        if v is not value and not same(v, value):
            raise PrologueCheckFailed(
                f"the default arguments of {fn.__qualname__} are {_brief(v)}, traced with {_brief(value)}"
            )


def check_cell(cell, state):
    """The closure variable ``state.names[0]`` still holds ``state.values[0]`` (with no name:
    a counter traced as a value, which the prologue unpacks and checks as an input)."""
    if not state.names:
        return
    try:
        v = cell.cell_contents
    except ValueError:
        raise PrologueCheckFailed(f"the closure variable {state.names[0]!r} is no longer set") from None
    value = state.values[0]
    if v is not value and not same(v, value):
        raise PrologueCheckFailed(
            f"the closure variable {state.names[0]} is {_brief(v)}, traced with {_brief(value)}"
        )


def check_no_alias(*ts, written: int):
    """No tensor among the first ``written`` of ``ts`` shares an element's memory with another
    of ``ts``; views of one storage that do not overlap pass (checked only when storages repeat)."""
    if len({t.untyped_storage().data_ptr() for t in ts}) == len(ts):
        return
    for i in range(written):
        for j in range(len(ts)):
            if j != i and (j > i or j >= written) and overlaps(ts[i], ts[j]):
                raise PrologueCheckFailed(
                    f"tensor arguments {i} and {j} of the check overlap in memory (views of one tensor sharing "
                    "elements) and the program writes into one; it was traced for tensors that do not"
                )


def check_same_storage(a, b, same: bool):
    if (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()) is not same:
        raise PrologueCheckFailed(
            f"two tensors whose data_ptr()s the function compared {'no longer' if same else 'now'} share "
            f"memory (traced when they {'did' if same else 'did not'})"
        )


def check_strides(t, strides):
    if t.stride() != strides:
        raise PrologueCheckFailed(f"expected strides {strides}, got {t.stride()}")


def check_storage_offset(t, offset):
    if t.storage_offset() != offset:
        raise PrologueCheckFailed(f"expected storage offset {offset}, got {t.storage_offset()}")


def check_is_param(t, flag):
    if isinstance(t, torch.nn.Parameter) is not flag:
        raise PrologueCheckFailed(
            f"expected {'a' if flag else 'no'} torch.nn.Parameter, got {type(t).__qualname__}"
        )


def check_not_leaf(t):
    if t.is_leaf:
        raise PrologueCheckFailed("expected a tensor computed by autograd (written in place), got a leaf")


def check_no_module_hooks():
    m = _module_module
    if any(getattr(m, table) for table in GLOBAL_HOOK_TABLES) and any(
        h not in pyops.TRACING_HOOKS
        for table in (
            m._global_forward_hooks,
            m._global_forward_pre_hooks,
            m._global_backward_hooks,
            m._global_backward_pre_hooks,
        )
        for h in table.values()
    ):
        raise PrologueCheckFailed("global module hooks were registered since the function was traced")


def identical(d, state) -> bool:
    """``d`` holds the very objects ``state`` recorded (one pass, no comparison)."""
    try:
        return all(map(_is, state.get(d), state.values))
    except KeyError:
        return False


def _check_items(d, state, what: str) -> bool:
    """``d`` holds the values ``state`` recorded: first tested for identity in one pass (an
    unchanged state: True), then, when that fails, compared exactly (False when they are
    equal)."""
    if identical(d, state):
        return True
    _compare_items(d, state.names, state.values, what)
    return False


def _compare_items(d, names, values, what: str):
    for name, value in zip(names, values):
        if name not in d:
            raise PrologueCheckFailed(f"{what}: {name!r} is no longer set")
        v = d[name]
        if v is not value and not same(v, value):
            raise PrologueCheckFailed(f"{what}: {name} is {_brief(v)}, traced with {_brief(value)}")


def _brief(v) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
