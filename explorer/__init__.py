"""explorer: a Jupyter front end for thunder's traces.

    import explorer
    explorer.explore(jfn)                     # the interactive explorer of a jitted function
    explorer.explore(jfn, args=(x,))          # ... run on x first and show measured times
    explorer.graph_of(jfn, depth=1)           # the final computation trace as a graph
    explorer.explore(jfn, modules=True)       # ... grouped by nn.Module (tree and graph)
    explorer.graph_of(jfn, modules=True)      # module clusters, repeated layers folded
    explorer.to_html(jfn, "report.html")      # one self-contained page, works offline
    explorer.pair_of(jfn)                     # forward and backward side by side, links between
    explorer.memory(jfn, "backward")          # bytes allocated / freed / live per line, the peak
    explorer.timeline(jfn, x).save("trace.json")  # per-line spans and memory; opens in Perfetto
    explorer.compare(jfn, (x,), executors=[["torch"], ["torchcompile", "torch"]])  # what if
    explorer.diff(jfn)                        # its last two cache entries: which check failed, what changed
    explorer.diff(jfn_a, jfn_b)               # two compilations (two executor lists) side by side
    %load_ext explorer                        # then: %thunder_trace fn(x)
    explorer.explore(cfn)                     # a thunderfx program: pieces and graph breaks
    explorer.save_rank(jfn, "traces/", args=(x,))  # in each worker of a distributed run
    ranks = explorer.load_ranks("traces/")    # in the notebook: every rank, times per line compared
    explorer.explore(ranks)                   # ... the explorer with a rank switch

Layout: traces -> ``explorer.model.traces.TraceModel`` (plain data) -> views (``text``, ``tree``
and ``html`` static, ``graph`` graphviz, ``widget`` ipywidgets, ``report`` a page). Imports
point one way, from the views down to the model. thunder never imports this package;
importing it registers IPython displays for traces and jitted functions (``explorer.notebook.display``)
and imports the modules that set the model's methods that need them (``PassModel.modules()``,
``TraceModel.pair()``, ``Pair.text()`` and ``.graph()``, the displays of a model and a pair).
The other imports here are lazy, so showing a trace does not load ipywidgets. (The functions
are ``model_of`` and ``graph_of``: ``explorer.model.traces`` and ``explorer.views.graph`` are the submodules.)
"""

from __future__ import annotations


def model_of(obj, *, entry: int | None = None):
    """The ``TraceModel`` of a jitted function, a Trace or a list of traces."""
    from explorer.model.compilation import model_of

    return model_of(obj, entry=entry)


def pair_of(obj, *, backward_index: int = -1, entry: int | None = None):
    """The forward and backward of a jitted function (or a TraceModel) as a pair
    (``explorer.model.pair.Pair``): shows them side by side in a notebook, ``.text()`` and
    ``.graph()``; None when nothing was differentiated."""
    from explorer.model.compilation import model_of

    return model_of(obj, entry=entry).pair(backward_index)


def diff(a, b=None, *, entries: tuple[int, int] | None = None):
    """Two compilations side by side (``explorer.model.compilations.CompilationPair``): with one
    jitted function, two of its cache entries (``entries``, default the last two): why the newer
    one was compiled (the older one's check its inputs failed), the sizes that became symbols,
    the checks and lines that differ; with two (the same program under two executor lists),
    their last entries (or ``entries``): the lines each executor runs, the fusion regions, the
    lines that differ. Shows the two trees and graphs in columns in a notebook; ``.text()``,
    ``.graphs()``."""
    from explorer.model.compilation import model_of, title_of
    from explorer.model.compilations import Side, compilation_pair

    def side(jfn, entry, label):
        m = model_of(jfn, entry=entry)
        if m.entry_index is None:
            raise ValueError(f"explorer.diff: {label} has no compilation yet: call it first")
        return Side(f"{label} entry {m.entry_index}", m, m.entry_index)

    if b is None:
        n = len(model_of(a).entries)
        if n < 2 and entries is None:
            raise ValueError(
                f"explorer.diff: {title_of(a)} has {n} cache entry; two are needed (or pass a second function)"
            )
        i, j = entries if entries is not None else (-2, -1)
        name = title_of(a)
        return compilation_pair(side(a, i, name), side(a, j, name), one_function=True)
    i, j = entries if entries is not None else (-1, -1)
    la, lb = title_of(a), title_of(b)
    if la == lb:
        la, lb = f"{la} (1)", f"{lb} (2)"
    return compilation_pair(side(a, i, la), side(b, j, lb))


