"""A chapter in JupyterLab, as a student running it on their machine meets it.

`make lab` opens the chapters' reader editions (the notebooks the built book offers for
download) copied into a folder of their own. This test runs `make lab` itself (the
project's environment; ``LAB_DIR`` a folder outside the repository, ``LAB_FLAGS`` for a
server on 127.0.0.1 with no browser), opens the reader edition of ``mixtures`` by its URL,
checks that its text is rendered (no MyST role, directive fence, ``:label:`` line or glue
name shown raw, no mathematics that MathJax could not typeset, such as an undefined macro),
runs the cells above the mixture explorer, then the explorer's cell and all below: the
explorer's first live figure must appear within EXPLORER_WITHIN_S of its cell starting to
run, and no cell may raise; moves one slider and checks that the figure changed; saves the
notebook and checks that the repository is unchanged (``git status --porcelain`` and the
content of each file it lists, before Lab started and after the save). The server and its
kernels are stopped at the end. Needs `make book` (the reader editions) and chromium.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

import book_checks
from attnclust.assignments.markdown import RAW_MARKUP

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
CHAPTER = "chapters/mixtures.ipynb"
READER_EDITION = REPO / "_build" / "html" / "_sources" / CHAPTER
RUN_TIMEOUT_S = 600
"""The whole chapter, executed in the page's kernel (it takes well under a minute on an
idle 2-core machine; the limit leaves room for a loaded one)."""

_CELLS_STATE = """(upto) => {
  const cells = Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'))
      .slice(0, upto === undefined || upto === null ? undefined : upto)
      .filter(c => c.classList.contains('jp-CodeCell'));
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


EXPLORER_WITHIN_S = 10
"""A live explorer shows its first figure within this time of its cell starting to run (the
cells above it run, the kernel idle): what a reader waits for after pressing Shift+Enter."""

# Records, in the page, the time from window.__explorerStart (set when the explorer's cell
# is run) to its first live figure (an image loaded in the widget's output) in cell `i`.
_WATCH_EXPLORER = """(i) => {
  const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
  const sel = '.widget-output img, .jupyter-widgets-output-area img';
  window.__explorerStart = null;
  window.__explorerShown = null;
  let cleared = false;  // an image of an earlier run does not count
  const check = () => {
    if (window.__explorerStart === null || window.__explorerShown !== null) return;
    const imgs = Array.from(cell.querySelectorAll(sel));
    if (!cleared) { if (imgs.length) return; cleared = true; }
    if (imgs.some(im => im.complete && im.naturalWidth > 0))
      window.__explorerShown = performance.now() - window.__explorerStart;
  };
  new MutationObserver(check).observe(cell, {subtree: true, childList: true, attributes: true});
  setInterval(check, 20);  // an image that finished decoding changes no attribute
}"""


# MyST that a renderer left as text (attnclust.assignments.markdown.RAW_MARKUP: a role, a
# directive fence or option line, a glue name, an equation's label); and mathematics MathJax
# could not typeset (an error box, an undefined macro shown in red by its noundefined
# extension)
RAW_MYST = RAW_MARKUP
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
    assert len(raw_markup({"texts": ["$$ x $$ (eq-two-head-layer)", "by equation (eq-head-limit)"],
                           "mathErrors": []})) == 2
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
    root = home / "lab"  # make lab's LAB_DIR (lab/ in the repository), here outside it
    if not READER_EDITION.is_file():
        pytest.fail(f"{READER_EDITION} is missing: run `make book` first")
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    flags = ["--no-browser",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={token}",
             f"--LabApp.user_settings_dir={home / 'lab-user-settings'}",
             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             *(["--allow-root"] if os.geteuid() == 0 else [])]  # CI containers run as root
    # `make lab`, as a reader runs it (it copies the reader editions into LAB_DIR and starts
    # Lab there); never reinstall the environment (-o) or build the book (the recipe's
    # `$(MAKE) book` when the reader editions are missing, MAKE=false) from inside a test
    assert all(" " not in f and "'" not in f for f in flags + [str(root)]), flags
    cmd = ["make", "-C", str(REPO), "--no-print-directory", "-o", ".venv/.installed",
           "MAKE=false", "lab",
           f"LAB_DIR={root}", "LAB_FLAGS=" + " ".join(flags)]
    git_before = git_state()
    log = (home / "lab.log").open("wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
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
                    out = (home / "lab.log").read_text(errors="replace")
                    pytest.fail(f"`make lab` did not start JupyterLab: {out[-2000:]}")
                time.sleep(0.5)
        assert (root / CHAPTER).is_file(), sorted(p.name for p in root.rglob("*"))
        yield Lab(base, token, root, git_before)
    finally:
        _stop(proc, base, token)
        log.close()
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid).find(
        str(home / "runtime")) >= 0]
    assert not left, f"kernels of the test's JupyterLab still run: {left}"


