"""Acquisition: run the user's function natively with proxies under ``AcquisitionMode`` and
produce the prologue, computation and epilogue traces.

Nothing of the user's is changed: modules run as shadows (``thunder/frontend/modules/shadows.py``),
object inputs as wrappers (``thunder/frontend/stand_ins/objects.py``); a failed trace leaves every
input as it was.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from contextlib import contextmanager

import torch
from torch.nn.modules import module as module_hooks

from thunder.core.context import tracectx
from thunder.core.errors import UnrebuildableError, UnsupportedValueError, at
from thunder.core.proxies import AnyProxy, NumberProxy, TensorProxy
from thunder.core.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from thunder.core.source import user_location
from thunder.core.subclass import SubclassProxy, is_plain_tensor, proxy_of
from thunder.core.symbol import BoundSymbol
from thunder.core.symbolic import SizeEnv
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.core.versions import Versions
from thunder.executors.python.overlap import overlaps
from thunder.frontend.distributed.collectives import finish_pending
from thunder.frontend.distributed.ddp import DataParallelCall, data_parallel
from thunder.frontend.distributed.fsdp import Sharding
from thunder.frontend.effects.host_state import (
    HostRandomUsed,
    NumpyRandomLoaded,
    RandomCalls,
    refuse_host_state,
)
from thunder.frontend.effects.opaque_state import OpaqueStates
from thunder.frontend.effects.python_calls import python_calls
from thunder.frontend.effects.recorder import SUBSTITUTING, Effects, counters_written
from thunder.frontend.effects.type_reads import guard_param_reads, param_reads, type_queries
from thunder.frontend.epilogue.outputs import build_epilogue
from thunder.frontend.modules.scopes import module_scopes
from thunder.frontend.modules.shadows import ModuleShadows
from thunder.frontend.prologue.code_reads import code_reads, guard_code_reads, guard_written_functions
from thunder.frontend.prologue.inputs import Inputs, is_argument_path
from thunder.frontend.prologue.state_checks import GLOBAL_HOOKS
from thunder.frontend.stand_ins.bound_self import bound_call
from thunder.frontend.stand_ins.counters import DynamicInt, DynamicNumber, is_counter, refuse_stand_ins
from thunder.frontend.stand_ins.made_objects import CreationSites
from thunder.frontend.stand_ins.objects import holder_of, is_wrapper
from thunder.frontend.stand_ins.objects import writes as object_writes
from thunder.frontend.stand_ins.unpack import CAPTURED, Unpack
from thunder.frontend.stand_ins.writes import DelItem, PythonCall, SetAttr, SetItem, Write
from thunder.frontend.subclasses.instances import Subclasses
from thunder.frontend.torch_calls.autograd_functions import traced_functions
from thunder.frontend.torch_calls.inplace import InplaceWrites
from thunder.frontend.torch_calls.layout_queries import Layouts
from thunder.frontend.torch_calls.mode import AcquisitionMode
from thunder.frontend.torch_calls.torch_state import TorchState
from thunder.frontend.torch_calls.value_reads import value_reads
from thunder.frontend.torch_calls.views import Views
from thunder.ops import ltorch, prims
from thunder.ops import python as pyops

# what thunder keeps on a tensor proxy (any other attribute was set by the user's code)
_PROXY_ATTRIBUTES = ("_thunder", "meta_", "_type_string")
# arguments whose code the function runs (a callback): their globals and closures are read too
_CALLBACKS = (types.FunctionType, types.MethodType, functools.partial)


@dataclasses.dataclass
class Acquired:
    prologue: Trace
    computation: Trace
    epilogue: Trace
    written_numbers: frozenset = frozenset()  # number literals the function wrote back
    sizes: SizeEnv | None = None  # the symbolic sizes and the relations the traces relied on
    locks: tuple = ()  # the locks the traced code took (``with LOCK:``): every call holds them


class Acquisition:
    """The state of one trace, in parts with one purpose each: the inputs and the prologue's
    checks (``Inputs``), views (``Views``), in-place writes (``InplaceWrites``), module shadows
    (``ModuleShadows``) and tensor-subclass values (``Subclasses``); itself, what user code did
    with the values it met (metadata it read, tensors it reached outside its arguments)."""

    def __init__(self, dynamic: tuple = (frozenset(), None)):
        self.computation = Trace("computation", tags=("computation",))
        self.computation.source_finder = lambda: user_location(3)
        numbers, dims = dynamic
        self.inputs = Inputs(self.computation, numbers, SizeEnv() if dims is not None else None, dims)
        self.versions = Versions()  # storages and version counters, for autograd's check of saved values
        self.views = Views(self.inputs, self.versions)
        self.sharding = Sharding(self)  # modules sharded with FSDP2 (frontend/distributed/fsdp.py)
        self.shadows = ModuleShadows(self)
        self.subclasses = Subclasses(self)  # tensor-subclass values and their ops
        self.inputs.on_subclass = self.subclasses.add_input
        self.layouts = Layouts(self.inputs)  # how values were made, for eager's layout of each
        self.inplace = InplaceWrites(self.inputs, self.views, self.versions, self.subclasses)
        self.touched: dict[int, TensorProxy] = {}  # proxies whose metadata user code read
        # names of the number literals the function wrote back (candidates for DynamicNumber)
        self.written_numbers: set[str] = set()
        self.grads: dict[tuple, TensorProxy | None] = {}  # (input name, "grad") -> its .grad as read
        self._keepalive: list = []  # captured tensors: ``inputs.captured`` is keyed by their ids
        self.fn = None  # the traced function (its globals hold objects it did not make)
        self.handling = None  # the torch function the mode handles now (named by errors)
        self.effects = Effects(self.inputs)  # writes to Python state the function did not make
        self.python_calls: list = []  # prints, log records and warnings, in order: (fn, args, kwargs)
        self.inputs.on_container_method = self.effects.bound_method
        self.param_reads: dict[str, TensorProxy] = {}  # inputs isinstance(x, nn.Parameter) asked about
        self.torch_state = (
            None  # global torch state as the trace began (thunder/frontend/torch_calls/torch_state.py)
        )
        self.pending_collectives: list = []  # started with async_op=True, not waited for yet

    def object_proxy(self, v):
        """The holder proxy of ``v`` if it is an input object or an opened input container."""
        if is_wrapper(v):
            return holder_of(v)
        holder = self.shadows.holder_of(v)
        if holder is not None:
            return holder
        holder = self.effects.holder_of(v)
        if holder is not None:
            return holder
        return self.inputs.container_holders.get(id(v))

    # -- values met in ops ----------------------------------------------------------------
    def resolve(self, x, sizes: bool = False):
        """Current values for the proxies in ``x``; real tensors become captured inputs.
        ``sizes``: the op takes sizes, and a counter traced as a value that can be one is a
        symbolic size (``DynamicInt.as_size``) rather than its value."""
        leaves, spec = tree_flatten(x)
        changed = False
        for i, v in enumerate(leaves):
            if isinstance(v, torch.Tensor):
                if not isinstance(v, TensorProxy):
                    v = self.capture(v)
                    changed = True
                new = self.inplace.current(v)
                if new is not leaves[i]:
                    leaves[i] = new
                    changed = True
            elif isinstance(v, DynamicNumber):  # a torch op takes the number itself
                size = v.as_size() if sizes and isinstance(v, DynamicInt) else None
                leaves[i] = size if size is not None else v.concrete()
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
            root = AnyProxy(holder, type(t))
            p = self.inputs.tensor(t, f"c{len(self.inputs.captured)}", Unpack(root, CAPTURED, None))
            self.inputs.captured[id(t)] = p
        return p if isinstance(p, TensorProxy) else proxy_of(p)  # (a subclass: its instance)


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
    fn,
    args: tuple,
    kwargs: dict,
    *,
    module: torch.nn.Module | None = None,
    dynamic: frozenset = frozenset(),
    dynamic_dims=None,
) -> Acquired:
    """Trace ``fn(*args, **kwargs)`` (``module``: its parameters and buffers become inputs;
    ``dynamic``: names of int inputs to trace as values, see ``frontend/stand_ins/counters.py``;
    ``dynamic_dims``: which dimensions of a tensor input are symbols, ``.dims(name, shape)``
    (``thunder/runtime/dynamic.py``; the symbols: ``Acquired.sizes``, ``thunder/core/symbolic/``))."""
    variables = (dynamic, dynamic_dims)
    try:
        return _acquire(fn, args, kwargs, module, variables)
    except UnrebuildableError as e:
        raise _with_creation_site(e, fn, args, kwargs, module, variables) from None
    except NumpyRandomLoaded:  # (loaded by this trace: traced again with it guarded)
        return acquire(fn, args, kwargs, module=module, dynamic=dynamic, dynamic_dims=dynamic_dims)
    except HostRandomUsed:
        pass
    # traced once more, under a line tracer that finds the draw (too slow to keep on); a second
    # trace that draws nothing (another thread drew meanwhile) is the trace
    calls = RandomCalls()
    try:
        with calls:
            return _acquire(fn, args, kwargs, module, variables)
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
    # a DistributedDataParallel: its module is traced, with DDP's semantics (frontend/distributed/ddp.py)
    ddp = data_parallel(module)
    if ddp is not None:
        module = ddp.module
    state.fn = module if module is not None else fn
    state.torch_state = torch_state = TorchState()
    comp = state.computation
    with tracectx(comp), _compiling_flag(), refuse_host_state():
        # modules (the jitted one, arguments) run as shadows: see thunder/frontend/modules/shadows.py
        state.inputs.on_module = lambda m, holder, path: state.shadows.shadow(m, holder, path + "_", path)
        bound = bound_call(fn) if module is None else None
        pargs, pkwargs = state.inputs.bind_arguments(
            module.forward if module is not None else fn if bound is None else bound.method(), args, kwargs
        )
        if module is not None:
            fn = state.shadows.shadow(module)
        if bound is not None:  # ``thunder.jit(opt.step)``: the object is an input (stand_ins/bound_self.py)
            holder = state.inputs.prologue.add_name("bound_self")
            state.inputs.prologue.ctx_objects = {**state.inputs.prologue.ctx_objects, holder: bound.obj}
            state.inputs.argument_roots.add(holder)
            bound.self_value = state.inputs.value(
                bound.obj, "self", Unpack(AnyProxy(holder, type(bound.obj)), CAPTURED, None)
            )
            fn = bound
        replica = DataParallelCall(state, ddp, fn) if ddp is not None else None
        if replica is not None:  # (the buffers' broadcast, then the module's forward)
            fn = replica
        # the globals and closure cells the user's code may read (also through the hooks and
        # callbacks it calls), as the call begins
        called = ([bound.func] if bound is not None else [fn]) if module is None else []
        called += [h for r in state.shadows.order for items in r.hooks.values() for _, h in items]
        if state.shadows.order:  # global module hooks (``register_module_forward_hook``)
            called += [h for name in GLOBAL_HOOKS for h in getattr(module_hooks, name, {}).values()]
        called += [v for v in (*pargs, *pkwargs.values()) if isinstance(v, _CALLBACKS)]
        reads = code_reads(called, {type(r.real) for r in state.shadows.order})
        checks = guard_code_reads(state.inputs, reads)
        opaque = OpaqueStates(reads)  # (a random.Random, an iterator in a dict: effects/opaque_state.py)
        effects = state.effects
        held_writes: list = []
        failed = None
        with SUBSTITUTING:  # (one trace at a time puts tracked copies in the user's globals)
            try:
                state.shadows.put_counters()  # (counters on objects modules hold: frontend/stand_ins/counters.py)
                effects.substitute(reads)  # (tracked copies: thunder/frontend/effects/recorder.py)
                with (
                    module_scopes(comp, state.shadows.paths),
                    traced_functions(comp, state.layouts),
                    AcquisitionMode(state),
                    value_reads(state),
                    python_calls(state.python_calls, state.inplace.current),
                    param_reads(state),
                    type_queries(reads),
                    state.torch_state,
                ):
                    result = fn(*pargs, **pkwargs)
                    finish_pending(state)  # (thunder/frontend/distributed/collectives.py)
            except Exception as e:
                failed = e
                raise
            finally:
                refused = effects.restore()
                state.shadows.restore_user_state()
                undone = reads.restore_objects(held_writes)
                moved = opaque.changed()
                if failed is not None:
                    _note_undone(failed, [*effects.undone(), *([undone] if undone else [])])
        if moved is not None:
            raise UnsupportedValueError(
                f"thunder: the traced code changes {moved}: every cached call would reuse what it took from "
                "it while tracing. Take the value outside the compiled function and pass it in as an argument "
                "(or draw random numbers with torch, which the program replays)"
            )
        if refused is not None:
            raise UnsupportedValueError(
                f"thunder: the traced code changes {refused}; this cannot be replayed"
            )
        effects.finish()
        state.written_numbers |= counters_written(effects, state.inputs)  # (``global n; n += 1``)
        state.written_numbers |= reads.counters_written(
            held_writes + state.shadows.object_writes
        )  # (``ST.step += 1``)
        effects.guard_slots()
        guard_written_functions(state.inputs, reads)
        effects.object_writes(held_writes + state.shadows.object_writes)
        effects.relax(checks, reads)
        state.shadows.finish()
        if replica is not None:
            replica.finish()
        _snapshot_printed_inputs(state)
        _write_back_inputs(state)
        _guard_written_inputs(state)
        guard_param_reads(state)
    writebacks = collect_writebacks(state)
    for w in writebacks:  # number attributes of input objects written back
        name = state.inputs.literal_names.get((id(w.holder), w.name)) if isinstance(w, SetAttr) else None
        if name is not None and is_counter(state.inputs.sources[name][2]):
            state.written_numbers.add(name)
    epilogue, comp_outputs, epilogue_inputs = build_epilogue(result, state, writebacks)
    if state.inputs.number_inputs:  # (counters traced as values: frontend/stand_ins/counters.py)
        refuse_stand_ins(comp.bound_symbols + epilogue.bound_symbols)
    epilogue.bound_symbols[:0] = torch_state.writebacks()  # the grad mode or default dtype it left
    comp.output = tuple(comp_outputs)
    if state.versions.writes:  # the grad pass checks the values its backward reads against them
        comp.info.versions = state.versions
    used = _used_inputs(comp, state)
    if replica is not None:  # (find_unused_parameters: every parameter, used or not)
        used += replica.unused_inputs(used)
    comp.args = used
    if state.inputs.sizes is not None:
        comp.info.symbols = tuple(state.inputs.sizes.symbols)
    if replica is not None:
        comp.info.data_parallel = replica.record(used)
    names = {p.name for p in used}
    checked = [p for p in state.touched.values() if p.name not in names and p.name in state.inputs.sources]
    checked += [p for p in state.subclasses.input_owners(state.touched.values()) if p.name not in names]
    checked += [p for p in state.inputs.specialized if p.name not in names]
    prologue = state.inputs.build_prologue(used, epilogue_inputs, checked)
    return Acquired(
        prologue,
        comp,
        epilogue,
        frozenset(state.written_numbers),
        state.inputs.sizes,
        state.effects.taken_locks(),
    )


def _note_undone(error: Exception, undone: list[str]) -> None:
    """Say on ``error`` (raised by the traced code) what the code had written before it, which
    the failed trace put back where eager would have kept it."""
    if undone:
        error.add_note(
            "thunder: the function's writes before this error were not made (the trace that failed put "
            f"back {', '.join(dict.fromkeys(undone))} as it was before the call; eager keeps them)"
        )


def collect_writebacks(state: Acquisition) -> list[Write]:
    """What the function did to its input objects, containers, modules and other Python state,
    in order, and the prints, log records and warnings it made."""
    out: list[Write] = []
    for w in state.inputs.wrappers:
        out += object_writes(w, holder_of(w))
    for copy, holder, before in state.inputs.containers:
        out += _container_writes(copy, holder, before)
    out += state.shadows.writes
    out += state.effects.writes
    for p in state.inputs.tensor_inputs:  # ``x.tag = "seen"`` on an input tensor: on the user's tensor
        for name, value in vars(p).items() if type(p) is TensorProxy else ():
            if not name.startswith(_PROXY_ATTRIBUTES):
                out.append(SetAttr(p, name, value))
    out += state.subclasses.writes.attribute_writebacks  # inner tensors a subclass's dispatch replaced
    out += [PythonCall(fn, args, kwargs) for fn, args, kwargs in state.python_calls]
    return out


_ABSENT = object()


def _container_writes(copy, holder, before: list) -> list[Write]:
    if isinstance(copy, tuple):
        return []
    if isinstance(copy, list):
        if len(copy) == len(before):
            return [SetItem(holder, i, v) for i, (v, old) in enumerate(zip(copy, before)) if v is not old]
        return [SetItem(holder, slice(None), list(copy))]
    old = dict(before)
    out: list[Write] = [DelItem(holder, k) for k in old if k not in copy]
    out += [SetItem(holder, k, v) for k, v in copy.items() if old.get(k, _ABSENT) is not v]
    return out


def _snapshot_printed_inputs(state: Acquisition) -> None:
    """An input a print (a log record, a warning) showed before the function wrote it in place:
    the print shows a copy taken before the write-back (``print(x); x.add_(1)``: the value ``x``
    had), as eager's print did; one copy per input, outside autograd."""
    written = {id(p) for p in state.inputs.tensor_inputs if state.inplace.current(p) is not p}
    if not written:
        return
    copies: dict[int, TensorProxy] = {}

    def snapshot(v):
        if not (isinstance(v, TensorProxy) and id(v) in written):
            return v
        if id(v) not in copies:
            with torch.no_grad():
                copies[id(v)] = ltorch.clone(v)
        return copies[id(v)]

    state.python_calls[:] = [
        (fn, tree_map(snapshot, args), tree_map(snapshot, kwargs)) for fn, args, kwargs in state.python_calls
    ]