def explore(
    obj,
    args: tuple | None = None,
    kwargs: dict | None = None,
    *,
    view: str | None = None,
    depth: int = 1,
    kind: str | None = None,
    entry: int | None = None,
    modules: bool | None = None,
):
    """The interactive explorer for a jitted function (or a Trace, or a TraceModel). It opens
    on the overview of the final program (``view``: another view; with a ``kind``, its tree).

    With ``args`` (and ``kwargs``) the function is run on them first and every line of its
    final traces is timed, as ``%thunder_trace`` does (and the what-if control can run it).
    ``modules``: open grouped by nn.Module; None (default) groups a jitted module's program,
    ``False`` opens flat.
    """
    from explorer.measure.ranks import RankSet
    from explorer.model.compilation import model_of
    from explorer.notebook.pieces import explore_program, is_program
    from explorer.notebook.widget import Explorer

    if isinstance(obj, RankSet):  # a distributed run's ranks: the explorer with a rank switch
        from explorer.notebook.ranks import RankExplorer

        return RankExplorer(obj, view=view, depth=depth, kind=kind, modules=modules)
    if is_program(obj):  # thunder.dynamo.thunderfx: its pieces in order, graph breaks between
        return explore_program(obj, args, kwargs, view=view, depth=depth, modules=modules)
    notes = []
    if args is not None or kwargs is not None:
        from explorer.measure.fitting import entry_for
        from explorer.measure.runner import measure

        args, kwargs = tuple(args or ()), dict(kwargs or {})
        entry = entry_for(obj, args, kwargs, entry)  # (compiled for them, the user's state put back)
        m = model_of(obj, entry=entry)
        try:
            measure(obj, args, kwargs, entry=entry).attach(m)
        except Exception as e:
            notes.append(f"Times were not measured: {type(e).__name__}: {e}")
    else:
        m = model_of(obj, entry=entry)
    source = obj if m.entry_index is not None else None  # a jitted function: its cache entries
    ex = Explorer(m, view=view, depth=depth, kind=kind, notes=notes, source=source, modules=modules)
    if args is not None or kwargs is not None:
        ex.inputs = (args, kwargs)
    return ex


def graph_of(
    obj,
    kind: str = "computation",
    index: int = -1,
    *,
    depth: int = 0,
    max_nodes: int | None = None,
    modules: bool | None = None,
    collapse=(),
    expand=(),
    module_depth: int | None = None,
    decompose: bool = False,
):
    """The dataflow graph of one pass (default: the final computation trace), laid out.

    Displays as inline SVG in a notebook; ``.dot`` is the graphviz source. ``modules`` draws
    module clusters: the module paths in ``collapse`` as one node each, those in ``expand``
    open, the others open down to ``module_depth`` and repeated layers after the first folded;
    None (default) draws them for a jitted module's program, ``False`` draws it flat.
    Ops are drawn at torch level at every depth; ``decompose`` opens them into prims.
    """
    from explorer.model.compilation import model_of
    from explorer.views.graph import DEFAULT_MAX_NODES, render_graph
    from explorer.views.graph_plan import DEFAULT_MODULE_DEPTH, ModulePlan

    m = model_of(obj)
    if kind not in m.series:
        raise ValueError(f"explorer: no {kind} trace here; there are: {', '.join(m.series) or 'none'}")
    s = m.series[kind]
    p = s.passes[index]
    if modules is None:
        modules = p.modules().has_modules
    plan = ModulePlan(DEFAULT_MODULE_DEPTH if module_depth is None else module_depth, collapse, expand)
    return render_graph(
        p,
        s.proxies,
        depth=depth,
        max_nodes=DEFAULT_MAX_NODES if max_nodes is None else max_nodes,
        title=f"{kind} {p.index}: {p.name}",
        modules=modules,
        plan=plan,
        decompose=decompose,
    )


def to_html(obj, path: str | None = None, **options) -> str:
    """Write one self-contained HTML page (tree, graphs, pass stepping) and return its text."""
    from explorer.notebook.pieces import is_program, program_report_html
    from explorer.views.report import report_html

    page = program_report_html(obj, **options) if is_program(obj) else report_html(obj, **options)
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    return page


