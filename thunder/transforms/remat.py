"""Rematerialization: recompute cheap elementwise values in the backward instead of saving them.

A saved value made by a cheap elementwise op (arithmetic, comparisons, casts: no
transcendental function) whose own inputs the backward has anyway (inputs of
the function, other saved values, values recomputed this way) costs memory from the forward
to the backward for nothing: the backward recomputes it from those inputs. A value returned
by the function is kept (it is alive anyway). Recomputed BoundSymbols are tagged
``recomputed`` and their ``info["recomputes"]`` names the value; the forward's
``info["rematerialized"]`` lists what is no longer saved, ``info["saved_to_recompute"]`` the
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

from thunder.core.proxies import proxies_in
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import EFFECT_TAGS, Tag
from thunder.core.trace import Trace


def _leaves(b: BoundSymbol) -> list[BoundSymbol]:
    return [leaf for s in b.subsymbols for leaf in _leaves(s)] if b.subsymbols else [b]


def _recomputable(b: BoundSymbol) -> bool:
    """Elementwise, single-output, without effects or random numbers, and cheap: no
    transcendental prim in it (an erf per element costs more than the memory it saves, when
    the recomputation is not fused into the backward's kernels)."""
    tags = b.sym.tags | b.tags
    if Tag.ELEMENTWISE not in tags or tags & (EFFECT_TAGS | {Tag.RANDOM}) or len(proxies_in(b.output)) != 1:
        return False
    return not any(leaf.sym.tags & {Tag.TRANSCENDENTAL, Tag.RANDOM} for leaf in _leaves(b))


def rematerialize(fw: Trace, bw: Trace) -> tuple[Trace, Trace]:
    outputs, saved = fw.output
    returned = {p.name for p in proxies_in(outputs)}
    # an input written in place is not available to the backward: its value changes after the
    # forward (saving it would also trip torch's version check where eager saved another value)
    written = {fw.args[i].name for _, i in fw.info.get("writebacks", [])}
    inputs = {p.name: p for p in proxies_in(fw.args) if p.name not in written}
    saved_names = {p.name for p in saved}
    recompute: dict[str, BoundSymbol] = {}
    extra_inputs: list = []
    for b in fw.bound_symbols:
        if not _recomputable(b):
            continue
        (v,) = proxies_in(b.output)
        if v.name not in saved_names or v.name in returned:
            continue
        args = proxies_in((b.args, b.kwargs))
        if all(a.name in inputs or a.name in saved_names for a in args):
            recompute[v.name] = b
            extra_inputs += [a for a in args if a.name in inputs and a.name not in saved_names]
            saved_names |= {a.name for a in args}
    if not recompute:
        return fw, bw
    saved_names -= set(recompute)
    order = {
        p.name: i
        for i, p in enumerate(
            proxies_in(fw.args) + [p for b in fw.bound_symbols for p in proxies_in(b.output)]
        )
    }
    new_saved = sorted(
        {p.name: p for p in list(saved) + extra_inputs if p.name in saved_names}.values(),
        key=lambda p: order[p.name],
    )

    new_fw = fw.derive("Rematerialization")
    new_fw.output = (outputs, tuple(new_saved))
    new_fw.bound_symbols = []
    for b in fw.bound_symbols:
        names = {p.name for p in proxies_in(b.output)}
        tags = (b.tags - {Tag.SAVED_FOR_BACKWARD}) | (
            {Tag.SAVED_FOR_BACKWARD} if names & saved_names else set()
        )
        new_fw.bound_symbols.append(b if tags == b.tags else b.from_bsym(tags=tags))
    new_fw.info["saved_for_backward"] = [p.name for p in new_saved]
    new_fw.info["rematerialized"] = sorted(recompute, key=lambda n: order[n])
    # inputs saved only to recompute from: an in-place write into one of them after the call
    # makes backward() raise, where eager (which saved the recomputed value) would not
    new_fw.info["saved_to_recompute"] = sorted({p.name for p in extra_inputs if p.name in saved_names})

    new_bw = bw.derive("Rematerialization")
    new_bw.args = list(new_saved) + list(bw.args[len(saved) :])
    new_bw.info["saved_for_backward"] = new_fw.info["saved_for_backward"]
    new_bw.info["rematerialized"] = new_fw.info["rematerialized"]
    emitted: set[str] = set()
    body: list[BoundSymbol] = []

    def emit(name: str) -> None:
        if name in emitted or name not in recompute:
            return
        emitted.add(name)
        b = recompute[name]
        for a in proxies_in((b.args, b.kwargs)):
            emit(a.name)
        body.append(
            b.from_bsym(
                tags=(b.tags - {Tag.SAVED_FOR_BACKWARD}) | {Tag.BACKWARD, Tag.RECOMPUTED},
                info={**b.info, "recomputes": (name,)},
            )
        )

    for b in bw.bound_symbols:
        for a in proxies_in((b.args, b.kwargs)):
            emit(a.name)
        body.append(b)
    for p in proxies_in(bw.output):
        emit(p.name)
    new_bw.bound_symbols = body
    return new_fw, new_bw
