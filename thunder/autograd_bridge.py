"""The connection to ``torch.autograd``: one ``autograd.Function`` per compiled entry.

Its ``forward`` runs the forward trace (autograd records nothing there) and saves what the
backward trace needs with ``ctx.save_for_backward``, so a second ``backward()`` without
``retain_graph`` and an in-place change of a saved tensor raise torch's own errors. Its
``backward`` runs the backward trace. Outputs that do not require grad are marked
non-differentiable; outputs that are inputs are returned as themselves (not through the
Function, so ``out is x`` holds as in eager); values written back into inputs are copied
after the Function with autograd on, so an input's history (or the leaf error) is eager's.

An input whose value reaches only outputs that the backward gets no gradient for (a second
head left out of the loss) gets ``None`` as its gradient, as in eager, not zeros: an
optimizer skips a parameter whose ``.grad`` is None (no weight decay, no momentum step).

Two backwards are made on demand from the forward's inputs (kept, with their versions, for
them): a backward asked to record its graph (``create_graph=True``) runs the backward as a
differentiable computation (``DoubleBackward``, ``transforms/double_backward.py``), and a
plain gradient of a tensor-subclass output runs a backward traced for it
(``CotangentBackwards``).

A backward that averages gradients across ranks (``thunder.jit`` of a DistributedDataParallel,
``transforms/ddp.py``) must average what the parameters' ``.grad`` will hold, as DDP does:
where a parameter already holds a gradient (accumulated under ``no_sync()``), a variant of
the backward takes it, adds it in before the all-reduce, and the result is stored in ``.grad``
(in place) instead of being handed to autograd to add (``HeldGradients``).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from contextlib import nullcontext

import torch
from torch._functorch.utils import unwrap_dead_wrappers

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.subclass import SubclassProxy
from thunder.core.trace import Trace
from thunder.executors.pythonex import PrologueCheckFailed
from thunder.ops.autocast import autocast_state
from thunder.transforms.grad import differentiable_outputs
from thunder.transforms.saved_versions import SavedValueOverwrittenError

_grad_enabled = torch.is_grad_enabled
_any_autocast_enabled = torch._C._is_any_autocast_enabled


class autocast_off:
    """Autocast off while a compiled trace runs: its casts are in the trace (thunder/ops/autocast.py),
    and torch's own would cast again (a backward called inside an autocast block)."""

    def __enter__(self):
        self.state = autocast_state()
        for device_type, _ in self.state:
            torch.set_autocast_enabled(device_type, False)

    def __exit__(self, *exc):
        for device_type, _ in self.state:
            torch.set_autocast_enabled(device_type, True)


def without_autocast(fn: Callable) -> Callable:
    """``fn`` run with autocast off (the computation of an entry traced under autocast)."""

    def computation(*args):
        with autocast_off():
            return fn(*args)

    return computation


def no_grad_computation(trace: Trace) -> Callable:
    """The computation callable of an entry without a backward: traced with grad on, it runs
    under ``torch.no_grad()`` so that torch's autograd records nothing (thunder's backward
    traces are the one source of gradients)."""
    fn = trace.python_callable()
    if not trace.grad_enabled:
        return fn

    def computation(*args):
        with torch.no_grad():
            return fn(*args)

    return computation


class DoubleBackwardError(RuntimeError):
    pass


class CotangentMismatchError(TypeError):
    pass


class CotangentBackwards:
    """Backwards traced for cotangents of another class than the entry's backward expects: a
    plain tensor for a subclass output (what a loss computed from the output's values passes
    in eager). One per set of such outputs, made on first use by ``make(names)``, which returns
    ``(callable, positions)``: the callable takes the inputs and the cotangents (it recomputes
    the forward) and returns the gradients of the inputs at ``positions``."""

    def __init__(self, make: Callable[[frozenset[str]], tuple[Callable, list[int]]]):
        self.make = make
        self.made: dict[frozenset[str], tuple[Callable, list[int]]] = {}

    def gradients(self, plain: frozenset[str], inputs: tuple, cotangents: list, n_args: int) -> tuple:
        made = self.made.get(plain)
        if made is None:
            made = self.made[plain] = self.make(plain)
        fn, positions = made
        grads = [None] * n_args
        with torch.no_grad():
            for i, g in zip(positions, fn(*inputs, *cotangents)):
                grads[i] = g
        return tuple(grads)


