"""Static HTML views: what a notebook shows without a kernel, and the pieces the widgets use.

A ``Trace`` has no HTML display of its own: once the explorer is imported, IPython shows one
with ``trace_html(trace)`` and a jitted function or module with ``compilation_html(jfn)``
(formatters registered by ``explorer.notebook.display``). The explorer's own ``TraceModel`` and ``Pair``
get their notebook display (``_repr_mimebundle_``, text and HTML) from this module, which sets
it on their classes: the model imports no view. Nothing here needs a script: trees fold with
``<details>``. Every string that comes from user code (names, constants, source lines) goes
through ``escape``.
"""

from __future__ import annotations

import linecache
from html import escape

from explorer.model.communication import Collective, communication_of
from explorer.model.compilation import model_of
from explorer.model.modules import ModuleGroup, module_parameters
from explorer.model.nodes import Node, SourceInfo, is_cell_file
from explorer.model.pair import Pair
from explorer.model.passes import PassDiff, PassModel, TraceSeries
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel
from explorer.views.columns.pair import pair_html, pair_text
from explorer.views.overview import overview_html
from explorer.views.style import stylesheet
from explorer.views.text import lines_text, model_text, source_diff, source_text
from explorer.views.tree import DEFAULT_BUDGET, badges_html, split_comment, tree_html

# Elements per view in what a saved notebook keeps (a jitted function's or a trace's display,
# an explorer's static copy): smaller than the live views' DEFAULT_BUDGET.
STATIC_BUDGET = 600
LISTED_PROXIES = 200  # inputs / outputs listed in a BoundSymbol's details (a fusion region may have more)


def wrap(body: str, *, style: bool = True) -> str:
    """Put ``body`` in the explorer's root element, with its stylesheet."""
    css = f"<style>{stylesheet()}</style>" if style else ""
    return f'<div class="thx">{css}{body}</div>'


def trace_html(trace, *, open_depth: int = 1, budget: int = STATIC_BUDGET) -> str:
    """One trace as a collapsible tree (a ``Trace``'s notebook display, see ``explorer.notebook.display``)."""
    model = TraceModel.from_trace(trace)
    series = next(iter(model.series.values()))
    p = series.final
    return wrap(pass_header_html(series, p) + tree_html(p.nodes, open_depth=open_depth, budget=budget))


def compilation_html(obj, *, open_depth: int = 1, budget: int = STATIC_BUDGET) -> str:
    """A jitted function (or a TraceModel) as static HTML: each trace kind with its passes."""
    try:
        model = model_of(obj)
    except Exception as e:  # shown in the notebook instead of an empty output
        return wrap(f'<div class="err">explorer: cannot read the compilation: {escape(repr(e))}</div>')
    return model_html(model, open_depth=open_depth, budget=budget)


def model_html(
    model: TraceModel,
    *,
    open_depth: int = 1,
    budget: int = STATIC_BUDGET,
    kind: str | None = None,
    modules: bool = False,
    pair_open: bool = False,
    overview: bool = False,
) -> str:
    """Each trace kind with its final tree and what each pass changed; ``kind`` is the one
    shown open (default: the computation). Each tree and each pass's list of changes shows at
    most ``budget`` elements. With ``modules`` a trace with module scopes is shown grouped by
    module (its lines closed). A compilation with a backward ends with its forward and
    backward side by side (``explorer.views.columns.pair``), open with ``pair_open``. ``overview``:
    begin with the overview of the final program (``explorer.views.overview``), the kinds closed."""
    if kind is None or kind not in model.series:
        kind = "computation" if "computation" in model.series else next(iter(model.series), None)
    parts = [f'<div class="hd">thunder: {escape(model.title)}</div>']
    if model.stats:
        parts.append(f'<div class="note">{escape(_stats_line(model.stats))}</div>')
    if not model.series:
        parts.append('<div class="note">No traces yet: call the jitted function first.</div>')
    elif overview:
        parts.append(overview_html(model))
        kind = None
    for k, s in model.series.items():
        p = s.final
        times = model.timings.get(k)
        opened = " open" if k == kind else ""
        parts.append(
            f'<details class="kind" data-kind="{escape(k)}"{opened}><summary><b>{escape(k)}</b> '
            f'<span class="note">{len(s.passes)} passes, {len(p.nodes)} bound symbols in the final trace'
            f"</span></summary>"
        )
        parts.append(passes_strip_html(s, p.index))
        parts.append(comm_summary_html(p))
        tree = p.modules() if modules else None
        if tree is not None and tree.has_modules:
            parts.append('<div class="note">grouped by module: path, class, bound symbols, time</div>')
            parts.append(tree_html(p.nodes, open_depth=0, budget=budget, times=times, modules=tree))
        else:
            parts.append(tree_html(p.nodes, open_depth=open_depth, budget=budget, times=times))
        if len(s.passes) > 1:
            parts.append("<details><summary>What each pass changed</summary>")
            for before, q in zip(s.passes, s.passes[1:]):
                parts.append(
                    f'<details><summary>{q.index} {escape(q.name)} <span class="note">'
                    f"{escape(q.diff.summary())}, {fmt_seconds(q.seconds)}</span></summary>"
                    f"{diff_html(q, before, text=False, budget=budget)}</details>"
                )
            parts.append("</details>")
        parts.append("</details>")
    pair = model.pair()
    if pair is not None:
        parts.append(
            f'<details class="pairs"{" open" if pair_open else ""}><summary><b>forward and backward</b> '
            f'<span class="note">{escape(pair.summary())}</span></summary>'
            f"{pair_html(pair, budget=budget)}</details>"
        )
    if model.entries:
        parts.append(cache_html(model))
    return wrap("".join(parts))


