"""How fast the explorer is on large compilations, measured in one run.

Two programs. A 12-layer GPT-style model's forward (d=64, 4 heads, [2, 16] tokens): the time
to build the TraceModel of every pass of the prologue, computation and epilogue; the time and
size of the HTML of the largest trace (the tree, budgeted); the ``dot`` layout time of that
trace's collapsed graph (cache cleared first); the whole self-contained report. Targets:
model + HTML < 0.5 s, that HTML < 2 MB, collapsed graph laid out in < 3 s.

And a program of 40,000 small elementwise ops (every pass of a real compilation, 40,000
BoundSymbols in the first computation trace): the TraceModel, the pass diffs (structured,
then rendered with the text diff), the widget's first view and the whole report. Targets:
model < 2 s, report < 5 s and < 10 MB.

By module: for the GPT, the module tree, its HTML and the module-clustered graph's layout;
and a stack of small modules (``--module-ops`` BoundSymbols, four per module): the module
tree, its HTML (budgeted) and the module graph (repeated layers folded into one node).

Memory and what-if (``--skip-memory`` to leave out): for the GPT and the 40,000-op program,
the time to compute the memory view of the final computation trace and to render it (target
< 1 s at 40,000 lines), to measure it with torch's profiler, and to build the what-if table
(``explorer.compare``, executor lists from ``--whatif`` for the GPT and ``--whatif-large`` for
the long program, where Inductor would compile one 40,000-op kernel); and the widget's search
per query on the 40,000-op program, first (reads the trace) and then per keystroke.

CPU time (time.process_time) is printed beside wall time: the machine may be shared. Prints
figures only (no asserts).

    python bench/explorer.py [--layers 12] [--ops 40000] [--module-ops 12000] [--skip-large]
        [--skip-memory] [--whatif "torch | torchcompile, torch"] [--whatif-large "torch | torch, python"]
"""

from __future__ import annotations

import os
import sys

# This file is named like the package it measures: without this, `import explorer` would
# import this script (its folder comes first on sys.path).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
sys.path.insert(0, os.path.dirname(_here))

