"""The pipeline: acquire -> passes -> callables -> cache.

``thunder.jit(fn)`` returns a ``ThunderFunction`` (of an ``nn.Module``: a ``ThunderModule``
around one, ``thunder/runtime/module.py``). Each call tries the cached entries most recently used
first: an entry's prologue checks the inputs (raising ``PrologueCheckFailed`` on a mismatch,
or failing to unpack them), its computation runs, its epilogue builds the result. A miss
traces again: acquisition makes the bundle of traces, and ``PIPELINE``, the declared list of
passes (``thunder/runtime/passes.py``), runs over it. The cache is bounded (``thunder/runtime/cache.py``); ``thunder.last_traces``
and friends read it (``thunder/runtime/inspection.py``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import gc
import time
import warnings
import weakref
from collections.abc import Callable

import torch

import thunder.executors  # noqa: F401  (registers the built-in executors)
from thunder.autograd.backwards_from_inputs import CotangentBackwards, DoubleBackward
from thunder.autograd.function import grad_computation, no_grad_computation, without_autocast
from thunder.autograd.held_gradients import HeldGradients
from thunder.core.context import tracing
from thunder.core.pipeline import History, Pass, PassContext, TraceBundle, on, run_pipeline
from thunder.core.source import user_stacklevel
from thunder.core.subclass import SubclassProxy
from thunder.core.symbolic import SizeEnv
from thunder.core.tags import Tag
from thunder.core.trace import DISPLAY_LIMIT, Trace
from thunder.executors.base import Executor
from thunder.executors.registry import resolve_executors
from thunder.frontend.acquire import acquire
from thunder.frontend.effects.c_objects import holding
from thunder.ops.autocast import autocast_state
from thunder.runtime.cache import DEFAULT_CACHE_SIZE, RECOMPILE_WARNING, Cache, keeps_failing
from thunder.runtime.collective_plan import check_plan
from thunder.runtime.dynamic import SizePolicy
from thunder.runtime.fast_path import guards as fast_guards
from thunder.runtime.fast_path import simple as simple_prologue
from thunder.runtime.misses import changed_float, check_text, miss_reason
from thunder.runtime.passes import LOWERING, PIPELINE, SUBCLASS_DISPATCH
from thunder.runtime.unwritten import note_unwritten
from thunder.transforms.ddp import average_gradients, taken_gradients
from thunder.transforms.double_backward import SavedReads, backward_from_inputs, differentiable_backward
from thunder.transforms.flatten_subclasses import flatten_inside
from thunder.transforms.grad import differentiable_outputs, differentiate


@dataclasses.dataclass(eq=False)
class CacheEntry:
    """One compilation: its traces (first to last, per kind) and the compiled callables."""

    prologue_traces: list[Trace]
    computation_traces: list[Trace]
    epilogue_traces: list[Trace]
    backward_traces: list[Trace]
    prologue: Callable
    computation: Callable
    epilogue: Callable | None  # None when it only returns the computation's single output
    miss_reasons: list[str]  # why each older entry did not fit the inputs that made this one
    pass_times: list[tuple[str, str, float]]
    written_numbers: frozenset = frozenset()  # number literals the function wrote back
    # the traces of the backward as a computation and of its backward, made by the first
    # backward asked to record its graph (create_graph=True): ``thunder.last_double_backward_traces``
    double_backward_traces: dict[str, list[Trace]] | None = None
    # a backward that averages gradients across ranks (DistributedDataParallel): its variants
    # for parameters that already hold a .grad, with their traces (``held_gradients.traces``)
    held_gradients: HeldGradients | None = None
    # its symbolic sizes and the relations between them its traces relied on (None: none)
    sizes: SizeEnv | None = None
    # each symbol's size and why it became symbolic (``s0``: ``x.shape[0]``, and the miss)
    symbols: dict[str, str] = dataclasses.field(default_factory=dict)
    # the locks its code takes (``with LOCK:``): calls hold them (``frontend/effects/c_objects.py``)
    locks: tuple = ()
    # its prologue checks N plain tensors alone (``fast_path.simple``): N, and the C checks that
    # replace it, made on the first call that passed it
    fast_args: int | None = None
    fast: tuple | None = None


@dataclasses.dataclass
class CompileStats:
    calls: int = 0
    cache_misses: int = 0
    entries: list[CacheEntry] = dataclasses.field(default_factory=list)
    last_trace_seconds: float = 0.0

    @property
    def cache_hits(self) -> int:
        """The calls an entry took (each call is a hit or a miss: one counter less to move)."""
        return self.calls - self.cache_misses

    @property
    def last_pass_times(self) -> list[tuple[str, str, float]]:
        return self.entries[-1].pass_times if self.entries else []


_grad_enabled = torch.is_grad_enabled
_default_dtype = torch.get_default_dtype
_mode_on = torch._C._is_torch_function_mode_enabled


class ThunderFunction:
    """The jitted callable. ``thunder.last_traces(jfn)`` and friends read its cache."""

    def __init__(
        self,
        fn: Callable,
        *,
        executors=None,
        module: torch.nn.Module | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        dynamic: bool | None = None,
    ):
        if dynamic not in (None, True, False):
            raise ValueError(f"thunder.jit: dynamic must be None, True or False, got {dynamic!r}")
        self.fn = fn
        # sizes that change between calls: None marks a dimension symbolic once a call misses on
        # its size alone (as torch.compile's automatic dynamic shapes), True makes every
        # dimension symbolic from the first call, False keeps every size specialised
        self.dynamic = dynamic
        self._sizes = SizePolicy(every_dim=dynamic is True)  # (see thunder/runtime/dynamic.py)
        self.module = module
        self.executors = resolve_executors(executors)
        self._cache = Cache(cache_size)
        self.stats = CompileStats(entries=self._cache.entries)
        self._dynamic: set[str] = set()  # int inputs traced as values (see frontend/stand_ins/counters.py)
        self._static: set[str] = set()  # ... that failed as values: always specialised
        self._entries = self._cache.entries
        self._serial = False  # an entry's epilogue writes Python state: calls hold the cache's lock
        self._locks: tuple = ()  # the user's locks its code takes: calls hold them (serial)
        # (tensor check, grad mode, default dtype, computation, entry) of the entry the last call
        # took, where its prologue checks plain tensors alone (thunder/runtime/fast_path.py)
        self._fast: tuple | None = None
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast is not None and not kwargs:
            try:  # (the C checks of fast_path.py; not while a trace records torch calls)
                hit = (
                    not _mode_on()
                    and fast[0](*args)
                    and _grad_enabled() is fast[1]
                    and _default_dtype() is fast[2]
                )
            except TypeError:  # (another number of arguments)
                hit = False
            if hit:
                self.stats.calls += 1
                try:
                    return fast[3](*args)[0]
                except Exception as e:
                    _note_unwritten(e, fast[4])
                    raise
        if tracing.trace is not None:
            # called by a function another thunder.jit is tracing: its ops go into that trace
            return self.fn(*args, **kwargs)
        if self._serial:  # an epilogue writes Python state (``self.calls += 1``): one call at a time
            with holding(self._locks), self._cache.lock:  # (the user's locks first, as the code takes them)
                return self._call(args, kwargs, None)
        # the entry of the last hit first, in this frame: a cached call's cost is counted in calls
        entry = self._cache.last
        if entry is not None:
            try:
                cargs, eargs = entry.prologue(*args, **kwargs)
            except Exception:
                return self._call(args, kwargs, entry)
            self.stats.calls += 1
            return _run(entry, cargs, eargs)
        return self._call(args, kwargs, None)

    def _call(self, args: tuple, kwargs: dict, tried):
        """A call the most recent entry (``tried``, when it was) did not take."""
        self.stats.calls += 1
        order = self._cache.candidates(args, kwargs)
        for entry in reversed(order):
            if entry is tried:
                continue
            try:
                cargs, eargs = entry.prologue(*args, **kwargs)
            except Exception:  # a failed check, or inputs it cannot even unpack (a missing submodule)
                continue
            if entry is not self._cache.order[-1]:  # (the least recently used is evicted first)
                self._cache.touch(entry)
            self._cache.last = entry
            self._fast = self._fast_path(entry, args, kwargs)
            return _run(entry, cargs, eargs)
        with self._cache.lock:  # one thread traces at a time; a second one may find its entry made
            # (the entries not tried: made by another thread meanwhile, or filed under other keys)
            for entry in reversed([e for e in self._cache.order if all(e is not o for o in order)]):
                try:
                    cargs, eargs = entry.prologue(*args, **kwargs)
                except Exception:
                    continue
                self._cache.file(entry, args, kwargs)
                self._cache.last = entry
                break
            else:
                self.stats.cache_misses += 1
                with _collection_paused():
                    entry = self.compile(args, kwargs)
                try:
                    cargs, eargs = entry.prologue(*args, **kwargs)
                except Exception:  # (never the prologue's own exception class)
                    raise RuntimeError(
                        f"thunder: {self.__name__} was just traced for these inputs, but its checks fail on them "
                        f"({miss_reason(entry, args, kwargs)[0]}): the traced code changed state thunder neither "
                        "put back nor follows"
                    ) from None
        self._fast = self._fast_path(entry, args, kwargs)
        return _run(entry, cargs, eargs)

    def _fast_path(self, entry: CacheEntry, args: tuple, kwargs: dict) -> tuple | None:
        """What ``__call__`` tries first for calls like this one, which ``entry``'s prologue
        just passed: its C checks, where its prologue checks plain tensors alone and nothing
        runs around the computation (no epilogue, no lock, no write)."""
        if entry.fast_args is None or entry.epilogue is not None or self._serial or kwargs:
            return None
        if entry.fast is None:
            entry.fast = fast_guards(args)
        return (entry.fast, torch.is_grad_enabled(), torch.get_default_dtype(), entry.computation, entry)

    def __deepcopy__(self, memo):
        # a fresh function with an empty cache: entries name the objects they were traced for
        return ThunderFunction(
            copy.deepcopy(self.fn, memo),
            executors=self.executors,
            module=copy.deepcopy(self.module, memo),
            cache_size=self._cache.limit,
            dynamic=self.dynamic,
        )

    def _repr_pretty_(self, p, cycle) -> None:
        # IPython shows the last computation trace; the explorer, once imported, adds HTML
        p.text(text_of(self))

    def _traced(self, args: tuple, kwargs: dict):
        """Acquisition and the passes, with the dynamic dimensions' sizes as symbols (what the
        ``SizePolicy`` answers); where that fails (code that needs a size's value in a way
        thunder cannot record), again with every size specialised, and those dimensions kept
        specialised from then on."""
        if self.dynamic is False:
            return self._acquired_and_passed(args, kwargs, None)
        policy = self._sizes
        policy.begin()
        try:
            done = self._acquired_and_passed(args, kwargs, policy)
        except Exception:
            if not policy.failed():  # (no symbol in it: the code's own error)
                raise
            return self._acquired_and_passed(args, kwargs, None)
        if done[0].sizes is not None:  # a use needed a symbol's value: the entry pinned it
            policy.pinned(done[0].sizes)
        return done

    def _acquired_and_passed(self, args: tuple, kwargs: dict, dims):
        t0 = time.perf_counter()
        try:
            acquired = acquire(
                self.fn, args, kwargs, module=self.module, dynamic=frozenset(self._dynamic), dynamic_dims=dims
            )
        except Exception:
            if not self._dynamic:
                raise
            # a counter traced as a value reached code that needs a plain number (a C torch
            # function such as torch.arange parses its arguments before thunder sees them):
            # trace again with every number specialised, and keep them so
            before = set(self._dynamic), set(self._static)
            self._static |= self._dynamic
            self._dynamic.clear()
            t0 = time.perf_counter()
            try:
                acquired = acquire(
                    self.fn, args, kwargs, module=self.module, dynamic=frozenset(), dynamic_dims=dims
                )
            except Exception:  # the code's own error (also with the numbers specialised): they stay values
                self._dynamic, self._static = before
                raise
        acquired.computation.provenance = None
        bundle = TraceBundle(acquired.prologue, acquired.computation, acquired.epilogue)
        history = History.start(bundle, time.perf_counter() - t0)
        ctx = PassContext(self.executors, subclass_dispatch=SUBCLASS_DISPATCH)
        final = run_pipeline(bundle, PIPELINE, ctx, history)
        return acquired, final, ctx, history, dims

    def compile(self, args: tuple, kwargs: dict) -> CacheEntry:
        """Trace for these inputs, run the passes and add the result to the cache."""
        reasons, checks = [], []
        for i, e in enumerate(self._entries):
            reason, failed = miss_reason(e, args, kwargs)
            reasons.append(f"entry {i}: {reason}")
            checks.append((check_text(failed) if failed is not None else reason, reason))
            # a number the function writes back changed (a counter): trace it as a value, and
            # the others it writes back with it (one counter per layer moves together)
            subject = failed.args[0] if failed is not None and failed.args else None
            if getattr(subject, "name", None) in e.written_numbers:
                self._dynamic.update(e.written_numbers - self._static)
            elif changed_float(failed) and subject.name not in self._static:
                self._dynamic.add(subject.name)  # (a learning rate a schedule sets: a value from now on)
        autocast = autocast_state()  # the call's: the casts are traced, torch's are off when it runs
        t0 = time.perf_counter()
        acquired, final, ctx, history, dims = self._traced(args, kwargs)
        check_plan((final.computation, final.backward), self.__name__)  # the same collectives on every rank
        grad_error = ctx.grad_error
        double, entry_ref = None, []  # (the entry, once made: the double backward's traces go on it)
        held = None
        if ctx.local_backward is not None:  # gradients averaged across ranks (DistributedDataParallel)
            plan = final.computation.info.data_parallel
            held = HeldGradients(
                plan.positions,
                functools.partial(_held_backward, self.executors, ctx.local_backward, plan),
                counted=plan.find_unused,
            )
            double = DoubleBackward(_no_double_backward)
        elif final.backward is not None:
            double = DoubleBackward(
                functools.partial(
                    _double_backward, self.executors, self.__name__, ctx.joint, _saved_names(final), entry_ref
                )
            )
        others = None
        if final.backward is not None and any(
            isinstance(p, SubclassProxy) for p in differentiable_outputs(*_outputs_and_args(ctx.joint))
        ):
            comps = history.traces["computation"]
            before = comps[[i for i, t in enumerate(comps) if t is ctx.joint][0] - 1]
            others = CotangentBackwards(functools.partial(_cotangent_backward, self.executors, before))
        if final.backward is not None or grad_error is not None:
            computation = grad_computation(
                final.computation,
                final.backward,
                error=grad_error,
                name=self.__name__,
                double=double,
                others=others,
                held=held,
            )
        elif ctx.autograd_records:
            computation = final.computation.python_callable()
        else:
            computation = no_grad_computation(final.computation)
        if autocast:
            computation = without_autocast(computation)
        entry = CacheEntry(
            prologue_traces=history.traces["prologue"],
            computation_traces=history.traces["computation"],
            epilogue_traces=history.traces["epilogue"],
            backward_traces=history.traces["backward"],
            prologue=_prologue_callable(final.prologue, acquired.sizes),
            computation=computation,
            epilogue=None
            if _is_identity(final.epilogue, final.computation, final.backward is not None)
            else final.epilogue.python_callable(),
            miss_reasons=reasons,
            pass_times=history.pass_times,
            written_numbers=acquired.written_numbers,
            held_gradients=held,
            sizes=acquired.sizes,
            symbols=self._symbol_notes(acquired.sizes),
            locks=acquired.locks,
            fast_args=simple_prologue(final.prologue),
        )
        if double is not None:
            entry_ref.append(weakref.ref(entry))
        self.stats.last_trace_seconds = time.perf_counter() - t0
        self._serial = self._serial or any(Tag.WRITEBACK in b.tags for b in final.epilogue.bound_symbols)
        if acquired.locks:  # (every call holds them: the serial path)
            self._locks = tuple(dict.fromkeys((*self._locks, *acquired.locks)))
            self._serial = True
        self._cache.add(entry, args, kwargs)
        n = self.stats.cache_misses
        if n % RECOMPILE_WARNING == 0:
            kept = f"; {self._cache.limit} entries are kept" if n >= self._cache.limit else ""
            warnings.warn(
                f"thunder: {self.__name__} has been compiled {n} times{kept}; the check that keeps failing: "
                f"{keeps_failing(checks)}. A value that changes on every call "
                "(a Python int counter, a new shape) makes every call trace again.",
                stacklevel=user_stacklevel(),  # (the user's call, however deep thunder's frames)
            )
        return entry

    def _symbol_notes(self, sizes: SizeEnv | None) -> dict[str, str]:
        """Each symbol's size (``x.shape[0]``) and why it is one."""
        if sizes is None:
            return {}
        notes = {}
        for sym, (name, d) in sizes.origin.items():
            why = self._sizes.note(name, d)
            notes[sym] = (name if d is None else f"{name}.shape[{d}]") + (f": {why}" if why else "")
        return notes


