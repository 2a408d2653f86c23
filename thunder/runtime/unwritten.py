"""What a cached call did not write because its compiled program raised.

Eager runs the user's writes where the code makes them: ``self.calls += 1`` before an op that
raises is kept. A compiled program makes its writes after its ops: the in-place copies into
inputs at the end of the computation, the Python writes (attributes, items, torch's global
state) in the epilogue. When an op raises at run time (a non-positive-definite matrix, an index
out of range on the values of this call), the writes that come after it are not made, where
eager would have made those the code wrote first. ``note_unwritten`` says on the error which
writes were not made, so the difference is never silent.
"""

from __future__ import annotations

import traceback

from thunder.core.proxies import Proxy
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag


def note_unwritten(error: BaseException, computation_trace, epilogue_trace) -> None:
    """Add to ``error`` (raised by the computation of a cached call) the writes the call did
    not make: the computation's in-place writes after the line that raised (all of them when
    that line is not found) and every write of the epilogue, which did not run."""
    after = _lines_after_failure(error)
    copies = [
        b
        for b in (after if after is not None else computation_trace.bound_symbols)
        if Tag.WRITEBACK in b.tags
    ]
    writes = copies + [b for b in epilogue_trace.bound_symbols if Tag.WRITEBACK in b.tags]
    if not writes:
        return
    names = ", ".join(dict.fromkeys(_label(b) for b in writes))
    error.add_note(
        f"thunder: the compiled program raised before making these writes, which were not made: {names}. "
        "Eager keeps those its code made before the failing line; a compiled call makes them after its ops"
    )


def _lines_after_failure(error: BaseException) -> list[BoundSymbol] | None:
    """The top-level BoundSymbols printed after the innermost line of a compiled trace in
    ``error``'s traceback, in order (None when no compiled trace's line is in it)."""
    found = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        fn = frame.f_globals.get(frame.f_code.co_name)
        program = getattr(fn, "__thunder_program__", None)
        if program is not None and fn.__code__ is frame.f_code:
            found = (program, lineno)
    if found is None:
        return None
    program, lineno = found
    seen, out = set(), []
    for line in sorted(program.line_map):
        bsym = program.line_map[line]
        if line > lineno and id(bsym) not in seen and program.bsym_at(lineno) is not bsym:
            seen.add(id(bsym))
            out.append(bsym)
    return out


def _label(bsym: BoundSymbol) -> str:
    """The write as the user's code spells it: ``x`` (in place), ``module.calls``, ``d['k']``."""
    args = bsym.args
    name = bsym.sym.name
    if name == "copy_" and len(args) >= 2:
        return f"{_name(args[1])} (in place)"
    if name in ("python_setattr", "python_delattr"):
        return f"{_name(args[0])}.{args[1]}"
    if name in ("python_setitem", "python_delitem"):
        return f"{_name(args[0])}[{_name(args[1])}]"
    if name == "set_torch_state":
        return f"torch's {args[0]}"
    return f"{name}({_name(args[0])})" if args else name


def _name(v) -> str:
    return v.name if isinstance(v, Proxy) else repr(v)
