"""The built book (_build/html), page by page, in headless chromium: as a reader meets it.

Run after `make book` with `make browser` (or pytest -m browser). Pages come from
_toc.yml; what each page must show comes from its source (see book_checks.py).
Screenshots of every page go to _build/screenshots/.
"""

from __future__ import annotations

import pytest

import book_checks

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
SCREENSHOTS = REPO / "_build" / "screenshots"

DOCNAMES = book_checks.toc_docnames(REPO)
SEARCH_TERM = "centroid"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page(docname, book_context, book_url, built_book, offline_assets):
    """Every check a reader's visit makes (book_checks.check_page), and no request to
    another host while the page loads and runs (a CDN the book does not need: it ships its
    own MathJax and its explorers' scripts)."""
    source = book_checks.read_source(REPO, docname)
    assert source.path is not None, f"{docname} is in _toc.yml but has no source"
    before = len(offline_assets.requested)
    problems = book_checks.check_page(book_context, book_url, built_book, source, SCREENSHOTS)
    assert not problems, f"{docname}.html:\n  " + "\n  ".join(problems)
    assert book_checks.screenshot_path(SCREENSHOTS, docname).is_file()
    assert offline_assets.requested[before:] == [], f"{docname}.html asked another host"


def test_index_redirects_to_root(book_context, book_url):
    page, visit = book_checks.open_page(book_context, book_url)
    try:
        page.wait_for_url(f"{book_url}{DOCNAMES[0]}.html", timeout=book_checks.PAGE_TIMEOUT_MS)
    finally:
        page.close()
    assert not book_checks.check_load(visit)


def test_search_finds_centroid(book_context, book_url):
    """search.html?q=centroid lists a page whose source mentions centroids.

    While no chapter mentions the word yet (placeholder chapters), the check searches for a
    word of the root page's title instead, so that search itself is still tested.
    """
    sources = [book_checks.read_source(REPO, d) for d in DOCNAMES]
    term = SEARCH_TERM
    if not any(SEARCH_TERM in s.text.lower() for s in sources):
        import re

        words = re.findall(r"[A-Za-z]{5,}", sources[0].text.split("\n# ", 1)[-1])
        term = words[0].lower()
    problems, links = book_checks.check_search(book_context, book_url, term)
    assert not problems, "\n".join(problems)
    found = {link.split("?")[0].split("#")[0].removeprefix(book_url).removesuffix(".html") for link in links}
    mentioning = {s.docname for s in sources if term in s.text.lower()}
    assert found & mentioning, f"search for {term!r} found {sorted(found)}, expected one of {sorted(mentioning)}"
