"""The explorer in a real browser: JupyterLab started here, driven in Debian's chromium.

A notebook cell runs ``%thunder_trace``; the test unfolds a BoundSymbol, steps to the next
pass and reads the diff, and saves a screenshot (``test-artifacts/explorer-lab.png``, which
git ignores, and the test's tmp_path). Another opens a tiny Llama grouped by module, unfolds
and collapses a layer in the tree, finds a layer by its path and collapses it in the graph. A
third opens the forward and backward side by side and follows the links between them (a
backward op to the forward op it differentiates, and back). It also steps through the passes of a saved report
(CSS radio buttons, no script). Never a downloaded browser: ``executable_path`` is the
system's chromium.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian chromium is not installed (make system installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "explorer-test-token"
NB = Path(__file__).with_name("explore.ipynb")
MODULES_NB = Path(__file__).with_name("modules.ipynb")
PAIR_NB = Path(__file__).with_name("pair.ipynb")
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"


def _api(base: str, path: str, method: str = "GET") -> int:
    req = urllib.request.Request(base + path, method=method, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(NB, root / NB.name)
    shutil.copy(MODULES_NB, root / MODULES_NB.name)
    shutil.copy(PAIR_NB, root / PAIR_NB.name)
    cfg = root / ".cfg"
    (cfg / "labconfig").mkdir(parents=True)
    (cfg / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(cfg),
        JUPYTER_RUNTIME_DIR=str(root / ".rt"),
        JUPYTERLAB_WORKSPACES_DIR=str(root / ".ws"),
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    log = open(root / "lab.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--allow-root",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.extension_manager=readonly",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _api(base, "/api/status") == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((root / "lab.log").read_text())
            time.sleep(0.25)
        yield base
    finally:
        try:
            _api(base, "/api/shutdown", "POST")  # stops the kernels too
        except OSError:
            pass
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture
def browser(tmp_path):
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            yield page
        finally:
            ctx.close()


def _save(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / name))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def _option_labels(select) -> list[str]:
    """The texts of a select's options (the widget writes spaces as no-break spaces)."""
    return select.evaluate("s => [...s.options].map(o => o.text.replaceAll('\\u00a0', ' '))")


def _run_all(page, lab: str, name: str):
    """Open notebook ``name`` in JupyterLab, run all its cells; the explorer's root element."""
    # a workspace of its own: only this notebook opens (not the ones an earlier test left open)
    page.goto(f"{lab}/lab/workspaces/{Path(name).stem}/tree/{name}?token={TOKEN}")
    page.wait_for_function(
        "(name) => window.jupyterapp?.shell.currentWidget?.context?.path === name"
        " && window.jupyterapp.shell.currentWidget.sessionContext",
        arg=name,
    )
    page.evaluate(
        """async () => { const nb = window.jupyterapp.shell.currentWidget;
        await nb.sessionContext.ready;
        await window.jupyterapp.commands.execute('notebook:run-all-cells'); }"""
    )
    ex = page.locator(".thunder-explorer:visible")  # not one of a notebook the workspace reopened
    ex.wait_for()
    return ex


def test_thunder_trace_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = _run_all(page, lab, NB.name)

    # unfold a BoundSymbol: --depth 0 shows the tree closed
    node = ex.locator('details[data-id="t0"]').first
    node.wait_for()
    assert node.get_attribute("open") is None
    child = node.locator(':scope > .kids [data-id="t0/t0"]')
    assert not child.is_visible()
    node.locator(":scope > summary").click()
    sync_api.expect(child).to_be_visible()
    assert "ltorch.sin(x)" in child.inner_text()

    # step back to dead code elimination, then to the next pass, and read its diff
    current = ex.locator(".passes .cur")
    for _ in range(10):
        if "Dead Code Elimination" in current.inner_text():
            break
        before = current.inner_text()
        ex.get_by_role("button", name="previous pass").click()
        sync_api.expect(current).not_to_have_text(before)
    sync_api.expect(current).to_contain_text("Dead Code Elimination")
    ex.get_by_role("button", name="diff", exact=True).click()
    sync_api.expect(ex).to_contain_text("Dead Code Elimination changed nothing")
    ex.get_by_role("button", name="next pass").click()
    sync_api.expect(current).to_contain_text("Transform for execution")
    sync_api.expect(ex).to_contain_text("5 rewritten")
    sync_api.expect(ex.locator(".dadd").first).to_contain_text("torch.sin(x)")
    ex.scroll_into_view_if_needed()
    _save(page, tmp_path, "explorer-lab.png")