@dataclass
class Lab:
    base: str
    token: str
    root: Path  # LAB_DIR
    git_before: dict[str, str]  # git_state() before Lab started


def git_state() -> dict[str, str]:
    """``git status --porcelain`` of the repository, each listed path with a hash of its
    content (a file already modified and rewritten again changes its hash)."""
    r = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                        "--untracked-files=all"], capture_output=True, text=True, check=True)
    state = {}
    for line in r.stdout.splitlines():
        path = REPO / line[3:].split(" -> ")[-1].strip('"')
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
        state[line] = digest
    return state


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


def _run_menu(page, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def _wait_for_cells(page, upto=None) -> dict:
    """Until the first `upto` cells (all: None) have run, or one raised."""
    t0, state = time.monotonic(), None
    while time.monotonic() - t0 < RUN_TIMEOUT_S:
        page.wait_for_timeout(500)
        state = page.evaluate(_CELLS_STATE, upto)
        if state["errors"] or (state["n"] and not state["running"] and not state["unrun"]):
            break
    assert state and not state["errors"], state["errors"]
    assert state["n"] > 0 and not state["running"] and not state["unrun"], state
    return state


def _select(page, index: int) -> None:
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.wait_for_function(
        "(i) => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
        ".classList.contains('jp-mod-active')", arg=index)


def test_chapter_runs_in_jupyterlab_and_its_explorer_redraws(jupyterlab, browser):
    """Opened as `make lab` opens it: rendered (no raw markup); the cells above the
    explorer run, then the explorer's cell and the rest: its live figure appears within
    EXPLORER_WITHIN_S, no cell raises, a slider redraws the figure; saved, the notebook
    in LAB_DIR changes and the repository does not (`git status`: no source rewritten)."""
    lab = jupyterlab
    notebook = nbformat.read(lab.root / CHAPTER, as_version=4)
    explorer = next(i for i, c in enumerate(notebook.cells) if c.cell_type == "code"
                    and "widget" in c.metadata.get("tags", []))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # the book's own machine only: no CDN, no update checks
    context.route(lambda url: not url.startswith(lab.base), lambda route: route.abort())
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{lab.base}/lab/tree/{CHAPTER}?token={lab.token}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell")  # opened as a notebook
        page.wait_for_function("() => document.querySelectorAll('.jp-Notebook mjx-container')"
                               ".length > 0")  # MathJax has typeset
        page.wait_for_timeout(2000)
        shown = page.evaluate(_MARKDOWN_STATE)
        assert shown["texts"] and not shown["unrendered"], shown["unrendered"]
        assert not raw_markup(shown), raw_markup(shown)[:20]
        assert page.locator(".jp-Notebook .jp-Cell").count() == len(notebook.cells)
        page.wait_for_function(  # the kernel has started (the status bar says so)
            "() => Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))"
            ".some(e => /\\|\\s*Idle/.test(e.textContent))")
        t0 = time.monotonic()
        _select(page, explorer)
        _run_menu(page, "Run All Above Selected Cell")
        _wait_for_cells(page, explorer)
        _select(page, explorer)
        page.evaluate(_WATCH_EXPLORER, explorer)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.evaluate("() => { window.__explorerStart = performance.now(); }")
        page.locator(".lm-Menu-itemLabel", has_text="Run Selected Cell and All Below").first.click()
        page.wait_for_function("() => window.__explorerShown !== null",
                               timeout=RUN_TIMEOUT_S * 1000)
        explorer_s = page.evaluate("() => window.__explorerShown") / 1000
        _wait_for_cells(page)
        elapsed = time.monotonic() - t0
        print(f"{CHAPTER}: all cells ran in JupyterLab in {elapsed:.0f} s; the explorer "
              f"showed its figure {explorer_s:.1f} s after its cell started")
        assert explorer_s <= EXPLORER_WITHIN_S, (
            f"the explorer's figure took {explorer_s:.1f} s (> {EXPLORER_WITHIN_S} s)")
        before = page.evaluate(f"() => (window.__before = ({_EXPLORER_IMAGE})())")
        assert before, "the mixture explorer shows no figure"
        handle = page.locator(".jp-Notebook .widget-slider .noUi-handle").first
        handle.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => ({_EXPLORER_IMAGE})() !== window.__before", timeout=60_000)
        # saved as a reader saves it: the copy in LAB_DIR, not a chapter source
        saved = lab.root / CHAPTER
        mtime = saved.stat().st_mtime_ns
        _select(page, explorer)
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 60
        while saved.stat().st_mtime_ns == mtime and time.monotonic() < deadline:
            page.wait_for_timeout(250)
        assert saved.stat().st_mtime_ns != mtime, "the notebook was not saved"
    finally:
        context.close()
    after = git_state()
    changed = sorted(set(after.items()) ^ set(lab.git_before.items()))
    assert after == lab.git_before, (
        f"running and saving in `make lab` changed the repository: {changed}")
