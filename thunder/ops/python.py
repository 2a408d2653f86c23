"""Python-level primitives for prologues and epilogues: unpacking inputs by provenance,
checking them, building return values, and ``del``.

They print as ``prims.unpack_item(args, 0)`` etc. in the traces made by acquisition and as
``pythonex.*`` once claimed; their implementations live in ``thunder.executors.python``
(registered by ``thunder.executors.pythonex``).
"""

from __future__ import annotations

import array
import collections
import enum
import operator

import torch

from thunder.core.context import current_trace
from thunder.core.printing import type_comment
from thunder.core.proxies import AnyProxy, NumberProxy, Proxy
from thunder.core.subclass import subclass_name
from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag


def _python_prim(name: str, meta, *tags: Tag, printer=None, imports: tuple[str, ...] | None = None) -> Symbol:
    # printed as ``prims.<name>`` (``thunder.ops.prims`` re-exports these)
    return register(
        Symbol(
            name,
            "prims",
            meta=meta,
            tags=(Tag.PRIM, Tag.PYTHON, *tags),
            printer=printer,
            imports=imports,
            module_path="thunder.ops.prims",
        )
    )


# Unpacking: acquisition makes these BoundSymbols itself, because it names the output proxy
# after the value's provenance (``t_fc1_weight``).
def _unpack_meta(container, key):
    raise RuntimeError("thunder: unpack BoundSymbols are made by acquisition, not by calling the symbol")


def _print_unpack(bsym, printer) -> str:
    container, key = bsym.args
    line = f"{bsym.output.name} = {bsym.sym.id}({printer.value(container)}, {printer.value(key)})"
    c = type_comment([bsym.output])
    return f"{line}  # {c}" if c else line


unpack_item = _python_prim("unpack_item", _unpack_meta, Tag.UNPACK, printer=_print_unpack, imports=("prims",))
unpack_attr = _python_prim("unpack_attr", _unpack_meta, Tag.UNPACK, printer=_print_unpack, imports=("prims",))
unpack_param = _python_prim(
    "unpack_param", _unpack_meta, Tag.UNPACK, printer=_print_unpack, imports=("prims",)
)
unpack_buffer = _python_prim(
    "unpack_buffer", _unpack_meta, Tag.UNPACK, printer=_print_unpack, imports=("prims",)
)
unpack_submodule = _python_prim(
    "unpack_submodule", _unpack_meta, Tag.UNPACK, printer=_print_unpack, imports=("prims",)
)
# ``s0 = x.shape[0]``: a dynamic dimension's size (a symbol of thunder/core/symbolic/)
unpack_size = _python_prim("unpack_size", _unpack_meta, Tag.UNPACK, printer=_print_unpack, imports=("prims",))


def _no_output(*args, **kwargs):
    return None


