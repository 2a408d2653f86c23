"""The prologue checks' shortcuts, as the source text the compiled prologue tests.

A model's cached call runs one check per module and several for its tensors and torch's
state; each check's implementation (``checks.py``) first tests whether the value is as it was
when the check last passed in full, in one expression. Printed on the check's own line of the
code that runs (``Trace.python_callable``), that expression spares the call where it holds::

    if not (type(m_0) is torch_nn_modules_linear_Linear and _m_0_state.version == _dict_version(_fast_d := m_0.__dict__) and not (...)): pythonex.check_module(m_0, torch_nn_modules_linear_Linear, _m_0_state)

Each shortcut here is true only where its check passes without raising or changing anything:
for most, the check's own first test word for word; for a class's attributes and a
function's defaults, the case where every value is the very object recorded. Where it is
false the check runs as before (its own shortcut, then the full test and the error that
names what differs). The printed trace
(``str(trace)``, the explorer) shows the calls alone. ``tests/executors/python/test_prologue_shortcuts.py``
holds each shortcut to its check on values that pass and values that fail.
"""

from __future__ import annotations

import torch
from torch.nn.modules import module as _module_module

from thunder.core.symbolic import sizes_are_static
from thunder.executors.python import checks
from thunder.ops import python as pyops

# (each shortcut binds what it reads twice to a local name of its line, ``Printer.scratch``,
# and calls builtins through ``Printer.builtin``: an argument of the user's named ``type`` is a
# local of the whole prologue, and shadows neither)


def _module(bsym, p) -> str | None:
    """``check_module``'s first test: the class, the ``__dict__``'s version tag as when it
    last passed, no hooks, and (for a container) its tables' tags as then."""
    module, cls, state = bsym.args
    dv = p.name_object(checks._dict_version, "_dict_version")
    m, name, d = p.value(module), pyops.state_name(bsym, p), p.scratch("_fast_d")
    hooks = " or ".join(f"{d}[{k!r}]" for k in checks.HOOK_TABLES)
    test = f"{p.builtin(type)}({m}) is {p.value(cls)} and {name}.version == {dv}({d} := {m}.__dict__) and not ({hooks})"
    if state.plain:
        return test
    tables = ", ".join(f"{dv}({d}[{t!r}])" for t in state.watched)
    return f"{test} and {name}.table_versions == [{tables}]"


def _versioned(bsym, p) -> str | None:
    """``check_items``' first test: the dict's version tag as when it last passed."""
    dv = p.name_object(checks._dict_version, "_dict_version")
    return f"{pyops.state_name(bsym, p)}.version == {dv}({p.value(bsym.args[0])})"


def _class(bsym, p) -> str | None:
    """``check_class``'s passing case without a comparison: as many attributes as recorded,
    each the very object recorded."""
    name, d = pyops.state_name(bsym, p), p.scratch("_fast_d")
    same = p.name_object(checks.identical, "_identical")
    return f"{p.builtin(len)}({d} := {p.value(bsym.args[0])}.__dict__) == {name}.size and {same}({d}, {name})"


def _defaults(bsym, p) -> str | None:
    """``check_defaults``' passing case without a comparison: each default the very object
    recorded."""
    fn, state = bsym.args
    name = pyops.state_name(bsym, p)
    return " and ".join(f"{p.value(fn)}.{n} is {name}.values[{i}]" for i, n in enumerate(state.names)) or None


def _tensor(bsym, p) -> str | None:
    """``check_tensor``'s first test (a plain tensor of the traced metadata): a ``TensorGuard``
    of the line where the sizes are numbers, the test in Python where they are symbols."""
    if sizes_are_static(bsym.args[1]):
        guard = p.name_object(checks.TensorGuard(*bsym.args[1:]), f"_{bsym.args[0].name}_guard")
        return f"{guard}.check({p.value(bsym.args[0])})"
    t, shape, dtype, device, requires_grad = (p.value(a) for a in bsym.args)
    types = p.name_object(checks._TENSOR_TYPES, "_tensor_types")
    dev = p.name_object(checks._device(bsym.args[3]), f"_device_{bsym.args[3].replace(':', '_')}")
    return (
        f"{p.builtin(type)}({t}) in {types} and {t}.shape == {shape} and {t}.dtype is {dtype} "
        f"and {t}.requires_grad is {requires_grad} and {t}.device == {dev}"
    )


def _tensors(bsym, p) -> str | None:
    """``check_tensors``' first test: torch's C++ check made when they last passed in full."""
    state, *ts = bsym.args
    name, g = p.name_object(state, "_tensors"), p.scratch("_fast_g")
    return f"({g} := {name}.guards) is not None and {g}.check({', '.join(p.value(t) for t in ts)})"


def _len(bsym, p) -> str:
    seq, n = bsym.args
    return f"{p.builtin(len)}({p.value(seq)}) == {p.value(n)}"


def _keys(bsym, p) -> str:
    d, keys = bsym.args
    return f"not {p.value(d)}" if keys == () else f"{p.builtin(tuple)}({p.value(d)}) == {p.value(keys)}"


def _no_module_hooks(bsym, p) -> str:
    m = p.name_object(_module_module, "_torch_module_module")
    tables = " or ".join(f"{m}.{t}" for t in checks.GLOBAL_HOOK_TABLES)
    return f"not ({tables})"


def _grad_enabled(bsym, p) -> str:
    (flag,) = bsym.args
    return f"{p.name_object(torch.is_grad_enabled, '_is_grad_enabled')}() is {flag}"


def _autocast(bsym, p) -> str | None:
    (state,) = bsym.args
    if state:  # (on when traced: the check reads its state)
        return None
    return f"not {p.name_object(checks._any_autocast_enabled, '_any_autocast_enabled')}()"


def _default_dtype(bsym, p) -> str:
    (dtype,) = bsym.args
    named = p.name_object(dtype, "_" + str(dtype).removeprefix("torch."))  # (a global, not an attribute)
    return f"{p.name_object(torch.get_default_dtype, '_get_default_dtype')}() is {named}"


def _strides(bsym, p) -> str:
    t, strides = bsym.args
    return f"{p.value(t)}.stride() == {p.value(strides)}"


def _type(bsym, p) -> str:
    x, cls = bsym.args
    return f"{p.builtin(type)}({p.value(x)}) is {p.value(cls)}"


def _literal(bsym, p) -> str:
    x, value = bsym.args
    return f"{p.builtin(type)}({p.value(x)}) is {p.value(type(value))} and {p.value(x)} == {p.value(value)}"


def _sizes(bsym, p) -> str:
    _, relations = bsym.args
    return " and ".join(f"({r})" for r in relations.sources()) or "True"


# check prim -> its shortcut's printer
SHORTCUTS = {
    pyops.check_module: _module,
    pyops.check_items: _versioned,
    pyops.check_class: _class,
    pyops.check_defaults: _defaults,
    pyops.check_tensor: _tensor,
    pyops.check_tensors: _tensors,
    pyops.check_len: _len,
    pyops.check_keys: _keys,
    pyops.check_no_module_hooks: _no_module_hooks,
    pyops.check_grad_enabled: _grad_enabled,
    pyops.check_autocast: _autocast,
    pyops.check_default_dtype: _default_dtype,
    pyops.check_strides: _strides,
    pyops.check_type: _type,
    pyops.check_literal: _literal,
    pyops.check_sizes: _sizes,
}