def _write_back_inputs(state: Acquisition) -> None:
    """In-place writes into input tensors reach the user's tensors: ``prims.copy_(t3, x)``
    (into a tensor-subclass input: thunder/frontend/subclasses/writes.py)."""
    for p in state.inputs.tensor_inputs:
        if isinstance(p, SubclassProxy):
            state.subclasses.writes.write_back(p)
            continue
        new = state.inplace.current(p)
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
        if src is not None and is_argument_path(src[1], inputs) and is_plain_tensor(src[2]):
            args.append((p, src[2]))
        elif src is not None and is_argument_path(src[1], inputs) and isinstance(p, SubclassProxy):
            args += zip(p.leaves(), _leaves(src[2]), strict=True)  # a subclass's: its inner tensors
    written = {id(p) for p, _ in args if state.inplace.value_of(p) is not p}
    for p, strides in state.views.layout_reads.values():  # views or copies were decided on its layout
        inputs.checks.add_check(pyops.check_strides, p, strides, always=True)
    for p, offset in state.layouts.offset_reads.values():  # the function read x.storage_offset()
        inputs.checks.add_check(pyops.check_storage_offset, p, offset, always=True)
    for p in inputs.tensor_inputs:  # written non-leaves: a leaf that requires grad must miss
        if p.name in state.inplace.grad_writes:
            inputs.checks.add_check(pyops.check_not_leaf, p, always=True)
    if len(args) < 2 or not written:
        return
    for hit, t in args:
        others = [q.name for q, u in args if q is not hit and overlaps(t, u)] if id(hit) in written else []
        if others:
            op, where = state.inplace.first_writes.get(hit.name, ("an in-place op", None))
            raise UnsupportedValueError(
                f"thunder: {op} writes into the argument {hit.name}, which shares memory with {', '.join(others)} "
                "(overlapping views of one tensor); in-place writes into arguments that overlap are not "
                "supported: pass separate tensors (.clone())" + (at(where) if where is not None else "")
            )
    ordered = [p for p, _ in args if id(p) in written] + [p for p, _ in args if id(p) not in written]
    inputs.checks.add_check(pyops.check_no_alias, *ordered, written=len(written))
    inputs.checks.check_always(args[0][0])


def _leaves(t: torch.Tensor) -> list[torch.Tensor]:
    """The plain tensors holding the tensor-subclass value ``t``, in flatten order, at every depth."""
    out = []
    for n in t.__tensor_flatten__()[0]:
        x = getattr(t, n)
        out += [x] if is_plain_tensor(x) else _leaves(x)
    return out


def _used_inputs(comp: Trace, state: Acquisition) -> list:
    names: set[str] = set()
    for bsym in comp.bound_symbols:
        names.update(p.name for p in bsym.flat_proxy_args)
    names.update(p.name for p in tree_leaves(comp.output) if isinstance(p, (TensorProxy, NumberProxy)))
    names |= state.subclasses.captured_inside  # tensors a subclass's dispatch used
    # every symbolic size: a line a pass makes later (a decomposition) may compute with any of them
    sizes = list(state.inputs.sizes.symbols.values()) if state.inputs.sizes is not None else []
    names |= {p.name for p in sizes}
    found = {}  # (a counter an op took as a size is a number input and a symbol: once)
    for p in state.inputs.tensor_inputs + state.inputs.number_inputs + sizes:
        if p.name in names:
            found.setdefault(p.name, p)
    return list(found.values())
