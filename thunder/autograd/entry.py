"""What an entry's autograd Function and its call share: ``SharedEntry``, fixed by the traces.

``SharedEntry.of(fw, bw, ...)`` reads, once when the entry is made, everything the Function's
``forward`` and ``backward`` (``thunder/autograd/function.py``) and the call around it
(``thunder/autograd/call.py``) need: where each output comes from (``_Layout``), which saved
values are tensors, which inputs each output is computed from, what a missing cotangent is
filled with, and which cheap paths apply. Apart from the bridge: this runs once per entry,
the bridge's code on every call and every backward.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from thunder.autograd.backwards_from_inputs import CotangentBackwards, DoubleBackward
from thunder.autograd.held_gradients import HeldGradients
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.subclass import SubclassProxy
from thunder.core.trace import Trace
from thunder.transforms.grad import differentiable_outputs


class _Layout:
    """Where each output of the computation comes from: an input (returned as itself) or an
    output of the Function (each computed value once)."""

    def __init__(self, outputs, args):
        arg_index = {p.name: i for i, p in enumerate(args) if isinstance(p, (TensorProxy, Proxy))}
        self.function_outputs: list[TensorProxy] = []
        positions: dict[str, int] = {}
        self.first: list[int] = []  # per Function output: its position among ``outputs``
        self.source: list[tuple[bool, int]] = []  # per output: (is an input, index)
        for k, o in enumerate(outputs):
            if o.name in arg_index:
                self.source.append((True, arg_index[o.name]))
                continue
            if o.name not in positions:
                positions[o.name] = len(self.function_outputs)
                self.function_outputs.append(o)
                self.first.append(k)
            self.source.append((False, positions[o.name]))
        diff = {o.name for o in differentiable_outputs(outputs, args)}
        self.differentiable = [j for j, o in enumerate(self.function_outputs) if o.name in diff]
        self.non_differentiable = [
            j
            for j, o in enumerate(self.function_outputs)
            if isinstance(o, TensorProxy) and o.name not in diff
        ]


def _reaching(fw: Trace, outputs: list) -> list[frozenset[int]]:
    """Per output: the positions of ``fw``'s arguments its value is computed from (through a
    fusion region's members, not the region as a whole)."""
    deps = {p.name: frozenset((i,)) for i, p in enumerate(fw.args) if isinstance(p, Proxy)}
    none = frozenset()

    def visit(bsyms) -> None:
        for b in bsyms:
            outs = b.flat_proxy_outs
            if b.subsymbols:
                visit(b.subsymbols)
                if all(o.name in deps for o in outs):
                    continue
            d = none.union(*(deps.get(p.name, none) for p in b.flat_proxy_args))
            for o in outs:
                deps[o.name] = deps.get(o.name, none) | d

    visit(fw.bound_symbols)
    return [deps.get(o.name, none) for o in outputs]


def _caller_writable(fw: Trace, saved, outputs, name: str) -> str:
    """Which saved values the caller holds (inputs, outputs), for torch's version-check error."""
    inputs = {p.name for p in fw.args if isinstance(p, TensorProxy)}
    positions = {o.name: k for k, o in reversed(list(enumerate(outputs)))}
    ins = [p.name for p in saved if p.name in inputs]
    outs = [str(positions[p.name]) for p in saved if p.name in positions and p.name not in inputs]
    held = [f"input{'s' * (len(ins) > 1)} {', '.join(ins)}"] if ins else []
    held += [f"output{'s' * (len(outs) > 1)} {', '.join(outs)}"] if outs else []
    note = (
        f"thunder: the backward of {name} reads the values of its {' and '.join(held) or '(none)'} "
        "from the call; one of them was written in place since."
    )
    recompute = fw.info.saved_to_recompute
    if recompute:
        note += (
            f" (It reads {', '.join(recompute)} only to recompute values that eager saves instead: a write into "
            + ("it" if len(recompute) == 1 else "them")
            + " makes eager's backward raise nothing.)"
        )
    return note