def _prologue_callable(prologue: Trace, sizes: SizeEnv | None) -> Callable:
    """The compiled prologue; from then on no relation between symbolic sizes can be added."""
    fn = prologue.python_callable()
    if sizes is not None:
        sizes.frozen = True
    return fn


def _saved_names(final: TraceBundle) -> list[str]:
    """The names of the values the forward saves for backward, in order."""
    return [getattr(p, "name", None) for p in final.computation.output[1]]


def _double_backward(
    executors: list[Executor], name: str, joint: Trace, saved: list[str], entry: list, key: tuple[bool, ...]
) -> tuple[Callable, list[int], SavedReads]:
    """The backward of ``joint`` as a computation of (inputs, values the forward saved
    (``saved``: their names), cotangents), the cotangents at ``key`` requiring grad, run
    through the grad pipeline: its own backward is the backward of the backward. Its traces
    are kept on the entry (``entry``: a weak reference to it, once made;
    ``thunder.last_double_backward_traces``)."""
    t0 = time.perf_counter()
    trace, positions, reads = differentiable_backward(joint, saved, key, SUBCLASS_DISPATCH)
    bundle = TraceBundle(None, trace, None)
    history = History.start(bundle, time.perf_counter() - t0)
    ctx = PassContext(executors, subclass_dispatch=SUBCLASS_DISPATCH)
    final = run_pipeline(bundle, PIPELINE[1:], ctx, history)  # (differentiable_backward ran dce)
    if ctx.autograd_records:  # (subclass ops whose gradient thunder cannot trace: torch's autograd over them)
        computation = final.computation.python_callable()
    elif final.backward is None and ctx.grad_error is None:
        computation = no_grad_computation(final.computation)
    else:
        double = None
        if final.backward is not None:  # a third order, and so on
            double = DoubleBackward(
                functools.partial(
                    _double_backward, executors, f"{name}_backward", ctx.joint, _saved_names(final), []
                )
            )
        computation = grad_computation(
            final.computation, final.backward, error=ctx.grad_error, name=f"{name}_backward", double=double
        )
    made = entry[0]() if entry else None
    if made is not None:
        made.double_backward_traces = {
            "computation": history.traces["computation"],
            "backward": history.traces["backward"],
        }
    return computation, positions, reads


