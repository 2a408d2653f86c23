"""The real-browser tests' fixtures: ``lab``, a JupyterLab server (one per test module) serving
every notebook of this folder, and ``browser``, a page of Debian's chromium that records its
console errors in ``page.errors`` (``support.lab``). Without playwright or chromium these tests
are skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.lab import CHROMIUM, browser_page, start_lab

HERE = Path(__file__).parent


def _sync_api():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (make system installs it)")
    return sync_api


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    _sync_api()
    with start_lab(sorted(HERE.glob("*.ipynb")), tmp_path_factory.mktemp("lab")) as base:
        yield base


@pytest.fixture
def browser(tmp_path):
    with browser_page(_sync_api(), tmp_path / "profile") as page:
        yield page
