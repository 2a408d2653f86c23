"""Inputs: give every input value a proxy named after its provenance, and build the
prologue that unpacks and checks it on each call.

``fn(x, (a, b), n=2)`` gives proxies ``x``, ``args_1_0``... named by the parameter path;
Python values are specialised (the prologue checks them: ``check_literal(n, 2)``).
Module parameters and buffers are unpacked by their module path
(``t_fc1_weight = m_fc1._parameters['weight']``).
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
from typing import Any

import torch

from thunder.core.errors import UnsupportedValueError
from thunder.core.proxies import AnyProxy, NumberProxy, TensorProxy, proxies_in
from thunder.core.subclass import SubclassProxy, is_plain_tensor, proxy_of
from thunder.core.symbol import BoundSymbol
from thunder.core.symbolic import SizeEnv, SizeRelations
from thunder.core.tags import Tag
from thunder.core.trace import Trace, sanitize_name
from thunder.frontend.prologue.checks import PrologueChecks
from thunder.frontend.prologue.value_kinds import LITERAL_TYPES, is_constant_object, is_literal, is_wrappable
from thunder.frontend.stand_ins.containers import is_container_method
from thunder.frontend.stand_ins.counters import DynamicNumber, dynamic_number, is_counter
from thunder.frontend.stand_ins.objects import holder_of, is_wrapper, make_wrapper
from thunder.frontend.stand_ins.unpack import ATTR, BUFFER, ITEM, PARAM, SIZE, Unpack
from thunder.frontend.subclasses.instances import subclass_input
from thunder.ops import python as pyops
from thunder.ops.autocast import autocast_state


class Inputs:
    """Collects input proxies with their provenance while the computation is traced."""

    def __init__(
        self,
        computation: Trace,
        dynamic: frozenset = frozenset(),
        sizes: SizeEnv | None = None,
        dynamic_dims=None,
    ):
        self.computation = computation
        # names of number inputs read as DynamicNumbers (counters that changed between calls)
        self.dynamic = dynamic
        # the symbolic sizes of the compilation (thunder/core/symbolic/), and which dimensions
        # of a tensor input are symbols: ``dynamic_dims.dims(name, shape)`` (thunder/runtime/dynamic.py)
        self.sizes = sizes
        self.dynamic_dims = dynamic_dims
        self.symbols: dict[str, list[NumberProxy]] = {}  # a tensor's name -> the symbols of its sizes
        # id(a globals dict or closure cell the code reads) -> the name of its check's holder
        self.global_holders: dict[int, str] = {}
        self.number_inputs: list[NumberProxy] = []  # their proxies
        # (id(a plain object), attribute) -> its counter: one, whichever path meets it first
        self.object_counters: dict[tuple[int, str], DynamicNumber] = {}
        # counter input name -> its symbolic size, once an op took it as a size (``counter_size``)
        self.counter_symbols: dict[str, object] = {}
        self.specialized: list[NumberProxy] = []  # those whose value the trace came to rely on
        # (id(holder), attribute) -> the name of the literal read there: what a write replaces
        self.literal_names: dict[tuple[int, str], str] = {}
        self.prologue = Trace("prologue", tags=("prologue",))
        self.args_proxy = AnyProxy(self.prologue.add_name("args"), tuple)
        self.kwargs_proxy = AnyProxy(self.prologue.add_name("kwargs"), dict)
        # the prologue's own parameters: an argument named ``args`` is ``args_1``
        computation.names |= {self.args_proxy.name, self.kwargs_proxy.name}
        # what is known of each proxy: name -> (proxy, Unpack, real value)
        self.sources: dict[str, tuple[Any, Unpack, Any]] = {}
        self.checks = PrologueChecks()
        self.tensor_inputs: list[TensorProxy] = []  # every tensor proxy made for an input
        # the inner tensors of subclass inputs as meta tensors laid out as the caller's: a view
        # the layout cannot give raises as in eager
        self.inner_layouts: dict[str, torch.Tensor] = {}
        # the inner tensors of subclass inputs: name -> the subclass value whose flatten makes it
        self.inner_owner: dict[str, TensorProxy] = {}
        self.captured: dict[int, TensorProxy] = {}
        # names of objects the call's values are reached from besides args and kwargs: a jitted
        # bound method's object (``frontend/stand_ins/bound_self.py``), checked as an argument
        self.argument_roots: set[str] = set()
        self.module_proxy: AnyProxy | None = None
        self.seen: dict[int, Any] = {}  # id(real tensor or object) -> its proxy or wrapper
        self.wrappers: list = []  # ObjectWrappers, in the order they were made
        # opened lists/dicts/tuples: (the copy user code sees, its holder, its items at the start)
        self.containers: list[tuple[Any, AnyProxy, list]] = []
        self.container_holders: dict[int, AnyProxy] = {}  # id(copy) -> holder
        # ``(module, holder, path)``: set by acquisition to swap an argument module's state
        self.on_module = None
        # ``(SubclassProxy)``: set by acquisition, told of each tensor-subclass input
        self.on_subclass = None
        # ``(method, holder)``: set by acquisition, a container's method as an argument (``rec.append``)
        self.on_container_method = None
        self._keepalive: list = []

    # -- names ----------------------------------------------------------------------------
    def _name(self, path: str, prefix: str) -> str:
        name = sanitize_name(path) if path else prefix
        if prefix == "t" and path and not path[0].isalpha():
            name = "t" + name
        name = self.computation.add_name(name)
        self.prologue.names.add(name)
        return name

    # -- tensors and values ---------------------------------------------------------------
    def tensor(self, t: torch.Tensor, path: str, unpack: Unpack) -> TensorProxy:
        """The proxy of tensor input ``t``; for a tensor subclass, the instance user code sees
        (its proxy is ``thunder.core.subclass.proxy_of(instance)``)."""
        if not is_plain_tensor(t):
            instance = subclass_input(self, t, self._name(path, "t"), unpack)
            if self.on_subclass is not None:
                self.on_subclass(proxy_of(instance))
            return instance
        name = self._name(path, "t")
        shape = self._shape(name, t, isinstance(t, torch.nn.Parameter) or unpack.via in (PARAM, BUFFER))
        p = TensorProxy(name, shape, t.dtype, t.device, t.requires_grad)
        for d, sym in self.symbols.get(name, ()):  # ``s0 = x.shape[0]``
            self.sources[sym.name] = (sym, Unpack(p, SIZE, d), t.shape[d])
        if isinstance(t, torch.nn.Parameter):
            p._is_param = (
                True  # ``isinstance(p, nn.Parameter)`` answers as for ``t`` (frontend/effects/type_reads.py)
            )
        self.sources[p.name] = (p, unpack, t)
        self.tensor_inputs.append(p)
        return p

    def _shape(self, name: str, t: torch.Tensor, state: bool = False) -> tuple:
        """``t``'s shape, with a symbol for each dynamic dimension of the input ``name`` (not
        for sizes 0 and 1, which stay specialised; ``state``: a module's parameter or buffer)."""
        if self.dynamic_dims is None or self.sizes is None:
            return tuple(t.shape)
        dims = self.dynamic_dims.dims(name, tuple(t.shape), state)
        if not dims:
            return tuple(t.shape)
        shape, made = list(t.shape), []
        for d in range(len(shape)):
            if d in dims and shape[d] >= 2:
                sym = NumberProxy(self.computation.make_name("s"), shape[d])
                self.prologue.names.add(sym.name)
                shape[d] = self.sizes.new_symbol(sym, (name, d))
                made.append((d, sym))
        if made:
            self.symbols[name] = made
        return tuple(shape)

    def _int_symbol(self, path: str) -> bool:
        """Whether the int argument at ``path`` is a symbol (``dynamic_dims.int_argument``)."""
        ask = getattr(self.dynamic_dims, "int_argument", None)
        return self.sizes is not None and ask is not None and ask(sanitize_name(path or "i"))

    def _symbolic_int(self, v: int, path: str, unpack: Unpack):
        """An int argument as a symbolic size (``s0 = args[1]``, checked to be an int of at
        least 2): a graph Dynamo traced with symbolic shapes takes its sizes as such arguments."""
        sym = NumberProxy(self.computation.make_name("s"), v)
        self.prologue.names.add(sym.name)
        self.sources[sym.name] = (sym, unpack, v)
        self.checks.add_check(pyops.check_type, sym, int)
        return self.sizes.new_symbol(sym, (sanitize_name(path or "i"), None))

    def value(self, v, path: str, unpack: Unpack, depth: int = 0, *, tensor_prefix: str = ""):
        """The value user code sees for input ``v`` (proxies for tensors, containers rebuilt,
        wrappers for objects). A tensor or object met a second time (by another path) is the
        same proxy or wrapper, and the prologue checks that the new path still leads to it."""
        if isinstance(v, torch.Tensor):
            seen = self.seen.get(id(v))
            if seen is not None:
                return self._alias(seen, v, path, unpack)
            p = self.tensor(v, tensor_prefix + path if path else path, unpack)
            self.seen[id(v)] = p
            return p
        if isinstance(v, LITERAL_TYPES) or is_literal(v):
            if is_counter(v) and sanitize_name(path or "i") in self.dynamic:
                return self.dynamic_number(v, path, unpack)
            if type(v) is int and v >= 2 and self._int_symbol(path):
                return self._symbolic_int(v, path, unpack)
            p = NumberProxy(self._name(path or "i", "i"), v) if isinstance(v, (int, float)) else None
            holder = p or AnyProxy(self._name(path or "p", "p"), type(v))
            self.sources[holder.name] = (holder, unpack, v)
            self.checks.add_check(pyops.check_literal, holder, v)
            if unpack.via is ATTR:
                self.literal_names[(id(unpack.parent), unpack.key)] = holder.name
            return v
        t = type(v)
        if t in (tuple, list) or (isinstance(v, tuple) and hasattr(t, "_fields")):
            holder = self._container(v, path, unpack)
            self.checks.add_check(pyops.check_type, holder, t)
            self.checks.add_check(pyops.check_len, holder, len(v))
            items = [
                self.value(x, f"{path}_{i}", Unpack(holder, ITEM, i), depth + 1, tensor_prefix=tensor_prefix)
                for i, x in enumerate(v)
            ]
            out = t(*items) if hasattr(t, "_fields") else t(items)
            self._opened(out, holder, v)
            return out
        if t is dict or t is collections.OrderedDict or t is collections.defaultdict:
            keys = tuple(self._key(k, path) for k in v)
            holder = self._container(v, path, unpack)
            self.checks.add_check(pyops.check_type, holder, t)
            self.checks.add_check(pyops.check_keys, holder, keys)
            items = (
                (
                    k,
                    self.value(
                        x,
                        f"{path}_{k.name if isinstance(k, TensorProxy) else k}",
                        Unpack(holder, ITEM, k),
                        depth + 1,
                        tensor_prefix=tensor_prefix,
                    ),
                )
                for k, x in zip(keys, v.values())
            )
            out = (
                collections.defaultdict(v.default_factory, items)
                if t is collections.defaultdict
                else t(items)
            )
            self._opened(out, holder, v)
            return out
        if dataclasses.is_dataclass(v) and isinstance(v, dict):
            return self._model_output(v, path, unpack, tensor_prefix)
        return self.object(v, path, unpack)

    def _key(self, k, path: str):
        """A dict input's key as the traced code sees it: a tensor (an optimizer's state is
        keyed by the parameters) is the proxy it was met as, and the prologue looks the item up
        with the tensor it unpacked; other keys are themselves."""
        if not isinstance(k, torch.Tensor):
            return k
        p = self.seen.get(id(k))
        if not isinstance(p, TensorProxy):
            raise UnsupportedValueError(
                f"thunder: the input {path or 'argument'} is a dict keyed by a tensor that is not itself an input "
                f"(a tensor of shape {tuple(k.shape)}); such a dict is supported when its keys are reached "
                "first (an optimizer's parameters, then its state)"
            )
        return p

    def _model_output(self, v, path: str, unpack: Unpack, tensor_prefix: str):
        """A dataclass that is a dict (transformers' ModelOutput, such as the ``encoder_outputs``
        ``generate()`` passes to each decoder step): opened like a dict, into a new instance
        made as the epilogue makes one (``cls()``, then the items in order)."""
        t = type(v)
        holder = self._container(v, path, unpack)
        self.checks.add_check(pyops.check_type, holder, t)
        self.checks.add_check(pyops.check_keys, holder, tuple(v.keys()))
        try:
            out = t()
        except TypeError as e:
            raise UnsupportedValueError(
                f"thunder: the input {path or 'argument'} is a {t.__qualname__}, a dataclass that is a dict and "
                f"cannot be made without arguments ({e}); such inputs are supported when they can (as "
                "transformers' ModelOutput)"
            ) from None
        for k, x in v.items():
            out[k] = self.value(x, f"{path}_{k}", Unpack(holder, ITEM, k), tensor_prefix=tensor_prefix)
        self._opened(out, holder, v)
        return out

    def object(self, v, path: str, unpack: Unpack):
        """Any other object: callables, classes and modules are constants checked by identity;
        instances of Python classes are wrapped (``thunder.frontend.stand_ins.objects``)."""
        seen = self.seen.get(id(v))
        if seen is not None:
            return self._alias(seen, v, path, unpack)
        holder = AnyProxy(self._name(path or "p", "p"), type(v))
        self.sources[holder.name] = (holder, unpack, v)
        if isinstance(v, torch.nn.Module) and self.on_module is not None:
            # checked by identity; it runs as a shadow whose parameters and buffers are inputs
            # like the jitted module's (thunder/frontend/modules/shadows.py)
            self.checks.add_check(pyops.check_is, holder, v)
            self._keepalive.append(v)
            shadow = self.on_module(v, holder, holder.name)
            self.seen[id(v)] = shadow
            return shadow
        if self.on_container_method is not None and is_container_method(v):
            self.seen[id(v)] = out = self.on_container_method(v, holder)  # (frontend/effects/recorder.py)
            self._keepalive.append(v)
            return out
        if is_constant_object(v):
            self.checks.add_check(pyops.check_is, holder, v)
            self.seen[id(v)] = v
            self._keepalive.append(v)
            return v
        if not is_wrappable(v):
            raise UnsupportedValueError(
                f"thunder: the input {path or 'argument'} has type {type(v).__qualname__}, which is not supported "
                "(supported: tensors, numbers, strings, dtypes, devices, None, tuples, lists and dicts, "
                "functions and classes, and objects of Python classes such as dataclasses)"
            )
        w = make_wrapper(v, holder, path or holder.name, self)
        self.checks.add_check(pyops.check_type, holder, type(v))
        self.seen[id(v)] = w
        self.wrappers.append(w)
        return w

    def _alias(self, seen, v, path: str, unpack: Unpack):
        """``v`` was met before as ``seen``: check that this path still leads to the same object."""
        first = (
            seen if isinstance(seen, TensorProxy) else holder_of(seen) if is_wrapper(seen) else proxy_of(seen)
        )
        if first is None:  # a constant object: its own identity check is enough
            holder = AnyProxy(self._name(path or "p", "p"), type(v))
            self.sources[holder.name] = (holder, unpack, v)
            self.checks.add_check(pyops.check_is, holder, v)
            return seen
        holder = AnyProxy(self._name(path or "p", "p"), type(v))
        self.sources[holder.name] = (holder, unpack, v)
        self.checks.add_check(pyops.check_is, holder, first)
        return seen

    def _opened(self, out, holder: AnyProxy, real) -> None:
        """Remember an opened container: the epilogue writes item changes back to ``real``."""
        self.containers.append((out, holder, list(out.items()) if isinstance(out, dict) else list(out)))
        self.container_holders[id(out)] = holder

    def _container(self, v, path: str, unpack: Unpack) -> AnyProxy:
        holder = AnyProxy(self._name(path or "p", "p"), type(v))
        self.sources[holder.name] = (holder, unpack, v)
        return holder

    def guard_attr(self, holder: AnyProxy, name: str, value) -> str:
        """Check ``holder.name == value`` in the prologue (module attributes the function set)."""
        p = AnyProxy(self._name(f"{holder.name}_{name}", "p"), type(value))
        self.sources[p.name] = (p, Unpack(holder, ATTR, name), value)
        self.checks.add_check(pyops.check_literal, p, value, always=True)
        return p.name

    def dynamic_number(self, v: int | float, path: str, unpack: Unpack):
        """An int or float input that may change between calls: checked by its type, traced as
        a value."""
        p = NumberProxy(self._name(path, "i"), v)
        self.sources[p.name] = (p, unpack, v)
        self.checks.add_check(pyops.check_type, p, type(v))
        self.number_inputs.append(p)
        return dynamic_number(p, v, (p,), self)

    def is_object_counter(self, obj, attr: str, key: str) -> bool:
        """Whether ``obj.attr`` is traced as a value: a number under a key a miss made dynamic,
        or one another path to the object made a counter."""
        v = object.__getattribute__(obj, "__dict__").get(attr)
        return is_counter(v) and (key in self.dynamic or (id(obj), attr) in self.object_counters)

    def object_counter(self, obj, attr: str, key: str, unpack: Unpack) -> DynamicNumber:
        """The counter ``obj.attr`` traced as a value (an object two modules, or a module and a
        global, hold has one); put in the object once the trace begins (``ObjectState``)."""
        d = self.object_counters.get((id(obj), attr))
        if d is None:
            v = object.__getattribute__(obj, "__dict__")[attr]
            d = self.object_counters[(id(obj), attr)] = self.dynamic_number(v, key, unpack)
        return d

    def counter_size(self, d):
        """``d`` (a DynamicInt: one int counter plus a constant) as a symbolic size for an op that
        takes one: the counter becomes a symbol of the sizes (the prologue checks it is at least
        2 and every relation the trace relies on, not its value), or None where there are no
        symbolic sizes or the counter is 0 or 1."""
        root = d.roots[0]
        if self.sizes is None or type(root.value) is not int or root.value < 2:
            return None
        sym = self.counter_symbols.get(root.name)
        if sym is None:
            sym = self.counter_symbols[root.name] = self.sizes.new_symbol(root, (root.name, None))
        return sym + d.offset if d.offset else sym

    def specialize(self, d) -> None:
        """``d`` (a DynamicNumber) was used for its value: check the inputs it came from."""
        for root in d.roots:
            if all(root is not s for s in self.specialized):
                self.specialized.append(root)
                self.checks.add_check(pyops.check_literal, root, root.value)

    def guard_compare(self, p: NumberProxy, op: str, bound: int, outcome: bool) -> None:
        """Check that ``p <op> bound`` is still ``outcome`` (a counter compared with a limit)."""
        self.checks.add_check(pyops.check_int_compare, p, op, bound, outcome)
        if all(p is not g for g in self.checks.always):
            self.checks.check_always(p)

    def guard_value(self, t: TensorProxy, value) -> None:
        """Check the value of the one-element input tensor ``t`` (the trace read it)."""
        self.checks.add_check(pyops.check_tensor_value, t, value)

    def guard_absent(self, holder: AnyProxy, name: str) -> None:
        """Check that ``holder`` has no attribute ``name`` (one the function created)."""
        self.checks.add_check(pyops.check_hasattr, holder, name, False, always=True)

    # -- the prologue ---------------------------------------------------------------------
    def bind_arguments(self, fn, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Proxies for ``fn(*args, **kwargs)``, named after ``fn``'s parameters."""
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # a builtin or C callable: no names to use
            sig = None
        if sig is not None:
            try:
                sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{getattr(fn, '__qualname__', fn)}(): {e}") from None
        names = (
            _positional_names(sig, len(args)) if sig is not None else [f"args_{i}" for i in range(len(args))]
        )
        self.checks.add_check(pyops.check_len, self.args_proxy, len(args))
        self.checks.add_check(pyops.check_keys, self.kwargs_proxy, tuple(kwargs))
        pargs = tuple(self.value(a, names[i], Unpack(self.args_proxy, ITEM, i)) for i, a in enumerate(args))
        pkwargs = {k: self.value(v, k, Unpack(self.kwargs_proxy, ITEM, k)) for k, v in kwargs.items()}
        return pargs, pkwargs

    def build_prologue(self, used: list[TensorProxy], epilogue_inputs: list, checked=()) -> Trace:
        """Unpack and check what the computation uses; return ``(computation args, epilogue args)``.

        ``checked``: tensors whose metadata the trace relied on without passing them on.
        """
        pro = self.prologue
        pro.args = [self.args_proxy, self.kwargs_proxy]
        pro.signature = "*args, **kwargs"
        emitted: set[str] = {self.args_proxy.name, self.kwargs_proxy.name}
        checks_by_holder: dict[str, list[BoundSymbol]] = {}
        for c in self.checks.of_values:
            checks_by_holder.setdefault(c.args[0].name, []).append(c)

        def emit(proxy):
            if proxy.name in emitted:
                return
            owner = self.inner_owner.get(proxy.name)
            if owner is not None and owner.name not in emitted:
                emit(owner)  # (an inner tensor of a subclass input: made by its value's flatten)
                return
            src = self.sources.get(proxy.name)
            if src is not None and src[1].via is SIZE and src[1].parent.name not in emitted:
                emit(src[1].parent)  # its tensor first, which unpacks its sizes before its check
                return
            emitted.add(proxy.name)
            if src is not None:  # (the root module is a name in the prologue's namespace)
                _, unpack, real = src
                emit(unpack.parent)
                if isinstance(unpack.key, TensorProxy):  # (an item looked up by a tensor)
                    emit(unpack.key)
                pro.bound_symbols.append(
                    BoundSymbol(
                        unpack.via,
                        unpack.args(),
                        {},
                        proxy,
                        tags=frozenset({Tag.UNPACK}),
                    )
                )
            if isinstance(proxy, TensorProxy):
                for _, sym in self.symbols.get(proxy.name, ()):  # its sizes, before its check reads them
                    emit(sym)
                pro.bound_symbols.append(_tensor_check(proxy))
            for c in checks_by_holder.get(proxy.name, ()):
                for other in c.args[1:]:  # an alias check names the first path's proxy
                    for x in other if type(other) is tuple else (other,):  # (a dict's tensor keys)
                        if isinstance(x, (AnyProxy, TensorProxy)):
                            emit(x)
                pro.bound_symbols.append(c)
                for made in proxies_in(c.output):  # what a check makes (a subclass's inner tensors)
                    emit(made)

        for c in checks_by_holder.get(self.args_proxy.name, []) + checks_by_holder.get(
            self.kwargs_proxy.name, []
        ):
            pro.bound_symbols.append(c)
        # every user argument is checked (a call with other values must miss the cache): its
        # containers, objects and literals, and the tensors the trace relied on; module state
        # and captured tensors only when the computation uses them.
        for proxy, unpack, _ in self.sources.values():
            if is_argument_path(unpack, self) and not isinstance(proxy, TensorProxy):
                emit(proxy)
        # the arguments' tensors before module state and globals: a call that misses an entry
        # usually differs there (a longer cache in a decoding loop), and an entry tried in
        # vain should fail at its first checks, not after every module's
        for p in (*used, *checked, *epilogue_inputs):
            if isinstance(p, TensorProxy) and p.name in self.sources:
                if is_argument_path(self.sources[p.name][1], self):
                    emit(p)
        for p in self.checks.always:
            emit(p)
        for p in used:
            emit(p)
        for p in checked:
            emit(p)
        for p in epilogue_inputs:
            emit(p)
        pro.bound_symbols += self.checks.of_globals
        if self.sizes is not None and self.sizes.symbols:  # the relations between the sizes
            symbols = dict(self.sizes.symbols)
            for sym in symbols.values():
                emit(sym)
            pro.bound_symbols.append(
                BoundSymbol(pyops.check_sizes, (symbols, SizeRelations(self.sizes)), {}, None)
            )
        pro.bound_symbols.append(BoundSymbol(pyops.check_grad_enabled, (torch.is_grad_enabled(),), {}, None))
        # each op's dtype depends on autocast (thunder/ops/autocast.py): a call under another state misses
        pro.bound_symbols.append(BoundSymbol(pyops.check_autocast, (autocast_state(),), {}, None))
        # factories and type promotion read the default dtype while tracing
        pro.bound_symbols.append(
            BoundSymbol(pyops.check_default_dtype, (torch.get_default_dtype(),), {}, None)
        )
        pro.output = (tuple(used), tuple(epilogue_inputs))
        return pro


def is_argument_path(unpack: Unpack, inputs: Inputs) -> bool:
    while True:
        parent = unpack.parent
        if (
            parent is inputs.args_proxy
            or parent is inputs.kwargs_proxy
            or parent.name in inputs.argument_roots
        ):
            return True
        src = inputs.sources.get(parent.name)
        if src is None:
            return False
        unpack = src[1]


def _tensor_check(p: TensorProxy) -> BoundSymbol:
    if isinstance(p, SubclassProxy):  # the exact class, outer metadata, inner names, flatten context
        return BoundSymbol(
            pyops.check_tensor_subclass,
            (
                p,
                p.subclass,
                p.meta_shape,
                p.meta_dtype,
                p.meta_device,
                p.meta_requires_grad,
                tuple(p.inner),
                p.ctx,
            ),
            {},
            None,
            tags=frozenset({Tag.PROLOGUE_CHECK}),
        )
    return BoundSymbol(
        pyops.check_tensor,
        (p, p.meta_shape, p.meta_dtype, str(p.meta_device), p.meta_requires_grad),
        {},
        None,
        tags=frozenset({Tag.PROLOGUE_CHECK}),
    )


def _positional_names(sig: inspect.Signature, n: int) -> list[str]:
    names = []
    for param in sig.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
        elif param.kind == param.VAR_POSITIONAL:
            names += [f"{param.name}_{i}" for i in range(n - len(names))]
            break
    return (names + [f"args_{i}" for i in range(len(names), n)])[:n]
