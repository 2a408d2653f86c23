"""The explorer of a ``thunderfx`` program: its pieces in execution order, the breaks between.

    cfn = thunder.dynamo.thunderfx(fn); cfn(x)
    explorer.explore(cfn)               # the last call: piece, graph break, piece, ...
    explorer.to_html(cfn, "cfn.html")   # the same as one self-contained page
    %thunder_trace --thunderfx fn(x)    # compile with thunderfx, run, explore

Each piece opens into the explorer of its thunder function (its traces, passes, backward), as
``explorer.explore(jfn)`` shows a ``thunder.jit`` function; a piece that runs eagerly shows
thunder's reason and the graph's code instead. A graph break shows Dynamo's reason and the
user's source line. The program is read through its public attributes (``last_run``,
``pieces``, ``Piece.jfn``, ``GraphBreak``) only.
"""

from __future__ import annotations

import sys
from html import escape

import ipywidgets as w

from explorer.model.compilation import model_of
from explorer.notebook.widget import Explorer
from explorer.views.html import compilation_html, wrap
from explorer.views.report import report_html
from explorer.views.style import stylesheet

PIECES_CSS = """
.thx .brk{margin:4px 0 4px 14px;padding:3px 8px;border-left:4px solid #e65100;background:#fff3e0}
.thx .brk .why{font-weight:600;color:#e65100}
.thx .brk code{white-space:pre-wrap}
.thx .piece>summary{font-weight:600;cursor:pointer}
.thx .piece.eager>summary{color:#8d6e63}
.thx iframe.piece-page{width:100%;height:900px;border:1px solid #ddd}
"""


def is_program(obj) -> bool:
    """Whether ``obj`` is what ``thunder.dynamo.thunderfx`` returns (never imports Dynamo)."""
    module = sys.modules.get("thunder.dynamo")
    return module is not None and isinstance(obj, module.ThunderFX)


def _is_break(step) -> bool:
    return not hasattr(step, "jfn")


def _steps(program) -> list:
    return list(program.last_run)


def _not_run(program) -> list:
    ran = {id(s) for s in _steps(program) if not _is_break(s)}
    return [p for p in program.pieces if id(p) not in ran]


def break_html(brk) -> str:
    """A graph break: Dynamo's reason, the user's line, Dynamo's whole message folded."""
    detail = ""
    if brk.detail and brk.detail != brk.reason:
        detail = f"<details><summary>Dynamo's message</summary><pre>{escape(brk.detail)}</pre></details>"
    return (
        f'<div class="brk"><span class="why">graph break: {escape(brk.reason)}</span><br>'
        f"at {escape(brk.location)}: <code>{escape(brk.code)}</code> "
        f'<span class="note">(the Python here runs eagerly, every call)</span>{detail}</div>'
    )


def fallback_html(piece) -> str:
    fb = piece.fallback
    line = f"<br>your line: <code>{escape(fb.user_line)}</code>" if fb.user_line else ""
    return (
        f'<div class="note warn">This piece runs eagerly: thunder could not compile it.</div>'
        f"<pre>{escape(fb.error)}</pre>{line}"
        f"<details><summary>The graph's code</summary><pre>{escape(piece.gm.code)}</pre></details>"
    )


def skipped_html(program) -> str:
    """The functions Dynamo gave up on (they run as plain Python, in no piece)."""
    return "".join(
        f'<div class="brk"><span class="why">Dynamo runs {escape(f.function)} eagerly: {escape(f.reason)}</span>'
        f"<br>from {escape(f.location)}<details><summary>Dynamo's message</summary><pre>{escape(f.detail)}</pre>"
        "</details></div>"
        for f in getattr(program, "skipped", ())
    )


def _header(program) -> str:
    pieces, breaks = program.pieces, program.breaks
    eager = sum(p.fallback is not None for p in pieces)
    return (
        f'<div class="hd">thunderfx: {escape(program.__name__)}</div>'
        f'<div class="note">{len(pieces)} pieces compiled, {len(breaks)} graph breaks, '
        f"{eager} pieces run eagerly, {program.calls} calls; the last call, in order:</div>"
    )


def program_html(program, *, budget: int | None = None) -> str:
    """Static HTML (a saved notebook's view): each step of the last call, pieces folded."""
    options = {} if budget is None else {"budget": budget}
    parts = [f"<style>{PIECES_CSS}</style>", _header(program)]
    if not program.calls:
        parts.append('<div class="note">Not called yet: call the program first.</div>')

    def piece(p) -> str:
        eager = " eager" if p.fallback is not None else ""
        body = fallback_html(p) if p.fallback is not None else compilation_html(p.jfn, **options)
        return f'<details class="piece{eager}"><summary>{escape(p.describe())}</summary>{body}</details>'

    for step in _steps(program):
        parts.append(break_html(step) if _is_break(step) else piece(step))
    parts.append(skipped_html(program))
    rest = _not_run(program)
    if rest:
        parts.append(
            '<div class="note">Pieces the last call did not run (another branch, an older guard):</div>'
        )
        parts += [piece(p) for p in rest]
    return wrap("".join(parts))