def test_llama_by_module_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = _run_all(page, lab, MODULES_NB.name)
    tree = ex.locator(".tree")
    model = tree.locator('details[data-id="module:model"]')
    sync_api.expect(model).to_have_attribute("open", "")  # the jitted module and its children open
    layer = tree.locator('details[data-id="module:model.layers.0"]')
    assert layer.get_attribute("open") is None
    summary = layer.locator(":scope > summary")
    assert "model.layers.0" in summary.inner_text() and "LlamaDecoderLayer" in summary.inner_text()
    attn = layer.locator(':scope > .kids > details[data-id="module:model.layers.0.self_attn"]')
    assert not attn.is_visible()
    summary.click()  # unfold the layer: its attention shows
    sync_api.expect(attn).to_be_visible()
    summary.click()  # and collapse it again
    sync_api.expect(attn).to_be_hidden()

    # find the second layer by its path, select it, and collapse it in the graph
    search = ex.locator("input[placeholder^='symbol']")
    search.fill("model.layers.1")
    search.press("Enter")
    sync_api.expect(ex).to_contain_text("modules and")
    select = ex.locator(".widget-select select")
    sync_api.expect(select.locator("option").first).to_contain_text("module model.layers.1")
    labels = _option_labels(select)
    # the layer's op count follows the compiler's decompositions: read it, do not write it here
    label = next(t for t in labels if t.startswith("module model.layers.1 (LlamaDecoderLayer), "))
    ops = int(re.fullmatch(r".*, (\d+) ops", label).group(1))
    select.select_option(index=labels.index(label))
    sync_api.expect(ex).to_contain_text("module model.layers.1 (LlamaDecoderLayer)")
    sync_api.expect(ex).to_contain_text("t_model_layers_1_self_attn_q_proj_weight")
    ex.get_by_role("button", name="graph", exact=True).click()
    graph = ex.locator(".graph svg")
    graph.wait_for()
    # a repeated layer is folded into one node: its attention is not drawn
    folded, inner = f"(LlamaDecoderLayer) {ops} ops", "model.layers.1.self_attn"
    sync_api.expect(graph).to_contain_text(folded)
    sync_api.expect(graph).not_to_contain_text(inner)
    ex.get_by_role("button", name="expand module model.layers.1").click()
    sync_api.expect(graph).to_contain_text(inner)
    sync_api.expect(graph).not_to_contain_text(folded)
    ex.get_by_role("button", name="collapse module model.layers.1").click()
    sync_api.expect(graph).to_contain_text(folded)
    sync_api.expect(graph).not_to_contain_text(inner)
    ex.scroll_into_view_if_needed()
    _save(page, tmp_path, "explorer-lab-modules.png")


TARGET_BLUE = "rgb(187, 222, 251)"  # how the pair view lights the line a link leads to (#bbdefb)


def test_pair_links_backward_to_forward_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = _run_all(page, lab, PAIR_NB.name)
    fw = ex.locator('.pcol[data-side="forward"]')
    bw = ex.locator('.pcol[data-side="backward"]')
    sin = fw.locator('.pl[data-id="t1"]')  # t1 = torch.sin(t0): saved for backward
    sync_api.expect(sin).to_have_class(re.compile(r"\bsaved\b"))
    sync_api.expect(bw.locator("div.ln", has_text="def backward(")).to_contain_text("t1")
    assert not sin.evaluate("e => e.matches(':target')")
    # click a backward op, the derivative of sin: the forward's sin lights up
    bw.locator('.pl[data-id="t13"] a.go').click()
    sync_api.expect(sin).to_have_css("background-color", TARGET_BLUE)
    assert sin.evaluate("e => e.matches(':target')")
    # and back: the forward's relu lists the backward op that differentiates it
    fw.locator('.pl[data-id="t4"] a.lk[data-to="t8"]').click()
    sync_api.expect(bw.locator('.pl[data-id="t8"]')).to_have_css("background-color", TARGET_BLUE)
    sync_api.expect(sin).not_to_have_css("background-color", TARGET_BLUE)
    # selecting a backward line in the widget lights up its forward op too
    ex.get_by_role("button", name="backward", exact=True).click()
    select = ex.locator(".widget-select select")
    sync_api.expect(select.locator("option").first).to_contain_text("g_t5")  # the backward's lines
    labels = _option_labels(select)
    select.select_option(index=next(i for i, t in enumerate(labels) if t.startswith("t8 = ")))
    sync_api.expect(ex.locator('.pcol[data-side="forward"] .pl.linked[data-id="t4"]')).to_be_visible()
    ex.scroll_into_view_if_needed()
    _save(page, tmp_path, "explorer-lab-pair.png")


def test_report_steps_through_passes_without_script(browser, tmp_path):
    import torch

    import explorer
    import thunder

    def fn(x):
        return (x.cos() * 3).softmax(-1)

    jfn = thunder.jit(fn)
    jfn(torch.ones(2, 3))
    path = tmp_path / "report.html"
    explorer.to_html(jfn, str(path))
    page = browser
    page.goto(path.as_uri())
    panes = page.locator(".kind.rk_computation .pane")
    last = panes.count() - 1
    sync_api.expect(panes.nth(last)).to_be_visible()
    assert not panes.nth(0).is_visible()
    names = [t.provenance.pass_name if t.provenance else "acquisition" for t in thunder.last_traces(jfn)]
    claim = names.index("Transform for execution")
    page.locator(".kind.rk_computation .pbar label", has_text="Transform for execution").click()
    sync_api.expect(panes.nth(claim)).to_be_visible()
    assert not panes.nth(last).is_visible()
    sync_api.expect(panes.nth(claim)).to_contain_text("rewritten")
    panes.nth(claim).get_by_text("next pass").click()
    sync_api.expect(panes.nth(claim + 1)).to_be_visible()
    page.locator(".tabs label", has_text="prologue").click()
    sync_api.expect(page.locator(".kind.rk_prologue")).to_be_visible()
    _save(page, tmp_path, "explorer-report.png")