def _stats_line(stats: dict) -> str:
    return ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in stats.items())


def pass_header_html(series: TraceSeries, p: PassModel) -> str:
    made = "first trace (acquisition)" if p.name == "acquisition" else f"made by {p.name}"
    took = f", {fmt_seconds(p.seconds)}" if p.seconds is not None else ""
    step = f"pass {p.index}/{len(series.passes) - 1}: " if len(series.passes) > 1 else ""
    return (
        f'<div class="hd">{escape(series.kind)} <span class="note">{step}'
        f"{escape(made)}{took}; {len(p.nodes)} bound symbols</span></div>{comm_summary_html(p)}"
    )


def passes_strip_html(series: TraceSeries, current: int) -> str:
    """The passes in order; the current one framed, the ones that changed nothing dashed."""
    items = []
    for p in series.passes:
        cls = "cur" if p.index == current else ("same" if not p.changed else "")
        tip = "first trace" if p.diff is None else p.diff.summary()
        items.append(f'<span class="{cls}" title="{escape(tip)}">{p.index} {escape(p.name)}</span>')
    return f'<div class="passes">{"".join(items)}</div>'


def diff_html(
    p: PassModel,
    before: PassModel | None = None,
    *,
    text: bool = True,
    budget: int | None = DEFAULT_BUDGET,
    text_budget: int | None = None,
) -> str:
    """What pass ``p`` changed: added / removed / rewritten BoundSymbols (at most ``budget``
    rows, shared between the three) and, with ``text``, a text diff of about ``text_budget``
    lines (None: ``budget``).
    ``del`` lines (a value freed after its last use) are folded away under a one-line summary:
    a pass that changed only those (delete-last-used) shows as that line, closed."""
    d = p.diff
    if d is None:
        return '<div class="note">The first trace: nothing to compare with.</div>'
    if not d.changed:
        return f'<div class="note">{escape(p.name)} changed nothing.</div>'
    text_part = ""
    if text and before is not None:
        limit = budget if text_budget is None else text_budget
        text_part = f'<div class="hd">Text diff</div>{text_diff_html(source_diff(before, p, limit=limit))}'
    if d.del_only:
        return (
            f'<details class="dels"><summary>{escape(d.summary())}: values freed after their last use '
            f'<span class="note">(folded: they change no value)</span></summary>'
            f"{_change_rows(d, p, before, budget)}{text_part}</details>"
        )
    rest = d.without_dels()
    out = [f'<div class="note">{escape(d.summary())}</div>', _change_rows(rest, p, before, budget)]
    if d.dels:
        dels = PassDiff(
            [k for k in d.added if k in d.dels],
            [k for k in d.removed if k in d.dels],
            {k: d.rewritten[k] for k in d.rewritten if k in d.dels},
        )
        n = len(d.dels)
        out.append(
            f'<details class="dels"><summary>and {n} del line{"" if n == 1 else "s"} '
            f'<span class="note">(folded)</span></summary>{_change_rows(dels, p, before, budget)}</details>'
        )
    out.append(text_part)
    return "".join(out)


