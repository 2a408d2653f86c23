"""JupyterLab driven by Debian's chromium, for the explorer's real-browser tests
(``tests/explorer/browser``; its conftest makes the ``lab`` and ``browser`` fixtures from these).

``start_lab(notebooks, root)`` starts a JupyterLab server on a free port with the notebooks
copied into ``root`` (no news toast, no extension manager asking PyPI) and stops it, kernels
included, when the block ends. ``browser_page(profile)`` opens a page in the system's chromium
(never a downloaded browser) that records console errors and uncaught exceptions in
``page.errors``. ``run_all(page, base, name)`` opens a notebook in a workspace of its own,
runs all its cells and returns the explorer it shows. ``save(page, tmp_path, name)`` keeps a
screenshot in tmp_path, ``test-artifacts/`` (git ignores it) and, when ``EXPLORER_SCREENSHOTS``
names a folder, there too (``docs/screenshots`` is made that way).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
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
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SCREENSHOTS_ENV = "EXPLORER_SCREENSHOTS"


def _api(base: str, path: str, method: str = "GET") -> int:
    req = urllib.request.Request(base + path, method=method, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


@contextlib.contextmanager
def start_lab(notebooks: list[Path], root: Path):
    """A JupyterLab server serving ``root`` (the notebooks copied there); yields its base URL."""
    for nb in notebooks:
        shutil.copy(nb, root / nb.name)
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
                raise RuntimeError("JupyterLab did not start:\n" + (root / "lab.log").read_text())
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


@contextlib.contextmanager
def browser_page(sync_api, profile: Path, width: int = 1200, height: int = 900):
    """A chromium page; ``page.errors`` lists its console errors and uncaught exceptions."""
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": width, "height": height},
        )
        try:
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            page.errors = []
            page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: page.errors.append(f"uncaught: {e}"))
            yield page
        finally:
            ctx.close()


def run_all(page, base: str, name: str):
    """Open notebook ``name`` in JupyterLab, run all its cells; the first explorer it shows."""
    # a workspace of its own: only this notebook opens (not the ones an earlier test left open)
    page.goto(f"{base}/lab/workspaces/{Path(name).stem}/tree/{name}?token={TOKEN}")
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
    ex = page.locator(".thunder-explorer:visible").first  # not one of a notebook the workspace reopened
    ex.wait_for()
    return ex


def save(page, tmp_path: Path, name: str, target=None) -> None:
    """A screenshot of the page, or of the part of the locator ``target`` on screen (scrolled to
    its top: JupyterLab scrolls its notebook itself, so a screenshot of an element taller than the
    window comes out torn), in tmp_path, test-artifacts/ and the folder ``EXPLORER_SCREENSHOTS``
    names, if set."""
    clip = None
    if target is not None:
        target.evaluate("e => e.scrollIntoView({block: 'start'})")
        box, size = target.bounding_box(), page.viewport_size
        top, left = max(box["y"], 0), max(box["x"], 0)
        clip = {
            "x": left,
            "y": top,
            "width": min(box["x"] + box["width"], size["width"]) - left,
            "height": min(box["y"] + box["height"], size["height"]) - top,
        }
    folders = [tmp_path, ARTIFACTS]
    if os.environ.get(SCREENSHOTS_ENV):
        folders.append(Path(os.environ[SCREENSHOTS_ENV]))
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / name), clip=clip)
