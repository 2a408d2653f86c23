"""The torch.compile executor: fusion regions compiled by Inductor, without Dynamo.

Each region's prims become a small trace of torch calls (the torch executor's
implementations), ``make_fx`` turns that into an FX graph of aten ops, and
``torch._inductor.compile_fx.compile_fx`` compiles it for the region's input signature
(shapes, strides, dtypes, devices, requires_grad, grad mode): Triton kernels on CUDA, C++ on
CPU. Dynamo is never involved: thunder's prologue already checks the inputs, so a region
pays no guards on each call, only a dictionary lookup of its signature. With inputs that
require grad, Inductor's compiled function is differentiable (it compiles the backward too).

Compiling happens on a region's first call, when real inputs give the signature;
``import torch._inductor`` (about 5 s with Dynamo, which it imports) happens then too, never
at ``import thunder``.

``compile_in_background(True)`` (off by default) moves Inductor to a background thread (one
compilation at a time, in order): until a signature's compiled function is ready, the region
runs as its torch calls (the torch executor's kernels, eager's results), so a first call
costs what the torch executor's does instead of Inductor's seconds. ``wait()`` blocks until
every compilation started has finished. A compilation that fails in the background warns
once, with the region as torch calls, and the region keeps running those calls. Why it is
not the default: while Inductor traces a graph, torch.fx patches ``nn.Module.__call__`` and
sets its "FX tracing" flag for the whole process, so a ``torch.compile``d function called
meanwhile on another thread raises, and other code that asks whether FX is tracing gets yes.
Call ``wait()`` before such code.

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

import concurrent.futures
import threading
import warnings

import torch

from thunder.core.proxies import NumberProxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol, SymbolTable, symbols_with
from thunder.core.tags import Tag
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor, Region
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
for _p in list(NOT_FUSED):
    FUSED.pop(_p, None)


class TorchCompileExecutor(FusionExecutor):
    """Fuses elementwise, reduction, shape, factory, gather and matmul prims into regions
    compiled by Inductor (``compile_fx``) per input signature."""

    region_prefix = "TorchCompile"

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

    def region_reason(self, region: Region) -> str | None:
        """Also declined: a region of one op that torch runs whole (``layer_norm``,
        ``softmax``): torch's own kernel does the same work without a compiled function's
        per-call cost."""
        from thunder.executors import torchex

        if len(region.members) == 1 and torchex.executor.claim(region.members[0]) is not None:
            return "a region of one op that torch runs whole has nothing to fuse"
        return super().region_reason(region)

    def compile_region(self, region: Region) -> InductorRegion:
        return InductorRegion(region)


_background = {"on": False}
# one worker: Inductor compiles one graph at a time, in the order the regions asked; its
# thread is joined at interpreter exit (concurrent.futures does that for its workers)
_worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="thunder-inductor")
_pending: set[concurrent.futures.Future] = set()
_pending_lock = threading.Lock()


def _finish_at_exit() -> None:
    """At interpreter exit: drop the compilations not started and let the running one end
    before Inductor's own worker pools shut down (this runs before their exit handlers)."""
    _background["exiting"] = True
    with _pending_lock:
        futures = list(_pending)
    for f in futures:
        f.cancel()
    concurrent.futures.wait(futures)


threading._register_atexit(_finish_at_exit)


def compile_in_background(flag: bool) -> bool:
    """Whether Inductor compiles in a background thread (the region running as torch calls
    meanwhile) or on the calling thread before the first call returns; returns the previous
    setting."""
    previous = _background["on"]
    _background["on"] = bool(flag)
    return previous


def wait(timeout: float | None = None) -> None:
    """Block until every Inductor compilation started so far has finished (or failed)."""
    with _pending_lock:
        futures = list(_pending)
    concurrent.futures.wait(futures, timeout=timeout)


class InductorRegion:
    """A region's callable: compiles on the first call with each new input signature.

    ``program`` is the region as a Python function of torch calls (what ``make_fx``
    traces, and what runs while Inductor compiles in the background); ``compiled`` maps each
    signature to Inductor's function once it is ready.
    """

    def __init__(self, region: Region):
        from thunder.executors import torchex

        self.name = region.name
        self.where = f" (from {region.members[0].source})" if region.members[0].source else ""
        self.size = len(region.members)
        self.single = len(region.outputs) == 1
        self.trace = claim(region.trace(), [torchex.executor])
        self.program = self.trace.python_callable()
        self.compiled: dict[tuple, object] = {}
        self.compiling: dict[tuple, concurrent.futures.Future] = {}
        self.lock = threading.Lock()

    def __call__(self, *args):
        # Shapes, dtypes, devices and requires_grad of a region's inputs are fixed by its trace
        # (the prologue checks the inputs; the ops' meta functions give the rest); strides and
        # the grad mode are not.
        key = (torch.is_grad_enabled(), *[a.stride() for a in args])
        fn = self.compiled.get(key)
        if fn is None:
            fn = self._start(key, args)
        out = fn(*args)
        return out[0] if self.single else tuple(out)

    def _start(self, key: tuple, args):
        """Inductor's function for ``key`` when compiled here, else the torch calls while it
        compiles in the background."""
        # the metadata now (the inputs may change meanwhile), the fake tensors where Inductor runs
        meta = [(a.shape, a.stride(), a.dtype, a.device, a.requires_grad) for a in args]
        if not _background["on"]:
            fn = self.compiled[key] = self._compile(meta, key[0])
            return fn
        with self.lock:
            if key not in self.compiling:
                future = _worker.submit(self._compile_later, key, meta)
                self.compiling[key] = future
                with _pending_lock:
                    _pending.add(future)
                future.add_done_callback(_forget)
        return self.program

    def _compile_later(self, key: tuple, meta) -> None:
        try:
            self.compiled[key] = self._compile(meta, key[0])
        except RuntimeError as e:
            if not _background.get("exiting"):  # (at exit Inductor may fail to start; nothing waits)
                warnings.warn(f"{e}\nthe region keeps running as these torch calls", stacklevel=1)
            self.compiled[key] = self.program

    def _compile(self, meta, grad: bool):
        from torch._guards import TracingContext, tracing
        from torch._inductor.compile_fx import compile_fx
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        # Traced on fake tensors of the inputs' metadata (nothing is computed), static shapes.
        fake_mode = FakeTensorMode(shape_env=ShapeEnv())
        with fake_mode:
            fakes = [
                torch.empty_strided(shape, stride, dtype=dtype, device=device).requires_grad_(rg)
                for shape, stride, dtype, device, rg in meta
            ]
        try:
            with fake_mode, torch.no_grad():  # the graph is the forward; Inductor derives a backward
                gm = make_fx(self.program)(*fakes)
            # Inductor's on-disk caches (its FX graph cache, AOTAutograd's cache) take a graph
            # only with the shape environment of a tracing context's fake mode; the grad mode
            # of the call decides whether it compiles a backward too
            with tracing(TracingContext(fake_mode)), torch.set_grad_enabled(grad):
                return compile_fx(gm, fakes)
        except Exception as e:
            raise RuntimeError(
                f"thunder: torch.compile (Inductor) could not compile {self.name}, a region of "
                f"{self.size} operations{self.where}: {type(e).__name__}: {e}\n"
                f"The region as torch calls:\n{self.trace}"
            ) from e

    def __repr__(self) -> str:
        return f"<{self.name}: Inductor region of {self.size} operations, {len(self.compiled)} compiled>"


def _forget(future: concurrent.futures.Future) -> None:
    with _pending_lock:
        _pending.discard(future)


executor = TorchCompileExecutor("torchcompile")
