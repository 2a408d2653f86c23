"""``verify(trace)``: structural checks run after every pass in tests.

Single assignment (no name is produced twice, no input is redefined) and every proxy is
defined before it is used, at the top level and inside each BoundSymbol's subsymbols.
"""

from __future__ import annotations

from thunder.core.proxies import proxies_in
from thunder.core.trace import Trace


class TraceVerificationError(AssertionError):
    pass


def verify(trace: Trace) -> None:
    # names the execution namespace provides (the jitted module, captured tensors)
    defined: set[str] = set(trace.ctx_objects)
    for p in proxies_in(trace.args):
        if p.name in defined:
            raise TraceVerificationError(f"{trace.name}: input {p.name} appears twice")
        defined.add(p.name)
    for i, bsym in enumerate(trace.bound_symbols):
        for p in proxies_in((bsym.args, bsym.kwargs)):
            if p.name not in defined:
                raise TraceVerificationError(
                    f"{trace.name}: bound symbol {i} ({bsym.sym.id}) uses {p.name} before it is defined"
                )
        _verify_subsymbols(trace, bsym, set(defined))
        for p in proxies_in(bsym.output):
            if p.name in defined:
                raise TraceVerificationError(
                    f"{trace.name}: bound symbol {i} ({bsym.sym.id}) assigns {p.name} a second time"
                )
            defined.add(p.name)
    for p in proxies_in(trace.output):
        if p.name not in defined:
            raise TraceVerificationError(f"{trace.name}: returns {p.name}, which is never defined")


def _verify_subsymbols(trace: Trace, bsym, defined: set[str]) -> None:
    for sub in bsym.subsymbols:
        for p in proxies_in((sub.args, sub.kwargs)):
            if p.name not in defined:
                raise TraceVerificationError(
                    f"{trace.name}: in {bsym.sym.id}, {sub.sym.id} uses {p.name} before it is defined"
                )
        _verify_subsymbols(trace, sub, set(defined))
        defined.update(p.name for p in proxies_in(sub.output))
