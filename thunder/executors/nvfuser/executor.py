"""The nvFuser executor: fusion regions defined and run by nvFuser on CUDA.

The translation from prims to nvFuser (which prims it takes and why not, the
FusionDefinition of a region, its standalone repro) is the package
``thunder.executors.nvfuser`` (which imports nvFuser only when a fusion is defined); this
module is the executor around it. The executor is available when a CUDA device is there and
nvFuser imports; otherwise ``unavailable_reason()`` says why, and ``thunder.jit(fn,
executors=["nvfuser"])`` raises with that reason.

A region is defined once per input signature (which dimensions have extent 1; the other
extents stay symbolic, so one definition serves every size) and run with
``fd.execute(inputs)``. Inputs that are not contiguous are made contiguous first. Training
fuses the forward and the backward traces (they run with grad mode off, inside thunder's
autograd.Function); a region called with grad mode on and an input that requires grad (a
program whose gradients thunder leaves to torch's autograd) runs its torch program instead:
correct, not fused.

``preview()`` forms nvFuser's regions on a machine without CUDA or nvFuser: the same choices
and repros, each region run as torch calls, to read what nvFuser would fuse.

Before::

    t0 = ltorch.gelu(x)
    t1 = ltorch.mul(t0, 2)

After::

    t1 = nvFusion0(x)
      # t0 = ltorch.gelu(x) ...
      # t1 = ltorch.mul(t0, 2) ...
"""

from __future__ import annotations

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol
from thunder.executors import nvfuser
from thunder.executors.base import Drawing
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor, Region
from thunder.executors.registry import fallback_executors, register_executor


class NvFuserExecutor(FusionExecutor):
    """Fuses the prims nvFuser can take (the translation's ``unsupported_reason`` decides)."""

    region_prefix = "nvFusion"
    default = True  # on CUDA with the package: before torch
    drawing = Drawing("#e1f3c6", "#4a7a00", "box3d")
    _unavailable: tuple[str | None] | None = None  # memoised: neither CUDA nor nvFuser change

    def unavailable_reason(self) -> str | None:
        if self._unavailable is None:
            self._unavailable = (nvfuser.unavailable_reason(),)
        return self._unavailable[0]

    def prim_reason(self, prim: BoundSymbol) -> str | None:
        return nvfuser.unsupported_reason(prim)

    def compile_region(self, region: Region) -> NvFuserRegion:
        return NvFuserRegion(region)


class NvFuserRegion:
    """A region's callable: a FusionDefinition per input signature, executed by nvFuser."""

    def __init__(self, region: Region):
        self.name = region.name
        self.prims = region.prims
        self.inputs = list(region.inputs)
        self.outputs = list(region.outputs)
        self.single = len(region.outputs) == 1
        self.where = f" (from {region.members[0].source})" if region.members[0].source else ""
        # what runs when an input requires grad: the region's prims as torch calls
        self.torch_program = claim(region.trace(), fallback_executors()).python_callable()
        self.definitions: dict[tuple, object] = {}

    def __call__(self, *args):
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            out = self.torch_program(*args)
            return out[0] if self.single else out
        args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
        key = tuple(tuple(s == 1 for s in a.shape) if isinstance(a, torch.Tensor) else None for a in args)
        fd = self.definitions.get(key)
        if fd is None:
            fd = self.definitions[key] = self._define(args)
        out = fd.execute(args)
        return out[0] if self.single else tuple(out)

    def _define(self, args):
        descriptors = [
            nvfuser.contiguous_descriptor(a.shape) if isinstance(p, TensorProxy) else None
            for p, a in zip(self.inputs, args)
        ]
        try:
            return nvfuser.define_fusion(self.prims, self.inputs, self.outputs, descriptors=descriptors)
        except Exception as e:
            raise RuntimeError(
                f"thunder: nvFuser could not define {self.name}, a region of {len(self.prims)} prims"
                f"{self.where}: {type(e).__name__}: {e}"
            ) from e

    def repro(self) -> str:
        """The region as a standalone nvFuser script (what nvFuser bug reports contain)."""
        return nvfuser.fusion_repro(self.prims, self.inputs, self.outputs)

    def __repr__(self) -> str:
        return f"<{self.name}: nvFuser region of {len(self.prims)} prims, {len(self.definitions)} defined>"


class NvFuserPreview(NvFuserExecutor):
    """nvFuser's regions and repros without nvFuser: each region runs its torch program.

    ``regions`` lists the compiled regions (their ``prims``, ``inputs``, ``outputs`` and
    ``repro()``) in the order they were formed."""

    def __init__(self):
        super().__init__("nvfuser")
        self.regions: list[NvFuserRegion] = []

    def unavailable_reason(self) -> str | None:
        return None

    def compile_region(self, region: Region):
        r = NvFuserRegion(region)
        self.regions.append(r)

        def run(*args):
            out = r.torch_program(*args)
            return out[0] if r.single else out

        run.repro = r.repro  # as the real region's callable has it (the explorer shows it)
        return run


def preview() -> NvFuserPreview:
    """A fresh previewing nvFuser executor: ``thunder.jit(fn, executors=[preview()])``."""
    return NvFuserPreview()


executor = register_executor(NvFuserExecutor("nvfuser"))
