"""Collectives in the explorer: what each moves per rank and on which group, the start paired
with its wait, what overlaps it, and a summary per trace (on a 1-process gloo group)."""

from __future__ import annotations

import re
import socket

import pytest
import torch
import torch.distributed as dist

import thunder
from explorer.model.communication import CommSummary, KindTotal, communication_of, pairing
from explorer.model.compilation import model_of
from explorer.model.traces import TraceModel
from explorer.views.graph import graph_dot
from explorer.views.html import details_html, model_html, pass_header_html
from explorer.views.text import model_text, tree_text
from explorer.views.tree import tree_html

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


@pytest.fixture(scope="module")
def group():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"tcp://127.0.0.1:{port}")
    yield dist.group.WORLD.group_name
    dist.destroy_process_group()


def every_collective(x, w):
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    z = w.sin()  # these two overlap the all_reduce of y
    z = z @ w
    work.wait()
    b = x + 1
    dist.broadcast(b, src=0)
    gathered = torch.empty(x.shape[0], x.shape[1], dtype=torch.float64)
    dist.all_gather_single(gathered, x.double())
    scattered = torch.empty(x.shape[0], x.shape[1])
    dist.reduce_scatter_single(scattered, x * 3, op=dist.ReduceOp.MAX)
    swapped = torch.empty_like(x)
    dist.all_to_all_single(swapped, x)
    return y + z.sum(), b, gathered, scattered, swapped


@pytest.fixture(scope="module")
def comm_model(group):
    jfn = thunder.jit(every_collective)
    jfn(torch.ones(4, 3), torch.ones(3, 3))
    return model_of(jfn)


def _final(m: TraceModel):
    s = m.series["computation"]
    return s, s.final


def test_each_collective_is_found_with_its_kind_bytes_and_group(comm_model, group):
    _, p = _final(comm_model)
    comm = communication_of(p)
    got = [(c.kind, c.bytes, c.group, c.group_size, c.op, c.src) for c in comm.collectives]
    assert got == [
        ("all_reduce", 4 * 3 * 4, group, 1, "sum", None),  # the input's bytes
        ("broadcast", 4 * 3 * 4, group, 1, None, 0),  # the tensor's
        ("all_gather", 4 * 3 * 8, group, 1, None, None),  # the gathered output's (float64)
        ("reduce_scatter", 4 * 3 * 4, group, 1, "max", None),  # the input's
        ("all_to_all_single", 4 * 3 * 4, group, 1, None, None),  # the input's
    ]
    starts = [n for n in p.nodes if "communication" in n.tags and n.collective["kind"] != "wait"]
    waits = [n for n in p.nodes if "communication" in n.tags and n.collective["kind"] == "wait"]
    assert [n.id for n in starts] == [c.id for c in comm.collectives]
    assert [c.wait for c in comm.collectives] == [n.id for n in waits]
    assert all(comm.of(n.id) is comm.of(s.id) for n, s in zip(waits, starts))
    # the executed line is the torch executor's claim; the prim below it is tagged too
    assert starts[0].executor == "torch" and "communication" in starts[0].children[0].tags


def test_the_lines_between_a_start_and_its_wait_are_what_overlaps_it(comm_model):
    _, p = _final(comm_model)
    ar = communication_of(p).collectives[0]
    overlap = [p.find(i).line for i in ar.overlap]
    assert len(overlap) == 2 and "torch.sin(w)" in overlap[0] and "torch.matmul" in overlap[1]
    assert all(c.overlap == [] for c in communication_of(p).collectives[1:])  # waited for at once
    # pairing one start reads the lines up to its wait only, and agrees
    i = next(k for k, n in enumerate(p.nodes) if n.id == ar.id)
    assert pairing(p.nodes, i) == ar
    cut = [n for n in p.nodes if n.id != ar.wait]  # its wait is not in the trace
    lone = pairing(cut, i)
    assert lone.wait is None and lone.overlap == [] and "not waited for" in lone.in_flight()
    assert pairing(p.nodes, 0) is None  # not a start


