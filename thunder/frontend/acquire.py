"""Acquisition: run the user's function natively with proxies under ``AcquisitionMode`` and
produce the prologue, computation and epilogue traces.

Nothing of the user's is changed: modules run as shadows (``thunder/frontend/modules.py``),
object inputs as wrappers (``thunder/frontend/objects.py``); a failed trace leaves every
input as it was.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from contextlib import contextmanager

import torch

from thunder.core.overlap import overlaps
from thunder.core.proxies import NumberProxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_flatten, tree_unflatten
from thunder.core.source import user_location
from thunder.core.subclass import is_plain_tensor, proxy_of
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace, current_trace, tracectx
from thunder.core.versions import Versions
from thunder.frontend.autograd_functions import traced_functions
from thunder.frontend.errors import UnrebuildableError, UnsupportedOpError, UnsupportedValueError, at
from thunder.frontend.guards import code_reads, guard_code_reads
from thunder.frontend.host_state import HostRandomUsed, RandomCalls, refuse_host_state
from thunder.frontend.inputs import Inputs, Unpack, _is_argument_path
from thunder.frontend.made import CreationSites
from thunder.frontend.mode import AcquisitionMode
from thunder.frontend.modules import ModuleShadows
from thunder.frontend.numbers import DynamicInt
from thunder.frontend.objects import holder_of, is_wrapper
from thunder.frontend.objects import writes as object_writes
from thunder.frontend.outputs import build_epilogue
from thunder.frontend.scopes import module_scopes
from thunder.frontend.subclasses import Subclasses
from thunder.frontend.values import value_reads
from thunder.ops import prims
from thunder.ops import python as pyops


@dataclasses.dataclass
class View:
    """``value`` is output ``index`` of ``op(base, *args, **kwargs)``, a view of ``base``."""

    base: TensorProxy
    op: object
    args: tuple
    kwargs: dict
    index: int
    value: TensorProxy
    func: object = None  # the torch callable that made it (replayed on meta tensors for its layout)


@dataclasses.dataclass
class Acquired:
    prologue: Trace
    computation: Trace
    epilogue: Trace
    written_numbers: frozenset = frozenset()  # int literals the function wrote back


class Acquisition:
    """The state of one trace: inputs, the rebinding of in-place writes, views."""

    def __init__(self, dynamic: frozenset = frozenset()):
        self.computation = Trace("computation", tags=("computation",))
        self.computation.source_finder = lambda: user_location(3)
        self.inputs = Inputs(self.computation, dynamic)
        self.latest: dict[int, TensorProxy] = {}  # id(proxy) -> its current value after in-place writes
        # Views (results of view ops such as x[0], x.view(...)): by the view value's name, and
        # by the id of the base value they were computed from.
        self.views: dict[str, View] = {}
        self.views_of: dict[int, list[View]] = {}
        self.touched: dict[int, TensorProxy] = {}  # proxies whose metadata user code read
        # names of the int literals the function wrote back (candidates for DynamicInt)
        self.written_numbers: set[str] = set()
        # attribute writes in module forwards: (holder, "set"/"del", name, value)
        self.module_writes: list[tuple] = []
        self.layout_reads: dict[str, tuple] = {}  # input name -> (proxy, strides) views were decided on
        self.grad_writes: set[str] = set()  # inputs that require grad written under grad mode
        self.first_writes: dict[str, tuple] = {}  # proxy name -> (op, source) of its first in-place write
        self.versions = Versions()  # storages and version counters, for autograd's check of saved values
        self.op_start: tuple[list, int] | None = None  # where the op being handled began recording
        self.module_tensors: dict[int, TensorProxy] = {}  # id(parameter or buffer) -> its proxy
        self.grads: dict[tuple, TensorProxy | None] = {}  # (input name, "grad") -> its .grad as read
        # results of view-or-copy decisions made on a guessed layout (``layout_guessed``): no writes
        self.guessed_layouts: set[str] = set()
        self._permuted_inputs = (0, False)  # (inputs seen, whether one is laid out permuted)
        self.shadows = ModuleShadows(self)
        self.module_paths: dict[int, str] = {}  # id(module or its shadow) -> its path, for module scopes
        self.subclasses = Subclasses(self)  # tensor-subclass values and their ops
        self.inputs.on_subclass = self.subclasses.own
        self._keepalive: list = []
        # a write reaching its base through detach() or .data: eager allows it into a leaf
        # that requires grad (it leaves the history alone)
        self._through_detach = 0
        self.fn = None  # the traced function (its globals hold objects it did not make)
        self.handling = None  # the torch function the mode handles now (named by errors)

    def current(self, p):
        """What the proxy ``p`` holds now, after every in-place write (follows rebind chains)."""
        if self.subclasses.owner:  # an inner tensor of a subclass value, used by itself
            self.subclasses.expose(p)
        latest = self.latest
        new = latest.get(id(p))
        while new is not None and new is not p:
            p = new
            new = latest.get(id(p))
        return p

    def object_proxy(self, v):
        """The holder proxy of ``v`` if it is an input object or an opened input container."""
        if is_wrapper(v):
            return holder_of(v)
        holder = self.shadows.holder_of(v)
        if holder is not None:
            return holder
        return self.inputs.container_holders.get(id(v))

    # -- values met in ops ----------------------------------------------------------------
    def resolve(self, x):
        """Current values for the proxies in ``x``; real tensors become captured inputs."""
        leaves, spec = tree_flatten(x)
        changed = False
        for i, v in enumerate(leaves):
            if isinstance(v, torch.Tensor):
                if not isinstance(v, TensorProxy):
                    v = self.capture(v)
                    changed = True
                new = self.current(v)
                if new is not leaves[i]:
                    leaves[i] = new
                    changed = True
            elif isinstance(v, DynamicInt):  # a torch op takes the number itself
                leaves[i] = v.concrete()
                changed = True
        return tree_unflatten(leaves, spec) if changed else x

    def capture(self, t: torch.Tensor) -> TensorProxy:
        """A real tensor from a closure or a global becomes an input of its own; a tensor
        subclass value made while tracing is its proxy."""
        if not is_plain_tensor(t) and (made := self.subclasses.made_here(t)) is not None:
            return made
        p = self.inputs.captured.get(id(t))
        if p is None:
            p = self.inputs.seen.get(id(t))  # a tensor that is also an argument (or read from one)
            if isinstance(p, TensorProxy) or proxy_of(p) is not None:
                return p if isinstance(p, TensorProxy) else proxy_of(p)
            p = None
        if p is None:
            self._keepalive.append(t)
            holder = self.inputs.prologue.add_name(f"captured{len(self.inputs.captured)}")
            self.inputs.prologue.ctx_objects = {**self.inputs.prologue.ctx_objects, holder: t}
            from thunder.core.proxies import AnyProxy

            root = AnyProxy(holder, type(t))
            p = self.inputs.tensor(t, f"c{len(self.inputs.captured)}", Unpack(root, "captured", None))
            self.inputs.captured[id(t)] = p
        return p if isinstance(p, TensorProxy) else proxy_of(p)  # (a subclass: its instance)

    def mark_op_start(self) -> None:
        """Called as each torch call begins: what it records is its own (an in-place op's write)."""
        t = current_trace()
        self.op_start = (t.recording, len(t.recording)) if t is not None else None

    def _made_since_op_start(self) -> set[str]:
        if self.op_start is None:
            return set()
        scope, n = self.op_start
        return {p.name for b in scope[n:] for p in proxies_in(b.output)}

    def rebind(self, target, value, op: str):
        """After an in-place op: ``target`` now holds ``value`` (and so does its view base).
        One call is one write of the storage's version counter (``thunder/core/versions.py``)."""
        if self.versions.writing or not isinstance(target, TensorProxy):  # (the write reaching a view's base)
            return self._rebind(target, value, op)
        self.versions.begin(self.current(target).name, op, user_location())
        try:
            return self._rebind(target, value, op)
        finally:
            self.versions.end(self._made_since_op_start())

    def _rebind(self, target, value, op: str):
        if not isinstance(target, TensorProxy):
            raise UnsupportedOpError(f"thunder: {op} on a non-tensor is not supported" + at(user_location()))
        self.subclasses.refuse_write(target, op)
        original = target
        current = self.current(original)
        if isinstance(value, TensorProxy):
            value = self._cast_for_inplace(value, current, op)
            if current.meta_requires_grad and not value.meta_requires_grad and torch.is_grad_enabled():
                # eager's in-place op keeps a tensor that requires grad in its graph, with a zero
                # gradient where the new value does not depend on it (``x.eq_(y)``, ``x.fill_(2)``)
                from thunder.ops.ltorch.factories import in_graph_of

                value = in_graph_of(value, current)
            elif current.meta_requires_grad and not value.meta_requires_grad:
                # a write under no_grad (``with torch.no_grad(): self.w.clamp_(max=1)``) is not
                # in eager's graph: the tensor stays itself there, and later ops pass their
                # gradient to it unchanged (to the parameter, for a parameter)
                from thunder.ops.ltorch.inplace import write_through_detach

                with torch.enable_grad():
                    value = write_through_detach(current, value)
        if value is current:
            return original
        if not self._through_detach:
            self._refuse_leaf_write(original, op)
        self.latest[id(current)] = value
        if isinstance(value, TensorProxy):
            self.versions.bind(value.name, value.name in self._made_since_op_start())
        if original.name in self.guessed_layouts or current.name in self.guessed_layouts:
            raise UnsupportedOpError(
                f"thunder: {op} writes into {original.name}, the result of a reshape or contiguous() of a "
                "computed tensor while an input is not contiguous (channels_last): whether eager's result is a "
                "view or a copy depends on a layout thunder does not track; .clone() it first, or write into "
                "the tensor itself" + at(user_location())
            )
        self.first_writes.setdefault(original.name, (op, user_location()))
        if current is not original:
            self.latest[id(original)] = value
        self._keepalive += [original, current]
        view = self.views.get(current.name) or self.views.get(original.name)
        through = self._through_repeats(view, op) if view is not None else None
        if through is not None:
            # a write below an expand with repeats: put the value where each element reads
            root, chain = through
            self.rebind(root, self._scatter_through(self.current(root), chain, value), op)
        elif view is not None:
            # a write into a view reaches its base (and so every other view of that base)
            from thunder.ops.ltorch.inplace import PIECE_WRITES, VIEW_WRITES

            write = VIEW_WRITES.get(view.op)
            if view.op in PIECE_WRITES:
                write = functools.partial(PIECE_WRITES[view.op], index=view.index)
            if write is None:
                raise UnsupportedOpError(
                    f"thunder: {op} writes into a view made by {view.op.name}; in-place writes are supported "
                    "on tensors and on views made by indexing, permutations, view/reshape/flatten, unsqueeze, "
                    "squeeze, select, narrow, split, chunk, unbind, diagonal and expand" + at(user_location())
                )
            from thunder.ops.ltorch.casts import detach

            self._through_detach += view.op is detach
            try:
                self._rebind(
                    view.base, write(self.current(view.base), *view.args, value=value, **view.kwargs), op
                )
            finally:
                self._through_detach -= view.op is detach
        # views taken of the old value see the write, as they alias it in eager
        self._refresh_views(current, self.current(original))
        return original

    def read_for_write(self, p):
        """What an in-place op on ``p`` reads: ``p``, or a copy of it where ``p`` is (a view of)
        an input that requires grad. Eager saves the value before the write for the backward
        (``x.mul_(w)``: ``w``'s gradient needs the old ``x``), but the input itself is written
        after the forward, so the backward must not read it."""
        if not (isinstance(p, TensorProxy) and torch.is_grad_enabled() and p.meta_requires_grad):
            return p
        if not self.is_input_view(p):
            return p
        from thunder.ops import ltorch

        return ltorch.clone(p)

    def _through_repeats(self, view: View, op: str):
        """For a write into ``view.value`` whose chain of views passes an expand with repeats
        (``x[0].expand(2, 3)[1]``): the base of the highest such expand and the views from it
        down to the written one (bottom first); None when the chain has no such expand. A
        written view whose own elements repeat (one memory location twice) is refused, as
        eager refuses add_, copy_ and the like on it."""
        from thunder.ops.ltorch.inplace import BROADCASTING_VIEWS

        chain, found, link = [], None, view
        while link is not None:
            chain.append(link)
            if link.op in BROADCASTING_VIEWS and math.prod(link.value.meta_shape) > math.prod(
                link.base.meta_shape
            ):
                found = len(chain)
            p = link.base
            link = self.views.get(p.name)
            link = link if link is not None and link.value is p else None
        if found is None:
            return None
        chain = chain[:found]
        root = chain[-1].base
        written = _replay(chain, torch.empty(root.meta_shape, device="meta"))
        if written is None or any(n > 1 and s == 0 for n, s in zip(written.shape, written.stride())):
            made = f"made by expand (shape {root.meta_shape} expanded to {chain[-1].value.meta_shape})"
            raise UnsupportedOpError(
                f"thunder: {op} writes into a view {made if len(chain) == 1 else 'of a view ' + made} in which "
                "more than one element refers to a "
                "single memory location; in-place writes into it are not supported (eager PyTorch refuses "
                "add_, copy_ and the like on it): clone() it first" + at(user_location())
            )
        return root, chain

    def _scatter_through(self, root: TensorProxy, chain: list, value: TensorProxy) -> TensorProxy:
        """``root`` with ``value`` put where the bottom view of ``chain`` reads it: the same views
        taken of the positions ``0 .. n-1`` of ``root`` say where (each at most once)."""
        from thunder.ops import ltorch

        n = math.prod(root.meta_shape)
        where = ltorch.reshape(
            prims.iota(n, start=0, step=1, dtype=torch.int64, device=root.meta_device), root.meta_shape
        )
        for link in reversed(chain):
            where = tree_flatten(link.op(where, *link.args, **link.kwargs))[0][link.index]
        flat = prims.index_copy(
            ltorch.reshape(root, (n,)), ltorch.reshape(where, (-1,)), 0, ltorch.reshape(value, (-1,))
        )
        return ltorch.reshape(flat, root.meta_shape)

    def _refuse_leaf_write(self, p: TensorProxy, op: str) -> None:
        """Eager's autograd rule: no in-place write into a leaf that requires grad (a parameter,
        ``torch.ones(3, requires_grad=True)``) while grad mode is on."""
        src = self.inputs.sources.get(p.name)
        real = src[2] if src is not None else None
        if not (isinstance(real, torch.Tensor) and real.requires_grad and torch.is_grad_enabled()):
            return
        self.grad_writes.add(p.name)  # the prologue checks it is still not a leaf
        if real.is_leaf:
            raise RuntimeError(
                f"thunder: {op} writes into {p.name}: a leaf Variable that requires grad is being used in an "
                "in-place operation (as eager PyTorch says)" + at(user_location())
            )

    def meta_of(self, p: TensorProxy):
        """A meta tensor laid out as eager's tensor for ``p``: its chain of views replayed
        from an input with the caller's strides (computed tensors are contiguous); None when a
        view in the chain cannot be replayed."""
        chain = []
        while (view := self.views.get(p.name)) is not None and view.value is p:
            if view.func is None:
                return None
            chain.append(view)
            p = view.base
        src = self.inputs.sources.get(p.name)
        real = src[2] if src is not None else None
        if isinstance(real, torch.Tensor) and is_plain_tensor(real):  # an input: as the caller laid it out
            m = torch.empty_strided(real.shape, real.stride(), device="meta")
            self.layout_reads[p.name] = (p, real.stride())  # the prologue checks the strides
        else:
            m = torch.empty(p.meta_shape, device="meta")
        try:
            for view in reversed(chain):
                m = tree_flatten(view.func(m, *view.args, **view.kwargs))[0][view.index]
        except Exception:  # arguments that are proxies (reshape_as(other)): not replayable
            return None
        return m

    def is_input_view(self, p: TensorProxy) -> bool:
        """``p`` is an input or (a chain of views of) one: its eager layout is the caller's."""
        while (view := self.views.get(p.name)) is not None and view.value is p:
            p = view.base
        return p.name in self.inputs.sources

    def layout_guessed(self, p: TensorProxy) -> bool:
        """Whether deciding on ``p``'s eager layout would be a guess: ``p`` is (a view of) a
        computed tensor, taken as contiguous, while a tensor input is laid out otherwise
        (channels_last): eager's elementwise ops keep such a layout, thunder does not track it."""
        if self.is_input_view(p):
            return False
        sources = self.inputs.sources
        if self._permuted_inputs[0] != len(sources):  # (inputs are added while tracing)
            found = any(
                isinstance(real, torch.Tensor) and _dense_permuted(real) for _, _, real in sources.values()
            )
            self._permuted_inputs = (len(sources), found)
        return self._permuted_inputs[1]

    def is_contiguous(self, p: TensorProxy) -> bool:
        m = self.meta_of(p)
        return m is None or m.is_contiguous()

    def add_view(self, view: View) -> None:
        self.views[view.value.name] = view
        self.versions.view(view.value.name, view.base.name)
        self.views_of.setdefault(id(view.base), []).append(view)

    def _refresh_views(self, old: TensorProxy, new: TensorProxy) -> None:
        """Recompute the views of ``old`` from ``new`` (recursively, for views of views)."""
        for view in self.views_of.pop(id(old), ()):
            result = view.op(new, *view.args, **view.kwargs)
            fresh = tree_flatten(result)[0][view.index]
            stale = self.current(view.value)
            if fresh is stale:
                continue
            self.latest[id(stale)] = fresh
            self._keepalive.append(stale)
            self.add_view(View(new, view.op, view.args, view.kwargs, view.index, fresh, view.func))
            self._refresh_views(stale, fresh)

    def _cast_for_inplace(self, value: TensorProxy, current: TensorProxy, op: str) -> TensorProxy:
        if value.meta_dtype is not current.meta_dtype:
            if not torch.can_cast(value.meta_dtype, current.meta_dtype):
                raise UnsupportedOpError(
                    f"thunder: {op}: the result type {value.meta_dtype} cannot be cast to the tensor's "
                    f"{current.meta_dtype}" + at(user_location())
                )
            value = prims.convert_element_type(value, current.meta_dtype)
        if value.meta_shape != current.meta_shape:
            from thunder.ops import ltorch
            from thunder.ops.meta import ShapeError

            try:
                value = ltorch.expand(value, current.meta_shape)
            except ShapeError:
                raise ShapeError(
                    f"thunder: {op}: the result's shape {tuple(value.meta_shape)} does not match the shape "
                    f"{tuple(current.meta_shape)} of the tensor written in place (as in eager, an in-place op "
                    "cannot grow its tensor by broadcasting)" + at(user_location())
                ) from None
        return value


def _dense_permuted(t: torch.Tensor) -> bool:
    """``t`` fills its memory without gaps in another dimension order than contiguous
    (channels_last, a transposed matrix): eager's elementwise ops give results laid out so."""
    if not is_plain_tensor(t) or t.is_contiguous():
        return False
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1)
    expected = 1
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def _replay(chain: list, m: torch.Tensor) -> torch.Tensor | None:
    """The chain of views (bottom first) taken eagerly of the meta tensor ``m`` (tensor
    arguments as meta tensors of their shape); None when a view cannot be replayed."""

    def meta(a):
        return torch.empty(a.meta_shape, device="meta") if isinstance(a, TensorProxy) else a

    try:
        for link in reversed(chain):
            leaves, spec = tree_flatten((link.args, link.kwargs))
            args, kwargs = tree_unflatten([meta(a) for a in leaves], spec)
            m = tree_flatten(link.func(m, *args, **kwargs))[0][link.index]
    except Exception:  # a view made without a torch callable (none recorded)
        return None
    return m


