"""The user's source lines behind a Dynamo graph.

Dynamo records on every FX node the user's stack where its op was called
(``node.meta["stack_trace"]``), and FX keeps a map from the lines of the generated
``forward`` to nodes (``gm._lineno_map``). thunder traces that generated code, so the
BoundSymbols of a piece first name ``<eval_with_key>.3:7``; ``point_at_user_lines`` turns
each into the user's line (``model.py:42 in forward``) so that the traces and the explorer
read in the user's terms.
"""

from __future__ import annotations

import dataclasses
import re
import traceback

from thunder.core.source import SourceLocation, is_user_file


@dataclasses.dataclass(frozen=True)
class SourceLine:
    """The user's source line a graph node came from (its innermost frame)."""

    filename: str
    lineno: int
    function: str
    code: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}: {self.code}"


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n\s*(?P<code>[^\n]*)')
_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")


def innermost(stack_trace: str | None) -> SourceLine | None:
    """The last frame of a node's ``stack_trace`` that is not torch's or thunder's (the user's
    call of ``torch.func.grad``, not functorch's code Dynamo inlined), else the last one;
    Dynamo's continuation functions named as the user's function they continue."""
    found = list(_FRAME.finditer(stack_trace or ""))
    if not found:
        return None
    m = next((f for f in reversed(found) if is_user_file(f.group("file"))), found[-1])
    fn = m.group("fn")
    resume = _RESUME.match(fn)
    return SourceLine(
        m.group("file"), int(m.group("line")), resume.group(1) if resume else fn, m.group("code").strip()
    )


def source_lines(gm) -> list[SourceLine]:
    """The user's lines of the graph's ops, in graph order, each once."""
    seen = {}
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module"):
            line = innermost(node.meta.get("stack_trace"))
            if line is not None:
                seen.setdefault((line.filename, line.lineno), line)
    return list(seen.values())


def _generated_file(gm) -> str | None:
    return getattr(getattr(gm.forward, "__code__", None), "co_filename", None)


def user_line_at(gm, lineno: int) -> SourceLine | None:
    """The user's line of the node that line ``lineno`` of ``gm.code`` runs."""
    lineno_map = getattr(gm, "_lineno_map", None)
    if not lineno_map:
        return None
    index = lineno_map.get(lineno - getattr(gm, "_prologue_start", 0))
    nodes = list(gm.graph.nodes)
    if index is None or not 0 <= index < len(nodes):
        return None
    return innermost(nodes[index].meta.get("stack_trace"))


def user_line_of(gm, exc: BaseException) -> str | None:
    """The user's line of the graph node whose generated line raised ``exc``."""
    filename = _generated_file(gm)
    lines = [
        line for frame, line in traceback.walk_tb(exc.__traceback__) if frame.f_code.co_filename == filename
    ]
    line = user_line_at(gm, lines[-1]) if lines else None
    return str(line) if line is not None else None


def point_at_user_lines(gm, entry) -> None:
    """Every BoundSymbol of ``entry``'s traces that names a line of ``gm``'s generated code
    names the user's line instead (the record only; nothing that runs reads it)."""
    filename = _generated_file(gm)
    found: dict[int, SourceLocation | None] = {}

    def location(lineno: int) -> SourceLocation | None:
        if lineno not in found:
            line = user_line_at(gm, lineno)
            found[lineno] = (
                None if line is None else SourceLocation(line.filename, line.lineno, line.function)
            )
        return found[lineno]

    def visit(bsyms) -> None:
        for b in bsyms:
            src = b.source
            if src is not None and src.filename == filename:
                b.source = location(src.lineno) or src
            visit(b.subsymbols)

    for kind in ("prologue", "computation", "epilogue", "backward"):
        for trace in getattr(entry, f"{kind}_traces", None) or ():
            visit(trace.bound_symbols)