check_len = _python_prim("check_len", _no_output, Tag.PROLOGUE_CHECK)
check_keys = _python_prim("check_keys", _no_output, Tag.PROLOGUE_CHECK)
check_tensor = _python_prim("check_tensor", _no_output, Tag.PROLOGUE_CHECK)
check_literal = _python_prim("check_literal", _no_output, Tag.PROLOGUE_CHECK)
check_type = _python_prim("check_type", _no_output, Tag.PROLOGUE_CHECK)
check_is = _python_prim("check_is", _no_output, Tag.PROLOGUE_CHECK)
check_grad_enabled = _python_prim("check_grad_enabled", _no_output, Tag.PROLOGUE_CHECK)
check_default_dtype = _python_prim("check_default_dtype", _no_output, Tag.PROLOGUE_CHECK)
# ``check_torch_flag('autocast', False)``: global torch state a cached program was traced
# under, by name: autocast changes the dtype of many ops, and the multi-head-attention
# fast-path flag decides whether nn.TransformerEncoder pads with zeros
# (thunder/frontend/modules/fastpaths.py).
TORCH_FLAGS = {
    "autocast": torch._C._is_any_autocast_enabled,
    "mha_fastpath": torch.backends.mha.get_fastpath_enabled,
}
check_torch_flag = _python_prim("check_torch_flag", _no_output, Tag.PROLOGUE_CHECK)
# ``check_autocast((('cpu', torch.bfloat16),))``: the device types autocast was on for at the
# call, with their dtypes (thunder/ops/autocast.py): each op's dtype depends on it
check_autocast = _python_prim("check_autocast", _no_output, Tag.PROLOGUE_CHECK)
# ``check_int_compare(i0, '>=', 32, False)``: the outcome of comparing a counter with a limit
COMPARE_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
check_int_compare = _python_prim("check_int_compare", _no_output, Tag.PROLOGUE_CHECK)
# ``check_tensor_value(t, 5)``: the value of a one-element input tensor the trace read
check_tensor_value = _python_prim("check_tensor_value", _no_output, Tag.PROLOGUE_CHECK)
# ``check_hasattr(obj, "name", False)``: an attribute the function found missing (or created)
check_hasattr = _python_prim("check_hasattr", _no_output, Tag.PROLOGUE_CHECK)
# ``check_process_group('0', 2, 1)``: a process group the trace communicates over still
# exists with this size, and this process is still that rank of it (thunder/ops/collectives.py)
check_process_group = _python_prim("check_process_group", _no_output, Tag.PROLOGUE_CHECK)
# ``check_dtensor_shard(p, '0', (33, 8))``: ``p`` is a DTensor sharded on dim 0 (``Shard(0)``)
# over the 1-D mesh of process group '0', of global shape (33, 8) (thunder/frontend/distributed/fsdp.py)
check_dtensor_shard = _python_prim("check_dtensor_shard", _no_output, Tag.PROLOGUE_CHECK)
# ``check_sizes({'s0': s0, 's1': s1}, ('s0 >= 2', 's1 >= 2', 's0 != s1'))``: every relation between the
# symbolic sizes the traces relied on (a ``SizeRelations``, read when printed: relations found
# by passes after acquisition are there too)
check_sizes = _python_prim("check_sizes", _no_output, Tag.PROLOGUE_CHECK)


class TensorChecks:
    """What several plain tensors of a prologue were traced with (``check_tensor``'s shape,
    dtype, device and requires_grad for each, by the proxy's name), checked in one line
    (``transforms/batch_checks.py``). ``guards``: torch's C++ check of the same tensors, made
    from the first tensors that passed in full (``check_tensors``), None before that."""

    __slots__ = ("names", "metas", "guards")

    def __init__(self, names, metas):
        self.names = tuple(names)
        self.metas = tuple(metas)
        self.guards = None

    def __repr__(self) -> str:
        return f"TensorChecks({', '.join(self.names)})"


def print_tensor_checks(bsym, printer) -> str:
    """``check_tensors(_tensors, x, w)  # shapes, dtypes and devices as unpacked;
    requires_grad=True for w``: each tensor's shape, dtype and device are those its unpacking
    line shows (a model's prologue checks hundreds of parameters in this line)."""
    checks, *tensors = bsym.args
    call = f"{bsym.sym.id}({', '.join([printer.name_object(checks, '_tensors'), *(printer.value(t) for t in tensors)])})"
    grads = [name for name, meta in zip(checks.names, checks.metas) if meta[3]]
    if len(grads) in (0, len(checks.names)):
        needs = f"requires_grad={bool(grads)}"
    elif 2 * len(grads) <= len(checks.names):
        needs = f"requires_grad=True for {', '.join(grads)}"
    else:
        needs = f"requires_grad=True except for {', '.join(n for n in checks.names if n not in grads)}"
    return f"{call}  # shapes, dtypes and devices as unpacked; {needs}"


def tensor_check_line(bsym, i: int, printer) -> str:
    """The ``check_tensor`` line of the ``i``-th tensor of a ``check_tensors`` line (what a
    reason for a cache miss names)."""
    checks, *tensors = bsym.args
    name = bsym.sym.id.removesuffix("check_tensors") + "check_tensor"  # (prims. or pythonex.)
    return f"{name}({', '.join(printer.value(v) for v in (tensors[i], *checks.metas[i]))})"