@dataclasses.dataclass(frozen=True)
class SharedEntry:
    """What an entry's autograd Function (its forward and backward) and its call share, all
    fixed by the traces when the entry is made."""

    name: str
    fw_fn: Callable
    bw_fn: Callable | None  # None: ``error`` is raised by backward instead
    error: Exception | None
    layout: _Layout
    writebacks: list  # (output position, input position) of values written back into inputs
    n_user: int  # the outputs the user's function returns (the write-backs' values follow)
    tensor_saved: list[int]  # positions of the saved values that are tensors ...
    other_saved: list[int]  # ... and of the others (numbers), kept on the ctx
    n_saved: int
    n_args: int
    # values saved for backward and then written in place (transforms/saved_versions.py): the
    # backward raises as eager's does, when a cotangent that reaches the op's backward is given
    overwritten: list[tuple[str, list[int]]]
    caller_writable: str
    # with several differentiable outputs, the ones the backward gets no gradient for decide
    # which inputs get None (``reach``: per Function output, the inputs it is computed from)
    several: bool
    reach: list[frozenset[int]]
    keep_none: bool
    like: list  # what a missing cotangent is filled with (the outputs' metadata is fixed by the trace)
    # outputs that require grad though no input does (a value made a leaf inside by
    # requires_grad_()): one more input that requires grad, so torch's outputs do too
    leaf: torch.Tensor | None
    # the common case, kept cheap: every output computed once, every saved value a tensor,
    # every Function output differentiable, nothing written back
    plain_outputs: bool
    all_tensors: bool
    all_diff: bool
    enable_grad: bool  # traced under no_grad with an enable_grad block inside
    # inputs the call writes back into (after the Function): a saved value in their storage
    # is saved as a copy, so thunder's own write-back is not taken for a user's in-place write
    written: tuple[int, ...]
    double: DoubleBackward | None  # the backward recorded (create_graph=True) by differentiating it
    # backwards for plain cotangents of subclass outputs, and the class each cotangent is
    # traced for (per cotangent the backward takes: the output's name and its subclass or None)
    others: CotangentBackwards | None
    cotangent_kinds: list[tuple[str, type | None]]
    held: HeldGradients | None  # a backward that averages across ranks: for accumulated .grad
    tensor_args: bool  # every argument of the forward is a tensor (their versions read in one pass)

    @staticmethod
    def of(
        fw: Trace,
        bw: Trace | None,
        error: Exception | None,
        name: str,
        double: DoubleBackward | None,
        others: CotangentBackwards | None,
        held: HeldGradients | None = None,
    ) -> SharedEntry:
        outputs, saved = fw.output if bw is not None else (fw.output, ())
        writebacks = fw.info.writebacks if bw is not None else []
        layout = _Layout(outputs, fw.args)
        diff = layout.differentiable
        other_saved = [i for i, p in enumerate(saved) if not isinstance(p, TensorProxy)]
        overwritten = [(s.message, [diff[i] for i in s.cotangents]) for s in fw.info.overwritten_saves]
        several = len(diff) > 1 and not any(
            isinstance(layout.function_outputs[j], SubclassProxy) for j in diff
        )
        no_grad_inputs = not any(isinstance(p, TensorProxy) and p.requires_grad for p in fw.args)
        return SharedEntry(
            name=name,
            fw_fn=fw.python_callable(),
            bw_fn=bw.python_callable() if bw is not None else None,
            error=error,
            layout=layout,
            writebacks=writebacks,
            n_user=len(outputs) - len(writebacks),
            tensor_saved=[i for i, p in enumerate(saved) if isinstance(p, TensorProxy)],
            other_saved=other_saved,
            n_saved=len(saved),
            n_args=len(fw.args),
            overwritten=overwritten,
            caller_writable=_caller_writable(fw, saved, outputs, name),
            several=several,
            reach=_reaching(fw, layout.function_outputs) if several else [],
            # (torch fills a missing cotangent with plain zeros, which a subclass output's backward
            # was not traced for)
            keep_none=bool(overwritten)
            or several
            or any(isinstance(layout.function_outputs[j], SubclassProxy) for j in diff),
            like=[
                (
                    o.meta_shape,
                    o.meta_dtype,
                    o.meta_device,
                    _zeros_maker(o) if isinstance(o, SubclassProxy) else None,
                )
                if isinstance(o, TensorProxy)
                else None
                for o in layout.function_outputs
            ],
            leaf=torch.empty(0, requires_grad=True) if diff and no_grad_inputs and error is None else None,
            plain_outputs=layout.first == list(range(len(outputs))),
            all_tensors=not other_saved,
            all_diff=diff == list(range(len(layout.first))),
            enable_grad=not fw.grad_enabled,
            written=tuple(sorted({i for _, i in writebacks})),
            double=double,
            others=others,
            cotangent_kinds=[
                (o.name, o.subclass if isinstance(o, SubclassProxy) else None)
                for o in (layout.function_outputs[j] for j in diff)
            ],
            held=held,
            tensor_args=all(isinstance(p, TensorProxy) for p in fw.args),
        )


def _zeros_maker(p: SubclassProxy) -> Callable:
    """Zeros of the subclass output ``p`` as its class makes them (``zeros_like`` of a value
    of ones with ``p``'s inner metadata): the cotangent a missing one stands for."""

    def ones(q):
        if not isinstance(q, SubclassProxy):
            return torch.ones(q.meta_shape, dtype=q.meta_dtype, device=q.meta_device)
        inner = {n: ones(t) for n, t in q.inner.items()}
        return q.subclass.__tensor_unflatten__(inner, q.ctx, q.meta_shape, q.outer_stride)

    return lambda: torch.zeros_like(ones(p))
