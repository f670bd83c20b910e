"""Fixtures for the browser checks: a local server for _build/html and headless chromium.

Every test module here sets `pytestmark = pytest.mark.browser` (pytest -m browser; `make browser`);
tests/conftest.py fails the collection of a test here without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_checks  # noqa: E402

HTML = book_checks.REPO / "_build" / "html"


@pytest.fixture(scope="session")
def playwright_instance():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance):
    b = book_checks.launch_browser(playwright_instance)
    yield b
    b.close()


@pytest.fixture(scope="session")
def offline_assets():
    return book_checks.OfflineAssets()


@pytest.fixture(autouse=True)
def _no_request_to_another_host(request):
    """A test that opens the book's pages (through ``offline_assets``) fails, at its
    teardown, when a page requested anything from another host (a CDN script or stylesheet,
    a web font, a fetch): the book ships everything it needs. Tests that plant such requests
    use an OfflineAssets of their own."""
    if "offline_assets" not in request.fixturenames:
        yield
        return
    with book_checks.no_other_host(request.getfixturevalue("offline_assets"),
                                   request.node.nodeid):
        yield


@pytest.fixture(scope="session")
def built_book() -> Path:
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML}/index.html is missing: run `make book` first")
    return HTML


@pytest.fixture(scope="session")
def book_url(built_book):
    with book_checks.serve_directory(built_book) as url:
        yield url


@pytest.fixture(scope="session")
def book_context(browser, book_url, offline_assets):
    context = book_checks.new_context(browser, book_url, offline_assets)
    yield context
    context.close()