@contextmanager
def _compiling_flag():
    """Library code (transformers' masking) takes its traceable path while this is set."""
    compiler = getattr(torch, "compiler", None)
    has = compiler is not None and hasattr(compiler, "_is_compiling_flag")
    old = compiler._is_compiling_flag if has else None
    if has:
        compiler._is_compiling_flag = True
    try:
        yield
    finally:
        if has:
            compiler._is_compiling_flag = old


def acquire(
    fn, args: tuple, kwargs: dict, *, module: torch.nn.Module | None = None, dynamic: frozenset = frozenset()
) -> Acquired:
    """Trace ``fn(*args, **kwargs)`` (``module``: its parameters and buffers become inputs;
    ``dynamic``: names of int inputs to trace as values, see ``frontend/numbers.py``)."""
    try:
        return _acquire(fn, args, kwargs, module, dynamic)
    except UnrebuildableError as e:
        raise _with_creation_site(e, fn, args, kwargs, module, dynamic) from None
    except HostRandomUsed:
        pass
    # traced once more, under a line tracer that finds the draw (too slow to keep on); a second
    # trace that draws nothing (another thread drew meanwhile) is the trace
    calls = RandomCalls()
    try:
        with calls:
            return _acquire(fn, args, kwargs, module, dynamic)
    except HostRandomUsed as e:
        raise HostRandomUsed(f"{e}" + at(calls.site)) from None


