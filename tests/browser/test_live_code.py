"""The "Live Code" button (Thebe) says when it cannot reach a kernel (_ext/static/thebe_status.js).

The book itself has no repository URL yet (_config.yml's repository.url is empty), so
_ext/launch_buttons.py leaves the launch buttons, "Live Code" among them, out of every
page. A one-page book with the real _config.yml and _ext/ and a repository URL is built
here instead, so the buttons appear; its page is opened offline (every request to another
host answered by the test) and "Live Code" clicked:

- Thebe's CDN answered with an empty script (as book_checks.OfflineAssets does), refused
  (a network error) or never answering: a message with role="alert" that the code cannot
  run here and that links the page's notebook appears within a bounded time;
- Thebe loaded but reporting that its kernel "dead": the same message;
- Thebe loaded and "ready": no message.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import book_checks

from attnclust.assignments.source import MYST_HEADER

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
ALERT = "#ac-thebe-alert[role=alert]"
ALERT_WITHIN_MS = 25_000
"""thebe_status.js gives Thebe 20 s to load before it says so (LOAD_TIMEOUT_MS); a CDN
that fails says so at once."""

PAGE = MYST_HEADER + """
# Live page

```{code-cell} python3
print(6 * 7)
```
"""

# A stand-in for Thebe (served as its CDN script): reports `status` once bootstrapped.
FAKE_THEBE = """window.thebelab = {handlers: [],
  on(event, f) { if (event === 'status') this.handlers.push(f); },
  bootstrap() { setTimeout(() => this.handlers.forEach(f => f(null,
    {status: '%s', message: 'planted'})), 100); }};"""


@pytest.fixture(scope="module")
def live_book(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("live_book")
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    config["repository"]["url"] = "https://github.com/example/book"
    config["title"] = "Live code book"
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/live\n")
    (root / "chapters").mkdir()
    (root / "chapters" / "references.bib").write_text(
        (REPO / "chapters" / "references.bib").read_text())
    shutil.copytree(REPO / "_ext", root / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "chapters" / "live.md").write_text(PAGE)
    jb = Path(sys.executable).parent / "jupyter-book"
    r = subprocess.run([str(jb), "build", str(root), "--builder", "html"],
                       capture_output=True, text=True, timeout=600, check=False)
    html = root / "_build" / "html" / "chapters" / "live.html"
    assert r.returncode == 0 and html.is_file(), r.stdout[-3000:] + r.stderr[-3000:]
    text = html.read_text()
    assert "initThebeSBT()" in text, "no Live Code button: repository URL not honoured?"
    assert "thebe_status.js" in text, "thebe_status.js is not on the page"
    return root / "_build" / "html"


@pytest.fixture(scope="module")
def live_url(live_book):
    with book_checks.serve_directory(live_book) as url:
        yield f"{url}chapters/live.html"


def _open(browser, url: str, cdn, timeout_ms: int | None = None):
    """The page in a fresh context whose requests to other hosts go to `cdn(route)`."""
    base = url[: url.index("/", len("http://")) + 1]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(book_checks.PAGE_TIMEOUT_MS)
    context.route(lambda u: not u.startswith(base) and not u.startswith("data:"), cdn)
    if timeout_ms is not None:
        context.add_init_script(f"window.ATTNCLUST_THEBE_TIMEOUT_MS = {timeout_ms};")
    page = context.new_page()
    page.goto(url, wait_until="load")
    return context, page


def _click_live_code(page) -> None:
    page.locator(".dropdown-launch-buttons button").first.click()
    page.locator('button[onclick*="initThebeSBT"]').click()


def _thebe_script(body: str):
    def handle(route):
        if "thebe" in route.request.url:
            route.fulfill(status=200, body=body, content_type="application/javascript")
        else:
            route.fulfill(status=200, body=b"")
    return handle


def _alert_after_click(browser, url, cdn, timeout_ms=None) -> tuple[str, float]:
    context, page = _open(browser, url, cdn, timeout_ms)
    try:
        assert page.locator(ALERT).count() == 0, "an alert before Live Code was clicked"
        t0 = page.evaluate("() => performance.now()")
        _click_live_code(page)
        page.wait_for_selector(ALERT, state="visible", timeout=ALERT_WITHIN_MS)
        seconds = (page.evaluate("() => performance.now()") - t0) / 1000
        text = page.locator(ALERT).inner_text()
        href = page.locator(f"{ALERT} a").get_attribute("href")
    finally:
        context.close()
    assert "cannot run here" in text and "notebook" in text, text
    assert href and href.endswith("_sources/chapters/live.ipynb"), href
    return text, seconds


def test_offline_live_code_says_it_cannot_run(browser, live_url):
    """Offline as the browser checks run it: the CDN answers with an empty body."""
    _, seconds = _alert_after_click(browser, live_url, book_checks.OfflineAssets().handle)
    assert seconds < 5, f"the message took {seconds:.1f} s"


def test_unreachable_cdn_says_so(browser, live_url):
    text, seconds = _alert_after_click(browser, live_url, lambda route: route.abort())
    assert "could not be loaded" in text, text
    assert seconds < 5, f"the message took {seconds:.1f} s"


def test_a_cdn_that_never_answers_times_out(browser, live_url):
    hanging = []  # never fulfilled: the request stays pending
    text, seconds = _alert_after_click(browser, live_url, lambda route: hanging.append(route),
                                       timeout_ms=1500)
    assert "did not load within" in text, text
    assert 1.4 < seconds < 10, f"the message took {seconds:.1f} s"


def test_a_dead_kernel_says_so(browser, live_url):
    text, _ = _alert_after_click(browser, live_url, _thebe_script(FAKE_THEBE % "dead"))
    assert '"dead"' in text, text


def test_a_ready_kernel_shows_no_message(browser, live_url):
    context, page = _open(browser, live_url, _thebe_script(FAKE_THEBE % "ready"),
                          timeout_ms=1500)
    try:
        _click_live_code(page)
        page.wait_for_timeout(3000)  # past the load timeout and the planted status
        assert page.locator(ALERT).count() == 0, page.locator(ALERT).inner_text()
    finally:
        context.close()
