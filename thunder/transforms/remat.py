"""Rematerialization: recompute cheap elementwise values in the backward instead of saving them.

A saved value made by a cheap elementwise op (arithmetic, comparisons, casts: no
transcendental function) whose own inputs the backward has anyway (inputs of
the function, other saved values, values recomputed this way) costs memory from the forward
to the backward for nothing: the backward recomputes it from those inputs. A value returned
by the function is kept (it is alive anyway). So are the outputs of a BoundSymbol tagged
``recompute_in_backward`` by acquisition, whatever it costs (FSDP's unsharded parameters of a
module that reshards after forward: the backward all-gathers them again, as eager FSDP does),
and the views, reshapes, casts and cheap elementwise values made of them only (``w.t()``).

When a fusion executor comes first (``fusing``: torch.compile, nvFuser), the recomputation
runs inside the backward's fused kernels, where it costs no more than reading the saved value
(less: the value is then in cache when the backward's matmuls read it, as AOTAutograd's
partitioner arranges), so two more kinds of value are recomputed, as far as that executor
fuses every prim involved: elementwise ops with transcendental functions (a GELU's output
from its saved input), and an output of an op with several outputs that an elementwise
chain of its prims makes from values the backward has (a layer norm's output from its saved
input, mean and 1/std: the chain's prims are recomputed, reading the op's own saved outputs
where they are copies of its intermediates). Recomputed BoundSymbols are tagged
``recomputed`` and their ``info.recomputes`` names the value; the forward's
``info.rematerialized`` lists what is no longer saved, ``info.saved_to_recompute`` the
inputs saved for it (unlike eager, written in place after the call they make backward() raise).

Before (``t1`` saved)::

    def forward(x, w):                      def backward(t0, t1, g_t2):
      t0 = ltorch.linear(x, w)                ...uses t0 and t1...
      t1 = ltorch.mul(t0, 2)
      t2 = ltorch.linear(t1, w)
      return ((t2,), (t0, t1))

After (``t1`` recomputed from ``t0``)::

    def forward(x, w):                      def backward(t0, g_t2):
      ...                                     t1 = ltorch.mul(t0, 2)  # recomputed
      return ((t2,), (t0,))                   ...
"""

from __future__ import annotations

import dataclasses

from thunder.core.proxies import Proxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_map
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import EFFECT_TAGS, Tag
from thunder.core.trace import Trace
from thunder.executors.fusion import FusionExecutor
from thunder.ops import prims

# the most prims recomputed for one output of a multi-output op (a layer norm's takes 4)
CHAIN_LIMIT = 8


def _leaves(b: BoundSymbol) -> list[BoundSymbol]:
    return [leaf for s in b.subsymbols for leaf in _leaves(s)] if b.subsymbols else [b]


def _recomputable(b: BoundSymbol, fusing: FusionExecutor | None = None) -> bool:
    """Elementwise, single-output, without effects or random numbers, and cheap: no
    transcendental prim in it (an erf per element costs more than the memory it saves, when
    the recomputation is not fused into the backward's kernels), or every prim of it fused by
    ``fusing``."""
    tags = b.sym.tags | b.tags
    if Tag.ELEMENTWISE not in tags or tags & (EFFECT_TAGS | {Tag.RANDOM}) or len(proxies_in(b.output)) != 1:
        return False
    if b.draws():
        return False
    leaves = _leaves(b)
    if fusing is not None and fusing.decline_reason(b) is None:
        return True
    return not any(Tag.TRANSCENDENTAL in leaf.sym.tags for leaf in leaves)


def _chain(b: BoundSymbol, v: Proxy, has, fusing: FusionExecutor) -> list[BoundSymbol] | None:
    """The prims of ``b`` (an op with several outputs) that make its output ``v`` from values
    ``has`` names, in order, their arguments reading ``b``'s saved copies of its intermediates
    (``mean = clone(t3)`` saved: ``t3`` reads ``mean``); None when no short elementwise chain
    does, or ``fusing`` would not fuse one of its prims."""
    leaves = _leaves(b)
    made = {p.name: leaf for leaf in leaves for p in proxies_in(leaf.output)}
    outs = {p.name for p in proxies_in(b.output)}
    copies = {
        leaf.args[0].name: leaf.output
        for leaf in leaves
        if leaf.sym is prims.clone
        and isinstance(leaf.args[0], Proxy)
        and leaf.output.name in outs
        and leaf.output.name != v.name
        and has(leaf.output.name)
    }
    chain: list[BoundSymbol] = []
    planned: set[str] = set()

    def plan(name: str, top: bool) -> bool:
        if not top and (name in copies or has(name)) or name in planned:
            return True
        leaf = made.get(name)
        if leaf is None or len(chain) >= CHAIN_LIMIT or not _recomputable(leaf, fusing):
            return False
        if not all(plan(a.name, False) for a in proxies_in((leaf.args, leaf.kwargs))):
            return False
        planned.add(name)
        chain.append(leaf)
        return True

    if not plan(v.name, True):
        return None

    def read(x):
        return tree_map(lambda p: copies.get(p.name, p) if isinstance(p, Proxy) else p, x)

    return [leaf.from_bsym(args=read(leaf.args), kwargs=read(leaf.kwargs)) for leaf in chain]