# ``check_tensors(_tensors, x, w)``: ``check_tensor`` of each of several plain tensors, in one call
check_tensors = _python_prim(
    "check_tensors", _no_output, Tag.PROLOGUE_CHECK, printer=print_tensor_checks, imports=("prims",)
)


_EXACT = (int, float, bool, str, bytes, complex, torch.dtype, torch.device, torch.Size, slice, range)


def same(a, b) -> bool:
    """``a`` equals ``b``, a value a ``StateCheck`` recorded, exactly: same types throughout,
    equal values; objects (tensors, functions, instances) only when they are the same object."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is tuple or t is list:
        return len(a) == len(b) and all(map(same, a, b))
    if t is collections.deque:
        return a.maxlen == b.maxlen and len(a) == len(b) and all(map(same, a, b))
    if t is dict or t is collections.OrderedDict or t is collections.defaultdict or t is collections.Counter:
        if t is collections.defaultdict and a.default_factory is not b.default_factory:
            return False
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if t is set or t is frozenset:
        return a == b and all(type(x) in _EXACT for x in a)
    if t is float:
        return a == b or (a != a and b != b)  # nan
    if t is bytearray or t is array.array:  # (C buffers the code read: by their contents)
        return a == b and getattr(a, "typecode", None) == getattr(b, "typecode", None)
    if t in _EXACT or isinstance(a, enum.Enum):
        return a == b
    return False


class StateCheck:
    """Names and the values they held when the function was traced, for one prologue check
    (``thunder/frontend/prologue/state_checks.py``). ``get`` reads them all at once from a dict; a cached
    call first tests them for identity, then (when that fails) compares them exactly.
    ``keys``: every name the object's ``__dict__`` held, when given (the check then also fails
    on an attribute added since: an instance ``forward``, a value shadowing a class attribute,
    a setting read as ``getattr(config, name, default)``).
    ``tables``: for a module, ``(table, names)`` of each of its ``_modules``, ``_parameters``
    and ``_buffers`` the traced code read whole (iterated it: ``for layer in self.layers``,
    ``self.parameters()``; or found a name missing in it), with the names in order as the call
    began: one added since (``append``, ``add_module``, ``register_parameter``) would otherwise
    be skipped by the cached program.
    ``nones``: ``(table, name)`` of a module's parameters and buffers that were None (a Linear's
    bias with ``bias=False``, a buffer registered as None): a tensor set there since is one the
    program never read."""

    __slots__ = (
        "names",
        "values",
        "get",
        "hooks",
        "keys",
        "size",
        "tables",
        "nones",
        "plain",
        "version",
        "watched",
        "table_versions",
    )

    def __init__(self, names, values, *, hooks: bool = False, keys=None, tables=None, nones=()):
        self.tables = tables
        self.nones = nones
        self.keys = None if keys is None else frozenset(keys)
        self.size = None if keys is None else len(self.keys)
        self.names = tuple(names)
        self.values = tuple(values)
        if len(self.names) > 1:
            self.get = operator.itemgetter(*self.names)
        elif self.names:
            name = self.names[0]
            self.get = lambda d: (d[name],)
        else:
            self.get = lambda d: ()
        self.hooks = hooks  # traced with hooks on the module: they are among the names
        # a module's check with no tables, no None entries and no hooks: one test on a cached call
        self.plain = not tables and not nones and not hooks
        # the version tag of the last ``__dict__`` that passed the check in full, None before
        # that; for a module's check with tables or None entries, the tags of those tables
        # then (``check_module``'s shortcut)
        self.version = None
        self.watched = tuple(sorted({t for t, _ in tables or ()} | {t for t, _ in nones}))
        self.table_versions = None

    def __repr__(self) -> str:
        return f"StateCheck({', '.join(f'{n}={v!r}' for n, v in zip(self.names, self.values))})"


def state_name(bsym, printer) -> str:
    """The name of a state check's recorded values in the program (``_m_0_state``: the
    ``StateCheck`` that is the line's last argument, named after the value it checks)."""
    *head, check = bsym.args
    holder = head[0].name if head and isinstance(head[0], Proxy) else "state"
    return printer.name_object(check, f"_{holder}_state")


