"""The Python executor: runs prologue checks, unpacking, construction and write-backs.

The implementations are in ``thunder.executors.python`` (``checks``, ``unpacking``,
``epilogue``); this module registers them, with the printers of the ones that print as plain
Python (``x = args[0]``). Claimed symbols print as ``pythonex.<name>(...)`` and the compiled
trace runs them through ``import thunder.executors.pythonex as pythonex``, so this module
imports every implementation it registers: ``pythonex.check_tensor`` must resolve here. A
failed check raises ``PrologueCheckFailed`` (from ``checks``, importable from here too), which
the cache reads as "this entry does not fit these inputs".
"""

from __future__ import annotations

import operator

from thunder.core.printing import type_comment
from thunder.core.subclass import subclass_name
from thunder.core.symbol import EAGER_IMPLS, Symbol
from thunder.executors.base import Drawing, Executor, Impl, executor_symbol
from thunder.executors.python.checks import PrologueCheckFailed as PrologueCheckFailed
from thunder.executors.python.checks import (
    check_autocast,
    check_cell,
    check_class,
    check_default_dtype,
    check_defaults,
    check_dtensor_shard,
    check_grad_enabled,
    check_hasattr,
    check_int_compare,
    check_is,
    check_is_param,
    check_items,
    check_keys,
    check_len,
    check_literal,
    check_module,
    check_no_alias,
    check_no_module_hooks,
    check_not_leaf,
    check_process_group,
    check_same_storage,
    check_sizes,
    check_state,
    check_storage_offset,
    check_strides,
    check_tensor,
    check_tensor_subclass,
    check_tensor_value,
    check_tensors,
    check_torch_flag,
    check_type,
)
from thunder.executors.python.epilogue import (
    construct,
    dataclass_new,
    del_module_hook,
    mapping_new,
    object_new,
    object_setattr,
    python_call,
    python_delattr,
    python_delitem,
    python_replace,
    python_setattr,
    python_setitem,
    set_module_hook,
    set_torch_state,
)
from thunder.executors.python.shortcuts import SHORTCUTS
from thunder.executors.python.unpacking import (
    flatten_tensor_subclass,
    unflatten_tensor_subclass,
    unpack_attr,
    unpack_buffer,
    unpack_captured,
    unpack_item,
    unpack_local_shard,
    unpack_param,
    unpack_size,
    unpack_submodule,
)
from thunder.executors.registry import register_executor
from thunder.ops import python as pyops


def _print_unflatten(bsym, p) -> str:
    """``t0 = ScaleTensor.__tensor_unflatten__({'_x': t3, '_scale': t1}, None, (2, 2), (2, 1))``"""
    cls, *rest = bsym.args
    args = ", ".join(p.value(a) for a in rest)
    line = f"{bsym.output.name} = {subclass_name(p, cls)}.__tensor_unflatten__({args})"
    return f"{line}  # {type_comment([bsym.output])}"


def _unpack_printer(fmt: str):
    def printer(bsym, p) -> str:
        container, key = bsym.args
        line = f"{bsym.output.name} = " + fmt.format(c=p.value(container), k=p.value(key), attr=key)
        c = type_comment([bsym.output])
        return f"{line}  # {c}" if c else line

    return printer


def _print_to_local(bsym, p) -> str:
    line = f"{bsym.output.name} = {p.value(bsym.args[0])}.to_local()"
    c = type_comment([bsym.output])
    return f"{line}  # {c}" if c else line


def python_del(*values):
    return None


class PythonExecutor(Executor):
    """Runs the prologue's checks and unpacking and the epilogue's construction and writes."""

    runs_host = True
    drawing = Drawing("#eeeeee", "#555555", "cds")


executor = register_executor(PythonExecutor("python"))


def _register(prim, fn, printer=None) -> None:
    """``prim`` runs as ``fn``: printed as ``pythonex.<prim name>(...)``, or by ``printer``
    (a check with a shortcut tests it first in the code that runs: ``python/shortcuts.py``)."""
    sym = executor_symbol(
        f"pythonex.{prim.name}", fn, "python", printer=printer, module_path=__name__, fast=SHORTCUTS.get(prim)
    )
    executor.register(prim, Impl(sym))
    EAGER_IMPLS[prim] = fn


