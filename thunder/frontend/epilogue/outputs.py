"""The epilogue: write back what the function did to its inputs, then build the return value
from what the function really returned.

The computation returns only tensors; the epilogue receives them, and the input objects it
needs (which the prologue passes on), and

- writes back every attribute the function set on an input object, with its final value
  (``pythonex.python_setattr(cache, 'pos', 3)``), deletions, item writes into input lists
  and dicts, attribute writes made in a module's ``forward`` and the hooks it registered or
  removed (``prims.set_module_hook(m_a, '_forward_hooks', 12, hook)``), and the side effects on
  Python state the function did not make, prints and warnings included
  (``pythonex.python_call(list.append, g___main___L, t0)``, see ``thunder.frontend.effects.recorder``);
- rebuilds the value: a tensor the program computed; the *same* input object or container
  (not a copy); tuples, lists, dicts and namedtuples; dataclasses field by field
  (``any0 = __main___MyContainer(res=res, num=1)``; a computed tensor is named after the
  field or attribute it goes to); objects of Python classes made inside the function
  (``any1 = pythonex.object_new(transformers_cache_utils_DynamicLayer, keys=keys, ...)``:
  allocated without ``__init__``, attributes in order, see ``thunder.frontend.stand_ins.made_objects``);
  constants as they are.

Aliasing is kept: a value reached twice is built once (a list or dict reached twice is
bound to a name), and objects in a reference cycle are allocated first and their
attributes set once every object of the cycle exists. An object the function read from a
module attribute or a global is returned as itself. Anything else (a lock or a generator
made inside) is an error that names the type, the path and, where it can be found, the
line that made it.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import enum
import keyword
import types
from collections.abc import Mapping

import torch

from thunder.core.context import tracectx
from thunder.core.errors import UnrebuildableError, UnsupportedValueError, at
from thunder.core.printing import MODULE_PATHS
from thunder.core.proxies import AnyProxy, Proxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_flatten
from thunder.core.subclass import proxy_of
from thunder.core.symbol import BoundSymbol
from thunder.core.symbolic import has_symbols
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.frontend.prologue.value_kinds import is_constant_object
from thunder.frontend.stand_ins import made_objects as made
from thunder.frontend.stand_ins.counters import DynamicNumber
from thunder.frontend.stand_ins.writes import Write
from thunder.ops import python as pyops

_CONSTANTS = (
    int, float, bool, str, complex, type(None), torch.dtype, torch.device, type(Ellipsis), enum.Enum,
    torch.Size, torch.memory_format, torch.layout, slice, bytes, range,
)  # fmt: skip
# Names a computed tensor is never renamed to: they would shadow what the printed code uses
# (builtins, the modules symbols print under, the prologue's parameters).
_RESERVED = frozenset(dir(builtins)) | {"torch", "args", "kwargs"}


def _reserved(name: str) -> bool:
    return name in _RESERVED or name in MODULE_PATHS


def build_epilogue(result, state, writebacks: list[Write] | None = None) -> tuple[Trace, list, list]:
    """(epilogue trace, tensors the computation returns, objects the prologue passes)."""
    epi = Trace("epilogue", tags=("epilogue",))
    epi.names |= state.computation.names
    builder = _Builder(epi, state)
    builder.find_shared([result] + [w.values() for w in writebacks or ()])
    with tracectx(epi):
        for w in writebacks or ():
            builder.writeback(w)
        out = builder.build(result, "the result")
    epi.args = builder.comp_outputs + builder.epilogue_inputs
    epi.output = out
    return epi, builder.comp_outputs, builder.epilogue_inputs


def state_object(state, v) -> AnyProxy | None:
    """The proxy of ``v`` if it is an input object (returned as the very same object)."""
    find = getattr(state, "object_proxy", None)
    return find(v) if find is not None else None


class _Builder:
    def __init__(self, epi: Trace, state):
        self.epi = epi
        self.state = state
        self.comp_outputs: list[TensorProxy] = []
        self.epilogue_inputs: list = []
        self._seen_outputs: set[str] = set()
        self._seen_inputs: set[str] = set()
        self._memo: dict[int, object] = {}  # id(value) -> what it was built as (keeps aliasing)
        self._renamed: set[int] = set()
        # building a print's arguments: each tensor is the value recorded at the print, not
        # the one its object holds at the end (``PythonCall.step``)
        self.recorded_values = False
        inputs = getattr(state, "inputs", None)
        self._input_names = set(inputs.sources) if inputs is not None else set()
        self._chain: list = []  # the values being built, outermost first (for errors)
        self._building: dict[int, str] = {}  # id -> path of the values being built now
        self._allocated: dict[int, AnyProxy] = {}  # objects of a cycle, allocated early
        self._shared: set[int] = set()  # lists and dicts reached more than once
        self._preexisting: set[int] | None = None

    def find_shared(self, roots: list) -> None:
        """Note the lists and dicts that the values reach more than once (kept shared)."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            v = stack.pop()
            if (
                isinstance(v, (torch.Tensor, DynamicNumber, *_CONSTANTS))
                or state_object(self.state, v) is not None
            ):
                continue
            if id(v) in seen:
                if type(v) in (list, dict):
                    self._shared.add(id(v))
                continue
            seen.add(id(v))
            if isinstance(v, (list, tuple)):
                stack += v
            elif isinstance(v, dict):
                stack += v.values()
            elif made.is_python_instance(v) and not _is_constant_input(self.state, v):
                stack += [x for _, x in made.attributes(v)]

    # -- the pieces ----------------------------------------------------------------------
    def output(self, p: TensorProxy) -> TensorProxy:
        if p.name not in self._seen_outputs:
            self._seen_outputs.add(p.name)
            self.comp_outputs.append(p)
        return p

    def _view_of_written_input(self, p: TensorProxy) -> TensorProxy | None:
        """``p`` is a view (a chain of views) of an input tensor the function wrote in place
        (``v = x.view(-1); v.add_(1); return v``): eager returns a view of the caller's tensor,
        so the epilogue takes the same views of it, after the write reached it; None otherwise
        (a view of an unwritten input already is one: the program takes it of the input)."""
        views = getattr(self.state, "views", None)
        if views is None or p.name in self._input_names:
            return None
        chain = []
        while (view := views.by_name.get(p.name)) is not None and view.value is p:
            chain.append(view)
            p = view.base
        if not chain:
            return None
        written = {
            id(self.state.inplace.current(x)): x
            for x in self.state.inputs.tensor_inputs
            if type(x) is TensorProxy and self.state.inplace.current(x) is not x
        }
        x = written.get(id(p))
        if x is None:
            return None
        value = self.output(x)  # (the computation hands the input on, written)
        with tracectx(self.epi):
            for view in reversed(chain):
                value = tree_flatten(view.op(value, *view.args, **view.kwargs))[0][view.index]
        return value

    def input_object(self, holder) -> AnyProxy:
        if holder.name not in self._seen_inputs:
            self._seen_inputs.add(holder.name)
            self.epilogue_inputs.append(holder)
        return holder

    def rename(self, p: TensorProxy, name: str | None) -> None:
        """Name a computed tensor after the field or attribute it goes to (``res=res``)."""
        if name is None or id(p) in self._renamed or p.name in self._input_names:
            return
        self._renamed.add(id(p))
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or _reserved(name):
            return
        base, i = name, 1
        while name in self.epi.names or name in self.state.computation.names:
            name, i = f"{base}_{i}", i + 1  # taken (another layer's ``keys``): ``keys_1``
        self.state.computation.names.add(name)
        self.epi.names.add(name)
        p._thunder_name = name

    # -- values --------------------------------------------------------------------------
    def build(self, v, path: str, name: str | None = None):
        if isinstance(v, TensorProxy):
            if v.name in self._input_names:
                # an input tensor is returned as itself: in-place writes reached it already
                return self.output(v)
            if self.recorded_values:  # (a print's argument: the value it had at the print)
                return self.output(v)
            cur = self.state.inplace.current(v) if hasattr(self.state, "inplace") else v
            aliased = self._view_of_written_input(cur)
            if aliased is not None:
                return aliased
            self.rename(cur, name)
            return self.output(cur)
        if isinstance(v, torch.Tensor):
            # (a real subclass tensor from a closure or a global: the input it is)
            traced = self.state.subclasses.traced_instance(v) if hasattr(self.state, "subclasses") else v
            p = proxy_of(v if traced is None else traced)
            if p is not None and p.name in self._input_names:
                # a subclass input is returned as itself: in-place writes are written back into it
                # (and one the epilogue writes attributes of is already at hand there)
                return self.input_object(p) if p.name in self._seen_inputs else self.output(p)
            # a value built in the function, or a real tensor from a closure or a global
            return self.build(self.state.capture(v), path, name)
        if isinstance(v, DynamicNumber):  # a counter: computed by the program, or an input as is
            p = v.proxy
            return self.input_object(p) if p.name in self._input_names else self.output(p)
        if has_symbols(v) and isinstance(v, (torch.SymInt, torch.SymBool, torch.Size)):
            # a size, or a shape, that changes between calls: computed from the symbols it reads
            # (``s0``), which the prologue hands the epilogue; it prints as its expression
            for p in proxies_in(v):
                self.input_object(p)
            return v
        if isinstance(v, _CONSTANTS):
            return v
        key = id(v)
        if key in self._memo:
            return self._memo[key]
        if key in self._building:
            return self._cycle(v, path)
        holder = state_object(self.state, v)
        if holder is not None:
            out = self.input_object(holder)
        elif isinstance(v, types.MethodType) and self._is_traced_object(v.__self__):
            # ``obj.method`` stored somewhere: bound again to the rebuilt (or input) object
            out = AnyProxy(self.epi.make_name("any"), types.MethodType)
            this = self.build(v.__self__, f"{path}.__self__")
            self.epi.add_bsym(BoundSymbol(pyops.construct, (types.MethodType, v.__func__, this), {}, out))
        elif _is_constant_input(self.state, v):
            self._check_captures(v, path)
            out = v
        else:
            self._building[key] = path
            self._chain.append(v)
            try:
                out = self._rebuild(v, path)
            finally:
                del self._building[key]
                self._chain.pop()
        self._memo[key] = out
        return out

    def _cycle(self, v, path: str):
        """``v`` is reached again while it is being built: allocate it now (an object), or refuse."""
        if not made.is_python_instance(v) or dataclasses.is_dataclass(v) or made.refusal(v) is not None:
            raise UnsupportedValueError(
                f"thunder: {path} is {self._building[id(v)]} again (a reference cycle through a "
                f"{type(v).__qualname__}); cycles are rebuilt only through objects of Python classes"
            )
        out = self._allocated.get(id(v))
        if out is None:
            out = AnyProxy(self.epi.make_name("any"), type(v))
            self.epi.add_bsym(
                BoundSymbol(pyops.object_new, (type(v),), {}, out, tags=frozenset({Tag.DATACLASS_NEW}))
            )
            self._allocated[id(v)] = out
        return out

    def _check_captures(self, v, path: str) -> None:
        """A function or partial made while tracing must not carry proxies out of the trace."""
        what = made.captured_traced(v, self._is_traced)
        if what is not None:
            raise UnsupportedValueError(
                f"thunder: {path} is the function {getattr(v, '__qualname__', type(v).__qualname__)}, made while "
                f"tracing, and {what} is a traced value; it cannot be returned or stored (its value is only "
                "known inside the computation)"
            )

    def _rebuild(self, v, path: str):
        t = type(v)
        if (t is list or t is dict) and id(v) in self._shared:
            # reached more than once: one list (or dict) bound to a name, as in eager
            if t is list:
                built = [self.build(x, f"{path}[{i}]") for i, x in enumerate(v)]
            else:
                built = {k: self.build(x, f"{path}[{k!r}]") for k, x in v.items()}
            out = AnyProxy(self.epi.make_name("any"), t)
            self.epi.add_bsym(BoundSymbol(pyops.construct, (t, built), {}, out))
            return out
        if t is tuple or t is list:
            return t(self.build(x, f"{path}[{i}]") for i, x in enumerate(v))
        if isinstance(v, tuple) and hasattr(t, "_fields"):
            return t(*(self.build(x, f"{path}.{f}") for f, x in zip(t._fields, v)))
        if t is dict:
            return {k: self.build(x, f"{path}[{k!r}]") for k, x in v.items()}
        if t is set or t is frozenset:  # ``any3 = builtins_set([1, 2])``: a new set on every call
            out = AnyProxy(self.epi.make_name("any"), t)
            items = [self.build(x, f"{path} item") for x in v]
            self.epi.add_bsym(BoundSymbol(pyops.construct, (t, items), {}, out))
            return out
        if t is collections.OrderedDict or t is collections.defaultdict:
            # no literal syntax: the epilogue calls the class (``collections_OrderedDict([...])``)
            items = [(k, self.build(x, f"{path}[{k!r}]")) for k, x in v.items()]
            args = (t, items) if t is collections.OrderedDict else (t, v.default_factory, dict(items))
            out = AnyProxy(self.epi.make_name("any"), t)
            self.epi.add_bsym(BoundSymbol(pyops.construct, args, {}, out))
            return out
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return self._construct(v, path)
        if self._read_not_made(v):
            return self._existing(v, path)
        if made.is_python_instance(v) and made.refusal(v) is None:
            return self._construct_object(v, path)
        raise UnrebuildableError(_unsupported(v, path), list(self._chain))

    def _existing(self, v, path: str):
        """An object the function read from a module attribute or a global: the very object,
        as in eager (read like the rest of module and global state: when traced)."""
        if isinstance(v, torch.nn.Module):
            raise UnsupportedValueError(_unsupported(v, path))
        what = made.captured_traced(v, self._is_traced)
        if what is not None:
            raise UnsupportedValueError(
                f"thunder: {path} is the {type(v).__module__}.{type(v).__qualname__} object the function read from a "
                f"module attribute or a global, and {what} was set to a traced value while tracing; thunder does "
                "not follow writes into such objects. Pass the object as an argument"
            )
        return v

    def _is_traced(self, x) -> bool:
        return isinstance(x, DynamicNumber) or state_object(self.state, x) is not None

    def _is_traced_object(self, v) -> bool:
        """An input object or an object the function made (not a module, a class, a global)."""
        if state_object(self.state, v) is not None:
            return True
        return (
            made.is_python_instance(v)
            and not isinstance(v, torch.nn.Module)
            and not _is_constant_input(self.state, v)
            and not self._read_not_made(v)
        )

    def _read_not_made(self, v) -> bool:
        if self._preexisting is None:
            self._preexisting = made.preexisting(_modules_of(self.state), getattr(self.state, "fn", None))
        return id(v) in self._preexisting

    def _construct_object(self, v, path: str) -> AnyProxy:
        """``any1 = pythonex.object_new(cls, keys=keys, is_initialized=True)`` (nested objects first)."""
        cls = type(v)
        attrs = [(k, self.build(x, f"{path}.{k}", k)) for k, x in made.attributes(v)]
        tags = frozenset({Tag.DATACLASS_NEW})
        out = self._allocated.pop(id(v), None)
        if out is None and all(k.isidentifier() and not keyword.iskeyword(k) for k, _ in attrs):
            out = AnyProxy(self.epi.make_name("any"), cls)
            self.epi.add_bsym(BoundSymbol(pyops.object_new, (cls,), dict(attrs), out, tags=tags))
            return out
        if out is None:  # an attribute name that is not a keyword argument: one setattr each
            out = AnyProxy(self.epi.make_name("any"), cls)
            self.epi.add_bsym(BoundSymbol(pyops.object_new, (cls,), {}, out, tags=tags))
        for k, x in attrs:
            self.epi.add_bsym(BoundSymbol(pyops.object_setattr, (out, k, x), {}, None, tags=tags))
        return out

    def _construct(self, v, path: str) -> AnyProxy:
        cls = type(v)
        fields = dataclasses.fields(v)
        values = {
            f.name: self.build(getattr(v, f.name), f"{path}.{f.name}", f.name)
            for f in fields
            if hasattr(v, f.name)
        }
        names = {f.name for f in fields}
        extra = {}
        for k, x in _instance_dict(v).items():
            if k not in names:
                extra[k] = self.build(x, f"{path}.{k}", k)
        out = AnyProxy(self.epi.make_name("any"), cls)
        tags = frozenset({Tag.DATACLASS_NEW})
        if isinstance(v, Mapping):  # transformers' ModelOutput: a dataclass that is also a dict
            keys = list(dict.keys(v))
            if not extra and keys == _model_output_keys(v, fields):
                bsym = BoundSymbol(pyops.construct, (cls,), values, out, tags=tags)
            else:
                items = {k: self.build(dict.__getitem__(v, k), f"{path}[{k!r}]", k) for k in keys}
                bsym = BoundSymbol(pyops.mapping_new, (cls, items, {**values, **extra}), {}, out, tags=tags)
        elif not extra and _init_rebuilds(cls, fields, values):
            bsym = BoundSymbol(pyops.construct, (cls,), values, out, tags=tags)
        else:
            bsym = BoundSymbol(pyops.dataclass_new, (cls,), {**values, **extra}, out, tags=tags)
        self.epi.add_bsym(bsym)
        return out

    # -- write-backs ---------------------------------------------------------------------
    def effect_value(self, value, path: str, line):
        """``value`` built for a write into state the function did not make (an error names the
        user's ``line``)."""
        try:
            return self.build(value, path)
        except (UnrebuildableError, UnsupportedValueError) as e:
            raise _effect_error(e, line) from None

    def writeback(self, write: Write) -> None:
        self.epi.add_bsym(write.step(self).from_bsym(tags=frozenset({Tag.WRITEBACK})))