def _double_backward(name: str, why: str) -> DoubleBackwardError:
    return DoubleBackwardError(
        f"thunder: the backward of {name} was asked to record its own graph (create_graph=True, a "
        f"double backward), and {why}. Call backward without create_graph, or compute higher-order "
        "gradients outside thunder.jit."
    )


class DoubleBackward:
    """The backward as a differentiable computation (``transforms/double_backward.py``),
    compiled the first time a backward is asked to record its graph: ``make()`` returns
    ``(computation, positions)`` (the gradients it returns are those of the inputs at
    ``positions``), or raises why it cannot."""

    def __init__(self, make: Callable[[], tuple[Callable, list[int]]]):
        self.make = make
        self.made: tuple[Callable, list[int]] | None = None
        self.error: Exception | None = None

    def gradients(self, name: str, inputs: tuple, cotangents: tuple, n_args: int) -> tuple:
        if self.made is None and self.error is None:
            try:
                self.made = self.make()
            except Exception as e:
                self.error = e
        if self.error is not None:
            raise _double_backward(name, str(self.error)) from self.error
        computation, positions = self.made
        grads = [None] * n_args
        for i, g in zip(positions, computation(*inputs, *cotangents)):
            grads[i] = g
        return tuple(grads)


class HeldGradients:
    """The backwards for parameters that already hold a ``.grad`` when a backward that
    averages gradients across ranks runs. ``positions``: the parameters' positions among the
    inputs. ``make(held)`` (``held``: the positions whose ``.grad`` is set) returns
    ``(callable, taken, traces)``: the callable takes the saved values, the cotangents and the
    ``.grad`` of the parameters at ``taken`` (the held ones this backward makes a gradient
    for), and returns the gradients, averaged, those at ``taken`` including the held ones;
    ``traces`` (its traces, first to last) are kept in ``self.traces[held]``."""

    def __init__(
        self,
        positions: tuple[int, ...],
        make: Callable[[frozenset[int]], tuple[Callable, list[int], list]],
    ):
        self.positions = positions
        self.make = make
        self.made: dict[frozenset[int], tuple[Callable, list[int]]] = {}
        self.traces: dict[frozenset[int], list] = {}

    def held(self, params: tuple) -> frozenset[int]:
        return frozenset(i for i, p in zip(self.positions, params) if p.grad is not None)

    def gradients(self, held: frozenset[int], params: tuple, values, cotangents) -> tuple:
        made = self.made.get(held)
        if made is None:
            fn, taken, self.traces[held] = self.make(held)
            made = self.made[held] = fn, taken
        fn, taken = made
        of = dict(zip(self.positions, params))
        grads = list(fn(*values, *cotangents, *[of[i].grad for i in taken]))
        with torch.no_grad():
            for i in taken:  # the average of the accumulated gradient: stored, not added
                of[i].grad.copy_(grads[i])
                grads[i] = None
        return tuple(grads)


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
class _Shared:
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
    ) -> _Shared:
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
        return _Shared(
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


def grad_computation(
    fw: Trace,
    bw: Trace | None,
    *,
    error: Exception | None = None,
    name: str = "computation",
    double: DoubleBackward | None = None,
    others: CotangentBackwards | None = None,
    held: HeldGradients | None = None,
) -> Callable:
    """The computation callable of an entry with a backward: ``fw`` returns (outputs, saved)
    and ``bw`` takes (saved, cotangents). With ``error`` instead of ``bw``, ``fw`` is the plain
    computation (outputs only) and backward raises ``error`` (a prim without a VJP rule).
    ``double``: what a backward asked to record its graph runs (the forward's inputs are kept
    for it, with their versions). ``others``: backwards for plain cotangents of subclass outputs.
    ``held``: the backwards for parameters that hold a ``.grad`` (a backward that averages
    gradients across ranks)."""
    shared = _Shared.of(fw, bw, error, name, double, others, held)
    fn = type(
        f"ThunderAutogradFunction_{name}",
        (torch.autograd.Function,),
        {"forward": staticmethod(_forward(shared)), "backward": staticmethod(_backward(shared))},
    )
    computation = _call(shared, _apply_of(fn, shared.tensor_args))
    computation.autograd_function = fn
    return computation


_function_apply = torch._C._FunctionBase.__dict__["apply"]
_functorch_transforms_active = torch._C._are_functorch_transforms_active
_unwrap_if_dead = torch._C._functorch.unwrap_if_dead


def _apply_of(fn: type, tensor_args: bool) -> Callable:
    """``fn.apply`` without its Python layer: what ``Function.apply`` does outside functorch
    transforms (for a Function without ``setup_context``: dead functorch wrappers unwrapped,
    then the C ``apply``); inside one, ``fn.apply`` itself. ``tensor_args``: every argument is
    a tensor (each one unwrapped without asking)."""
    apply, general = _function_apply.__get__(None, fn), fn.apply

    if not tensor_args:

        def some_tensors(*args):
            if _functorch_transforms_active():
                return general(*args)
            return apply(*unwrap_dead_wrappers(args))

        return some_tensors

    def direct(*args):
        if _functorch_transforms_active():
            return general(*args)
        return apply(*map(_unwrap_if_dead, args))

    return direct


def _forward(shared: _Shared) -> Callable:
    """The Function's forward: runs ``fw`` (autograd records nothing inside a Function) and
    saves what the backward reads."""
    fw_fn, saves = shared.fw_fn, shared.bw_fn is not None
    leaf, all_tensors, tensor_saved, other_saved = (
        shared.leaf,
        shared.all_tensors,
        shared.tensor_saved,
        shared.other_saved,
    )
    plain_outputs, first, keep_none = shared.plain_outputs, shared.layout.first, shared.keep_none
    nondiff = shared.layout.non_differentiable
    written, double = shared.written, shared.double is not None or shared.others is not None
    held = shared.held.positions if shared.held is not None else None
    versions = _versions if shared.tensor_args else _some_versions

    def plain_forward(ctx, *args):
        """``forward`` for the common entry (every argument and saved value a tensor, the
        outputs as computed, nothing written back), in one frame."""
        ctx.inputs = args
        ctx.versions = list(map(_version, args))
        outs, values = fw_fn(*args)
        ctx.save_for_backward(*values)
        return outs

    if (
        saves
        and double
        and shared.tensor_args
        and leaf is None
        and held is None
        and not written
        and all_tensors
        and plain_outputs
        and not keep_none
        and not nondiff
    ):
        return plain_forward

    def forward(ctx, *args):
        if leaf is not None:
            args = args[:-1]
        if held is not None:  # (their .grad, when the backward runs)
            ctx.params = tuple(args[i] for i in held)
        if double:  # a double backward recomputes from the inputs: an input written since is an error
            ctx.inputs = args
            ctx.versions = versions(args)
        if not saves:
            outs = fw_fn(*args)
        else:
            outs, values = fw_fn(*args)
            if written:
                values = _apart_from(values, [args[i] for i in written])
            if all_tensors:
                ctx.save_for_backward(*values)
            else:
                ctx.save_for_backward(*[values[i] for i in tensor_saved])
                ctx.other_saved = [values[i] for i in other_saved]
        result = outs if plain_outputs else tuple(outs[k] for k in first)
        if keep_none:  # the cotangents of outputs the backward does not reach stay None
            ctx.set_materialize_grads(False)
        if nondiff:
            ctx.mark_non_differentiable(*[result[j] for j in nondiff])
        return result

    return forward


_version = operator.attrgetter("_version")


def _versions(args: tuple) -> list[int]:
    """The version counters of ``args``, every one a tensor (one pass in C, no frame per item)."""
    return list(map(_version, args))


def _some_versions(args: tuple) -> list[int | None]:
    return [a._version if isinstance(a, torch.Tensor) else None for a in args]


def _apart_from(values, inputs: list) -> list:
    """``values`` with each tensor that shares storage with one of ``inputs`` (which the call
    writes back into after the Function) replaced by a copy: the backward reads the value from
    before the write, and torch's version check of saved tensors sees no write of its own."""
    storages = {s for t in inputs if isinstance(t, torch.Tensor) for s in _storages(t)}
    return [
        v.clone() if isinstance(v, torch.Tensor) and not storages.isdisjoint(_storages(v)) else v
        for v in values
    ]


def _zeros_maker(p: SubclassProxy) -> Callable:
    """Zeros of the subclass output ``p`` as its class makes them (``zeros_like`` of a value
    of ones with ``p``'s inner metadata): the cotangent a missing one stands for."""

    def ones(q):
        if not isinstance(q, SubclassProxy):
            return torch.ones(q.meta_shape, dtype=q.meta_dtype, device=q.meta_device)
        inner = {n: ones(t) for n, t in q.inner.items()}
        return q.subclass.__tensor_unflatten__(inner, q.ctx, q.meta_shape, q.outer_stride)

    return lambda: torch.zeros_like(ones(p))


def _storages(t: torch.Tensor) -> list[int]:
    """The storages holding ``t``: a tensor subclass's are its inner tensors'."""
    if type(t) is torch.Tensor or type(t) is torch.nn.Parameter or not hasattr(t, "__tensor_flatten__"):
        return [t.untyped_storage().data_ptr()]
    return [s for n in t.__tensor_flatten__()[0] for s in _storages(getattr(t, n))]


def _backward(shared: _Shared) -> Callable:
    """The Function's backward: torch's and thunder's checks, then the backward trace on the
    saved values and the cotangents."""
    bw_fn, error, name, leaf = shared.bw_fn, shared.error, shared.name, shared.leaf
    overwritten, keep_none, several, reach = (
        shared.overwritten,
        shared.keep_none,
        shared.several,
        shared.reach,
    )
    n_args, like, caller_writable = shared.n_args, shared.like, shared.caller_writable
    all_tensors, n_saved, tensor_saved, other_saved = (
        shared.all_tensors,
        shared.n_saved,
        shared.tensor_saved,
        shared.other_saved,
    )
    all_diff, diff = shared.all_diff, shared.layout.differentiable

    double, others, kinds, held = shared.double, shared.others, shared.cotangent_kinds, shared.held
    plain = (
        error is None
        and not overwritten
        and not keep_none
        and held is None
        and all_diff
        and all_tensors
        and leaf is None
        and all(cls is None for _, cls in kinds)
    )

    def plain_backward(ctx, *cotangents):
        """``backward`` for the common entry (every cotangent taken, every saved value a
        tensor, no subclass output): what it does when grad mode and autocast are off, in
        one frame; a backward that records its graph, or runs under autocast, takes the
        general path."""
        if _grad_enabled() or _any_autocast_enabled():
            return backward(ctx, *cotangents)
        try:
            tensors = ctx.saved_tensors  # torch's error once freed (a second backward without retain_graph)
        except RuntimeError as e:  # torch's version check: the caller wrote a saved input or output
            if "modified by an inplace operation" not in str(e):
                raise
            raise SavedValueOverwrittenError(f"{e}\n{caller_writable}") from e
        return bw_fn(*tensors, *cotangents)

    def backward(ctx, *cotangents):
        if error is not None:
            raise error
        if torch.is_grad_enabled() and double is None:
            raise _double_backward(name, "this entry has no differentiable backward")
        for message, reaching in overwritten:
            if any(cotangents[j] is not None for j in reaching):
                raise SavedValueOverwrittenError(message)
        unreached = None
        if keep_none and any(c is None for c in cotangents):
            if several:
                reached = frozenset().union(*(reach[j] for j, c in enumerate(cotangents) if c is not None))
                unreached = [i for i in range(n_args) if i not in reached]
            cotangents = tuple(
                (torch.zeros(m[0], dtype=m[1], device=m[2]) if m[3] is None else m[3]())
                if c is None and m is not None
                else c
                for c, m in zip(cotangents, like)
            )
        if torch.is_grad_enabled():  # create_graph=True: the backward of the backward is traced too
            with autocast_off() if torch._C._is_any_autocast_enabled() else nullcontext():
                return _recorded_backward(
                    ctx, double, name, cotangents, unreached, n_args, diff, all_diff, leaf, caller_writable
                )
        try:
            tensors = ctx.saved_tensors  # torch's error once freed (a second backward without retain_graph)
        except RuntimeError as e:  # torch's version check: the caller wrote a saved input or output
            if "modified by an inplace operation" not in str(e):
                raise
            raise SavedValueOverwrittenError(f"{e}\n{caller_writable}") from e
        if all_tensors:
            values = tensors
        else:
            values = [None] * n_saved
            for i, t in zip(tensor_saved, tensors):
                values[i] = t
            for i, v in zip(other_saved, ctx.other_saved):
                values[i] = v
        try:
            with autocast_off() if torch._C._is_any_autocast_enabled() else nullcontext():
                holding = held.held(ctx.params) if held is not None else None
                if holding:
                    grads = held.gradients(
                        holding, ctx.params, values, cotangents if all_diff else [cotangents[j] for j in diff]
                    )
                elif all_diff:
                    grads = bw_fn(*values, *cotangents)
                else:
                    grads = bw_fn(*values, *[cotangents[j] for j in diff])
            if unreached:
                grads = list(grads)
                for i in unreached:
                    grads[i] = None
                grads = tuple(grads)
            return grads if leaf is None else (*grads, None)
        except PrologueCheckFailed as e:  # the backward's checks of subclass cotangents
            plain = _plain_cotangents(kinds, cotangents if all_diff else [cotangents[j] for j in diff])
            if others is not None and plain:
                _check_versions(ctx, name)
                with autocast_off() if torch._C._is_any_autocast_enabled() else nullcontext():
                    grads = others.gradients(
                        plain, ctx.inputs, cotangents if all_diff else [cotangents[j] for j in diff], n_args
                    )
                if unreached:
                    grads = tuple(None if i in unreached else g for i, g in enumerate(grads))
                return grads if leaf is None else (*grads, None)
            raise CotangentMismatchError(
                f"thunder: the backward of {name} was traced for the gradient of each tensor-subclass output "
                f"to be a tensor of the same subclass with inner tensors like the output's (what out.backward() "
                f"passes), but {e}; pass such a gradient, or compute this gradient outside thunder.jit"
            ) from e

    return plain_backward if plain else backward


def _check_versions(ctx, name: str) -> None:
    """A backward that recomputes from the inputs: none may have been written since the call."""
    for a, v in zip(ctx.inputs, ctx.versions):
        if v is not None and a._version != v:
            raise SavedValueOverwrittenError(
                f"thunder: the backward of {name} recomputes its forward from its inputs (to record its graph, "
                "or for a gradient of another class than traced), and one of them was written in place since the call"
            )


def _plain_cotangents(kinds, cotangents) -> frozenset[str]:
    """The subclass outputs whose cotangent is a plain tensor; empty when another cotangent is
    of a class the backward was not traced for."""
    plain = set()
    for (name, cls), c in zip(kinds, cotangents):
        if cls is not None and type(c) is torch.Tensor:
            plain.add(name)
        elif cls is not None and type(c) is not cls:
            return frozenset()
    return frozenset(plain)


def _recorded_backward(
    ctx, double, name, cotangents, unreached, n_args, diff, all_diff, leaf, caller_writable
) -> tuple:
    """A backward that records its own graph: the forward's inputs and the cotangents through
    the backward as a differentiable computation (its own autograd Function)."""
    try:
        ctx.saved_tensors  # noqa: B018 (torch's error once freed: a second backward without retain_graph)
    except RuntimeError as e:  # torch's version check: the caller wrote a saved input or output
        if "modified by an inplace operation" not in str(e):
            raise
        raise SavedValueOverwrittenError(f"{e}\n{caller_writable}") from e
    _check_versions(ctx, name)
    if not all_diff:
        cotangents = [cotangents[j] for j in diff]
    grads = double.gradients(name, ctx.inputs, tuple(cotangents), n_args)
    if unreached:
        grads = tuple(None if i in unreached else g for i, g in enumerate(grads))
    return grads if leaf is None else (*grads, None)


def _call(shared: _Shared, apply: Callable) -> Callable:
    """The entry's computation: the Function's ``apply``, then the outputs that are inputs put
    in place and the write-backs into inputs copied with autograd on."""
    leaf, source, writebacks, n_user = shared.leaf, shared.layout.source, shared.writebacks, shared.n_user
    enable_grad = shared.enable_grad
    direct = shared.plain_outputs and not writebacks and not enable_grad and leaf is None
    if direct:  # (a closure of its own: the entry's computation, with no frame around it)
        return apply
    if leaf is not None:
        function_apply = apply

        def apply(*args):
            return function_apply(*args, leaf)

    def computation(*args):
        if enable_grad:
            with torch.enable_grad():
                result = apply(*args)
        else:
            result = apply(*args)
        values = [args[i] if is_input else result[i] for is_input, i in source]
        if writebacks:
            with torch.enable_grad() if enable_grad else nullcontext():
                for k, i in writebacks:
                    if args[i].is_leaf and args[i].requires_grad:  # written through .data / detach()
                        with torch.no_grad():
                            args[i].copy_(values[k])
                    else:
                        args[i].copy_(values[k])
        return tuple(values[:n_user])

    return computation