def print_state_check(bsym, printer) -> str:
    """``check_module(m, Linear, _m_state)  # training=True, p=0.5``: the recorded values are
    one object in the program's namespace, shown in the comment."""
    *head, check = bsym.args
    state = state_name(bsym, printer)
    call = f"{bsym.sym.id}({', '.join([*(printer.value(a) for a in head), state])})"
    shown = ", ".join(f"{n}={_short(printer, v)}" for n, v in zip(check.names, check.values))
    return f"{call}  # {shown}" if shown else call


def _short(printer, v) -> str:
    text = printer.value(v)
    return text if len(text) <= 60 else text[:57] + "..."


# The state the traced code read without taking it as an input (``thunder/frontend/prologue/state_checks.py``):
# a module's type, plain attributes and hooks; an object's or a globals dict's entries; the class
# attributes of the user's own classes; a closure cell.
check_module = _python_prim(
    "check_module", _no_output, Tag.PROLOGUE_CHECK, printer=print_state_check, imports=("prims",)
)
check_state = _python_prim(
    "check_state", _no_output, Tag.PROLOGUE_CHECK, printer=print_state_check, imports=("prims",)
)
check_items = _python_prim(
    "check_items", _no_output, Tag.PROLOGUE_CHECK, printer=print_state_check, imports=("prims",)
)
check_class = _python_prim(
    "check_class", _no_output, Tag.PROLOGUE_CHECK, printer=print_state_check, imports=("prims",)
)
check_defaults = _python_prim(
    "check_defaults", _no_output, Tag.PROLOGUE_CHECK, printer=print_state_check, imports=("prims",)
)
check_cell = _python_prim(
    "check_cell", _no_output, Tag.PROLOGUE_CHECK, printer=print_state_check, imports=("prims",)
)
# the first ``written`` argument tensors (the program writes into them) share no element's
# memory with the others (views of one tensor that do not overlap pass): ``check_no_alias(a, b, written=1)``
check_no_alias = _python_prim("check_no_alias", _no_output, Tag.PROLOGUE_CHECK)
# a tensor whose layout decided whether a reshape or contiguous() was a view has the same strides
check_strides = _python_prim("check_strides", _no_output, Tag.PROLOGUE_CHECK)
# ``isinstance(t, torch.nn.Parameter)`` as the function found it
check_is_param = _python_prim("check_is_param", _no_output, Tag.PROLOGUE_CHECK)
# two tensors whose data_ptr()s the function compared share their storage, or not, as then
check_same_storage = _python_prim("check_same_storage", _no_output, Tag.PROLOGUE_CHECK)
# a tensor whose storage_offset() the function read has the same offset
check_storage_offset = _python_prim("check_storage_offset", _no_output, Tag.PROLOGUE_CHECK)
# a tensor that requires grad written in place was not a leaf when traced
check_not_leaf = _python_prim("check_not_leaf", _no_output, Tag.PROLOGUE_CHECK)
# no global module hooks (``nn.modules.module.register_module_forward_hook``) were added,
# besides the ones tracing itself registers (module scopes) while a trace runs in some thread
check_no_module_hooks = _python_prim("check_no_module_hooks", _no_output, Tag.PROLOGUE_CHECK)
TRACING_HOOKS: set = set()


def _setattr_meta(obj, name, value):
    return None