def rematerialize(fw: Trace, bw: Trace, fusing: FusionExecutor | None = None) -> tuple[Trace, Trace]:
    """The forward and backward with the saved values the backward can recompute cheaply
    from what it has (see the module's docstring) recomputed there instead of saved.

    Before::

        def forward(x):                 def backward(t0, t1, g):
          t0 = ltorch.mul(x, 2)           t2 = ltorch.mul(g, t1)
          t1 = ltorch.add(t0, 1)          ...
          ...
          return ((t3,), (t0, t1))

    After (``t1`` recomputed; ``fw.info.rematerialized == ["t1"]``)::

        def forward(x):                 def backward(t0, g):
          ...                             t1 = ltorch.add(t0, 1)  # recomputed
          return ((t3,), (t0,))           t2 = ltorch.mul(g, t1)
    """
    plan = _Plan.of(fw)
    for b in fw.bound_symbols:
        for name, chain in plan.candidates(b, fusing).items():
            plan.take(name, chain)
    if not plan.recompute:
        return fw, bw
    plan.saved_names -= set(plan.recompute)
    new_fw = _forward(fw, plan)
    return new_fw, _backward(bw, plan, new_fw)


@dataclasses.dataclass
class _Plan:
    """What is recomputed, decided op by op along the forward: ``saved_names`` is what the
    backward has (saved values, and inputs it now reads to recompute from)."""

    outputs: tuple
    saved: tuple
    returned: set[str]  # values the function returns: alive anyway, never recomputed
    # an input written in place is not available to the backward: its value changes after the
    # forward (saving it would also trip torch's version check where eager saved another value)
    inputs: dict[str, Proxy]
    saved_names: set[str]
    # value name -> the BoundSymbols that recompute it (one op, or a chain of an op's prims)
    recompute: dict[str, list[BoundSymbol]] = dataclasses.field(default_factory=dict)
    extra_inputs: list = dataclasses.field(default_factory=list)  # inputs saved to recompute from
    # values of recompute_in_backward BoundSymbols, and values cheap ops make of them only: how
    # to recompute each (``_derived_chain``)
    derived: dict[str, list[BoundSymbol]] = dataclasses.field(default_factory=dict)

    @staticmethod
    def of(fw: Trace) -> _Plan:
        outputs, saved = fw.output
        written = {fw.args[i].name for _, i in fw.info.writebacks}
        return _Plan(
            outputs=outputs,
            saved=saved,
            returned={p.name for p in proxies_in(outputs)},
            inputs={p.name: p for p in proxies_in(fw.args) if p.name not in written},
            saved_names={p.name for p in saved},
        )

    def has(self, name: str) -> bool:
        return name in self.inputs or name in self.saved_names

    def _wanted(self, name: str) -> bool:
        return name in self.saved_names and name not in self.returned

    def candidates(self, b: BoundSymbol, fusing: FusionExecutor | None) -> dict[str, list[BoundSymbol]]:
        """``b``'s saved outputs that could be recomputed, and how: ``b`` itself (a cheap
        elementwise op), or, with a fusion executor, a chain of an op's prims per output."""
        outs = proxies_in(b.output)
        if Tag.RECOMPUTE_IN_BACKWARD in b.tags:  # acquisition asked for it (an FSDP unshard)
            self.derived.update((o.name, [b]) for o in outs)
            return {o.name: [b] for o in outs if self._wanted(o.name)}
        chain = self._derived_chain(b, fusing)
        if chain is not None:
            self.derived[outs[0].name] = chain
            return {outs[0].name: chain} if self._wanted(outs[0].name) else {}
        if _recomputable(b, fusing):
            return {outs[0].name: [b]} if self._wanted(outs[0].name) else {}
        if fusing is None or len(outs) <= 1 or not b.subsymbols:
            return {}
        chains = {v.name: _chain(b, v, self.has, fusing) for v in outs if self._wanted(v.name)}
        return {name: chain for name, chain in chains.items() if chain is not None}

    def _derived_chain(self, b: BoundSymbol, fusing: FusionExecutor | None) -> list[BoundSymbol] | None:
        """How to recompute the output of ``b`` when ``b`` is a view, a reshape, a cast or a
        cheap elementwise op of values recomputed in the backward anyway (``recompute_in_backward``):
        their BoundSymbols, then ``b``. Saving it instead would keep what they are not kept
        for alive (a saved ``w.t()`` or ``w.to(bfloat16)``, the unsharded ``w`` of FSDP)."""
        tags = b.sym.tags | b.tags
        if len(proxies_in(b.output)) != 1 or tags & (EFFECT_TAGS | {Tag.RANDOM}):
            return None
        if not (tags & {Tag.SHAPE, Tag.VIEW, Tag.CAST} or _recomputable(b, fusing)):
            return None
        args = [a for a in proxies_in((b.args, b.kwargs)) if isinstance(a, TensorProxy)]
        if not args or not all(a.name in self.derived for a in args):
            return None
        chain: list[BoundSymbol] = []
        for a in args:
            chain += [c for c in self.derived[a.name] if all(c is not d for d in chain)]
        return [*chain, b]

    def take(self, name: str, chain: list[BoundSymbol]) -> None:
        """Recompute ``name`` by ``chain`` if the backward has everything the chain reads
        (the inputs among it are saved from now on)."""
        made = {p.name for r in chain for p in proxies_in(r.output)}
        args = [a for r in chain for a in proxies_in((r.args, r.kwargs)) if a.name not in made]
        if not all(self.has(a.name) for a in args):
            return
        self.recompute[name] = chain
        self.extra_inputs += [a for a in args if a.name in self.inputs and a.name not in self.saved_names]
        self.saved_names |= {a.name for a in args}