import argparse  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import explorer  # noqa: E402
import thunder  # noqa: E402
from explorer.model.compilation import model_of  # noqa: E402
from explorer.model.passes import diff_passes  # noqa: E402
from explorer.views import graph as graph_view  # noqa: E402
from explorer.views.html import diff_html, pass_header_html, wrap  # noqa: E402
from explorer.views.tree import tree_html  # noqa: E402


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers: int = 12, d: int = 64, heads: int = 4, vocab: int = 128, ctx: int = 64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def many_ops(x, n: int):
    """``n`` small elementwise ops in a row: a long, flat trace."""
    for i in range(n // 4):
        x = (x.sin() * 1.5 + 0.25).tanh() if i % 2 else (x.cos() - 0.5).relu() * 0.75
    return x


class _Clock:
    """Wall and CPU seconds of a block: ``with _Clock() as c: ...; c.wall, c.cpu``."""

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t0, time.process_time() - self.c0


def _row(what: str, c: _Clock, extra: str = "") -> str:
    return f"{what:<32}{c.wall * 1e3:9.1f} ms wall {c.cpu * 1e3:9.1f} ms cpu   {extra}"


def memory_case(jfn, args: tuple, lists: list[list[str]], what: str) -> None:
    """The memory view (computed, rendered, measured) and the what-if table of ``jfn``."""
    from explorer.measure.memory import attach_measurement, measure_memory
    from explorer.model.memory import memory_of
    from explorer.views.memory import memory_section_html
    from explorer.views.whatif import comparison_table_html

    m = model_of(jfn)
    with _Clock() as c:
        prof = memory_of(m, "computation")
    print(_row(f"{what}: memory computed", c, f"{len(prof.rows)} lines, peak {prof.peak} B (target < 1 s)"))
    with _Clock() as c:
        html = memory_section_html(prof, m.series["computation"].final)
    print(_row(f"{what}: memory view HTML", c, f"{len(html) / 1e3:.0f} KB"))
    with _Clock() as c, torch.no_grad():
        live, where = measure_memory(jfn, args)
        attach_measurement(prof, live, where)
    peak = f"measured peak {prof.measured_peak} B" if prof.measured else prof.note
    print(_row(f"{what}: memory measured", c, peak))
    with _Clock() as c, torch.no_grad():
        comp = explorer.compare(jfn, args, executors=lists, repeat=3)
        table = comparison_table_html(comp)
    print(_row(f"{what}: what-if table", c, f"{len(table) / 1e3:.0f} KB"))
    for r in comp.rows:
        if r.error:
            print(f"    {r.label:<24} did not run: {r.error}")
        else:
            print(
                f"    {r.label:<24} {r.seconds * 1e3:9.2f} ms  first call {r.first_call_seconds:7.2f} s "
                f"+ {r.background_compile_seconds or 0:.2f} s compiling  "
                f"peak {r.peak_bytes} B  {r.fusion_regions} regions  outputs {'match' if r.matched else 'DIFFER'}"
            )


def search_case(jfn) -> None:
    """The widget's search on a long program: the first query reads the trace, then each keystroke."""
    from explorer.notebook.widget import Explorer

    ex = Explorer(model_of(jfn))
    with _Clock() as c:
        ex.query.value = "no such text"
    print(_row("search: first query", c, "(reads every line once)"))
    worst = None
    for q in ("s", "si", "sin", "t1", "t12", "t123", "t1234", "tanh", "0.75"):
        with _Clock() as c:
            ex.query.value = q
        if worst is None or c.wall > worst.wall:
            worst, worst_q = c, q
    print(_row("search: slowest keystroke", worst, f"{worst_q!r} (target < 0.2 s)"))


def gpt_case(layers: int) -> None:
    torch.manual_seed(0)
    model = GPT(layers).eval()
    jm = thunder.jit(model)
    idx = torch.randint(0, 128, (2, 16))
    t0 = time.perf_counter()
    with torch.no_grad():
        jm(idx)
    compile_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    m = model_of(jm)
    model_s = time.perf_counter() - t0
    passes = [(k, p) for k, s in m.series.items() for p in s.passes]
    kind, largest = max(passes, key=lambda kp: kp[1].size())
    series = m.series[kind]

    t0 = time.perf_counter()
    html = wrap(pass_header_html(series, largest) + tree_html(largest.nodes))
    html_s = time.perf_counter() - t0

    graph_view._SVG_CACHE.clear()
    t0 = time.perf_counter()
    g = graph_view.render_graph(largest, series.proxies, depth=0)
    graph_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    page = explorer.to_html(jm)
    report_s = time.perf_counter() - t0

    nodes = sum(p.size() for _, p in passes)
    print(f"GPT-style model, {layers} layers: compiled in {compile_s:.2f} s")
    print(f"  traces: {len(passes)} passes over {len(m.series)} kinds, {nodes} bound symbols in all")
    print(f"  largest trace: {kind} pass {largest.index} ({largest.name}), {largest.size()} bound symbols")
    print(f"TraceModel, all passes      {model_s * 1e3:8.1f} ms")
    print(f"HTML of the largest trace   {html_s * 1e3:8.1f} ms   {len(html) / 1e6:.2f} MB (target < 2 MB)")
    print(f"model + HTML                {(model_s + html_s) * 1e3:8.1f} ms   (target < 500 ms)")
    print(
        f"dot layout, collapsed graph {graph_s * 1e3:8.1f} ms   {g.nodes} nodes at depth {g.depth}"
        f"{'' if g.svg else ' (NOT laid out: ' + '; '.join(g.messages) + ')'} (target < 3 s)"
    )
    print(f"whole report (to_html)      {report_s * 1e3:8.1f} ms   {len(page) / 1e6:.2f} MB")

    final, comp = m.series["computation"].final, m.series["computation"]
    with _Clock() as c:
        tree = final.modules()
        html = tree_html(final.nodes, modules=tree)
    print(_row("by module: tree + HTML", c, f"{len(tree.groups)} modules, {len(html) / 1e6:.2f} MB"))
    graph_view._SVG_CACHE.clear()
    with _Clock() as c:
        g = graph_view.render_graph(final, comp.proxies, modules=True)
    print(_row("by module: graph laid out", c, f"{g.nodes} nodes{'' if g.svg else ' (NOT laid out)'}"))
    return jm, idx


class Layer(nn.Module):
    def forward(self, x):
        return (x.sin() * 1.5 + 0.25).tanh()


def module_case(ops: int) -> None:
    stack = nn.Sequential(*(Layer() for _ in range(ops // 4)))
    jm = thunder.jit(stack)
    with _Clock() as c:
        jm(torch.ones(4))
    print(f"\n{ops // 4} modules of 4 ops: compiled in {c.wall:.2f} s")
    with _Clock() as c:
        m = model_of(jm)
    print(_row("TraceModel, all passes", c))
    s = m.series["computation"]
    with _Clock() as c:
        tree = s.final.modules()
    print(_row("module tree", c, f"{len(tree.groups)} modules"))
    with _Clock() as c:
        html = tree_html(s.final.nodes, modules=tree)
    print(_row("module tree HTML", c, f"{len(html) / 1e6:.2f} MB"))
    graph_view._SVG_CACHE.clear()
    with _Clock() as c:
        g = graph_view.render_graph(s.final, s.proxies, modules=True)
    print(_row("module graph laid out", c, f"{g.nodes} nodes{'' if g.svg else ' (NOT laid out)'}"))


def large_case(ops: int) -> None:
    jfn = thunder.jit(lambda x: many_ops(x, ops))
    with _Clock() as c:
        jfn(torch.ones(4))
    traces = thunder.last_traces(jfn)
    print(f"\n{ops} elementwise ops: compiled in {c.wall:.2f} s")
    print(f"  computation passes: {', '.join(f'{len(t.bound_symbols)}' for t in traces)} bound symbols")

    with _Clock() as c:
        m = model_of(jfn)
    print(_row("TraceModel, all passes", c, "(target < 2 s)"))
    s = m.series["computation"]
    with _Clock() as c:
        for before, after in zip(s.passes, s.passes[1:]):
            diff_passes(before, after)
    print(_row("pass diffs (structured)", c, f"{len(s.passes) - 1} diffs"))
    with _Clock() as c:
        size = sum(len(diff_html(after, before)) for before, after in zip(s.passes, s.passes[1:]))
    print(_row("pass diffs (HTML + text diff)", c, f"{size / 1e6:.2f} MB"))
    with _Clock() as c:
        page = explorer.to_html(jfn)
    print(_row("whole report (to_html)", c, f"{len(page) / 1e6:.2f} MB (targets < 5 s, < 10 MB)"))
    return jfn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--ops", type=int, default=40_000)
    ap.add_argument("--module-ops", type=int, default=12_000)
    ap.add_argument("--skip-large", action="store_true", help="only the GPT-style model")
    ap.add_argument("--skip-memory", action="store_true", help="no memory view, what-if or search")
    ap.add_argument("--whatif", default="torch | torchcompile, torch", help="executor lists for the GPT")
    ap.add_argument("--whatif-large", default="torch | torch, python", help="... for the 40,000-op program")
    opts = ap.parse_args()
    from explorer.notebook.whatif import parse_lists

    jm, idx = gpt_case(opts.layers)
    if not opts.skip_memory:
        print()
        memory_case(jm, (idx,), parse_lists(opts.whatif), f"GPT {opts.layers} layers")
    if not opts.skip_large:
        jfn = large_case(opts.ops)
        if not opts.skip_memory:
            memory_case(jfn, (torch.ones(4),), parse_lists(opts.whatif_large), f"{opts.ops} ops")
            search_case(jfn)
        module_case(opts.module_ops)


if __name__ == "__main__":
    main()
