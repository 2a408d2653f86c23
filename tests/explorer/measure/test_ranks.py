"""Every rank of a distributed run in one notebook: saved per worker, loaded together, each
line's time compared across ranks."""

from __future__ import annotations

import json
import os
import pathlib
import re
import socket
import subprocess
import sys

import pytest
import torch
from support.explorer_builders import small_fn

import explorer
import thunder
from explorer.measure.ranks import LineTimes, RankFilesError, RankSet, load_ranks, save_rank
from explorer.model.communication import communication_of
from explorer.model.compilation import model_of
from explorer.notebook.ranks import RankExplorer
from explorer.views.columns.ranks import rank_timings_html, rank_timings_text, ranks_html, side_by_side_html
from explorer.views.graph import graph_dot
from explorer.views.html import model_html

ROOT = pathlib.Path(__file__).resolve().parents[3]  # tests/explorer/measure/ -> the repository
WORKER = ROOT / "tests" / "support" / "rank_worker.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(folder: pathlib.Path, world: int = 2, worker: pathlib.Path = WORKER) -> None:
    """``world`` worker processes of one gloo run, each saving its rank into ``folder``."""
    port = str(_free_port())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(worker), str(r), str(world), port, str(folder)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(world)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"rank {r} failed:\n{out}"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks")
    run_workers(folder)
    return folder


def _same_html(a: str, b: str) -> bool:
    return re.sub(r"thxp\d+", "thxp", a) == re.sub(r"thxp\d+", "thxp", b)


def test_each_worker_saves_its_rank_and_the_notebook_loads_them_all(run_folder):
    ranks = explorer.load_ranks(str(run_folder))
    assert ranks.ranks == [0, 1] and ranks.world_size == 2 and not ranks.missing
    assert set(ranks.hosts) == {0, 1} and ranks.files[1].endswith("rank1.json")
    for r in ranks:
        m = ranks[r]
        views = json.loads((run_folder / f"views{r}.json").read_text())
        # the loaded model draws what the worker's live model drew
        assert _same_html(model_html(m), views["html"])
        for kind, s in m.series.items():
            assert graph_dot(s.final, s.proxies, depth=2)[0] == views["dots"][kind]
        # the times measured in the worker came with it
        comp = m.series["computation"].final
        timed = {n.id for n in comp.nodes if "del" not in n.tags}
        assert set(m.timings["computation"]) == timed and m.timing_device == "cpu"


def test_the_comparison_has_each_lines_time_on_each_rank(run_folder):
    ranks = load_ranks(str(run_folder))
    t = ranks.timings()
    assert t.ranks == [0, 1] and t.measured
    assert [row.id for row in t.lines] == [
        n.id for n in ranks[0].series["computation"].final.nodes if "del" not in n.tags
    ]
    for row in t.lines:
        assert set(row.seconds) == {0, 1} and all(s is not None for s in row.seconds.values())
        assert row.slowest == max(row.seconds, key=row.seconds.get)
    page = ranks_html(ranks)
    differ = [row for row in t.lines if row.spread > 0]
    assert "rank 0" in page and "rank 1" in page and page.count('class="slow"') == len(differ) + 1
    assert 'data-rank="1"' in side_by_side_html(ranks)


def test_each_ranks_collectives_come_with_it_timed(run_folder):
    ranks = load_ranks(str(run_folder))
    for r in ranks:
        p = ranks[r].series["computation"].final
        comm = communication_of(p)
        # 64 float32 values: all_reduce moves the input, all_gather the output of both ranks,
        # reduce_scatter the input it scatters
        got = [(c.kind, c.bytes, c.group_size) for c in comm.collectives]
        assert got == [("all_reduce", 256, 2), ("all_gather", 512, 2), ("reduce_scatter", 256, 2)]
        overlap = [p.find(i).line for i in comm.collectives[0].overlap]
        assert any("torch.sin" in line for line in overlap) and any("torch.cos" in line for line in overlap)
        assert all(ranks[r].timings["computation"].get(c.id) is not None for c in comm.collectives)
    rows = {row.id: row for row in ranks.timings().lines}
    waits = [c.wait for c in communication_of(ranks[0].series["computation"].final).collectives]
    assert [rows[w].collective for w in waits] == ["wait"] * 3
    page = ranks_html(ranks)
    assert page.count("3 collectives, 1.0 KiB per rank") == 2 + 2  # the summary rows, each rank's traces
    assert '<span class="b g-communication">all_reduce</span>' in page


def _two_ranks(tmp_path, slow: dict[str, float]) -> RankSet:
    """Rank 0 and rank 1 of the same program, every line 1 ms, but the lines in ``slow``
    on rank 1."""
    jfn = thunder.jit(small_fn)
    jfn(torch.ones(3), torch.ones(3))
    for r in (0, 1):
        m = model_of(jfn)
        ids = [n.id for n in m.series["computation"].final.nodes if "del" not in n.tags]
        m.timings["computation"] = {i: (slow.get(i, 1e-3) if r == 1 else 1e-3) for i in ids}
        m.timing_device = "cpu"
        save_rank(m, str(tmp_path), r, world_size=2)
    return load_ranks(str(tmp_path))


