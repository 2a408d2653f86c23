"""Why Dynamo split a program: a ``GraphBreak`` read from the graph it ends.

Dynamo hands the backend each graph with ``gm.compile_subgraph_reason`` (a
``GraphCompileReason``): why that graph ended (``graph_break`` True for a break, False for the
function's return) and the user's stack at that point, innermost frame last. That record is
made by Dynamo while it compiles the graph we receive, so it needs no second run of the
program (``torch._dynamo.explain`` runs it again, with its side effects).
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class GraphBreak:
    """A graph break: Dynamo's reason and the user's source line where it happened."""

    reason: str  # the first line of Dynamo's message ("Unsupported Tensor.item() call ...")
    detail: str  # Dynamo's whole message (explanation, hints)
    filename: str
    lineno: int
    function: str
    code: str  # the source line
    stack: tuple[str, ...] = ()  # "file:line in fn" of each frame, outermost first

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"

    def __str__(self) -> str:
        code = f": {self.code}" if self.code else ""
        return f"graph break at {self.location}{code} ({self.reason})"


def break_after(gm) -> GraphBreak | None:
    """The graph break that ended ``gm`` (None when it ended at the function's return)."""
    why = getattr(gm, "compile_subgraph_reason", None)
    if why is None or not getattr(why, "graph_break", False):
        return None
    text = str(getattr(why, "reason", "") or "").strip()
    frames = list(getattr(why, "user_stack", None) or [])
    inner = frames[-1] if frames else None
    return GraphBreak(
        reason=_first_line(text),
        detail=text,
        filename=getattr(inner, "filename", "?"),
        lineno=getattr(inner, "lineno", 0) or 0,
        function=_user_function(getattr(inner, "name", "?")),
        code=(getattr(inner, "line", "") or "").strip(),
        stack=tuple(f"{f.filename}:{f.lineno} in {_user_function(f.name)}" for f in frames),
    )


def _first_line(text: str) -> str:
    line = text.splitlines()[0].strip() if text else "unknown reason"
    # Dynamo names a data-dependent jump "generic_jump TensorVariable()": say what it means
    if line.startswith("generic_jump"):
        return "data-dependent control flow (a branch on a tensor's value)"
    return line


_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")


def _user_function(name: str) -> str:
    """``torch_dynamo_resume_in_f_at_17`` (Dynamo's continuation of ``f``) -> ``f``."""
    m = _RESUME.match(name or "")
    return m.group(1) if m else name


@dataclasses.dataclass(frozen=True)
class SkippedFrame:
    """A function (or the rest of one, after a break) Dynamo gave up on: it runs as plain
    Python, its tensor ops eagerly, in no piece. Read from Dynamo's compilation record."""

    reason: str
    detail: str
    filename: str
    lineno: int
    function: str

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"

    def __str__(self) -> str:
        return f"Dynamo runs {self.function} eagerly from {self.location} ({self.reason})"


def skipped_frame(metrics) -> SkippedFrame | None:
    """The frame a ``torch._dynamo.utils.CompilationMetrics`` record says Dynamo failed to
    compile (None for a compilation that succeeded)."""
    text = str(getattr(metrics, "fail_reason", None) or "").strip()
    if not text:
        return None
    lineno = getattr(metrics, "fail_user_frame_lineno", None) or getattr(metrics, "co_firstlineno", 0) or 0
    filename = (
        getattr(metrics, "fail_user_frame_filename", None) or getattr(metrics, "co_filename", "?") or "?"
    )
    return SkippedFrame(
        reason=_first_line(text),
        detail=text,
        filename=filename,
        lineno=lineno,
        function=_user_function(getattr(metrics, "co_name", "?") or "?"),
    )
