"""Accessibility of the built book (axe-core, WCAG 2.1 A/AA) and navigation on a phone.

- Every page, at 1280 px and on a 390 px phone: no serious or critical axe-core violation.
- On a 390 px phone the menu opens the table of contents and a link in it opens its page.
- On a phone, on every page, every table that scrolls sideways takes keyboard focus and
  shows a cue (and a table that does not scroll neither); the pages with wide tables
  (WIDE_TABLE_PAGES) must have one that scrolls, so that the check is not empty.
- The checks find what they look for: planted pages (a low-contrast link, a list of
  non-items, a table that scrolls without focus, a menu button that opens nothing) are
  reported.
"""

from __future__ import annotations

import pytest

import access
import book_checks

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
DOCNAMES = book_checks.toc_docnames(REPO)
# pages that must have a table that scrolls at 390 px: the ledger's tables, the benchmark's
WIDE_TABLE_PAGES = ["chapters/claims", "chapters/performance"]


@pytest.fixture(scope="module")
def phone_context(browser, book_url, offline_assets):
    context = browser.new_context(viewport=access.PHONE_VIEWPORT, is_mobile=True, has_touch=True)
    context.set_default_timeout(book_checks.PAGE_TIMEOUT_MS)
    context.route(lambda url: not url.startswith(book_url) and not url.startswith("data:"),
                  offline_assets.handle)
    yield context
    context.close()


@pytest.mark.parametrize("width", [1280, access.PHONE_VIEWPORT["width"]])
@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_has_no_serious_accessibility_violation(docname, width, book_context,
                                                     phone_context, book_url):
    context = phone_context if width == access.PHONE_VIEWPORT["width"] else book_context
    page, _ = book_checks.open_page(context, f"{book_url}{docname}.html")
    try:
        assert page.viewport_size["width"] == width
        problems = access.check_axe(page)
    finally:
        page.close()
    assert not problems, f"{docname}.html at {width} px:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("docname", [DOCNAMES[0], "chapters/training_dynamics"])
def test_phone_menu_opens_the_contents_and_follows_a_link(docname, phone_context, book_url):
    assert not access.check_phone_menu(phone_context, f"{book_url}{docname}.html")


_TABLES = """() => Array.from(document.querySelectorAll('article table')).map(t => ({
  scrolls: t.scrollWidth > t.clientWidth + 1, tabindex: t.getAttribute('tabindex'),
  cue: !!(t.previousElementSibling && t.previousElementSibling.classList.contains('ac-scroll-cue')
          && t.previousElementSibling.offsetParent !== null)}))"""


def test_the_pages_with_wide_tables_are_in_the_book():
    assert set(WIDE_TABLE_PAGES) <= set(DOCNAMES), set(WIDE_TABLE_PAGES) - set(DOCNAMES)


def table_problems(page, must_scroll: bool) -> list[str]:
    """On a page open at phone width, after small_screens.js marked its tables: a table that
    scrolls sideways without keyboard focus or cue, one that fits with either, and (when
    ``must_scroll``) no table that scrolls."""
    page.wait_for_function("() => document.documentElement.dataset.tablesMarked === '1'",
                           timeout=10_000)
    tables = page.evaluate(_TABLES)
    problems = [f"table {i + 1} scrolls sideways but takes no keyboard focus or shows no cue: {t}"
                for i, t in enumerate(tables)
                if t["scrolls"] and not (t["tabindex"] == "0" and t["cue"])]
    problems += [f"table {i + 1} fits but takes focus or shows a cue: {t}"
                 for i, t in enumerate(tables)
                 if not t["scrolls"] and (t["tabindex"] is not None or t["cue"])]
    if must_scroll and not any(t["scrolls"] for t in tables):
        problems.append(f"no table scrolls at {page.viewport_size['width']} px")
    return problems


@pytest.mark.parametrize("docname", DOCNAMES)
def test_wide_tables_on_a_phone_take_focus_and_show_a_cue(docname, phone_context, book_url):
    page, _ = book_checks.open_page(phone_context, f"{book_url}{docname}.html")
    try:
        problems = table_problems(page, docname in WIDE_TABLE_PAGES)
    finally:
        page.close()
    assert not problems, f"{docname}.html:\n  " + "\n  ".join(problems)


WIDE_TABLE = """<!doctype html><html lang="en"><head><title>wide</title></head><body>
<article><table style="display:block;max-width:200px;overflow-x:auto"><tr>
<td style="white-space:nowrap">a table far wider than the two hundred pixels of its box</td>
</tr></table><table><tr><td>narrow</td></tr></table></article>
<script>document.documentElement.dataset.tablesMarked = '1';</script></body></html>"""


def test_a_wide_table_without_focus_or_cue_is_reported(browser):
    context = browser.new_context(viewport=access.PHONE_VIEWPORT, is_mobile=True)
    try:
        page = context.new_page()
        page.set_content(WIDE_TABLE)
        problems = table_problems(page, must_scroll=True)
        page.set_content(WIDE_TABLE.replace("max-width:200px;", "").replace(
            "white-space:nowrap", "").replace("<table>", '<table tabindex="0">'))
        fitting = table_problems(page, must_scroll=True)
    finally:
        context.close()
    assert len(problems) == 1 and "takes no keyboard focus" in problems[0], problems
    assert any("fits but takes focus" in p for p in fitting), fitting
    assert any("no table scrolls" in p for p in fitting), fitting


PLANTED = """<!doctype html><html lang="en"><head><title>planted</title></head><body>
<main><article>
<p style="background:#f3f4f5"><a href="#x" style="color:#8fb3e8">a pale link</a></p>
<div role="list"><div role="doc-biblioentry">an entry</div></div>
<table style="display:block;max-width:200px;overflow-x:auto"><tr>
<td style="white-space:nowrap">a table far wider than the two hundred pixels of its box</td>
</tr></table>
</article></main></body></html>"""


def test_axe_reports_planted_violations(browser):
    page = browser.new_page()
    try:
        page.set_content(PLANTED)
        problems = access.check_axe(page)
    finally:
        page.close()
    rules = {p.split(" ")[0] for p in problems}
    assert {"color-contrast", "aria-required-children", "scrollable-region-focusable"} <= rules


DEAD_MENU = """<!doctype html><html lang="en"><head><title>dead</title></head><body>
<button class="primary-toggle">Menu</button>
<div id="pst-primary-sidebar" style="position:fixed;left:-300px;width:290px">
<nav class="bd-links"><a class="reference internal" href="other.html">Other</a></nav></div>
</body></html>"""


def test_a_menu_that_opens_nothing_is_reported(browser, tmp_path):
    (tmp_path / "dead.html").write_text(DEAD_MENU)
    (tmp_path / "other.html").write_text("<!doctype html><title>other</title>")
    context = browser.new_context(viewport=access.PHONE_VIEWPORT, is_mobile=True, has_touch=True)
    try:
        with book_checks.serve_directory(tmp_path) as url:
            problems = access.check_phone_menu(context, f"{url}dead.html")
    finally:
        context.close()
    assert problems and ("off the screen" in problems[0]
                         or "no table of contents" in problems[0]), problems