def _change_rows(d: PassDiff, p: PassModel, before: PassModel | None, budget: int | None) -> str:
    shown = d.shown(budget)
    rows = []
    for k in shown.removed:
        n = before.find(k) if before is not None else None
        rows.append(f'<div class="drem ln">- {escape(n.line if n else k)}</div>')
    for k in shown.added:
        n = p.find(k)
        rows.append(f'<div class="dadd ln">+ {escape(n.line if n else k)}</div>')
    for k in shown.rewritten:
        old, new = d.rewritten[k]
        was = _claimed_from(before.find(k), p.find(k)) if before is not None else None
        if was is not None:  # the same call, now by an executor's symbol: one line
            rows.append(
                f'<div class="ln dre">~ {escape(new)} <span class="note">was {escape(was)}</span></div>'
            )
            continue
        rows.append(f'<div class="ln"><span class="drem">- {escape(old)}</span><br>')
        rows.append(f'<span class="dadd">+ {escape(new)}</span></div>')
    if shown.left:
        rows.append(f'<div class="more">... {shown.left} more changes</div>')
    return "".join(rows)


def _claimed_from(old, new) -> str | None:
    """The symbol a rewritten line called before, when that is all that changed on the line
    (``prims.sin(x)`` -> ``torch.sin(x)``: an executor claimed it); else None."""
    if not isinstance(old, Node) or not isinstance(new, Node) or old.sym_id == new.sym_id:
        return None
    if old.line.replace(old.sym_id + "(", new.sym_id + "(", 1) != new.line:
        return None
    return old.sym_id


def text_diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = ""
        if line.startswith("+") and not line.startswith("+++"):
            cls = "dadd"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "drem"
        elif line.startswith("@@"):
            cls = "dhunk"
        elif line.startswith("... "):
            cls = "more"
        lines.append(f'<span class="{cls}">{escape(line)}</span>' if cls else escape(line))
    return f"<pre>{chr(10).join(lines) or '(the printed traces are the same)'}</pre>"


def lines_html(p: PassModel, budget: int | None = DEFAULT_BUDGET) -> str:
    """The top-level lines of a pass as they print, without their subsymbols (at most
    ``budget``): a light listing of a pass, where a tree of it is too heavy to repeat."""
    return f"<pre>{escape(lines_text(p, budget))}</pre>"


def source_html(p: PassModel, budget: int | None = DEFAULT_BUDGET) -> str:
    """The printed trace, about ``budget`` lines of it (None: all)."""
    return f"<pre>{escape(source_text(p, budget))}</pre>"


def details_html(
    n: Node, series: TraceSeries, seconds: float | None = None, p: PassModel | None = None
) -> str:
    """Everything about one BoundSymbol: metadata, executor and who declined, source; for a
    collective what it moves and on which group, and (given its pass ``p``) its wait and the
    lines that overlap it."""
    rows = [
        ("id", escape(n.id)),
        ("symbol", f"<code>{escape(n.sym_id)}</code>"),
        *([("runs as", f"<code>{escape(n.line)}</code>")] if n.via is not None else []),
        ("executor", escape(n.executor or "none (not claimed)") + badges_html(n)),
    ]
    if n.collective is not None:
        rows += _collective_rows(n, p)
    declined = n.info.get("declined") if isinstance(n.info, dict) else None
    if declined:
        items = declined.items() if isinstance(declined, dict) else [("", declined)]
        text = "<br>".join(f"<b>{escape(str(k))}</b>: {escape(str(v))}" for k, v in items)
        rows.append(("declined by", text))
    for k, v in (n.info or {}).items():
        if k not in ("declined", "claimed_by"):
            rows.append((escape(str(k)), escape(str(v))))
    if seconds is not None:
        rows.append(("measured", fmt_seconds(seconds)))
    rows.append(("inputs", _proxy_table(n.inputs, series)))
    rows.append(("outputs", _proxy_table(n.outputs, series)))
    if n.children:
        rows.append(("subsymbols", f"{len(n.children)} ({n.size() - 1} below in all)"))
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    out = [f'<div class="hd ln">{escape(n.shown_line)}</div>', f'<table class="kv">{table}</table>']
    repro = n.repro
    if repro is not None:
        out.append(
            f"<details><summary>standalone repro of this region ({escape(n.executor or '')})</summary>"
            f'<pre class="repro">{escape(repro)}</pre></details>'
        )
    if n.source is not None:
        out.append(source_context_html(n.source.file, n.source.line, n.source.function))
    else:
        out.append('<div class="note">No user source line recorded for this bound symbol.</div>')
    return "".join(out)