def _with_creation_site(error: UnrebuildableError, fn, args, kwargs, module, dynamic) -> UnrebuildableError:
    """The error again, with the line that made the object (found by tracing once more with
    a profile hook that records where objects are made; too slow to keep on while tracing)."""
    sites = CreationSites()
    try:
        with sites:
            _acquire(fn, args, kwargs, module, dynamic)
    except UnrebuildableError as again:
        chain = again.chain
    else:  # the second trace went differently: no line to add
        return error
    holder = next((x for x in reversed(chain) if sites.of(x) is not None), None)
    if holder is None:
        return error
    what = "made" if holder is chain[-1] else f"held by a {type(holder).__qualname__} made"
    return UnrebuildableError(f"{error}\n  {what} " + at(sites.of(holder)).removeprefix("\n  "), chain)


def _acquire(fn, args, kwargs, module, dynamic) -> Acquired:
    state = Acquisition(dynamic)
    state.fn = module if module is not None else fn
    comp = state.computation
    with tracectx(comp), _compiling_flag(), refuse_host_state():
        # modules (the jitted one, arguments) run as shadows: see thunder/frontend/modules.py
        state.inputs.on_module = lambda m, holder, path: state.shadows.shadow(m, holder, path + "_", path)
        pargs, pkwargs = state.inputs.bind_arguments(
            module.forward if module is not None else fn, args, kwargs
        )
        if module is not None:
            fn = state.shadows.shadow(module)
        # the globals and closure cells the user's code may read, as the call begins
        reads = code_reads([fn] if module is None else [], {type(r.real) for r in state.shadows.order})
        guard_code_reads(state.inputs, reads)
        try:
            with (
                module_scopes(comp, state.module_paths),
                traced_functions(comp),
                AcquisitionMode(state),
                value_reads(state),
            ):
                result = fn(*pargs, **pkwargs)
        finally:
            state.shadows.restore_user_state()
            changed = reads.restore_objects()
        if changed is not None:
            raise UnsupportedValueError(
                f"thunder: the traced code changes {changed}; changing objects it reads from globals, closures "
                "or default arguments while tracing is not supported (the object was put back as it was): pass "
                "the object as an argument, or keep such state in a module's attributes or buffers"
            )
        state.shadows.finish()
        _write_back_inputs(state)
        _guard_written_inputs(state)
    writebacks = collect_writebacks(state)
    for holder, kind, key, _ in writebacks:  # int attributes of input objects written back
        name = state.inputs.literal_names.get((id(holder), key)) if kind == "set" else None
        if name is not None and type(state.inputs.sources[name][2]) is int:
            state.written_numbers.add(name)
    epilogue, comp_outputs, epilogue_inputs = build_epilogue(result, state, writebacks)
    comp.output = tuple(comp_outputs)
    if state.versions.writes:  # the grad pass checks the values its backward reads against them
        comp.info.versions = state.versions
    used = _used_inputs(comp, state)
    comp.args = used
    names = {p.name for p in used}
    checked = [p for p in state.touched.values() if p.name not in names and p.name in state.inputs.sources]
    checked += [p for p in state.subclasses.input_owners(state.touched.values()) if p.name not in names]
    checked += [p for p in state.inputs.specialized if p.name not in names]
    prologue = state.inputs.build_prologue(used, epilogue_inputs, checked)
    return Acquired(prologue, comp, epilogue, frozenset(state.written_numbers))


