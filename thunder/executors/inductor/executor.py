"""The torch.compile executor: fusion regions compiled by Inductor, without Dynamo.

Each region's prims become a small trace of torch calls (the torch executor's
implementations), ``make_fx`` turns that into an FX graph of aten ops, and
``torch._inductor.compile_fx.compile_fx`` compiles it for the region's input signature
(shapes, strides, dtypes, devices, requires_grad, grad mode): Triton kernels on CUDA, C++ on
CPU. Dynamo is never involved: thunder's prologue already checks the inputs, so a region
pays no guards on each call, only one check (in C++, torch's ``TensorGuards``) that its
inputs have the sizes, strides, dtypes, devices and requires_grad of the function last
compiled, which replaces the size and stride asserts Inductor's wrapper would run on every
input (torch builds without ``TensorGuards``: a dictionary lookup of the strides, and
Inductor's asserts). With inputs that require grad, Inductor's compiled function is
differentiable (it compiles the backward too).

A region whose sizes are symbolic (a trace of ``thunder.jit(fn, dynamic=True)``, or a dimension
that changed between calls) compiles once for every size: the symbols are int inputs of the
region (``TorchCompile0(x, w, s0, s1)``), ``make_fx`` traces it on fake tensors whose sizes are
torch's symbolic ints made from ours, and Inductor's guards on them (a range, a size it
specialised) are checked on each call, a size they do not admit compiling another function.

Compiling starts on a region's first call with a signature, when real inputs give it. By
default a helper process compiles (``thunder/executors/inductor/worker.py``) while the region
runs as its torch calls (the torch executor's kernels, eager's results): a first call costs
what the torch executor's does instead of Inductor's seconds. Once the helper is done, the
next call compiles the same graph here, which Inductor then loads from the on-disk caches the
helper filled (under a second; the helper takes this process's settings that the caches' keys
include), and the compiled function runs from then on. ``wait()`` blocks until every
compilation started has finished and loads them. A compilation that fails warns once, with
the region as torch calls, which it keeps running. Not a thread of this process: while
Inductor traces a graph, torch.fx patches ``nn.Module.__call__`` and sets its "FX tracing"
flag for the whole process, which other threads would see (a ``torch.compile``d function
called meanwhile raises). ``compile_in_background(False)``, deterministic algorithms
(``torch.use_deterministic_algorithms``: which calls run compiled would depend on timing),
CUDA regions (the helper would need a CUDA context of its own) and a program that cannot be
sent to another process compile on the calling thread instead, before the first call
returns. ``import torch._inductor`` (seconds) never happens at
``import thunder``.

Which prims go into regions is the table ``FUSED``; ``NOT_FUSED`` says why each other prim
stays with the torch executor. A region of one op that torch runs whole goes back to torch.

Before::

    t0 = ltorch.gelu(x)
    t1 = ltorch.mul(t0, 2)

After::

    t1 = TorchCompile0(x)
      # t0 = ltorch.gelu(x) ...
      # t1 = ltorch.mul(t0, 2) ...
"""

from __future__ import annotations

import atexit
import concurrent.futures
import dataclasses
import functools
import pickle
import threading
import warnings
import weakref
from collections.abc import Callable

import torch

from thunder.core.printing import Printer
from thunder.core.proxies import NumberProxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol, SymbolTable, symbols_with
from thunder.core.symbolic import expr_of, has_symbols
from thunder.core.tags import Tag
from thunder.executors.base import Drawing
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor, Region, prims_of
from thunder.executors.inductor.compile import (
    WRAPPER,
    SymbolicMeta,
    TensorGuards,
    compile_program,
)
from thunder.executors.inductor.helper import Helper
from thunder.executors.inductor.layouts import (
    dense_order,
    eager_strides,
    input_strides,
    laid_out_trace,
    layout_key,
    nontrivial_strides,
    ordered_strides,
    reordered,
    restrided,
)
from thunder.executors.inductor.order import matmuls_together
from thunder.executors.registry import fallback_executors, register_executor
from thunder.ops import prims

