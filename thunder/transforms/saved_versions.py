"""Eager's version-counter check of saved values: the backward raises where eager's would.

Eager's autograd saves some of an op's inputs and outputs for its backward and, at
``backward()``, raises ``RuntimeError: one of the variables needed for gradient computation
has been modified by an inplace operation`` when one of them was written in place after it
was saved. A trace writes functionally, so its backward would silently use the value from
before the write. This pass finds, in the joint trace, the forward values each op's backward
reads (what thunder's VJP rules use, standing for what eager's backward node saves) that a
later in-place write overwrote (``info.versions``, recorded by acquisition:
``thunder/core/versions.py``), and notes each in ``info.overwritten_saves`` with its
message and the cotangents that reach that op's backward: the compiled backward raises it when
one of them is given (``thunder/autograd/function.py``), so a backward that does not
pass through the op, and a program that never calls backward, are unaffected, as in eager.

Thunder's rules read what eager saves for most ops (an op-database test checks every op);
the ops where they knowingly differ are listed, with the reason, in
``tests/autograd/test_inplace_autograd.py`` (``KNOWN_DIFFERENCES``). Writes by the caller after the
call are torch's own check of what the compiled function saved
(``thunder/autograd/function.py``). One more known difference: the compiled backward is
one node, run whole, so ``torch.autograd.grad(loss, inputs=[w])`` raises when an op whose
saved value was overwritten feeds only other inputs' gradients, where eager skips that op.

Before (the joint trace of ``y = x.exp(); y.add_(1); return y``)::

    def joint(x, g_t1):
      t0 = ltorch.exp(x)
      t1 = ltorch.add(t0, 1)      # the write into y
      t2 = prims.mul(g_t1, t0)    # backward of exp: reads t0, which add_ overwrote
      return ((t1,), (t2,))

After: the same trace, with ``info.overwritten_saves == [OverwrittenSave(message=
"...t0... saved by ltorch.exp ... written by torch.Tensor.add_ ...", cotangents=(0,))]``.
"""

from __future__ import annotations

from thunder.core.passinfo import OverwrittenSave
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.source import SourceLocation
from thunder.core.subclass import SubclassProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.core.versions import Versions, Write


class SavedValueOverwrittenError(RuntimeError):
    """A value saved for the backward was written in place before ``backward()``."""


def _where(what: str, loc: SourceLocation | None) -> str:
    if loc is None:
        return f"\n  {what} (no source line)"
    code = loc.line()
    return f"\n  {what} at {loc.filename}:{loc.lineno} in {loc.function}" + (f": {code}" if code else "")


def _role(value: TensorProxy, op: BoundSymbol) -> str:
    """What ``value`` is to ``op``: its result, or which of its arguments."""
    outs = proxies_in(op.output)
    if any(o.name == value.name for o in outs):
        return "its result" if len(outs) == 1 else "one of its results"
    for i, a in enumerate(op.args):
        if any(p.name == value.name for p in proxies_in(a)):
            return f"its argument {i}"
    return "a value it reads"


def _message(value: TensorProxy, op: BoundSymbol, writes: list[Write]) -> str:
    dtype = str(value.meta_dtype).removeprefix("torch.")
    name = op.sym.id
    first = writes[0]
    times = "" if len(writes) == 1 else f" ({len(writes)} in-place writes since)"
    if isinstance(value, SubclassProxy) and all(w.op.startswith("torch._foreach_") for w in writes):
        # (eager's foreach ops do not count their writes into a subclass value's version)
        eager = (
            "eager PyTorch raises this error for a plain tensor; for a tensor subclass value it does not count a "
            "foreach op's write and computes the gradient from the new value, which thunder does not do"
        )
    else:
        eager = "eager PyTorch raises this error at backward() too"
    return (
        "thunder: one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {name} saved {_role(value, op)} ({value.name}, {dtype} of shape {tuple(value.meta_shape)}) "
        f"for its backward, and {first.op} then wrote into it{times}; {eager}. Write into a .clone() instead, "
        "or write before the op reads the tensor."
        + _where(f"saved by {name}", op.source)
        + _where(f"written by {first.op}", first.source)
    )


def check_saved_versions(joint: Trace) -> Trace:
    versions: Versions | None = joint.info.versions
    if versions is None or joint.info.cotangents is None:
        return joint
    forward = [b for b in joint.bound_symbols if Tag.BACKWARD not in b.tags]
    backward = [b for b in joint.bound_symbols if Tag.BACKWARD in b.tags]
    position = {}  # value name -> (index, forward BoundSymbol making it)
    for i, b in enumerate(forward):
        for p in proxies_in(b.output):
            position.setdefault(p.name, (i, b))

    # per forward op (named by its outputs): the forward values its backward reads, and the
    # cotangents its backward depends on
    reach: dict[str, set[int]] = {c: {i} for i, c in enumerate(joint.info.cotangents)}
    reads: dict[tuple[str, ...], dict[str, TensorProxy]] = {}
    reached: dict[tuple[str, ...], set[int]] = {}
    for r in backward:
        key = r.info.differentiates or r.info.recomputes
        args = proxies_in((r.args, r.kwargs))
        deps = set().union(*(reach.get(a.name, ()) for a in args))
        if key is not None and r.info.accumulates is None:
            reached.setdefault(key, set()).update(deps)
            saved = reads.setdefault(key, {})
            for a in args:
                if a.name not in reach and isinstance(a, TensorProxy):
                    saved[a.name] = a
        for o in proxies_in(r.output):
            reach[o.name] = deps

    found = []
    for key, saved in reads.items():
        if key[0] not in position:
            continue
        i, op = position[key[0]]
        op_args = [p.name for p in proxies_in((op.args, op.kwargs))]
        for name, value in saved.items():
            writes = versions.overwritten(name, key, op_args)
            if writes:
                message = _message(value, op, writes)
                found.append((i, OverwrittenSave(message, tuple(sorted(reached.get(key, ()))))))
                break
    if not found:
        return joint
    out = joint.derive("Saved values overwritten in place")
    out.bound_symbols = list(joint.bound_symbols)
    # eager's backward meets the latest op first: its error is the one raised
    out.info.overwritten_saves = [s for _, s in sorted(found, key=lambda f: -f[0])]
    return out