def collect_writebacks(state: Acquisition) -> list[tuple]:
    """What the function did to its input objects, containers and modules, in order:
    ``(holder, "set" | "del" | "setitem" | "delitem", key, value)``."""
    out: list[tuple] = []
    for w in state.inputs.wrappers:
        for kind, name, value in object_writes(w):
            out.append((holder_of(w), kind, name, value))
    for copy, holder, before in state.inputs.containers:
        out += _container_writes(copy, holder, before)
    out += state.module_writes
    return out


_ABSENT = object()


def _container_writes(copy, holder, before: list) -> list[tuple]:
    if isinstance(copy, tuple):
        return []
    if isinstance(copy, list):
        if len(copy) == len(before):
            return [(holder, "setitem", i, v) for i, (v, old) in enumerate(zip(copy, before)) if v is not old]
        return [(holder, "setitem", slice(None), list(copy))]
    old = dict(before)
    out = [(holder, "delitem", k, None) for k in old if k not in copy]
    out += [(holder, "setitem", k, v) for k, v in copy.items() if old.get(k, _ABSENT) is not v]
    return out


def _write_back_inputs(state: Acquisition) -> None:
    """In-place writes into input tensors reach the user's tensors: ``prims.copy_(t3, x)``."""
    for p in state.inputs.tensor_inputs:
        new = state.current(p)
        if new is not p:
            state.computation.add_bsym(
                BoundSymbol(
                    prims.copy_, (new, p), {}, None, source=None, tags=frozenset({Tag.INPLACE, Tag.WRITEBACK})
                )
            )


