"""The torch.compile executor: fusion regions compiled by Inductor, without Dynamo.

Each region's prims become a small trace of torch calls (the torch executor's
implementations), ``make_fx`` turns that into an FX graph of aten ops, and
``torch._inductor.compile_fx.compile_fx`` compiles it for the region's input signature
(shapes, strides, dtypes, devices, requires_grad, grad mode): Triton kernels on CUDA, C++ on
CPU. Dynamo is never involved: thunder's prologue already checks the inputs, so a region
pays no guards on each call, only a dictionary lookup of its signature. With inputs that
require grad, Inductor's compiled function is differentiable (it compiles the backward too).

Compiling happens on a region's first call, when real inputs give the signature;
``import torch._inductor`` (about 2 s) happens then too, never at ``import thunder``.

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


class InductorRegion:
    """A region's callable: compiles on the first call with each new input signature.

    ``program`` is the region as a Python function of torch calls (what ``make_fx``
    traces); ``compiled`` maps each signature to Inductor's function.
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

    def __call__(self, *args):
        # Shapes, dtypes, devices and requires_grad of a region's inputs are fixed by its trace
        # (the prologue checks the inputs; the ops' meta functions give the rest); strides and
        # the grad mode are not.
        key = (torch.is_grad_enabled(), *[a.stride() for a in args])
        fn = self.compiled.get(key)
        if fn is None:
            fn = self.compiled[key] = self._compile(args)
        out = fn(*args)
        return out[0] if self.single else tuple(out)

    def _compile(self, args):
        from torch._guards import TracingContext, tracing
        from torch._inductor.compile_fx import compile_fx
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        try:
            # Traced on fake tensors of the inputs' metadata (nothing is computed), static
            # shapes. Inductor's on-disk caches (its FX graph cache, AOTAutograd's cache)
            # take a graph only with the shape environment of a tracing context's fake mode.
            fake_mode = FakeTensorMode(shape_env=ShapeEnv())
            fakes = [fake_mode.from_tensor(a, static_shapes=True) for a in args]
            with fake_mode, torch.no_grad():  # the graph is the forward; Inductor derives a backward
                gm = make_fx(self.program)(*fakes)
            with tracing(TracingContext(fake_mode)):
                return compile_fx(gm, fakes)
        except Exception as e:
            raise RuntimeError(
                f"thunder: torch.compile (Inductor) could not compile {self.name}, a region of "
                f"{self.size} operations{self.where}: {type(e).__name__}: {e}\n"
                f"The region as torch calls:\n{self.trace}"
            ) from e

    def __repr__(self) -> str:
        return f"<{self.name}: Inductor region of {self.size} operations, {len(self.compiled)} compiled>"


executor = TorchCompileExecutor("torchcompile")