def _no_double_backward(key):
    raise RuntimeError(
        "its gradients are averaged across ranks (thunder.jit of a DistributedDataParallel), which a backward "
        "recording its own graph would not do"
    )


def _held_backward(
    executors: list[Executor], local: Trace, plan, held: frozenset[int]
) -> tuple[Callable, list[int], list[Trace]]:
    """The backward that averages gradients across ranks, for parameters at ``held`` that
    already hold a ``.grad``: it takes those too and adds them in before the all-reduce
    (``HeldGradients``). ``local``: the backward before averaging."""
    backward = average_gradients(local, plan, held)
    bundle = TraceBundle(None, None, None, backward)
    history = History.start(bundle, 0.0)
    final = run_pipeline(
        bundle, LOWERING, PassContext(executors, subclass_dispatch=SUBCLASS_DISPATCH), history
    )
    return final.backward.python_callable(), taken_gradients(local, plan, held), history.traces["backward"]


def _outputs_and_args(joint: Trace) -> tuple[list, list]:
    n_ct = len(joint.info.cotangents)
    return list(joint.output[0]), joint.args[: len(joint.args) - n_ct]


def _cotangent_backward(
    executors: list[Executor], trace: Trace, plain: frozenset[str]
) -> tuple[Callable, list[int]]:
    """A backward of ``trace`` (the computation before the grad pass) for plain cotangents of
    the subclass outputs named in ``plain``: (inputs, cotangents) -> gradients, recomputing the
    forward, flat inside (``CotangentBackwards``)."""
    joint = differentiate(trace, SUBCLASS_DISPATCH, plain)
    computation, positions = backward_from_inputs(joint)
    bundle = TraceBundle(None, computation, None)
    history = History.start(bundle, 0.0)
    passes = (Pass("flatten_tensor_subclasses", on("computation", flatten_inside)), *PIPELINE[-3:])
    final = run_pipeline(bundle, passes, PassContext(executors, subclass_dispatch=SUBCLASS_DISPATCH), history)
    return final.computation.python_callable(), positions