# prim -> what kind of work it is (Inductor generates code for these)
FUSED = SymbolTable("the prims the torch.compile executor fuses")
for _tag in (Tag.ELEMENTWISE, Tag.SHAPE, Tag.REDUCTION):
    for _p in symbols_with(Tag.PRIM, _tag):
        if Tag.PYTHON not in _p.tags:
            FUSED[_p] = _tag.value
for _p in (prims.full, prims.iota):
    FUSED[_p] = "factory"
for _p in (prims.take, prims.take_along_axis):
    FUSED[_p] = "gather"
# Inductor runs matmuls as calls of the same extern kernels torch uses (mm, addmm, bmm);
# inside a region they cost no more than outside, and a region that spans them is one call
# instead of one per elementwise stretch (bench/fusion.py measures it).
for _p in (prims.matmul, prims.linear):
    FUSED[_p] = "matmul"

# prim -> why it stays with the torch executor
NOT_FUSED = SymbolTable("the prims the torch.compile executor leaves to torch")
for _p, _why in {
    prims.real: "complex tensors: Inductor does not generate code for them",
    prims.imag: "complex tensors: Inductor does not generate code for them",
    prims.uniform: "random numbers: Inductor's generator does not give eager's values",
    prims.bernoulli: "random numbers: Inductor's generator does not give eager's values",
    prims.copy_: "writes into an existing tensor; a region's outputs are new tensors",
    prims.device_put: "moves data between devices; a region runs on one",
    prims.convolution: "Inductor calls the same convolution kernel: nothing to fuse",
    prims.max_pool: "Inductor calls the same pooling kernel: nothing to fuse",
    prims.avg_pool: "Inductor calls the same pooling kernel: nothing to fuse",
    prims.adaptive_avg_pool: "Inductor calls the same pooling kernel: nothing to fuse",
    prims.sort: "Inductor calls the same sort kernel: nothing to fuse",
    prims.topk: "Inductor calls the same topk kernel: nothing to fuse",
    prims.index_put: "an indexed write: which of several writes to one element wins is not kept",
    prims.scatter_add: "an indexed accumulation: the order of additions to one element is not kept",
    prims.index_copy: "an indexed write: which of several writes to one element wins is not kept",
    prims.cumsum: "a scan: Inductor's CPU code for it gains nothing over torch's kernel",
    prims.grouped_mm: "Inductor calls the same grouped matmul kernel: nothing to fuse",
}.items():
    NOT_FUSED[_p] = _why
for _p in symbols_with(Tag.PRIM, Tag.COMMUNICATION):
    NOT_FUSED[_p] = (
        "a collective: torch's functional collectives run it on its process group, between regions"
    )
for _p in list(NOT_FUSED):
    FUSED.pop(_p, None)


# the most prims an op torch also runs whole may decompose into and still be fused
LONGEST_DECOMPOSITION = 200


def _runs_whole(bsym: BoundSymbol) -> bool:
    """An executor that runs every prim (torch) runs ``bsym`` whole, as one call."""
    return any(e.claim(bsym) is not None for e in fallback_executors())