for _prim, _fn, _fmt in (
    (pyops.unpack_item, unpack_item, "{c}[{k}]"),
    (pyops.unpack_attr, unpack_attr, "{c}.{attr}"),
    (pyops.unpack_param, unpack_param, "{c}._parameters[{k}]"),
    (pyops.unpack_buffer, unpack_buffer, "{c}._buffers[{k}]"),
    (pyops.unpack_submodule, unpack_submodule, "{c}._modules[{k}]"),
    (pyops.unpack_size, unpack_size, "{c}.shape[{k}]"),
):
    _register(_prim, _fn, printer=_unpack_printer(_fmt))

for _prim, _fn in (
    (pyops.check_len, check_len),
    (pyops.check_keys, check_keys),
    (pyops.check_tensor, check_tensor),
    (pyops.check_literal, check_literal),
    (pyops.check_type, check_type),
    (pyops.check_is, check_is),
    (pyops.check_process_group, check_process_group),
    (pyops.check_dtensor_shard, check_dtensor_shard),
    (pyops.check_grad_enabled, check_grad_enabled),
    (pyops.check_default_dtype, check_default_dtype),
    (pyops.check_torch_flag, check_torch_flag),
    (pyops.check_autocast, check_autocast),
    (pyops.check_hasattr, check_hasattr),
    (pyops.check_no_module_hooks, check_no_module_hooks),
    (pyops.check_no_alias, check_no_alias),
    (pyops.check_not_leaf, check_not_leaf),
    (pyops.check_strides, check_strides),
    (pyops.check_same_storage, check_same_storage),
    (pyops.check_storage_offset, check_storage_offset),
    (pyops.check_is_param, check_is_param),
    (pyops.check_tensor_value, check_tensor_value),
    (pyops.check_int_compare, check_int_compare),
    (pyops.check_sizes, check_sizes),
    (pyops.python_setattr, python_setattr),
    (pyops.python_setitem, python_setitem),
    (pyops.python_delattr, python_delattr),
    (pyops.python_delitem, python_delitem),
    (pyops.set_torch_state, set_torch_state),
    (pyops.set_module_hook, set_module_hook),
    (pyops.del_module_hook, del_module_hook),
    (pyops.python_call, python_call),
    (pyops.python_replace, python_replace),
    (pyops.dataclass_new, dataclass_new),
    (pyops.mapping_new, mapping_new),
    (pyops.object_new, object_new),
    (pyops.object_setattr, object_setattr),
):
    _register(_prim, _fn)

for _prim, _fn in (
    (pyops.check_module, check_module),
    (pyops.check_state, check_state),
    (pyops.check_items, check_items),
    (pyops.check_class, check_class),
    (pyops.check_defaults, check_defaults),
    (pyops.check_cell, check_cell),
):
    _sym = executor_symbol(
        f"pythonex.{_prim.name}",
        _fn,
        "python",
        printer=pyops.print_state_check,
        module_path=__name__,
        imports=("pythonex",),
        fast=SHORTCUTS.get(_prim),
    )
    executor.register(_prim, Impl(_sym))
    EAGER_IMPLS[_prim] = _fn

_register(pyops.flatten_tensor_subclass, flatten_tensor_subclass)
_register(pyops.unflatten_tensor_subclass, unflatten_tensor_subclass, printer=_print_unflatten)
# printed as ``pythonex.check_tensor_subclass(x, ScaleTensor, ...)``: its printer names the class
_check_subclass = Symbol(
    "check_tensor_subclass",
    "pythonex",
    impl=check_tensor_subclass,
    executor="python",
    printer=pyops.print_subclass_check,
    imports=("pythonex",),
    module_path=__name__,
)
executor.register(pyops.check_tensor_subclass, Impl(_check_subclass))
_check_tensors = executor_symbol(
    "pythonex.check_tensors",
    check_tensors,
    "python",
    printer=pyops.print_tensor_checks,
    module_path=__name__,
    imports=("pythonex",),
    fast=SHORTCUTS[pyops.check_tensors],
)
executor.register(pyops.check_tensors, Impl(_check_tensors))
EAGER_IMPLS[pyops.check_tensors] = check_tensors
EAGER_IMPLS[pyops.check_tensor_subclass] = check_tensor_subclass
_register(pyops.unpack_captured, unpack_captured, printer=pyops.print_captured)
_register(pyops.unpack_local_shard, unpack_local_shard, printer=_print_to_local)
_register(pyops.construct, construct, printer=pyops.print_construct)
_register(pyops.python_del, python_del, printer=pyops.print_del)
for _op, _prim in pyops.NUMBER_OPS.items():
    _register(_prim, getattr(operator, _op), printer=pyops.print_number_op)