def _forward(fw: Trace, plan: _Plan) -> Trace:
    """The forward saving only ``plan.saved_names``, in the order the values are made."""
    order = {
        p.name: i
        for i, p in enumerate(
            proxies_in(fw.args) + [p for b in fw.bound_symbols for p in proxies_in(b.output)]
        )
    }
    new_saved = sorted(
        {p.name: p for p in list(plan.saved) + plan.extra_inputs if p.name in plan.saved_names}.values(),
        key=lambda p: order[p.name],
    )
    new_fw = fw.derive("Rematerialization")
    new_fw.output = (plan.outputs, tuple(new_saved))
    new_fw.bound_symbols = []
    for b in fw.bound_symbols:
        names = {p.name for p in proxies_in(b.output)}
        tags = (b.tags - {Tag.SAVED_FOR_BACKWARD}) | (
            {Tag.SAVED_FOR_BACKWARD} if names & plan.saved_names else set()
        )
        new_fw.bound_symbols.append(b if tags == b.tags else b.from_bsym(tags=tags))
    new_fw.info.saved_for_backward = [p.name for p in new_saved]
    new_fw.info.rematerialized = sorted(plan.recompute, key=lambda n: order[n])
    # inputs saved only to recompute from: an in-place write into one of them after the call
    # makes backward() raise, where eager (which saved the recomputed value) would not
    new_fw.info.saved_to_recompute = sorted({p.name for p in plan.extra_inputs if p.name in plan.saved_names})
    return new_fw


def _backward(bw: Trace, plan: _Plan, new_fw: Trace) -> Trace:
    """The backward taking ``new_fw``'s saved values, each recomputed value made just before
    its first use."""
    new_saved = new_fw.output[1]
    new_bw = bw.derive("Rematerialization")
    new_bw.args = list(new_saved) + list(bw.args[len(plan.saved) :])
    new_bw.info.saved_for_backward = new_fw.info.saved_for_backward
    new_bw.info.rematerialized = new_fw.info.rematerialized
    recompute = plan.recompute
    emitted: set[str] = set()
    defined: set[str] = set()
    body: list[BoundSymbol] = []

    def emit(name: str) -> None:
        """Append what recomputes ``name`` (and, first, the recomputed values it reads)."""
        if name in emitted or name not in recompute:
            return
        emitted.add(name)
        for b in recompute[name]:
            for a in proxies_in((b.args, b.kwargs)):
                emit(a.name)
        for b in recompute[name]:
            made = {p.name for p in proxies_in(b.output)}
            if not made <= defined:  # else an intermediate another value's chain made already
                defined.update(made)
                body.append(_recomputed(b, name))

    for b in bw.bound_symbols:
        for a in proxies_in((b.args, b.kwargs)):
            emit(a.name)
        body.append(b)
    for p in proxies_in(bw.output):
        emit(p.name)
    new_bw.bound_symbols = body
    return new_bw


def _recomputed(b: BoundSymbol, name: str) -> BoundSymbol:
    """``b`` as a part of the backward that recomputes ``name``."""
    return b.from_bsym(
        tags=(b.tags - {Tag.SAVED_FOR_BACKWARD}) | {Tag.BACKWARD, Tag.RECOMPUTED},
        info=dataclasses.replace(b.info, recomputes=(name,)),
    )
