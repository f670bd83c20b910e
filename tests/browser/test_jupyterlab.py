"""A chapter in JupyterLab, as a student running it on their machine meets it.

`make lab` opens the chapters' reader editions (the notebooks the built book offers for
download) copied into a folder of their own. This test starts JupyterLab (the project's
environment) on 127.0.0.1 over such a folder outside the repository, holding the built
reader edition of ``mixtures`` as `make lab` copies it, opens it by its URL, checks that
its text is rendered (no MyST role, directive fence, ``:label:`` line or glue name shown raw,
no mathematics that MathJax could not typeset, such as an undefined macro), runs all cells,
checks that no cell raised, moves one slider of the mixture explorer and checks that the
explorer's figure changed. The server and its kernels are stopped at the end. Needs `make
book` (the reader editions) and chromium.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import book_checks

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
CHAPTER = "chapters/mixtures.ipynb"
READER_EDITION = REPO / "_build" / "html" / "_sources" / CHAPTER
RUN_TIMEOUT_S = 600
"""The whole chapter, executed in the page's kernel (it takes well under a minute on an
idle 2-core machine; the limit leaves room for a loaded one)."""

_CELLS_STATE = """() => {
  const cells = Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell'));
  const prompts = cells.map(c => (c.querySelector('.jp-InputPrompt') || {}).textContent || '');
  return {n: cells.length,
          running: prompts.filter(p => p.includes('*')).length,
          unrun: prompts.filter(p => /\\[\\s*\\]/.test(p)).length,
          errors: Array.from(document.querySelectorAll(
              '.jp-Notebook [data-mime-type="application/vnd.jupyter.stderr"], '
              + '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'))
              .map(e => e.textContent.slice(0, 300))};
}"""

_EXPLORER_IMAGE = """() => {
  const img = document.querySelector('.jp-Notebook .widget-output img, .jp-Notebook .jupyter-widgets-output-area img');
  return img ? img.src : null;
}"""


# MyST that a renderer left as text: a role, a directive fence, a directive option line, a
# glue name; and mathematics MathJax could not typeset (an error box, an undefined macro
# shown in red by its noundefined extension)
RAW_MYST = re.compile(r"\{[a-z:-]+\}`|```\{|^:(label|class|name|tags):|\{glue", re.MULTILINE)
_MARKDOWN_STATE = """() => ({
  texts: Array.from(document.querySelectorAll('.jp-Notebook .jp-MarkdownOutput'))
           .map(e => e.innerText),
  unrendered: document.querySelectorAll('.jp-Notebook .jp-MarkdownCell:not(.jp-mod-rendered)').length,
  mathErrors: Array.from(document.querySelectorAll(
      '.jp-Notebook mjx-merror, .jp-Notebook mjx-mtext[style*="red"], .jp-Notebook mjx-mi[style*="red"]'))
      .map(e => (e.closest('mjx-container') || e).textContent.slice(0, 80)),
  mathCount: document.querySelectorAll('.jp-Notebook mjx-container').length})"""


def raw_markup(state: dict) -> list[str]:
    """What a reader would see unrendered, from :data:`_MARKDOWN_STATE`."""
    found = [m.group(0) for t in state["texts"] for m in RAW_MYST.finditer(t)]
    return found + [f"math error: {e}" for e in state["mathErrors"]]


def test_raw_markup_is_recognised():
    """The pattern finds what the MyST source shows when opened unrendered."""
    state = {"texts": ["See {cite}`x` and {ref}`y`", "```{prf:theorem}\n:label: thm",
                       "{glue:text}`n`", "a plain sentence"], "mathErrors": ["\\R"]}
    assert len(raw_markup(state)) == 6
    assert not raw_markup({"texts": ["Theorem 1 (Distortion). See (Cheng, 1995)."],
                           "mathErrors": []})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """(base URL, token) of a JupyterLab server on 127.0.0.1, stopped afterwards."""
    port, token = _free_port(), secrets.token_hex(16)
    home = tmp_path_factory.mktemp("lab-home")
    # the reader's own settings, for this server only: every cell rendered (JupyterLab
    # renders cells lazily by default, and the test reads every cell's prompt), no news
    user = home / "lab-user-settings" / "@jupyterlab"
    (user / "notebook-extension").mkdir(parents=True)
    (user / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none"}')
    (user / "apputils-extension").mkdir(parents=True)
    (user / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    (user / "docmanager-extension").mkdir(parents=True)
    (user / "docmanager-extension" / "plugin.jupyterlab-settings").write_text(
        '{"autosave": false}')
    root = home / "lab"
    (root / "chapters").mkdir(parents=True)
    if not READER_EDITION.is_file():
        pytest.fail(f"{READER_EDITION} is missing: run `make book` first")
    shutil.copy(READER_EDITION, root / CHAPTER)
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    cmd = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.user_settings_dir={home / 'lab-user-settings'}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           *(["--allow-root"] if os.geteuid() == 0 else [])]  # CI containers run as root
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
                    pytest.fail(f"JupyterLab did not start: {out[-2000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        _stop(proc, base, token)
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid).find(
        str(home / "runtime")) >= 0]
    assert not left, f"kernels of the test's JupyterLab still run: {left}"


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _stop(proc: subprocess.Popen, base: str, token: str) -> None:
    """Stop the server: it shuts its kernels down (kernels run in their own sessions, so a
    signal to the server's process group would not reach them); then signals, if needed."""
    try:
        urllib.request.urlopen(urllib.request.Request(
            f"{base}/api/shutdown?token={token}", method="POST"), timeout=10)
        proc.wait(timeout=60)
        return
    except (OSError, subprocess.TimeoutExpired):
        pass
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


def test_chapter_runs_in_jupyterlab_and_its_explorer_redraws(jupyterlab, browser):
    base, token = jupyterlab
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # the book's own machine only: no CDN, no update checks
    context.route(lambda url: not url.startswith(base), lambda route: route.abort())
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{base}/lab/tree/{CHAPTER}?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell")  # opened as a notebook
        page.wait_for_function("() => document.querySelectorAll('.jp-Notebook mjx-container')"
                               ".length > 0")  # MathJax has typeset
        page.wait_for_timeout(2000)
        shown = page.evaluate(_MARKDOWN_STATE)
        assert shown["texts"] and not shown["unrendered"], shown["unrendered"]
        assert not raw_markup(shown), raw_markup(shown)[:20]
        page.wait_for_function(  # the kernel has started (the status bar says so)
            "() => Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))"
            ".some(e => /\\|\\s*Idle/.test(e.textContent))")
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        t0, state = time.monotonic(), None
        while time.monotonic() - t0 < RUN_TIMEOUT_S:
            page.wait_for_timeout(1000)
            state = page.evaluate(_CELLS_STATE)
            if state["errors"] or (state["n"] and not state["running"] and not state["unrun"]):
                break
        assert state and not state["errors"], state["errors"]
        assert state["n"] > 0 and not state["running"] and not state["unrun"], state
        elapsed = time.monotonic() - t0
        before = page.evaluate(f"() => (window.__before = ({_EXPLORER_IMAGE})())")
        assert before, "the mixture explorer shows no figure"
        handle = page.locator(".jp-Notebook .widget-slider .noUi-handle").first
        handle.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => ({_EXPLORER_IMAGE})() !== window.__before", timeout=60_000)
        print(f"{CHAPTER}: all cells ran in JupyterLab in {elapsed:.0f} s")
    finally:
        context.close()
