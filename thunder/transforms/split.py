"""The forward/backward split of a joint trace (``thunder/transforms/grad.py``).

The forward returns the outputs and the values saved for backward; the backward takes those
values and the outputs' cotangents and returns one gradient (or None) per input. What
crosses the cut is in both signatures, in ``info.saved_for_backward`` of both traces, and
tagged ``saved_for_backward`` on the forward BoundSymbols that compute it.

Before::

    def joint(x, g_t0):
      t0 = ltorch.sin(x)
      t1 = prims.cos(x)  # backward
      t2 = prims.mul(g_t0, t1)  # backward
      return ((t0,), (t2,))

After::

    def forward(x):                     def backward(x, g_t0):
      t0 = ltorch.sin(x)                  t1 = prims.cos(x)
      return ((t0,), (x,))                t2 = prims.mul(g_t0, t1)
                                          return (t2,)
"""

from __future__ import annotations

from thunder.core.proxies import proxies_in
from thunder.core.tags import Tag
from thunder.core.trace import Trace


def split_forward_backward(joint: Trace) -> tuple[Trace, Trace]:
    fw_bsyms = [b for b in joint.bound_symbols if Tag.BACKWARD not in b.tags]
    bw_bsyms = [b for b in joint.bound_symbols if Tag.BACKWARD in b.tags]
    outputs, grads = joint.output
    n_ct = len(joint.info.cotangents)
    fw_args, cotangents = joint.args[: len(joint.args) - n_ct], joint.args[len(joint.args) - n_ct :]

    defined = {p.name for p in cotangents} | {p.name for b in bw_bsyms for p in proxies_in(b.output)}
    used = {p.name for p in proxies_in(grads)} | {
        p.name for b in bw_bsyms for p in proxies_in((b.args, b.kwargs))
    }
    # (and what a backward of the backward reads saved: transforms/double_backward.py)
    wanted = (used - defined) | set(joint.info.kept_for_double_backward) | set(joint.info.symbols)
    saved, seen = [], set()
    for p in proxies_in(fw_args) + [p for b in fw_bsyms for p in proxies_in(b.output)]:
        if p.name in wanted and p.name not in seen:
            seen.add(p.name)
            saved.append(p)
    names = {p.name for p in saved}

    fw = joint.derive("Split: forward")
    fw.name = "forward"
    fw.tags.add("forward")
    fw.args = list(fw_args)
    fw.output = (tuple(outputs), tuple(saved))
    fw.bound_symbols = []
    for b in fw_bsyms:
        # the forward runs without autograd recording: an enable_grad block would record
        tags = b.tags - {Tag.ENABLE_GRAD}
        if {p.name for p in proxies_in(b.output)} & names:
            tags |= {Tag.SAVED_FOR_BACKWARD}
        fw.bound_symbols.append(b if tags == b.tags else b.from_bsym(tags=tags))
    fw.info.saved_for_backward = [p.name for p in saved]

    bw = joint.derive("Split: backward")
    bw.name = "backward"
    bw.tags = {"backward"}
    bw.args = list(saved) + list(cotangents)
    bw.output = tuple(grads)
    bw.bound_symbols = bw_bsyms
    bw.grad_enabled = False
    bw.info.saved_for_backward = [p.name for p in saved]
    return fw, bw