class ProgramExplorer:
    """The widget: a title, then one folded section per piece of the last call (opening one
    builds the explorer of its thunder function) with the graph breaks between them."""

    def __init__(self, program, *, view: str = "tree", depth: int = 1, modules: bool = False, notes=()):
        self.program = program
        self.options = {"view": view, "depth": depth, "modules": modules}
        self.explorers: dict[int, Explorer] = {}  # piece index -> its explorer, once opened
        self.sections: list[w.Widget] = []
        self.result = None
        title = w.HTML(
            wrap(_header(program) + "".join(f'<div class="note warn">{escape(n)}</div>' for n in notes))
        )
        items = [title, w.HTML(f"<style>{stylesheet()}{PIECES_CSS}</style>")]
        for step in _steps(program):
            if _is_break(step):
                section = w.HTML(wrap(break_html(step), style=False))
            else:
                section = self._piece_section(step)
            self.sections.append(section)
            items.append(section)
        if getattr(program, "skipped", None):
            items.append(w.HTML(wrap(skipped_html(program), style=False)))
        rest = _not_run(program)
        if rest:
            items.append(
                w.HTML(wrap('<div class="note">Pieces the last call did not run:</div>', style=False))
            )
            for p in rest:
                section = self._piece_section(p)
                self.sections.append(section)
                items.append(section)
        self.root = w.VBox(items)

    def _piece_section(self, piece) -> w.Accordion:
        acc = w.Accordion(children=[w.HTML("")], selected_index=None)
        acc.set_title(0, piece.describe())
        acc.piece = piece

        def opened(change):
            if change["new"] == 0:
                acc.children = [self.open(piece)]

        acc.observe(opened, names="selected_index")
        return acc

    def open(self, piece) -> w.Widget:
        """The explorer of ``piece`` (built on first use), or its eager fallback's reason."""
        if piece.fallback is not None:
            return w.HTML(wrap(fallback_html(piece)))
        if piece.index not in self.explorers:
            self.explorers[piece.index] = Explorer(model_of(piece.jfn), source=piece.jfn, **self.options)
        return self.explorers[piece.index].root

    def text(self) -> str:
        return self.program.summary()

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.root._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = program_html(self.program)
        bundle["text/plain"] = self.text()
        return bundle


def explore_program(program, args=None, kwargs=None, **options) -> ProgramExplorer:
    """``explorer.explore(cfn)``; with ``args`` the program is called on them first."""
    result = None
    if args is not None or kwargs is not None:
        result = program(*(args or ()), **(kwargs or {}))
    ex = ProgramExplorer(program, **options)
    ex.result = result
    return ex


def program_report_html(program, **options) -> str:
    """One page: the steps of the last call; each piece folds open into its own report (an
    inline frame holding ``explorer.to_html(piece.jfn)``'s page, so their controls stay apart)."""
    parts = [_header(program)]

    def piece(p) -> str:
        eager = " eager" if p.fallback is not None else ""
        if p.fallback is not None:
            body = fallback_html(p)
        else:
            page = report_html(p.jfn, title=f"{program.__name__}: {p.describe()}", **options)
            body = f'<iframe class="piece-page" srcdoc="{escape(page, quote=True)}"></iframe>'
        return f'<details class="piece{eager}"><summary>{escape(p.describe())}</summary>{body}</details>'

    for step in _steps(program):
        parts.append(break_html(step) if _is_break(step) else piece(step))
    parts.append(skipped_html(program))
    rest = _not_run(program)
    if rest:
        parts.append('<div class="note">Pieces the last call did not run:</div>')
        parts += [piece(p) for p in rest]
    css = stylesheet() + PIECES_CSS + "body{margin:16px 22px;background:#fff}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>thunderfx: {escape(program.__name__)}</title><style>{css}</style></head>"
        f'<body><div class="thx">{"".join(parts)}</div></body></html>\n'
    )


def trace_program_call(fn, args: tuple, kwargs: dict, opts, notes) -> ProgramExplorer:
    """``%thunder_trace`` of a thunderfx program (or, with ``--thunderfx``, of a function it
    compiles): run the call, explore the pieces."""
    if not is_program(fn):
        from thunder.dynamo import thunderfx

        fn = thunderfx(fn, **({} if opts.executors is None else {"executors": opts.executors}))
    return explore_program(
        fn, args, kwargs, view=opts.view, depth=opts.depth, modules=opts.modules, notes=notes
    )