@contextlib.contextmanager
def _collection_paused():
    """No cyclic garbage collection while a compilation makes its many long-lived objects
    (proxies, BoundSymbols, traces): the young generations would be walked over and over,
    about a tenth of a first call's time. The collector runs as usual afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def text_of(jfn: ThunderFunction) -> str:
    """What IPython shows for a jitted function (or module): its last computation trace."""
    if not jfn._entries:
        return f"<thunder.jit of {jfn.__name__}, not called yet>"
    return jfn._entries[-1].computation_traces[-1].head(DISPLAY_LIMIT)


def _is_identity(epi: Trace, comp: Trace, forward: bool = False) -> bool:
    """The epilogue returns the computation's single output as it is (``forward``: ``comp``
    returns (outputs, saved for backward))."""
    out = comp.output[0] if forward else comp.output
    out = out if isinstance(out, (tuple, list)) else ()
    return (
        not epi.bound_symbols
        and len(epi.args) == 1
        and epi.output is epi.args[0]
        and len(out) == 1
        and out[0] is epi.args[0]
    )


def _run(entry: CacheEntry, cargs: tuple, eargs: tuple):
    """The computation and epilogue of ``entry`` on the prologue's outputs."""
    try:
        out = entry.computation(*cargs)
    except Exception as e:
        _note_unwritten(e, entry)
        raise
    return out[0] if entry.epilogue is None else entry.epilogue(*out, *eargs)


def _note_unwritten(error: Exception, entry: CacheEntry) -> None:
    note_unwritten(error, entry.computation_traces[-1], entry.epilogue_traces[-1])