def test_the_summary_counts_collectives_and_bytes_by_kind(comm_model):
    s, p = _final(comm_model)
    summary = communication_of(p).summary()
    assert summary.count == 5 and summary.bytes == 48 * 4 + 96
    assert summary.by_kind["all_gather"] == KindTotal(1, 96)
    text = "5 collectives, 288 B per rank: all_reduce 1 (48 B), broadcast 1 (48 B), all_gather 1 (96 B)"
    assert summary.text().startswith(text)
    assert text in model_text(comm_model) and text in model_html(comm_model)
    assert text in pass_header_html(s, p)
    assert CommSummary(0, 0, {}).text() == "no collectives"
    pro = comm_model.series["prologue"]
    assert 'class="note comm"' not in pass_header_html(pro, pro.final)  # no collectives: no note


def test_the_tree_badges_a_collective_and_its_wait(comm_model, group):
    _, p = _final(comm_model)
    html = tree_html(p.nodes, open_depth=0)
    ar = communication_of(p).collectives[0]
    start = re.search(
        rf'data-id="{ar.id}">.*?<span class="b g-communication cm" title="([^"]*)">([^<]*)<', html
    )
    assert start is not None
    title, text = start.groups()
    assert text == f"all_reduce sum, 48 B per rank, group &#x27;{group}&#x27; of 1 rank"
    assert f"in flight until {ar.wait}; overlaps 2 lines: t" in title and "torch.sin(w)" in title
    wait = re.search(
        rf'data-id="{ar.wait}">.*?<span class="b g-communication cm" title="([^"]*)">([^<]*)<', html
    )
    assert wait.group(2) == f"wait {ar.id}" and f"makes {ar.id}" in wait.group(1)
    # five starts and five waits, each executed line and the prim below it
    assert html.count('class="b g-communication cm"') == 20
    assert f"<all_gather, 96 B per rank, group '{group}' of 1 rank>" in tree_text(p.nodes, depth=0)


def test_the_details_of_a_start_list_its_wait_and_the_lines_that_overlap_it(comm_model):
    s, p = _final(comm_model)
    ar = communication_of(p).collectives[0]
    html = details_html(p.find(ar.id), s, None, p)
    assert f"<tr><th>in flight until</th><td><code>{ar.wait}</code>" in html
    assert "<th>overlaps (2)</th>" in html and "torch.matmul" in html
    wait = details_html(p.find(ar.wait), s, None, p)
    assert f"ends <code>{ar.id}</code>: all_reduce sum" in wait
    assert "<th>in flight until" not in details_html(p.find(ar.id), s)  # no pass given: no pairing


def test_the_graph_draws_collectives_apart_and_pairs_start_and_wait(comm_model, group):
    s, p = _final(comm_model)
    for depth in (0, 2):  # at depth 2 the prims are drawn, through the executor's claim
        dot = graph_dot(p, s.proxies, depth=depth)[0]
        nodes = dict(re.findall(r"^\s*(n\d+) \[(.*)\];$", dot, re.M))
        comm = {k: v for k, v in nodes.items() if "shape=parallelogram" in v}
        assert len(comm) == 10, depth
        assert any(f"all_reduce sum, 48 B\\ngroup '{group}' of 1 rank" in v for v in comm.values())
        flights = re.findall(
            r"(n\d+) -> (n\d+) \[label=\"in flight\\n([^\"]*)\"[^\]]*style=\"dashed,bold\"", dot
        )
        assert len(flights) == 5 and all(a in comm and b in comm for a, b, _ in flights)
        assert "f32[4, 3]" in flights[0][2]
        assert 'label="- - > in flight: start to wait"' in dot and 'label="collective"' in dot
    assert "in flight until" in dot and "overlaps 2 lines" in dot  # the start's tooltip


def test_the_first_trace_has_the_prims_themselves(comm_model):
    first = comm_model.series["computation"].passes[0]
    comm = communication_of(first)
    assert [c.kind for c in comm.collectives][:2] == ["all_reduce", "broadcast"]
    assert first.find(comm.collectives[0].id).sym_id == "prims.all_reduce"


def test_a_loaded_model_shows_the_same_collectives(comm_model):
    again = TraceModel.from_json(comm_model.to_json())
    s, p = _final(comm_model)
    s2, q = _final(again)
    assert communication_of(q).collectives == communication_of(p).collectives
    assert tree_html(q.nodes) == tree_html(p.nodes)
    assert graph_dot(q, s2.proxies, depth=2)[0] == graph_dot(p, s.proxies, depth=2)[0]
    ar = communication_of(q).collectives[0]
    assert details_html(q.find(ar.id), s2, None, q) == details_html(p.find(ar.id), s, None, p)