class TorchCompileExecutor(FusionExecutor):
    """Fuses elementwise, reduction, shape, factory, gather and matmul prims into regions
    compiled by Inductor (``compile_fx``) per input signature."""

    region_prefix = "TorchCompile"
    drawing = Drawing("#e8def8", "#5b3a9e", "component")

    def wait(self, timeout: float | None = None) -> None:
        wait(timeout)

    def finish_region(self, compiled: Callable, timeout: float | None = None) -> None:
        if isinstance(compiled, InductorRegion):
            compiled.finish(timeout)

    def prim_reason(self, prim: BoundSymbol) -> str | None:
        why = NOT_FUSED.get(prim.sym)
        if why is not None:
            return why
        if prim.sym not in FUSED:
            return f"{prim.sym.id} is not in the torch.compile executor's table"
        for x in tree_leaves((prim.args, prim.kwargs, prim.output)):
            if isinstance(x, NumberProxy):
                return f"{x.name} is a number that changes between calls; each value would compile again"
            if isinstance(x, TensorProxy) and x.meta_dtype.is_complex:
                return f"{x.name} is complex: Inductor does not generate code for complex tensors"
        return None

    def decline_reason(self, bsym: BoundSymbol) -> str | None:
        """Also declined: an op torch runs whole whose decomposition is long (``torch.gcd``:
        Euclid's steps unrolled for the widest integers, hundreds of prims): Inductor would take
        minutes to compile what one torch kernel does."""
        if Tag.PRIM not in bsym.sym.tags and _runs_whole(bsym):
            n = len(prims_of(bsym))
            if n > LONGEST_DECOMPOSITION:
                return f"its decomposition has {n} operations, which torch's own kernel runs whole"
        return super().decline_reason(bsym)

    def region_reason(self, region: Region) -> str | None:
        """Also declined: a region of one op that torch runs whole (``layer_norm``,
        ``softmax``): torch's own kernel does the same work without a compiled function's
        per-call cost."""
        if len(region.members) == 1 and _runs_whole(region.members[0]):
            return "a region of one op that torch runs whole has nothing to fuse"
        return super().region_reason(region)

    def region_bsym(self, region: Region, tags: frozenset = frozenset()) -> BoundSymbol:
        """A region whose sizes are symbolic also takes each symbol its inputs' sizes read
        (``TorchCompile0(x, w, s0)``): Inductor's code receives them as int inputs."""
        return super().region_bsym(_with_size_inputs(region), tags)

    def compile_region(self, region: Region) -> InductorRegion:
        return InductorRegion(region)


def _with_size_inputs(region: Region) -> Region:
    have = {p.name for p in region.inputs}
    extra = []
    for p in region.inputs:
        if isinstance(p, TensorProxy) and has_symbols(p.meta_shape):
            for s in proxies_in(p.meta_shape):
                if s.name not in have:
                    have.add(s.name)
                    extra.append(s)
    return dataclasses.replace(region, inputs=[*region.inputs, *extra]) if extra else region


_background = {"on": True}


_helper = Helper()
_waiting: weakref.WeakSet = weakref.WeakSet()  # regions with compilations in the helper
atexit.register(_helper.close)


def cpp_wrapper(flag: bool) -> bool:
    """Whether a CPU region's compiled code calls its kernels from C++ (Inductor's
    ``cpp_wrapper``: about 2% fewer instructions in a small transformer's training step, and
    half a second more to compile each region) or from Python (readable, quicker to compile);
    returns the previous setting. It applies to the compilations that start after it."""
    previous = WRAPPER["cpp"]
    WRAPPER["cpp"] = bool(flag)
    return previous


def compile_in_background(flag: bool) -> bool:
    """Whether a helper process compiles each region with Inductor while the region runs as
    its torch calls (the first calls cost what the torch executor's do), or the calling
    thread compiles it before its first call returns; returns the previous setting."""
    previous = _background["on"]
    _background["on"] = bool(flag)
    return previous


def wait(timeout: float | None = None) -> None:
    """Block until every compilation started so far has finished (or failed), and load the
    compiled functions, so that the next calls use them."""
    for region in list(_waiting):
        region.finish(timeout)


