"""Accessibility and phone navigation of the built book, in a real browser.

- ``check_axe(page)``: axe-core (the copy that axe-playwright-python ships) run on the page
  with the WCAG 2.1 A and AA rules; a violation of impact "serious" or "critical" is a
  problem, named with its rule and the elements it was found on. Minor and moderate ones
  are returned apart, for the counts.
- ``check_phone_menu(context, url)``: on a phone-sized page, the menu button opens the
  table of contents, and a link in it leads to its page.

Used by test_access.py, and as a command that prints the counts for a built book:

    .venv/bin/python tests/browser/access.py [HTML_ROOT]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_checks  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
"""The axe-core rule tags of WCAG 2.1 levels A and AA."""
BLOCKING = ("serious", "critical")
PHONE_VIEWPORT = {"width": 390, "height": 844}


@dataclass
class AxeFindings:
    """The WCAG 2.1 A/AA violations axe-core finds on one page."""

    blocking: list[str] = field(default_factory=list)  # serious or critical, one per rule
    minor: list[str] = field(default_factory=list)     # minor or moderate
    counts: Counter = field(default_factory=Counter)   # (rule, impact) -> elements


def run_axe(page) -> AxeFindings:
    """Run axe-core on ``page`` (loaded, MathJax typeset) with the WCAG 2.1 A/AA rules."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options={"runOnly": {"type": "tag", "values": list(WCAG_TAGS)},
                                       "resultTypes": ["violations"]})
    found = AxeFindings()
    for v in results.response["violations"]:
        targets = [", ".join(map(str, n["target"])) for n in v["nodes"]]
        found.counts[(v["id"], v["impact"])] += len(targets)
        shown = "; ".join(targets[:4]) + (f"; and {len(targets) - 4} more" if len(targets) > 4 else "")
        line = f"{v['id']} ({v['impact']}, {len(targets)} element(s): {shown}): {v['help']}"
        (found.blocking if v["impact"] in BLOCKING else found.minor).append(line)
    return found


def wait_for_math(page) -> None:
    """Let MathJax finish: axe checks the page a reader sees, typeset."""
    page.evaluate("""async () => {
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
        try { await MathJax.startup.promise; } catch (e) {}
      }}""")


def check_axe(page) -> list[str]:
    """The serious and critical WCAG 2.1 A/AA violations on ``page``."""
    wait_for_math(page)
    return run_axe(page).blocking


_MENU = "button.primary-toggle"
_TOC_LINK = "#pst-primary-sidebar nav.bd-links a.reference.internal, " \
            "dialog[open] nav.bd-links a.reference.internal"


def check_phone_menu(context, url: str) -> list[str]:
    """On a 390 px page, tapping the visible menu button shows the table of contents, and
    tapping one of its links opens that page. ``context`` must have a phone viewport."""
    page, _ = book_checks.open_page(context, url)
    try:
        buttons = [b for b in page.locator(_MENU).all() if b.is_visible()]
        if not buttons:
            return ["no visible menu button on a phone"]
        buttons[0].click()
        links = page.locator(_TOC_LINK)
        try:
            links.first.wait_for(state="visible", timeout=book_checks.PAGE_TIMEOUT_MS // 6)
        except PlaywrightTimeout:
            return ["the menu button opened no table of contents on a phone"]
        box = links.first.bounding_box()
        if box is None or box["x"] + box["width"] <= 0 or box["x"] >= PHONE_VIEWPORT["width"]:
            return [f"the table of contents opened off the screen ({box})"]
        visible = [a for a in links.all() if a.is_visible()]
        target = next((a for a in visible if a.get_attribute("href") not in (None, "", "#")
                       and not a.get_attribute("href").startswith("#")), None)
        if target is None:
            return ["the phone menu shows no link to another page"]
        href = target.get_attribute("href")
        target.click()
        try:
            page.wait_for_url(lambda u: u.split("#")[0].endswith(href.split("#")[0].lstrip("./")),
                              timeout=book_checks.PAGE_TIMEOUT_MS)
        except PlaywrightTimeout:
            return [f"tapping {href!r} in the phone menu did not open it (still at {page.url})"]
        return []
    finally:
        page.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", type=Path, default=book_checks.REPO / "_build" / "html")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    docnames = book_checks.toc_docnames(book_checks.REPO)
    with sync_playwright() as p, book_checks.serve_directory(args.html) as url:
        browser = book_checks.launch_browser(p)
        context = book_checks.new_context(browser, url, book_checks.OfflineAssets())
        total: Counter = Counter()
        for docname in docnames:
            page, _ = book_checks.open_page(context, f"{url}{docname}.html")
            try:
                wait_for_math(page)
                found = run_axe(page)
            finally:
                page.close()
            total.update(found.counts)
            print(f"{docname}: {len(found.blocking)} serious/critical rule(s), "
                  f"{len(found.minor)} minor/moderate")
            for line in found.blocking + found.minor:
                print("   ", line)
        phone = browser.new_context(viewport=PHONE_VIEWPORT, is_mobile=True, has_touch=True)
        menu = check_phone_menu(phone, f"{url}{docnames[1]}.html")
        print("phone menu:", "works" if not menu else "; ".join(menu))
        by_impact = Counter()
        for (rule, impact), n in total.items():
            by_impact[impact] += n
        print("elements by impact:", dict(by_impact))
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
