"""The fusion executor interface: executors that run groups of prims as one compiled region.

A ``FusionExecutor`` decides per prim, after decomposition, whether it can take it
(``prim_reason``: None when it can, else why not). During claiming it takes a BoundSymbol
whole when every prim below it is one it can take (``ltorch.gelu`` whose prims are all
elementwise), else declines, and the claiming pass offers the decomposition prim by prim.
What it took stays as it was, marked ``info.claimed_by``; the fusion pass
(``thunder/transforms/fuse.py``) then groups those BoundSymbols into regions and asks the
executor to compile each (``compile_region``). The torch.compile executor
(``executors/inductor/executor.py``) and the nvFuser executor (``executors/nvfuser/executor.py``) implement it.

A region is one BoundSymbol tagged ``Tag.FUSION`` whose symbol prints as a call of the
compiled region (``(t3, t7) = TorchCompile0(x, w)``) and whose subsymbols are its members,
unchanged: each keeps its source line and its module scope. The region's own scope is the
innermost module call that holds all of them (``common_scope``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.printing import Printer, output_str, type_comment
from thunder.core.proxies import NumberProxy, Proxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol, Symbol, common_scope
from thunder.core.symbolic import sizes_are_static
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.executors.base import Executor


def prims_of(bsym: BoundSymbol) -> list[BoundSymbol]:
    """The prims ``bsym`` decomposes into, in order (``bsym`` itself when it is one)."""
    if Tag.PRIM in bsym.sym.tags or not bsym.subsymbols:
        return [bsym]
    return [p for sub in bsym.subsymbols for p in prims_of(sub)]


@dataclasses.dataclass
class Region:
    """A group of BoundSymbols run as one: its members in order, the prims they decompose
    into, and the proxies that cross its boundary (inputs in order of first use, outputs in
    order of definition)."""

    name: str
    members: list[BoundSymbol]
    inputs: list[Proxy]
    outputs: list[Proxy]

    @property
    def prims(self) -> list[BoundSymbol]:
        return [p for m in self.members for p in prims_of(m)]

    def trace(self, *, prims: bool = True) -> Trace:
        """The region as a trace of its own (``def TorchCompile0(x, w): ...``): its prims, or
        (``prims=False``) its members as they are."""
        t = Trace(self.name, tags=("fusion",))
        t.args = list(self.inputs)
        t.output = tuple(self.outputs)
        t.bound_symbols = self.prims if prims else list(self.members)
        return t


class FusionExecutor(Executor):
    """An executor that fuses: it claims BoundSymbols whose prims it can take and compiles
    the regions the fusion pass forms from them. Subclasses implement ``prim_reason`` and
    ``compile_region`` and name their regions with ``region_prefix``."""

    region_prefix = "Fusion"

    def prim_reason(self, prim: BoundSymbol) -> str | None:
        """Why this executor cannot take the prim BoundSymbol ``prim``, or None when it can."""
        raise NotImplementedError

    def region_reason(self, region: Region) -> str | None:
        """Why ``region`` is not worth compiling (its members then go to the other
        executors), or None. By default a region of shape operations only is not."""
        if all(Tag.SHAPE in p.sym.tags for p in region.prims):
            return "a region of shape operations only has nothing to fuse"
        return None

    def compile_region(self, region: Region) -> Callable:
        """The callable that runs ``region``: called with the values of ``region.inputs``,
        it returns the value of the single output, or a tuple of them."""
        raise NotImplementedError

    def finish_region(self, compiled: Callable, timeout: float | None = None) -> None:
        """Block until the background compilation of one region this executor compiled
        (``compiled``, what ``compile_region`` returned) is done, and load it (none here)."""

    # -- claiming -----------------------------------------------------------------------------
    def decline_reason(self, bsym: BoundSymbol) -> str | None:
        """Why ``bsym`` cannot be taken whole: the first of its prims this executor declines."""
        for p in prims_of(bsym):
            if Tag.PRIM not in p.sym.tags:
                return f"{p.sym.id} is not a prim"
            reason = self.prim_reason(p)
            if reason is not None:
                return reason if p is bsym else f"{p.sym.id}: {reason}"
        return None

    def claim(self, bsym: BoundSymbol) -> BoundSymbol | None:
        if self.decline_reason(bsym) is not None:
            return None
        return bsym.from_bsym(info=bsym.info.claimed(self.name))

    def why_not(self, bsym: BoundSymbol) -> str:
        return f"{self.name} does not fuse {bsym.sym.id} ({self.decline_reason(bsym)})"

    # -- regions ------------------------------------------------------------------------------
    def region_bsym(self, region: Region, tags: frozenset = frozenset()) -> BoundSymbol:
        """The BoundSymbol that runs ``region``: ``Tag.FUSION``, its members as subsymbols.
        A symbolic size its prims read and its members' arguments do not (``reshape(t, -1)``
        becomes ``prims.reshape(t, (s0*s1,))``) is an input too."""
        region = with_prim_symbols(region)
        sym = Symbol(
            region.name,
            self.name,
            impl=self.compile_region(region),
            tags=(Tag.FUSION,),
            printer=print_region,
            executor=self.name,
            doc=f"A fusion region of {len(region.members)} operations run by {self.name}.",
        )
        out = region.outputs[0] if len(region.outputs) == 1 else tuple(region.outputs)
        return BoundSymbol(
            sym,
            tuple(region.inputs),
            {},
            out,
            list(region.members),
            source=region.members[0].source,
            scope=common_scope(region.members),
            tags=frozenset({Tag.FUSION}) | tags,
            info=BoundSymbolInfo(claimed_by=self.name),
        )


def with_prim_symbols(region: Region) -> Region:
    """``region`` with each symbol its prims read that is none of its inputs added to them."""
    symbolic = any(
        isinstance(p, NumberProxy) or (isinstance(p, TensorProxy) and not sizes_are_static(p.meta_shape))
        for p in region.inputs
    )
    if not symbolic:
        return region
    have = {p.name for p in region.inputs}
    extra = []
    for prim in region.prims:
        for p in proxies_in((prim.args, prim.kwargs)):
            if isinstance(p, NumberProxy) and p.name not in have:
                have.add(p.name)
                extra.append(p)
    return dataclasses.replace(region, inputs=[*region.inputs, *extra]) if extra else region


def print_region(bsym: BoundSymbol, printer: Printer) -> str:
    """``(t3, t7) = TorchCompile0(x, w)``: the region's callable, named in the namespace."""
    name = printer.name_object(bsym.sym.impl, bsym.sym.name)
    call = f"{name}({', '.join(printer.value(a) for a in bsym.args)})"
    out = output_str(printer, bsym.output)
    line = f"{out} = {call}" if out else call
    comment = type_comment(tree_leaves(bsym.output))
    return f"{line}  # {comment}" if comment else line


def fusion_executors(executors: Sequence[Executor]) -> dict[str, FusionExecutor]:
    return {e.name: e for e in executors if isinstance(e, FusionExecutor)}