# Epilogue write-backs onto the user's objects.
python_setattr = _python_prim("python_setattr", _setattr_meta, Tag.WRITEBACK)
python_setitem = _python_prim("python_setitem", _setattr_meta, Tag.WRITEBACK)
python_delattr = _python_prim("python_delattr", _no_output, Tag.WRITEBACK)
python_delitem = _python_prim("python_delitem", _no_output, Tag.WRITEBACK)
# ``set_torch_state('grad_enabled', False)``: global torch state the function set, as it left it
set_torch_state = _python_prim("set_torch_state", _no_output, Tag.WRITEBACK)
# A hook that ``forward`` registered on a module (or removed) while tracing, in the user's
# module's own hook table: ``prims.set_module_hook(m_a, '_forward_hooks', 12, hook)``
# (``first=True``: registered with ``prepend=True``).
set_module_hook = _python_prim("set_module_hook", _no_output, Tag.WRITEBACK)
del_module_hook = _python_prim("del_module_hook", _no_output, Tag.WRITEBACK)
# A Python side effect of the traced code, made again on every call with that call's values
# (``thunder/frontend/effects/recorder.py``): a logged write into a container the code reached
# (``prims.python_call(list.append, g___main___L, t0)``), a print, a log record, a warning.
python_call = _python_prim("python_call", _no_output, Tag.WRITEBACK)
# A container the code read and wrote gets its final contents: ``prims.python_replace(L, [1, t0])``.
python_replace = _python_prim("python_replace", _no_output, Tag.WRITEBACK)


def _new_any(cls):
    trc = current_trace()
    return AnyProxy(trc.make_name("any"), cls)


def _construct_meta(cls, *args, **kwargs):
    return _new_any(cls)


def print_construct(bsym, printer) -> str:
    cls, *args = bsym.args
    call = printer.call(printer.value(cls), args, bsym.kwargs)
    return f"{bsym.output.name} = {call}"


# ``any0 = __main___MyContainer(res=t0, num=1)``: printed as a call of the class itself.
construct = _python_prim("construct", _construct_meta, Tag.DATACLASS_NEW, printer=print_construct)

# A dataclass that calling the class would not rebuild exactly (frozen with __post_init__,
# ``init=False`` fields, extra attributes): ``object.__new__`` and one setattr per attribute.
dataclass_new = _python_prim("dataclass_new", _construct_meta, Tag.DATACLASS_NEW)
# A mapping dataclass (transformers' ModelOutput) whose keys differ from what its
# constructor makes: ``r = cls()`` then ``r[k] = v`` in the recorded order, then attributes.
mapping_new = _python_prim("mapping_new", _construct_meta, Tag.DATACLASS_NEW)


# An object of a Python class made inside the function (a transformers DynamicCache):
# ``object.__new__(cls)`` (no ``__init__``) with its attributes set in order, as keywords
# (``any1 = pythonex.object_new(C, keys=t0, is_initialized=True)``).
object_new = _python_prim("object_new", _construct_meta, Tag.DATACLASS_NEW)
# One attribute of an object that takes part in a reference cycle, set once both exist.
object_setattr = _python_prim("object_setattr", _setattr_meta, Tag.DATACLASS_NEW)


def print_del(bsym, printer) -> str:
    return "del " + ", ".join(p.name for p in bsym.args)


python_del = _python_prim("python_del", _no_output, Tag.DEL, printer=print_del)


def print_captured(bsym, printer) -> str:
    line = f"{bsym.output.name} = {printer.value(bsym.args[0])}"
    c = type_comment([bsym.output])
    return f"{line}  # {c}" if c else line


# A tensor captured from a closure or a global: the prologue refers to it by name.
unpack_captured = _python_prim("unpack_captured", _unpack_meta, Tag.UNPACK, printer=print_captured)


def _print_local_shard(bsym, printer) -> str:
    line = f"{bsym.output.name} = {bsym.sym.id}({printer.value(bsym.args[0])})"
    c = type_comment([bsym.output])
    return f"{line}  # {c}" if c else line


# The local shard of a DTensor parameter sharded by FSDP (thunder/frontend/distributed/fsdp.py), through
# ``DTensor.to_local()``: its gradient reaches the parameter as a DTensor of the parameter's placements.
unpack_local_shard = _python_prim(
    "unpack_local_shard", _unpack_meta, Tag.UNPACK, printer=_print_local_shard, imports=("prims",)
)