def _guard_written_inputs(state: Acquisition) -> None:
    """Checks for the inputs the function writes in place: one that requires grad is still not
    a leaf; an argument written in place that overlaps another argument (views of one tensor
    sharing elements) is refused, and the prologue checks that the written arguments overlap
    no other (views of one tensor that do not overlap are separate tensors to the program; the
    same tensor passed twice is one input, checked by identity)."""
    inputs = state.inputs
    args = []
    for p in inputs.tensor_inputs:
        src = inputs.sources.get(p.name)
        if src is not None and _is_argument_path(src[1], inputs) and is_plain_tensor(src[2]):
            args.append((p, src[2]))
    written = {id(p) for p, _ in args if state.current(p) is not p}
    for p, strides in state.layout_reads.values():  # views or copies were decided on its layout
        inputs.checks.append(BoundSymbol(pyops.check_strides, (p, strides), {}, None))
        inputs.guards.append(p)
    for p in inputs.tensor_inputs:  # written non-leaves: a leaf that requires grad must miss
        if p.name in state.grad_writes:
            inputs.checks.append(BoundSymbol(pyops.check_not_leaf, (p,), {}, None))
            inputs.guards.append(p)
    if len(args) < 2 or not written:
        return
    for hit, t in args:
        others = [q.name for q, u in args if q is not hit and overlaps(t, u)] if id(hit) in written else []
        if others:
            op, where = state.first_writes.get(hit.name, ("an in-place op", None))
            raise UnsupportedValueError(
                f"thunder: {op} writes into the argument {hit.name}, which shares memory with {', '.join(others)} "
                "(overlapping views of one tensor); in-place writes into arguments that overlap are not "
                "supported: pass separate tensors (.clone())" + (at(where) if where is not None else "")
            )
    ordered = [p for p, _ in args if id(p) in written] + [p for p, _ in args if id(p) not in written]
    inputs.checks.append(BoundSymbol(pyops.check_no_alias, tuple(ordered), {"written": len(written)}, None))
    inputs.guards.append(args[0][0])


def _used_inputs(comp: Trace, state: Acquisition) -> list:
    names: set[str] = set()
    for bsym in comp.bound_symbols:
        names.update(p.name for p in bsym.flat_proxy_args)
    names.update(p.name for p in tree_flatten(comp.output)[0] if isinstance(p, (TensorProxy, NumberProxy)))
    names |= state.subclasses.captured_inside  # tensors a subclass's dispatch used
    return [p for p in state.inputs.tensor_inputs + state.inputs.number_inputs if p.name in names]
