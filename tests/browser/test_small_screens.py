"""The built book on a phone and from disk, in headless chromium.

- At 1280 px and 390 px widths (layout.py): no page scrolls sideways, no display equation
  runs past the screen's edge (wide ones are scaled to fit, down to half size, then scroll
  in their own box), and every figure's smallest text is at least
  ``_legibility.FLOOR_PX`` CSS px as shown, without zooming (its desktop floor at 1280 px,
  its phone floor at 390 px), read from the size each figure's PNG carries
  (``_legibility.PNG_KEY``); a PNG without it fails.
- Opened from ``file://`` with every network request refused, each page with mathematics
  typesets it (MathJax is served from the build itself).
"""

from __future__ import annotations

import pytest

import book_checks
import layout

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
DOCNAMES = book_checks.toc_docnames(REPO)
WITH_MATH = [d for d in DOCNAMES if book_checks.read_source(REPO, d).has_math]


@pytest.mark.parametrize("width", layout.WIDTHS)
@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_fits_the_screen(docname, width, book_context, book_url, built_book):
    lay = layout.measure(book_context, book_url, built_book, docname, width)
    problems = []
    if lay.sideways > 1:
        problems.append(f"the page scrolls sideways by {lay.sideways:.0f} px")
    problems += [f"equation past the screen's edge: {t!r}" for t in lay.offscreen_equations]
    problems += [f"figure without its smallest text size ({layout.PNG_KEY}): {f.describe()}"
                 for f in lay.unmeasured_figures]
    problems += [f"figure text under {lay.floor_px:g} px: {f.describe()}" for f in lay.small_figures]
    assert not problems, f"{docname}.html at {width} px:\n  " + "\n  ".join(problems)


@pytest.fixture(scope="module")
def offline_file_context(browser):
    """A context that may read files and nothing else: no server, no network."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(book_checks.PAGE_TIMEOUT_MS)
    refused: list[str] = []

    def refuse(route):
        refused.append(route.request.url)
        route.abort()

    context.route(lambda url: not url.startswith(("file://", "data:")), refuse)
    context.refused = refused
    yield context
    context.close()


@pytest.mark.parametrize("docname", WITH_MATH)
def test_page_from_disk_typesets_offline(docname, offline_file_context, built_book):
    source = book_checks.read_source(REPO, docname)
    page, _ = book_checks.open_page(offline_file_context,
                                    (built_book / f"{docname}.html").as_uri())
    try:
        problems = book_checks.check_math(page, source)
        count = page.locator("article mjx-container").count()
    finally:
        page.close()
    assert count > 0 and not problems, (count, problems)
    assert not [u for u in offline_file_context.refused if "mathjax" in u.lower()]