class InductorRegion:
    """A region's callable: compiles on the first call with each new input signature.

    ``program`` is the region as a Python function of torch calls (what ``make_fx``
    traces, and what runs while the helper process compiles); ``compiled`` maps each
    signature (grad mode, each input's size and strides) to Inductor's function once it is
    ready; ``last`` is the grad mode, a ``TensorGuards`` of the inputs, the compiled
    function of the last call that ran one and the outputs it lays out otherwise than eager
    (``_moves``), checked first. Outputs leave the region with eager's strides.

    A region whose sizes are symbolic (``symbolic``: its int inputs are the symbols) compiles
    once for every size: its signature is the grad mode and each input's layout (row-major,
    another dense order, or fixed strides), and ``variants`` holds, per signature, the
    compiled functions (``Guarded``: each valid where Inductor's guards on the sizes hold,
    tried in order; a size none admits compiles another, up to ``MAX_VARIANTS``).
    """

    def __init__(self, region: Region):
        self.name = region.name
        self.where = f" (from {region.members[0].source})" if region.members[0].source else ""
        self.size = len(region.members)
        self.single = len(region.outputs) == 1
        # matmuls next to each other: fewer C++ functions in Inductor's code (see inductor_order)
        self.trace = claim(matmuls_together(laid_out_trace(region), _is_matmul), fallback_executors())
        self.program = self.trace.python_callable()
        self.compiled: dict[tuple, object] = {}
        self.compiling: dict[tuple, tuple[concurrent.futures.Future, object]] = {}
        self.lock = threading.Lock()
        self.last: tuple | None = None
        self.region = region
        self.eager_strides: dict[tuple, list] = {}  # input strides -> each output's in eager
        self.tensors = tuple(i for i, p in enumerate(region.inputs) if isinstance(p, TensorProxy))
        self.symbolic = len(self.tensors) < len(region.inputs) or any(
            has_symbols(region.inputs[i].meta_shape) for i in self.tensors
        )
        self.variants: dict[tuple, list[_Variant]] = {}

    def __call__(self, *args):
        if self.symbolic:
            return self._call_symbolic(args)
        last = self.last
        if last is not None and last[0] is torch.is_grad_enabled() and last[1].check(*args):
            out = last[2](*args)
            if last[3]:
                out = restrided(out, last[3])
        else:
            key = (torch.is_grad_enabled(), *[(a.shape, a.stride()) for a in args])
            fn = self._find(key, args)
            out = fn(*args)
            moves = self._moves(key, args, out)
            if moves:
                out = restrided(out, moves)
            if fn is not self.program and TensorGuards is not None:
                guards = TensorGuards(*args, dynamic_dims_sizes=None, dynamic_dims_strides=None)
                self.last = (key[0], guards, fn, moves)
        return out[0] if self.single else tuple(out)

    def _find(self, key: tuple, args):
        # Dtypes, devices and requires_grad of a region's inputs are fixed by its trace (the
        # prologue checks the inputs; the ops' meta functions give the rest), and so are the
        # sizes (taken into the key all the same: the compiled code asserts none); strides and
        # the grad mode are not.
        fn = self.compiled.get(key)
        if fn is None:
            fn = self._start(
                key, args, lambda: [(a.shape, a.stride(), a.dtype, a.device, a.requires_grad) for a in args]
            )
        return fn

    # -- symbolic sizes ------------------------------------------------------------------------
    def _call_symbolic(self, args):
        # (sizes need no check of their own: the prologue checked the program's inputs against
        # the symbols, and the ops' meta functions give every size of the region's inputs)
        key = (torch.is_grad_enabled(), tuple(layout_key(args[i]) for i in self.tensors))
        variant = self._variant(key, args)
        if variant is None:  # (compiling meanwhile)
            out = self.program(*args)
            variant = _Variant(self.program, None)
        else:
            out = variant.fn(*args)
        if variant.moves is None:
            variant.moves = self._moves_by_order(key, args, out)
        if variant.moves:
            out = reordered(out, variant.moves)
        return out[0] if self.single else tuple(out)

    def _variant(self, key: tuple, args) -> _Variant | None:
        """The compiled function of ``key`` whose guards admit ``args``, else None (the torch
        calls run) while one that does is compiled."""
        variants = self.variants.get(key, ())
        for v in variants:
            if v.accepts(args):
                return v
        job = self.compiling.get(key)
        if job is not None:
            if not job[0].done():
                return None
            self._load(key)
            return self._variant(key, args)
        if len(variants) >= MAX_VARIANTS:  # (no more compilations: the torch calls, from now on)
            variants.append(_Variant(self.program, _everything))
            return variants[-1]
        fn = self._start(key, args, lambda: self._symbolic_meta(key, args))
        return None if fn is self.program else self._variant(key, args)

    def _symbolic_meta(self, key: tuple, args) -> SymbolicMeta:
        """The inputs' metadata with the sizes as expressions over the symbols and the strides
        their layouts give (``layout_key``), at this call's values of the symbols."""
        inputs = list(self.region.inputs)
        layouts = dict(zip(self.tensors, key[1]))
        meta = []
        for i, (p, a) in enumerate(zip(inputs, args)):
            if i not in layouts:
                meta.append(p.name)
                continue
            shape = tuple(expr_of(d) for d in p.meta_shape)
            strides = tuple(expr_of(d) for d in input_strides(p.meta_shape, layouts[i], a))
            meta.append((shape, strides, a.dtype, a.device, a.requires_grad))
        hints = tuple(sorted((p.name, int(args[i])) for i, p in enumerate(inputs) if i not in layouts))
        return SymbolicMeta(tuple(meta), hints)

    def _moves_by_order(self, key: tuple, args, out) -> tuple:
        """``_moves`` for a symbolic region: eager's order of each output's dimensions (the same
        for every size of a signature), where Inductor's differs."""
        expected = self.eager_strides.get(key)
        if expected is None:
            expected = self.eager_strides[key] = eager_strides(self.region, args)
        moves = []
        for i, (o, stride) in enumerate(zip(out, expected)):
            if stride is None:
                continue
            order = dense_order(o.shape, stride)
            if order is not None and nontrivial_strides(o.shape, o.stride()) != nontrivial_strides(
                o.shape, ordered_strides(o.shape, order)
            ):
                moves.append((i, order))
        return tuple(moves)

    # -- compiling -----------------------------------------------------------------------------
    def _moves(self, key: tuple, args, out) -> tuple:
        """The outputs laid out otherwise than eager's, with eager's strides: a region's ops run
        as prims (``softmax`` as its steps), and Inductor picks layouts of its own, where
        eager's kernels lay out their results themselves (``softmax`` of a channels_last input is
        contiguous). Eager's strides come from the region's ops, run whole by torch on fake
        tensors laid out as the inputs, once per input signature."""
        expected = self.eager_strides.get(key[1:])
        if expected is None:
            expected = self.eager_strides[key[1:]] = eager_strides(self.region, args)
        return tuple(
            (i, stride)
            for i, (o, stride) in enumerate(zip(out, expected))
            if stride is not None
            and nontrivial_strides(o.shape, o.stride()) != nontrivial_strides(o.shape, stride)
        )

    def _start(self, key: tuple, args, meta_of: Callable):
        """Inductor's function for ``key`` when it is compiled (here, or loaded once the helper
        process has compiled it), else the torch calls while the helper compiles."""
        job = self.compiling.get(key)
        if job is not None:
            if not job[0].done():
                return self.program
            return self._load(key)
        meta = meta_of()  # the metadata now (the inputs may change meanwhile)
        # compiled here when asked, when the results must not depend on when a compilation
        # ends (deterministic algorithms), for CUDA (the helper would need a CUDA context of
        # its own), when the program cannot go to another process
        background = (
            _background["on"]
            and not torch.are_deterministic_algorithms_enabled()
            and all(args[i].device.type == "cpu" for i in self.tensors)
        )
        program = self._shipped if background else None
        if program is not None:
            with self.lock:
                if key not in self.compiling:
                    try:
                        self.compiling[key] = (_helper.submit(program, meta, key[0]), meta)
                    except OSError as e:  # no process can be started here
                        _background["on"] = False
                        warnings.warn(f"thunder: Inductor compiles on the calling thread: {e}", stacklevel=3)
                        program = None
                    else:
                        _waiting.add(self)
        if program is None:
            # (a fixed signature that fails raises, as before; symbolic sizes fall back to torch)
            return self._store(key, self._compile_or_warn(meta, key[0], raising=not self.symbolic))
        return self.program

    def _store(self, key: tuple, fn):
        """``fn`` compiled for ``key``: the function of a fixed signature, or one more variant
        of a symbolic one (the torch calls where the compilation failed: for every size)."""
        if not self.symbolic:
            self.compiled[key] = fn
            return fn
        variant = _Variant(fn, fn.accepts if fn is not self.program else _everything)
        self.variants.setdefault(key, []).append(variant)
        return fn

    def _compile_or_warn(
        self, meta, grad: bool, cpp_wrapper: bool | None = None, error: str | None = None, *, raising=False
    ):
        """Inductor's function, or the torch calls with a warning where it could not compile
        (an error instead, with ``raising``)."""
        if error is None:
            try:
                return self._compile(meta, grad, cpp_wrapper)
            except RuntimeError as e:  # (its message names the region)
                if raising:
                    raise
                error = str(e)
        warnings.warn(f"{error}\nthe region keeps running as these torch calls", stacklevel=4)
        return self.program

    @functools.cached_property
    def _shipped(self) -> tuple | None:
        """The program as the helper process rebuilds it: source, modules, named objects;
        None when its objects cannot be pickled. (Printed once per region.)"""
        program = self.trace.program(Printer(blank_comments=True))
        try:
            ctx = pickle.loads(pickle.dumps(program.ctx))
        except Exception:
            return None
        return program.source, dict(program.modules), ctx, self.trace.name

    def _load(self, key: tuple):
        """The helper has finished ``key``: compiled here, from Inductor's caches it filled."""
        with self.lock:
            job = self.compiling.pop(key, None)
            if job is None:
                return self.compiled.get(key, self.program)
            error = job[0].result()
            if error is not None:
                error = (
                    f"thunder: torch.compile (Inductor) could not compile {self.name}, a region of {self.size} "
                    f"operations{self.where}: {error}\nThe region as torch calls:\n{self.trace}"
                )
            fn = self._compile_or_warn(job[1], key[0], getattr(job[0], "cpp_wrapper", None), error)
            if not self.compiling:
                _waiting.discard(self)
            return self._store(key, fn)

    def finish(self, timeout: float | None = None) -> None:
        """Wait for this region's compilations in the helper and load them."""
        jobs = list(self.compiling.items())
        concurrent.futures.wait([f for _, (f, _) in jobs], timeout=timeout)
        for key, (future, _) in jobs:
            if future.done():
                self._load(key)

    def _compile(self, meta, grad: bool, cpp_wrapper: bool | None = None):
        try:
            return compile_program(self.program, meta, grad, cpp_wrapper)[0]
        except Exception as e:
            raise RuntimeError(
                f"thunder: torch.compile (Inductor) could not compile {self.name}, a region of "
                f"{self.size} operations{self.where}: {type(e).__name__}: {e}\n"
                f"The region as torch calls:\n{self.trace}"
            ) from e

    def __repr__(self) -> str:
        n = sum(len(v) for v in self.variants.values()) if self.symbolic else len(self.compiled)
        return f"<{self.name}: Inductor region of {self.size} operations, {n} compiled>"


# the most functions a symbolic region compiles for one signature (sizes Inductor's guards split)
MAX_VARIANTS = 4


class _Variant:
    """One compiled function of a symbolic region's signature: ``accepts(args)`` whether it is
    valid for the call's sizes; ``moves``: the outputs to lay out as eager (once known)."""

    __slots__ = ("fn", "accepts", "moves")

    def __init__(self, fn, accepts):
        self.fn = fn
        self.accepts = accepts
        self.moves = None


def _everything(args) -> bool:
    return True


def _is_matmul(prim: BoundSymbol) -> bool:
    return FUSED.get(prim.sym) == "matmul"


executor = register_executor(TorchCompileExecutor("torchcompile"))