def test_the_slowest_rank_of_a_line_is_marked(tmp_path):
    ranks = _two_ranks(tmp_path, {"t2": 0.25})
    t = ranks.timings()
    row = next(x for x in t.lines if x.id == "t2")
    assert row.slowest == 1 and row.spread == pytest.approx(0.25 - 1e-3)
    assert t.by_spread()[0] is row and t.slowest_rank == 1
    page = rank_timings_html(t)
    tr = re.search(r'<tr data-id="t2">(.*?)</tr>', page).group(1)
    assert re.search(r'<td class="slow" title="slowest rank: 1">250.00 ms</td>', tr)
    spread = rank_timings_html(t, order="spread")
    assert spread.index('data-id="t2"') < spread.index('data-id="t0"') and page.index(
        'data-id="t0"'
    ) < page.index('data-id="t2"')
    same = re.search(r'<tr data-id="t0">(.*?)</tr>', page).group(1)
    assert "slow" not in same  # the same time on both ranks: none is marked
    text = rank_timings_text(t)
    assert re.search(r"1\.00 ms\s+250\.00 ms\*\s+t2 = ", text)


def test_a_line_one_rank_does_not_have_has_no_time_there(tmp_path):
    ranks = _two_ranks(tmp_path, {})
    del ranks[1].timings["computation"]["t1"]
    row = next(x for x in ranks.timings().lines if x.id == "t1")
    assert row.seconds == {0: 1e-3, 1: None} and row.slowest == 0 and row.spread == 0.0
    assert LineTimes("a", "a", {0: None, 1: None}).slowest is None


def test_save_rank_times_the_lines_when_given_inputs(tmp_path):
    jfn = thunder.jit(small_fn)
    args = (torch.ones(3), torch.ones(3))
    jfn(*args)
    path = explorer.save_rank(jfn, str(tmp_path / "out"), args=args)
    assert path.endswith("rank0.json")  # torch.distributed not initialised: rank 0 of 1
    ranks = explorer.load_ranks(str(tmp_path / "out"))
    assert ranks.world_size == 1 and ranks[0].timings["computation"]
    assert "not measured" not in rank_timings_html(ranks.timings())


def test_without_times_the_comparison_says_how_to_measure(tmp_path):
    jfn = thunder.jit(small_fn)
    jfn(torch.ones(3), torch.ones(3))
    save_rank(jfn, str(tmp_path), 0, world_size=2)
    ranks = load_ranks(str(tmp_path))
    assert ranks.missing == [1]
    assert "save_rank(jfn, folder, args=" in rank_timings_html(ranks.timings())
    assert "No file for ranks [1]" in ranks_html(ranks)


def test_loading_a_folder_that_is_not_one_runs_files_says_why(tmp_path):
    with pytest.raises(RankFilesError, match="not a folder"):
        load_ranks(str(tmp_path / "nothing"))
    with pytest.raises(RankFilesError, match="no rank<N>.json"):
        load_ranks(str(tmp_path))
    jfn = thunder.jit(small_fn)
    jfn(torch.ones(3), torch.ones(3))
    save_rank(jfn, str(tmp_path), 0, world_size=2)
    (tmp_path / "rank00.json").write_text((tmp_path / "rank0.json").read_text())
    with pytest.raises(RankFilesError, match="rank 0 is saved twice"):
        load_ranks(str(tmp_path))
    os.remove(tmp_path / "rank00.json")
    save_rank(jfn, str(tmp_path), 1, world_size=4)
    with pytest.raises(RankFilesError, match=r"runs of different sizes \[2, 4\]"):
        load_ranks(str(tmp_path))
    (tmp_path / "rank1.json").write_text('{"rank": 1, "mod')
    with pytest.raises(RankFilesError, match="not JSON"):
        load_ranks(str(tmp_path))
    (tmp_path / "rank1.json").write_text("{}")
    with pytest.raises(RankFilesError, match="not written by explorer.save_rank"):
        load_ranks(str(tmp_path))
    with pytest.raises(KeyError, match=r"loaded ranks: \[0\]"):
        RankSet({0: model_of(jfn)})[3]


def test_switching_rank_keeps_what_the_explorer_shows(tmp_path):
    ranks = _two_ranks(tmp_path, {"t2": 0.25})
    ex = explorer.explore(ranks)
    assert isinstance(ex, RankExplorer) and ex.rank.value == 0
    assert 'class="slow"' in ex.compare.value
    ex.current.view.value = "graph"
    ex.current.query.value = "exp"
    ex.current.select(ex.current.hits[0].id)
    first = ex.current
    ex.rank.value = 1
    assert ex.current is not first and ex.current.model is ranks[1]
    assert ex.current.view.value == "graph" and ex.current.query.value == "exp"
    assert ex.current.selected == first.selected and "exp" in ex.current.details.value
    ex.current.kind.value = "prologue"
    assert "for the prologue trace" in ex.compare.value  # its times were not measured
    ex.rank.value = 0
    assert ex.current is first and first.kind.value == "prologue"
    assert "rank 1" in ex._repr_mimebundle_()["text/html"]