def memory(
    obj,
    kind: str = "computation",
    args: tuple | None = None,
    kwargs: dict | None = None,
    *,
    index: int = -1,
    entry: int | None = None,
):
    """Where the memory of a trace goes (``explorer.model.memory.MemoryProfile``, plain data): per
    line the bytes it allocates and frees and the bytes live after it, the peak and its line,
    the values saved for backward and what rematerialization recomputes instead. With ``args``
    the final trace is also run and measured (torch's profiler on CPU, the CUDA allocator on
    CUDA). Shows as a plot and a table in a notebook."""
    from explorer.measure.memory import attach_measurement, input_layouts, measure_memory
    from explorer.model.compilation import model_of
    from explorer.model.memory import memory_of

    if args is not None or kwargs is not None:  # the entry that takes them
        from explorer.measure.fitting import entry_for

        entry = entry_for(obj, tuple(args or ()), kwargs, entry, either_grad_mode=True)
    m = model_of(obj, entry=entry)
    strides = None  # with inputs, the computed figures are for their layouts (a reshape may copy)
    if (args is not None or kwargs is not None) and kind in ("computation", "forward"):
        strides = input_layouts(obj, tuple(args or ()), kwargs, entry=entry)
    prof = memory_of(m, kind, index, strides=strides)
    if args is not None or kwargs is not None:
        if index not in (-1, len(m.series[kind].passes) - 1):
            raise ValueError("explorer: only the final pass runs, so only it is measured; drop args or index")
        live, where = measure_memory(obj, tuple(args or ()), kwargs, kind, entry=entry)
        attach_measurement(prof, live, where)
    return prof


def timeline(obj, *args, entry: int | None = None, **kwargs):
    """A run on a time axis (``explorer.measure.timeline.Timeline``): ``obj`` (a jitted function
    or module) is run on ``args`` and ``kwargs`` with every line of its final traces timed; each
    line is a span (forward, then backward), fusion regions and collectives (start to wait) have
    rows of their own, the memory curve is under them. ``.save("trace.json")`` writes a
    Chrome / Perfetto trace file. Also takes a timed TraceModel, or a distributed run's ranks
    (``load_ranks``: one process per rank)."""
    from explorer.measure.timeline import timeline

    timed = bool(args or kwargs)
    return timeline(obj, args if timed else None, kwargs if timed else None, entry=entry)


def compare(
    obj,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    executors=None,
    repeat: int = 5,
    warmup: int = 2,
    measure: bool = True,
    progress=None,
):
    """What if another executor ran it (``explorer.measure.whatif.Comparison``, plain data): the
    function or module behind ``obj`` compiled anew with each list of executors and run on
    copies of ``args``: fastest time, first call, peak memory, fusion regions, and whether its
    outputs match the first list's (``measure``: the peak also measured, one profiled run per
    list). Shows as a table in a notebook. ``executors``: lists of executor names (None:
    torch alone, then each fusion executor available here before it). ``progress(fraction,
    message)`` is told each list's phase; in a notebook (None) a line of text shows it."""
    from explorer.measure.whatif import compare

    if progress is None:
        from explorer.notebook.whatif import kernel_progress

        progress = kernel_progress()
    return compare(
        obj,
        args,
        kwargs,
        executors=executors,
        repeat=repeat,
        warmup=warmup,
        measure=measure,
        progress=progress,
    )


def save_rank(
    obj,
    path_dir: str,
    rank: int | None = None,
    *,
    args: tuple | None = None,
    kwargs: dict | None = None,
    entry: int | None = None,
) -> str:
    """Write this worker's compilation of ``obj`` to ``path_dir/rank<rank>.json`` (rank:
    torch.distributed's by default); with ``args`` every line is timed first, on every rank
    alike. Returns the file's path. ``load_ranks(path_dir)`` reads them all back."""
    from explorer.measure.ranks import save_rank

    return save_rank(obj, path_dir, rank, args=args, kwargs=kwargs, entry=entry)


def load_ranks(path_dir: str):
    """Every rank's saved compilation in ``path_dir`` (an ``explorer.measure.ranks.RankSet``): index
    it by rank for a TraceModel, ``.timings()`` compares each line's time across ranks; shows
    them all in a notebook, ``explore(ranks)`` with a rank switch."""
    from explorer.measure.ranks import load_ranks

    return load_ranks(path_dir)


def load_ipython_extension(ipython) -> None:
    """``%load_ext explorer`` registers ``%thunder_trace``, ``%%thunder_trace`` and the displays."""
    from explorer.notebook.magic import load_ipython_extension as load

    register_displays(ipython)
    load(ipython)


# These set methods on the model's classes (see explorer/model/traces.py), so they are imported here,
# before any model is made (``views/columns/ranks.py`` sets a RankSet's display); ``explorer.model.modules``
# comes with ``views/html.py``.
from explorer.model import pair, saved  # noqa: E402, F401
from explorer.notebook.display import register_displays  # noqa: E402
from explorer.views import html  # noqa: E402, F401
from explorer.views import timeline as timeline_view  # noqa: E402, F401
from explorer.views.columns import compilations as compilations_view  # noqa: E402, F401
from explorer.views.columns import pair as pair_view  # noqa: E402, F401
from explorer.views.columns import ranks as ranks_view  # noqa: E402, F401

register_displays()


__all__ = [
    "compare",
    "explore",
    "graph_of",
    "load_ipython_extension",
    "load_ranks",
    "memory",
    "model_of",
    "pair_of",
    "save_rank",
    "timeline",
    "to_html",
]