def _collective_rows(n: Node, p: PassModel | None) -> list[tuple[str, str]]:
    start = Collective.of(n)
    c = None
    if p is not None:  # a prim below the executor's line is paired through the values it shares
        comm = communication_of(p)
        names = n.outputs if start is not None else n.inputs
        c = comm.of(n.id) or next((x for name in names if (x := comm.making(name)) is not None), None)
    if start is None:  # a wait
        if c is None:
            return [("collective", f"ends the collective that makes {escape(', '.join(n.inputs))}")]
        return [("collective", f"ends <code>{escape(c.id)}</code>: {escape(c.label())}")]
    rows = [("collective", escape(start.label()))]
    if c is None:
        return rows
    if c.wait is None:
        return rows + [("in flight", "not waited for in this trace")]
    shown = [m for i in c.overlap[:LISTED_PROXIES] if (m := p.find(i)) is not None]
    body = "<br>".join(f'<span class="ln">{escape(m.line)}</span>' for m in shown) or "nothing"
    if len(c.overlap) > LISTED_PROXIES:
        body += f'<br><span class="more">... {len(c.overlap) - LISTED_PROXIES} more</span>'
    return rows + [
        ("in flight until", f"<code>{escape(c.wait)}</code> (its wait)"),
        (f"overlaps ({len(c.overlap)})", body),
    ]


def comm_summary_html(p: PassModel) -> str:
    """One note: the pass's collectives in all and by kind ("" when it has none)."""
    summary = communication_of(p).summary()
    return f'<div class="note comm">{escape(summary.text())}</div>' if summary.count else ""


def module_details_html(
    g: ModuleGroup, p: PassModel, model: TraceModel, kind: str, times: dict[str, float] | None = None
) -> str:
    """One module of a pass: its class, caller, ops, time, submodules, and the inputs its lines
    read (its parameters and buffers) with where the prologue unpacks and checks each."""
    subs = [i for i in g.items if isinstance(i, ModuleGroup)]
    rows = [
        ("module", f"<code>{escape(g.name)}</code>"),
        ("class", escape(g.cls)),
        ("called from", escape(g.parent.name + f" ({g.parent.cls})") if g.parent is not None else "-"),
        ("bound symbols", f"{g.op_count()} (its submodules' included)"),
    ]
    t = g.seconds(times)
    if t is not None:
        rows.append(("measured", fmt_seconds(t)))
    if subs:
        rows.append(("submodules", "<br>".join(escape(c.summary(times)) for c in subs)))
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    out = [
        f'<div class="hd">module {escape(g.name)} ({escape(g.cls)})</div>',
        f'<table class="kv">{table}</table>',
    ]
    params = module_parameters(g, p.args)
    if not params:
        out.append('<div class="note">Its lines read no input of the trace.</div>')
        return "".join(out)
    series = model.series.get(kind)
    links = model.input_links() if kind == "computation" else {}
    pro = model.series.get("prologue")
    out.append(
        '<div class="hd">Inputs its lines read (parameters, buffers) and where they enter the prologue</div>'
    )
    rows = ['<table class="kv"><tr><th>input</th><th>type</th><th>read in</th><th>prologue</th></tr>']
    for name, where in params[:LISTED_PROXIES]:
        info = series.proxies.get(name) if series is not None else None
        lines = [pro.final.find(i) for i in links.get(name, ())] if pro is not None else []
        # the line that unpacks it and its checks (not the unpacks of the modules that hold it)
        lines = [n for n in lines if n is not None and (name in n.outputs or not n.outputs)]
        body = "<br>".join(escape(_check_of(n, name)) for n in lines)
        rows.append(
            f"<tr><td><code>{escape(name)}</code></td><td>{escape(info.label() if info else '?')}</td>"
            f'<td>{escape(where or "<root>")}</td><td class="ln">{body or "-"}</td></tr>'
        )
    rows.append("</table>")
    if len(params) > LISTED_PROXIES:
        rows.append(f'<div class="more">... {len(params) - LISTED_PROXIES} more</div>')
    out.append("".join(rows))
    return "".join(out)


