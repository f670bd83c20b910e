"""Accessibility of the built book (axe-core, WCAG 2.1 A/AA) and navigation on a phone.

- Every page: no serious or critical axe-core violation.
- On a 390 px phone the menu opens the table of contents and a link in it opens its page.
- On a phone, every table that scrolls sideways takes keyboard focus and shows a cue.
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
# the pages with wide tables: the ledger's tables, the benchmark's and the Beyond tables
WIDE_TABLE_PAGES = ["chapters/claims", "chapters/performance"]


@pytest.fixture(scope="module")
def phone_context(browser, book_url, offline_assets):
    context = browser.new_context(viewport=access.PHONE_VIEWPORT, is_mobile=True, has_touch=True)
    context.set_default_timeout(book_checks.PAGE_TIMEOUT_MS)
    context.route(lambda url: not url.startswith(book_url) and not url.startswith("data:"),
                  offline_assets.handle)
    yield context
    context.close()


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_has_no_serious_accessibility_violation(docname, book_context, book_url):
    page, _ = book_checks.open_page(book_context, f"{book_url}{docname}.html")
    try:
        problems = access.check_axe(page)
    finally:
        page.close()
    assert not problems, f"{docname}.html:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("docname", [DOCNAMES[0], "chapters/training_dynamics"])
def test_phone_menu_opens_the_contents_and_follows_a_link(docname, phone_context, book_url):
    assert not access.check_phone_menu(phone_context, f"{book_url}{docname}.html")


_TABLES = """() => Array.from(document.querySelectorAll('article table')).map(t => ({
  scrolls: t.scrollWidth > t.clientWidth + 1, tabindex: t.getAttribute('tabindex'),
  cue: !!(t.previousElementSibling && t.previousElementSibling.classList.contains('ac-scroll-cue')
          && t.previousElementSibling.offsetParent !== null)}))"""


@pytest.mark.parametrize("docname", WIDE_TABLE_PAGES)
def test_wide_tables_on_a_phone_take_focus_and_show_a_cue(docname, phone_context, book_url):
    page, _ = book_checks.open_page(phone_context, f"{book_url}{docname}.html")
    try:
        page.wait_for_function("() => document.documentElement.dataset.tablesMarked === '1'")
        tables = page.evaluate(_TABLES)
    finally:
        page.close()
    scrolling = [t for t in tables if t["scrolls"]]
    assert scrolling, f"no table of {docname} scrolls at {access.PHONE_VIEWPORT['width']} px"
    assert all(t["tabindex"] == "0" and t["cue"] for t in scrolling), scrolling
    assert all(t["tabindex"] is None and not t["cue"] for t in tables if not t["scrolls"])


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
