"""Hostile names (markup, quotes, braces, backslashes) never reach HTML, DOT or SVG raw."""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest
import torch

import explorer
import thunder
from explorer.model.compilation import model_of
from explorer.model.traces import TraceModel
from explorer.notebook.widget import Explorer
from explorer.views.canvas import canvas_script
from explorer.views.graph import graph_dot, layout
from explorer.views.html import compilation_html, details_html, trace_html
from explorer.views.report import report_html
from explorer.views.tree import tree_html
from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.proxies import AnyProxy, TensorProxy
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace

HOSTILE = [
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=alert(2)>",
    "{}{{}}</style><b>",
    'a\\Nb\\"c\\n\\l',
    "</details></summary></div><details open>",
]


def _assert_clean(html: str) -> None:
    # the one script a page carries is the bundled graph canvas (explorer/static/canvas.js):
    # nothing of the trace's may add another
    lowered = html.replace(canvas_script(), "").lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "</style><b>" not in lowered
    assert "</details></summary></div><details open>" not in lowered
    assert html.count("<details") == html.count("</details>")


def _hostile_trace(s: str) -> Trace:
    """A class named ``s`` constructed from a proxy named ``s`` with a string constant ``s``."""
    cls = dataclasses.make_dataclass("C", [("res", torch.Tensor), ("tag", str)])
    cls.__qualname__ = s
    cls.__module__ = s
    t = Trace("epilogue")
    x = TensorProxy(s, (2,), torch.float32, "cpu")  # a name no trace would make: the worst case
    t.args = [x]
    out = AnyProxy("any0", cls)
    sym = Symbol("construct", "prims", meta=lambda *a, **k: None, tags=(Tag.DATACLASS_NEW,), executor=s)
    t.bound_symbols = [
        BoundSymbol(sym, (cls,), {"res": x, "tag": s}, out, info=BoundSymbolInfo(declined={s: s}))
    ]
    t.output = out
    return t


@pytest.mark.parametrize("s", HOSTILE)
def test_static_views_escape(s):
    t = _hostile_trace(s)
    _assert_clean(trace_html(t))
    m = TraceModel.from_trace(t)
    series = m.series["epilogue"]
    n = series.final.nodes[0]
    _assert_clean(tree_html(series.final.nodes, hits={n.id}, selected=n.id))
    _assert_clean(details_html(n, series))
    _assert_clean(compilation_html(m))
    _assert_clean(report_html(m, graphs="none"))
    assert "&lt;" in trace_html(t) or "<" not in s


@pytest.mark.parametrize("s", HOSTILE)
def test_dot_escapes(s):
    t = _hostile_trace(s)
    series = TraceModel.from_trace(t).series["epilogue"]
    dot, *_ = graph_dot(series.final, series.proxies, title=s)
    # every quoted string is closed: no stray quote breaks out of a label
    for line in dot.splitlines():
        stripped = re.sub(r'"(?:[^"\\]|\\.)*"', "S", line)
        assert '"' not in stripped, line
    if shutil.which("dot"):
        svg = layout(dot)
        _assert_clean(svg)
        assert 'id="node1"' in svg


def test_backslash_n_is_not_expanded():
    t = _hostile_trace("x\\Ny")
    series = TraceModel.from_trace(t).series["epilogue"]
    dot, *_ = graph_dot(series.final, series.proxies, title="x\\Ny")
    assert 'label="x\\\\Ny"' in dot
    if shutil.which("dot"):
        assert "x\\Ny" in layout(dot)


def test_hostile_module_attribute_and_string_constant_through_jit():
    s = HOSTILE[0] + HOSTILE[1]

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module(s, torch.nn.Linear(3, 3))

        def forward(self, x, tag="plain"):
            return getattr(self, s)(x) * 2

    jm = thunder.jit(M())
    jm(torch.ones(2, 3), tag=s)
    pro = str(thunder.last_prologue_traces(jm)[-1])
    assert "<script>" in pro  # the hostile strings really are in the trace
    m = model_of(jm)
    _assert_clean(compilation_html(m))
    _assert_clean(report_html(m))
    ex = Explorer(m, kind="prologue")
    ex.query.value = "script"
    for view in ("tree", "graph", "source", "diff", "timing"):
        ex.view.value = view
        _assert_clean(ex.main.value)
    assert ex.hits
    ex.main.selected = ex.hits[0].id  # a click on it in the tree
    _assert_clean(ex.details.value)
    _assert_clean(ex.cache.value)


def test_hostile_dataclass_name_through_jit():
    cls = dataclasses.make_dataclass("Out", [("res", torch.Tensor), ("num", int)])
    cls.__qualname__ = "Out<script>alert(3)</script>"

    def fn(x):
        return cls(res=x.cos(), num=1)

    jfn = thunder.jit(fn)
    out = jfn(torch.ones(2))
    assert type(out) is cls and out.num == 1
    _assert_clean(compilation_html(jfn))
    _assert_clean(explorer.to_html(jfn))


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(f"<{tag} {sorted(k for k, _ in attrs)}>")

    def handle_endtag(self, tag):
        self.tags.append(f"</{tag}>")


def _tag_sequence(html: str) -> list[str]:
    p = _Tags()
    p.feed(html)
    p.close()
    return p.tags


def test_fuzzed_names_change_no_markup():
    """Random strings of markup characters: the HTML has exactly the elements it has for a
    plain name, and the SVG that dot makes of them is well-formed XML."""
    rng = random.Random(1234)
    alphabet = "<>&\"'{}[]\\/;:=!-_ aZ\n\t"
    plain = _hostile_trace("plain")
    plain_model = TraceModel.from_trace(plain)
    expected = _tag_sequence(compilation_html(plain_model))
    for _ in range(40):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))
        m = TraceModel.from_trace(_hostile_trace(s))
        assert _tag_sequence(compilation_html(m)) == expected, repr(s)
        if shutil.which("dot"):
            series = m.series["epilogue"]
            dot, *_ = graph_dot(series.final, series.proxies, title=s)
            ElementTree.fromstring(layout(dot))  # raises on broken XML