def _check_of(n, name: str, comment: bool = False) -> str:
    """A prologue line as it concerns the input ``name`` (without an output's type comment,
    or with every comment): of a line that checks several tensors (``check_tensors``, whose
    arguments are a model's parameters), that line with this tensor alone."""
    code, _, rest = n.line.partition("  # ")
    if code.startswith("pythonex.check_tensors("):
        code = f"pythonex.check_tensors(..., {name}, ...)"
        return f"{code}  # {rest}" if comment and rest else code
    return n.line if comment else split_comment(n)[0]


def _proxy_table(names, series: TraceSeries) -> str:
    if not names:
        return '<span class="note">none</span>'
    out = []
    for name in names[:LISTED_PROXIES]:
        info = series.proxies.get(name)
        out.append(f"<code>{escape(name)}</code>: {escape(info.type if info else '?')}")
    if len(names) > LISTED_PROXIES:
        out.append(f'<span class="more">... {len(names) - LISTED_PROXIES} more</span>')
    return "<br>".join(out)


def source_context_html(filename: str, lineno: int, function: str, context: int = 3) -> str:
    lines = []
    for i in range(max(1, lineno - context), lineno + context + 1):
        text = linecache.getline(filename, i)
        if not text and i > lineno:
            break
        mark = ">" if i == lineno else " "
        row = f"{mark}{i:>5}  {text.rstrip()}"
        lines.append(f"<b>{escape(row)}</b>" if i == lineno else escape(row))
    where = f"{filename}:{lineno} in {function}"
    if is_cell_file(filename):  # a notebook cell: as the tree names it
        where = f"{SourceInfo(filename, lineno, function, '').location()} in {function}"
    code = "\n".join(lines) if any(lines) else "(source not available)"
    return f'<div class="hd">Source <span class="note">{escape(where)}</span></div><pre>{code}</pre>'


def cache_html(model: TraceModel) -> str:
    """The compiled entries, why each was compiled, and where each input is unpacked and checked."""
    rows = []
    for e in model.entries:
        why = "<br>".join(escape(r) for r in e.miss_reasons) or '<span class="note">first compilation</span>'
        cur = " (shown)" if model.entry_index is not None and e.index == model.entry_index else ""
        inputs = ", ".join(escape(i) for i in e.inputs)
        sizes = "<br>".join(f"<code>{escape(s)}</code> = {escape(what)}" for s, what in e.symbols.items())
        if e.relations:
            sizes += "<br>checked: <code>" + escape(" and ".join(e.relations)) + "</code>"
        sizes = sizes or '<span class="note">none</span>'
        rows.append(
            f"<tr><td>{e.index}{cur}</td><td><code>{inputs}</code></td><td>{why}</td><td>{sizes}</td></tr>"
        )
    parts = [
        "<details><summary><b>cache</b> "
        f'<span class="note">{len(model.entries)} compiled entr{"y" if len(model.entries) == 1 else "ies"}'
        "</span></summary>",
        '<table class="kv"><tr><th>entry</th><th>computation inputs</th>'
        "<th>why it was compiled (the prologue check of each older entry that failed)</th>"
        "<th>symbolic sizes (which dimension, since which miss) and the relations checked</th></tr>",
        "".join(rows),
        "</table>",
    ]
    links = model.input_links()
    pro = model.series.get("prologue")
    if links and pro is not None:
        parts.append('<div class="hd">Where the prologue unpacks and checks each input</div>')
        for name, ids in links.items():
            lines = [pro.final.find(i) for i in ids]
            body = "\n".join(escape(_check_of(n, name, comment=True)) for n in lines if n is not None)
            body = body or "(not found in the prologue)"
            parts.append(
                f"<details><summary><code>{escape(name)}</code></summary><pre>{body}</pre></details>"
            )
    parts.append("</details>")
    return "".join(parts)


def _model_bundle(self: TraceModel, include=None, exclude=None) -> dict:
    return {"text/plain": model_text(self), "text/html": model_html(self)}


def _pair_bundle(self: Pair, include=None, exclude=None) -> dict:
    return {
        "text/plain": pair_text(self, budget=STATIC_BUDGET),
        "text/html": wrap(pair_html(self, budget=STATIC_BUDGET)),
    }


# How a model and a pair show in a notebook: set here, as the model imports no view
TraceModel._repr_mimebundle_ = _model_bundle
Pair._repr_mimebundle_ = _pair_bundle