def _effect_error(error: Exception, line) -> UnsupportedValueError:
    return UnsupportedValueError(
        f"{error}; a write into state the function did not make is made again by every call, with that "
        "call's values, and this value cannot be (the state was left as it was)" + (at(line) if line else "")
    )


def _instance_dict(v) -> dict:
    try:
        return object.__getattribute__(v, "__dict__")
    except AttributeError:
        return {}


def _init_rebuilds(cls, fields, values: dict) -> bool:
    """Calling ``cls(**values)`` gives back the same object: every field goes through
    ``__init__`` and no ``__post_init__`` transforms them again."""
    if any(not f.init for f in fields) or len(values) != len(fields):
        return False
    return not hasattr(cls, "__post_init__")


def _model_output_keys(v, fields) -> list | None:
    """The keys ``cls(**fields)`` makes (ModelOutput.__post_init__), or None if it would
    read its first field as a mapping or an iterator."""
    if not fields:
        return None
    first = getattr(v, fields[0].name, None)
    others_none = all(getattr(v, f.name, None) is None for f in fields[1:])
    if others_none and first is not None and not isinstance(first, torch.Tensor):
        return None
    return [f.name for f in fields if getattr(v, f.name, None) is not None]


def _is_constant_input(state, v) -> bool:
    """A function, class or module that was an input (checked by identity) or is one anyway."""
    inputs = getattr(state, "inputs", None)
    if inputs is not None and inputs.seen.get(id(v)) is v:
        return True
    return is_constant_object(v) and not isinstance(v, torch.nn.Module)


def _modules_of(state) -> list:
    """The modules whose state the function read (the jitted module and module arguments)."""
    inputs = getattr(state, "inputs", None)
    if inputs is None:
        return []
    found = [v for _, _, v in inputs.sources.values() if isinstance(v, torch.nn.Module)]
    found += [v for v in inputs.prologue.ctx_objects.values() if isinstance(v, torch.nn.Module)]
    return found


def _unsupported(v, path: str) -> str:
    t = type(v)
    if isinstance(v, Proxy):
        what = f"the proxy {v.name}"
    else:
        what = made.refusal(v) or f"an instance of {t.__module__}.{t.__qualname__}"
    return (
        f"thunder: {path} is {what}, which thunder cannot rebuild after the computation; supported: tensors, "
        "numbers, strings, None, dtypes and devices, tuples, lists, dicts and namedtuples of them, "
        "dataclasses (including transformers' ModelOutput), objects of Python classes made inside the "
        "function, and the function's own input objects"
    )