# Tensor subclasses (thunder/core/subclass.py): the prologue checks a subclass input and
# flattens it into its inner tensors; a subclass value is rebuilt from them with the class's
# own ``__tensor_unflatten__``. The class prints under its own name (``ScaleTensor``).
def _flatten_meta(x):
    return tuple(x.inner.values())


# ``(x__x, x__scale) = prims.flatten_tensor_subclass(x)``: the inner tensors, in the order
# ``__tensor_flatten__`` lists them.
flatten_tensor_subclass = _python_prim("flatten_tensor_subclass", _flatten_meta, Tag.FLATTEN_TENSOR_SUBCLASS)


def _subclass_args(bsym, printer) -> str:
    return ", ".join(
        subclass_name(printer, a) if isinstance(a, type) else printer.value(a) for a in bsym.args
    )


def print_unflatten(bsym, printer) -> str:
    line = f"{bsym.output.name} = {bsym.sym.id}({_subclass_args(bsym, printer)})"
    return f"{line}  # {type_comment([bsym.output])}"


def print_subclass_check(bsym, printer) -> str:
    return f"{bsym.sym.id}({_subclass_args(bsym, printer)})"


def _unflatten_meta(cls, inner, ctx, size, stride):
    raise RuntimeError(
        "thunder: unflatten_tensor_subclass BoundSymbols are made by acquisition and the flattening pass"
    )


# ``t0 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t3, '_scale': t1}, ctx, size, stride)``:
# made by acquisition and the flattening pass, which name the subclass value they rebuild.
unflatten_tensor_subclass = _python_prim(
    "unflatten_tensor_subclass",
    _unflatten_meta,
    Tag.UNFLATTEN_TENSOR_SUBCLASS,
    printer=print_unflatten,
    imports=("prims",),
)
# ``prims.check_tensor_subclass(x, ScaleTensor, (2, 2), torch.float32, device, False, ('_x', '_scale'), ctx)``:
# the exact class, the outer metadata and what ``__tensor_flatten__`` gives (names, context).
check_tensor_subclass = _python_prim(
    "check_tensor_subclass", _no_output, Tag.PROLOGUE_CHECK, printer=print_subclass_check, imports=("prims",)
)


# Arithmetic on numbers that change from call to call (a step counter read from an
# input and written back): ``i1 = i0 + 1``. The Python operator each one prints as:
NUMBER_OPERATORS: dict[str, str] = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
}


def _number_meta(op: str):
    import operator

    fn = getattr(operator, op)

    def meta(a, b):
        value = fn(getattr(a, "value", a), getattr(b, "value", b))
        return NumberProxy(current_trace().make_name("i"), value)

    meta.__name__ = f"number_{op}_meta"
    return meta


def print_number_op(bsym, p) -> str:
    a, b = bsym.args
    symbol = NUMBER_OPERATORS[bsym.sym.name.removeprefix("number_")]
    out = bsym.output
    return f'{out.name} = {p.value(a)} {symbol} {p.value(b)}  # {out.name}: "{out.type_string()}"'


def _number_op(op: str) -> Symbol:
    return _python_prim(f"number_{op}", _number_meta(op), Tag.NUMBER, printer=print_number_op)


number_add = _number_op("add")
number_sub = _number_op("sub")
number_mul = _number_op("mul")
number_truediv = _number_op("truediv")
number_floordiv = _number_op("floordiv")
number_mod = _number_op("mod")
# by the name of the ``operator`` function (``DynamicNumber`` records ``d + 1`` as ``number_add``)
NUMBER_OPS: dict[str, Symbol] = {
    "add": number_add,
    "sub": number_sub,
    "mul": number_mul,
    "truediv": number_truediv,
    "floordiv": number_floordiv,
    "mod": number_mod,
}

# what ``thunder.ops.prims`` re-exports: the symbols above
__all__ = [name for name, value in dict(globals()).items() if isinstance(value, Symbol)]
