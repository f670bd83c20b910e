"""Checks of the built HTML book as a reader meets it, in a real browser.

Every check is a plain function that returns a list of problems (strings, empty when the
page is fine), so that the real tests (test_book_pages.py) assert the list is empty and
the tests of the tests (test_planted_book.py) assert that planted faults are reported.

What is checked is driven by _toc.yml (which pages) and by each page's source (what the
page must show): a page whose source has mathematics must show typeset math, a page
whose source has a {prf:theorem} must show a theorem, and so on. Conventions that
chapter writers follow are in CONTRIBUTING.md ("Widgets in chapters", "Figures").

The browser runs offline: pages are served from 127.0.0.1 and load MathJax 3 from the
build itself (sphinx-mathjax-offline); a build from before that (which loads MathJax from
a CDN, measured by layout.py) gets it from the same installed package, and any other
request to another host is answered with an empty body and recorded (visit.external).
Images from other hosts are reported as problems: the book ships its own images.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import mimetypes
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("ATTNCLUST_CHROMIUM", "/usr/bin/chromium")
MATHJAX_CDN = re.compile(r"^https?://cdn\.jsdelivr\.net/npm/mathjax@3[^/]*/es5/([^?#]+)")
SOURCE_SUFFIXES = (".md", ".ipynb", ".rst")
# How long a check waits for what a page must do (load, typeset, open a dropdown) before it
# reports that the page did not: bounds against a hang, far beyond what a loaded machine
# takes, never a check of speed.
PAGE_TIMEOUT_MS = 30_000
MATH_TIMEOUT_MS = 20_000
IMAGE_TIMEOUT_MS = 10_000


# --------------------------------------------------------------------------- sources


def toc_entries(node) -> list[str]:
    """All `root:` and `file:` entries of a Jupyter Book 1.x TOC (parsed YAML), in order,
    duplicates kept."""
    out: list[str] = []
    if isinstance(node, dict):
        for key in ("root", "file"):
            if isinstance(node.get(key), str):
                out.append(node[key])
        for key, value in node.items():
            if key not in ("root", "file"):
                out.extend(toc_entries(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(toc_entries(item))
    return out


def toc_docnames(book_root: Path) -> list[str]:
    """Docnames (paths without suffix) of every page in _toc.yml, root first."""
    toc = yaml.safe_load((book_root / "_toc.yml").read_text())

    names = []
    for entry in toc_entries(toc):
        stem = entry
        for suffix in SOURCE_SUFFIXES:
            stem = stem.removesuffix(suffix)
        if stem not in names:
            names.append(stem)
    return names


_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>[^\n]*)$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[\w:.-]+)\}")
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?=[^\s$])[^$\n]{1,300}?(?<=[^\s\\])\$(?!\$)")
_MATH_MARKERS = re.compile(r"\$\$|\\begin\{(equation|align|gather|multline|eqnarray)")


@dataclass
class Source:
    """What a page's source says the page must show."""

    docname: str
    path: Path | None = None
    text: str = ""
    prose: str = ""  # the text outside code cells and code blocks
    directives: Counter = field(default_factory=Counter)
    widget_cells: int = 0  # code cells tagged `widget`
    solution_dropdowns: int = 0

    @property
    def has_math(self) -> bool:
        return bool(
            self.directives.get("math")
            or _MATH_MARKERS.search(self.prose)
            or _INLINE_MATH.search(self.prose)
            or re.search(r"\{math\}`", self.prose)
        )

    def count(self, *names: str) -> int:
        return sum(self.directives.get(n, 0) for n in names)


def _split_prose_and_directives(text: str) -> tuple[str, Counter, list[str]]:
    """Walk fenced blocks: return prose (no code), directive counts, code-cell option blocks."""
    lines = text.splitlines()
    prose: list[str] = []
    directives: Counter = Counter()
    cell_options: list[str] = []
    stack: list[tuple[str, str]] = []  # (fence, directive name)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line.strip())
        in_code = any(name in ("code", "code-cell", "code-block", "sourcecode", "")
                      or not name for _, name in stack)
        if m:
            fence, info = m.group("fence"), m.group("info").strip()
            # closing fence of the innermost open block
            if stack and not info and fence[0] == stack[-1][0][0] and len(fence) >= len(stack[-1][0]):
                stack.pop()
                i += 1
                continue
            if not in_code and info:
                d = _DIRECTIVE.match(info)
                name = d.group("name") if d else "code"  # ```python is a code block
                directives[name] += 1
                stack.append((fence, name))
                if name == "code-cell":
                    # options: `:key: value` lines or a --- YAML block right after the fence
                    opts: list[str] = []
                    j = i + 1
                    if j < len(lines) and lines[j].strip() == "---":
                        j += 1
                        while j < len(lines) and lines[j].strip() != "---":
                            opts.append(lines[j])
                            j += 1
                    else:
                        while j < len(lines) and lines[j].lstrip().startswith(":"):
                            opts.append(lines[j].lstrip()[1:].replace(":", ": ", 1))
                            j += 1
                    cell_options.append("\n".join(opts))
                if name in ("solution", "solution-start"):
                    j = i + 1
                    while j < len(lines) and lines[j].lstrip().startswith(":"):
                        if re.match(r"\s*:class:.*\bdropdown\b", lines[j]):
                            directives["_solution_dropdown"] += 1
                        j += 1
                i += 1
                continue
            if not in_code and not info:
                stack.append((fence, ""))  # plain ``` code block
                i += 1
                continue
        if not in_code:
            prose.append(line)
        i += 1
    return "\n".join(prose), directives, cell_options


def _strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:]
    return text


def read_source(book_root: Path, docname: str) -> Source:
    """Parse a page's source (MyST Markdown) for what the built page must show."""
    path = None
    for suffix in SOURCE_SUFFIXES:
        p = book_root / (docname + suffix)
        if p.is_file():
            path = p
            break
    if path is None:
        return Source(docname)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        import nbformat

        nb = nbformat.reads(text, as_version=4)
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        _, directives, _ = _split_prose_and_directives(prose)
        widgets = sum("widget" in c.get("metadata", {}).get("tags", []) for c in nb.cells)
        return Source(docname, path, text, prose, directives, widgets,
                      directives.get("_solution_dropdown", 0))
    body = _strip_front_matter(text)
    prose, directives, cell_options = _split_prose_and_directives(body)
    widgets = 0
    for opts in cell_options:
        try:
            meta = yaml.safe_load(opts) or {}
        except yaml.YAMLError:
            meta = {}
        tags = meta.get("tags", []) if isinstance(meta, dict) else []
        if isinstance(tags, str):
            tags = [tags]
        widgets += "widget" in tags
    prose = re.sub(r"`[^`\n]*`", "", prose)  # inline code is not math
    return Source(docname, path, text, prose, directives, widgets,
                  directives.get("_solution_dropdown", 0))


# --------------------------------------------------------------------------- serving


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature from the base class
        pass


@contextlib.contextmanager
def serve_directory(directory: Path):
    """Serve `directory` on 127.0.0.1 on a free port; yields the base URL ('http://.../')."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def launch_browser(playwright):
    """Headless Debian chromium (Playwright's own browser download is not used)."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing: run `make browser-deps` (apt-get install chromium)")
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=["--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"],
    )


def mathjax_dir() -> Path:
    """MathJax 3 as the book ships it (the installed sphinx-mathjax-offline package)."""
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("sphinx-mathjax-offline is not installed: run `make venv`")
    return Path(spec.origin).parent / "static" / "mathjax"


class OfflineAssets:
    """Answers the browser's requests to other hosts: MathJax from the installed copy (for a
    build that loads it from a CDN), anything else with an empty body. ``requested`` lists
    every such request, ``stubbed`` those answered with an empty body."""

    def __init__(self, root: Path | None = None):
        self._root = (root or mathjax_dir()).resolve()
        self.requested: list[str] = []
        self.stubbed: list[str] = []

    def body_for(self, url: str) -> bytes | None:
        m = MATHJAX_CDN.match(url)
        if not m:
            return None
        path = (self._root / m.group(1)).resolve()
        if self._root not in path.parents or not path.is_file():
            return None
        return path.read_bytes()

    def handle(self, route) -> None:
        url = route.request.url
        self.requested.append(url)
        body = self.body_for(url)
        ctype = mimetypes.guess_type(urlsplit(url).path)[0] or "application/octet-stream"
        if body is None:
            self.stubbed.append(url)
            route.fulfill(status=200, body=b"", content_type=ctype,
                          headers={"Access-Control-Allow-Origin": "*"})
        else:
            route.fulfill(status=200, body=body, content_type=ctype,
                          headers={"Access-Control-Allow-Origin": "*"})


def check_no_other_host(assets: OfflineAssets, since: int = 0) -> list[str]:
    """The requests to other hosts that ``assets`` answered with an empty body (a script, a
    stylesheet, a font, a fetch that a page started), from the ``since``-th on: the book
    must need none of them (conftest.py fails every test that made one)."""
    return [f"request to another host: {url}" for url in assets.stubbed[since:]]


@contextlib.contextmanager
def no_other_host(assets: OfflineAssets, what: str = "the pages"):
    """Fails (AssertionError) when, in the block, a page asked another host for anything
    (:func:`check_no_other_host`)."""
    before = len(assets.stubbed)
    yield
    problems = check_no_other_host(assets, before)
    assert not problems, f"{what} asked another host:\n  " + "\n  ".join(problems)


def new_context(browser, base_url: str, assets: OfflineAssets):
    """A browser context (fresh storage, like a first-time reader) that never leaves 127.0.0.1."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    context.route(lambda url: not url.startswith(base_url) and not url.startswith("data:"),
                  assets.handle)
    return context


# --------------------------------------------------------------------------- visiting


@dataclass
class Visit:
    url: str
    status: int | None = None
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    # errors caused by a request to another host (answered offline with an empty body,
    # e.g. a CDN script whose integrity hash then fails): not the book's fault, not checked
    external_errors: list[str] = field(default_factory=list)


def open_page(context, url: str):
    """Open `url`, recording console errors, uncaught exceptions and failed requests."""
    page = context.new_page()
    visit = Visit(url)
    local = url[: url.index("/", len("http://")) + 1]

    def on_console(m):
        if m.type != "error":
            return
        where = m.location.get("url", "") or ""
        text = f"{m.text} ({where}:{m.location.get('lineNumber', '')})"
        urls = re.findall(r"https?://[^\s'\"]+", m.text)
        if urls:  # e.g. a CDN script blocked for its integrity hash
            external = all(not u.startswith(local) for u in urls)
        else:  # e.g. "Failed to load resource" located at the resource's URL
            external = bool(where) and not where.startswith(local)
        if external:
            visit.external_errors.append(text)
        else:
            visit.console_errors.append(text)

    page.on("console", on_console)
    page.on("pageerror", lambda e: visit.page_errors.append(str(e)))
    page.on("requestfailed", lambda r: visit.failed_requests.append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: visit.failed_requests.append(f"{r.url} (HTTP {r.status})")
            if r.status >= 400 else None)
    response = page.goto(url, wait_until="load")
    visit.status = response.status if response else None
    return page, visit


def check_load(visit: Visit) -> list[str]:
    problems = []
    if visit.status != 200:
        problems.append(f"load: HTTP status {visit.status} for {visit.url}")
    problems += [f"console error: {e}" for e in visit.console_errors]
    problems += [f"javascript exception: {e}" for e in visit.page_errors]
    problems += [f"request failed: {r}" for r in visit.failed_requests]
    return problems


_OUTPUT_SELECTORS = {
    ".cell_output .output.traceback": "cell error output (traceback)",
    ".cell_output .output.error": "cell error output",
    ".cell_output .output.stderr": "cell stderr output (warnings/progress bars/logging)",
    ".system-message": "docutils/Sphinx error box",
    ".problematic": "unresolved markup (docutils 'problematic')",
}


def check_execution_output(page) -> list[str]:
    """No error, traceback or warning from execution is shown."""
    problems = []
    for selector, what in _OUTPUT_SELECTORS.items():
        n = page.locator(selector).count()
        if n:
            first = page.locator(selector).first.inner_text()[:200].strip().replace("\n", " | ")
            problems.append(f"execution: {n} x {what}: {first!r}")
    text = page.evaluate(
        "() => Array.from(document.querySelectorAll('.cell_output, .output'))"
        ".map(e => e.textContent).join('\\n')"
    )
    if "Traceback (most recent call last)" in text:
        problems.append("execution: a Python traceback is shown in a cell output")
    warn = re.search(r"\b[A-Z]\w*Warning: [^\n]{0,120}", text)
    if warn:
        problems.append(f"execution: a warning is shown in a cell output: {warn.group(0)!r}")
    return problems


_WAIT_MATHJAX = """
async (timeout) => {
  const t0 = Date.now();
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - t0 > timeout) return 'MathJax did not load';
    await new Promise(r => setTimeout(r, 50));
  }
  try { await MathJax.startup.promise; } catch (e) { return 'MathJax failed: ' + e; }
  return '';
}
"""

_MATH_STATE = r"""
() => {
  const root = document.querySelector('article') || document.body;
  const skip = el => el.closest('pre, code, script, style, textarea, mjx-container, .highlight, .cell_input');
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const raw = [];
  const re = /\$\$|\\\(|\\\[|\\begin\{|(^|[^\\$])\$(?=[^\s$])[^$\n]{1,300}?[^\s\\]\$(?!\$)/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.parentElement || skip(n.parentElement)) continue;
    const m = n.textContent.match(re);
    if (m) raw.push(n.textContent.trim().slice(0, 120));
  }
  const untypeset = Array.from(root.querySelectorAll('.math'))
      .filter(e => !e.querySelector('mjx-container') && !e.closest('pre, code'))
      .map(e => e.textContent.trim().slice(0, 120));
  const errors = Array.from(root.querySelectorAll('mjx-merror, [data-mjx-error]'))
      .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 120));
  // TeX errors MathJax does not show as errors: an undefined macro is drawn in red
  // (the noundefined extension), as an mtext whose text is the macro's name.
  const doc = window.MathJax && MathJax.startup && MathJax.startup.document;
  for (const item of (doc && doc.math) || []) {
    if (!item.root || !item.root.walkTree) continue;
    item.root.walkTree(node => {
      if (node.isKind('merror')) errors.push('error in ' + String(item.math).slice(0, 80));
      if (node.isKind('mtext') && node.attributes.get('mathcolor') === 'red') {
        const t = node.childNodes.map(c => c.getText ? c.getText() : '').join('');
        if (t.startsWith('\\')) errors.push('undefined control sequence ' + t + ' in ' + String(item.math).slice(0, 80));
      }
    });
  }
  return {containers: root.querySelectorAll('mjx-container').length, raw, untypeset, errors};
}
"""


def check_math(page, source: Source) -> list[str]:
    """Mathematics in the source is typeset by MathJax; no raw TeX is left in the text."""
    has_math_nodes = page.locator("article .math").count() > 0
    if not (source.has_math or has_math_nodes):
        return []
    problems = []
    err = page.evaluate(_WAIT_MATHJAX, MATH_TIMEOUT_MS)
    if err:
        problems.append(f"math: {err}")
    state = page.evaluate(_MATH_STATE)
    if source.has_math and state["containers"] == 0:
        problems.append("math: the source has mathematics but the page has no typeset math (mjx-container)")
    for text in state["untypeset"][:5]:
        problems.append(f"math: not typeset: {text!r}")
    for text in state["raw"][:5]:
        problems.append(f"math: raw TeX in the visible text: {text!r}")
    for text in state["errors"][:5]:
        problems.append(f"math: MathJax error: {text!r}")
    return problems


_IMAGES = """
async (timeout) => {
  const imgs = Array.from(document.images);
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r); i.addEventListener('error', r); setTimeout(r, timeout);
  })));
  return imgs.map(i => {
    const fig = i.closest('figure');
    const cap = fig ? fig.querySelector('figcaption') : null;
    return {src: i.getAttribute('src') || '', url: i.currentSrc || i.src,
            alt: (i.getAttribute('alt') || '').trim(),
            caption: cap ? cap.textContent.trim() : '',
            width: i.naturalWidth, complete: i.complete};
  });
}
"""
_FILENAME_ALT = re.compile(r"^\S*\.(png|jpe?g|gif|svg|webp|bmp)$", re.I)


def check_images(page, base_url: str) -> list[str]:
    """Every image loads (naturalWidth > 0), is shipped with the book, has alt text or a caption."""
    problems = []
    for img in page.evaluate(_IMAGES, IMAGE_TIMEOUT_MS):
        label = img["src"][-80:]
        if not (img["url"].startswith(base_url) or img["url"].startswith("data:")):
            problems.append(f"image: from another host (the book must ship its images): {label}")
        elif img["width"] == 0:
            problems.append(f"image: does not load (naturalWidth 0): {label}")
        alt = img["alt"]
        if (not alt or _FILENAME_ALT.match(alt)) and not img["caption"]:
            problems.append(
                f"image: no alt text and no caption (alt={alt!r}); see CONTRIBUTING.md 'Figures': {label}"
            )
    return problems


_WIDGETS = """
() => {
  const widgets = Array.from(document.querySelectorAll('.cell.tag_widget'));
  const before = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  return widgets.map((w, k) => {
    const sec = w.closest('section');
    const h = sec ? sec.querySelector(':scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > h5, :scope > h6') : null;
    const earlier = widgets.filter(o => o !== w && o.closest('section') === sec && before(o, w));
    const start = earlier.length ? earlier[earlier.length - 1] : null;
    const imgs = sec ? Array.from(sec.querySelectorAll('img')).filter(i =>
        i.closest('section') === sec && before(i, w) && (!start || before(start, i))) : [];
    const own = Array.from(w.querySelectorAll('img'));  // the explorer's frame, in its output
    return {index: k + 1, heading: h ? h.textContent.replace('#', '').trim() : '',
            images: imgs.length, frames: own.length,
            loaded: own.filter(i => i.naturalWidth > 0).length,
            code: (w.querySelector('.cell_input') || w).textContent.trim().split('\\n')[0].slice(0, 80)};
  });
}
"""


def check_widgets(page, source: Source) -> list[str]:
    """Every widget cell (tag `widget`) shows one image under its heading: its own frame.

    Convention (CONTRIBUTING.md "Widgets in chapters"): the widget's code cell carries the
    tag `widget` and is an explorer called with ``static=True``, whose output shows the
    precomputed frame at the explorer's default values (an image that loads); between the
    previous widget of the section (or the section heading) and the widget cell there is no
    other image (a static figure there would repeat the default frame).
    """
    problems = []
    widgets = page.evaluate(_WIDGETS)
    if len(widgets) < source.widget_cells:
        problems.append(
            f"widgets: the source has {source.widget_cells} cell(s) tagged 'widget' but the page "
            f"shows {len(widgets)} (a removed widget cell cannot show its frame)"
        )
    for w in widgets:
        where = f"widget {w['index']} under {w['heading']!r} ({w['code']!r})"
        if not w["heading"]:
            problems.append(f"widgets: {where} is not under a heading")
        if w["frames"] != 1:
            problems.append(f"widgets: {where} shows {w['frames']} images, not one frame "
                            "(an explorer is called with static=True in the chapter)")
        elif w["loaded"] == 0:
            problems.append(f"widgets: {where}: its frame does not load")
        if w["images"]:
            problems.append(f"widgets: {where} has {w['images']} other image(s) above it in its "
                            "section; its frame is the section's one figure")
    return problems


class _IdCollector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v is not None and (k == "id" or tag == "a"):
                self.ids.add(v)


@functools.lru_cache(maxsize=512)
def _ids_in(path: str, mtime: float) -> frozenset[str]:
    parser = _IdCollector()
    parser.feed(Path(path).read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def ids_in(path: Path) -> frozenset[str]:
    return _ids_in(str(path), path.stat().st_mtime)


def check_links(page, base_url: str, html_root: Path) -> list[str]:
    """Every link to a local page or anchor points to an existing file and id."""
    problems = []
    hrefs = page.evaluate(
        "() => Array.from(document.querySelectorAll('a[href]')).map(a => "
        "[a.getAttribute('href'), a.href, a.textContent.trim().slice(0, 60)])"
    )
    here = urlsplit(page.url)
    seen = set()
    for raw, absolute, text in hrefs:
        if not absolute.startswith(base_url) or absolute in seen:
            continue
        seen.add(absolute)
        parts = urlsplit(absolute)
        rel = unquote(parts.path[len(urlsplit(base_url).path):])
        target = html_root / rel
        if rel == "" or rel.endswith("/"):
            target = target / "index.html"
        if not target.exists():
            problems.append(f"link: {raw!r} ({text!r}) points to a missing file {rel}")
            continue
        frag = unquote(parts.fragment)
        if frag and target.suffix == ".html":
            same_page = parts.path == here.path
            if same_page:
                exists = page.evaluate("id => !!document.getElementById(id)", frag)
            else:
                exists = frag in ids_in(target)
            if not exists:
                problems.append(f"link: {raw!r} ({text!r}): no id {frag!r} in {rel}")
    n_unresolved = page.locator("article .xref:not(a .xref):not(a.xref)").count()
    if n_unresolved:
        first = page.locator("article .xref:not(a .xref):not(a.xref)").first.inner_text()
        problems.append(f"link: {n_unresolved} unresolved cross-reference(s), e.g. {first!r}")
    return problems


def check_directives(page, source: Source) -> list[str]:
    """Theorems (sphinx-proof), exercises and solutions (sphinx-exercise) in the source render."""
    problems = []
    for name, n in source.directives.items():
        if not name.startswith("prf:") or n == 0:
            continue
        kind = name.split(":", 1)[1]
        selector = "article div.proof" if kind == "proof" else f"article div.proof.{kind}"
        shown = page.locator(selector).count()
        if shown < n:
            problems.append(f"directive: {n} {{{name}}} in the source, {shown} rendered ({selector})")
    for kinds, selector in (
        (("exercise", "exercise-start"), "article div.exercise"),
        (("solution", "solution-start"), "article div.solution"),
    ):
        n = source.count(*kinds)
        shown = page.locator(selector).count()
        if shown < n:
            problems.append(f"directive: {n} {{{kinds[0]}}} in the source, {shown} rendered ({selector})")
    if source.solution_dropdowns:
        shown = page.locator("article div.solution.dropdown").count()
        if shown < source.solution_dropdowns:
            problems.append(
                f"directive: {source.solution_dropdowns} solution dropdown(s) in the source, {shown} rendered")
    for selector in ("article div.proof", "article div.exercise", "article div.solution"):
        empty = page.evaluate(
            "s => Array.from(document.querySelectorAll(s)).filter(e => e.textContent.trim().length < 3"
            " || (!e.querySelector('.admonition-title') && !/^Proof\\b/.test(e.textContent.trim()))).length",
            selector)
        if empty:
            problems.append(f"directive: {empty} x {selector} without a title or content")
    return problems


def check_dropdowns(page) -> list[str]:
    """Every dropdown (sphinx-togglebutton admonition, <details>) is closed and opens on click."""
    problems = []
    toggles = page.locator("article .admonition.dropdown")
    for k in range(min(toggles.count(), 30)):
        dd = toggles.nth(k)
        body = dd.locator(":scope > :not(.admonition-title)").first
        title = dd.locator(".admonition-title").first.inner_text().strip()[:60]
        if body.count() == 0:
            problems.append(f"dropdown {title!r}: no content")
            continue
        if body.is_visible():
            problems.append(f"dropdown {title!r}: content visible before a click")
        button = dd.locator("button.toggle-button").first
        if button.count() == 0:
            problems.append(f"dropdown {title!r}: no toggle button (sphinx-togglebutton JS not run?)")
            continue
        button.scroll_into_view_if_needed()
        button.click()
        try:
            body.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
        except Exception:
            problems.append(f"dropdown {title!r}: content not visible after a click")
    details = page.locator("article details")
    for k in range(min(details.count(), 30)):
        d = details.nth(k)
        summary = d.locator("summary").first
        title = summary.inner_text().strip()[:60] if summary.count() else "?"
        if d.get_attribute("open") is None and summary.count():
            summary.scroll_into_view_if_needed()
            summary.click()  # the click sets ``open`` as it is handled: nothing to wait for
            if d.get_attribute("open") is None:
                problems.append(f"dropdown (details) {title!r}: does not open on click")
    return problems


# A command-line option that typography turned into a dash: "--size" shown as "–size"
# (Sphinx's smartquotes make "--" an en dash unless told otherwise) cannot be copied.
MANGLED_OPTION = re.compile(r"(?:^|[\s(\[])([\u2013\u2014][a-z][a-z-]+)")


def check_options(page) -> list[str]:
    """Text of the page in which a command-line option ("--size") reads as a dash."""
    text = page.evaluate("() => document.querySelector('main')?.innerText ?? ''")
    return [f"option shown with a dash instead of '--': {m.group(1)!r}"
            for m in MANGLED_OPTION.finditer(text)]


def screenshot_path(shot_dir: Path, docname: str) -> Path:
    return shot_dir / (docname.replace("/", "__") + ".png")


def check_page(context, base_url: str, html_root: Path, source: Source,
               screenshot_dir: Path | None = None) -> list[str]:
    """Load one page of the book and run every check; returns the problems found."""
    url = base_url + source.docname + ".html"
    page, visit = open_page(context, url)
    try:
        problems: list[str] = []
        problems += check_execution_output(page)
        problems += check_math(page, source)
        problems += check_images(page, base_url)
        problems += check_widgets(page, source)
        problems += check_links(page, base_url, html_root)
        problems += check_directives(page, source)
        problems += check_options(page)
        if screenshot_dir is not None:
            screenshot_dir.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot_path(screenshot_dir, source.docname)), full_page=True)
        problems += check_dropdowns(page)
        page.wait_for_timeout(50)  # let late console errors arrive
        problems = check_load(visit) + problems
        return problems
    finally:
        page.close()


def check_search(context, base_url: str, term: str) -> tuple[list[str], list[str]]:
    """search.html?q=TERM lists at least one page; returns (problems, result page URLs)."""
    page, visit = open_page(context, f"{base_url}search.html?q={term}")
    try:
        problems = check_load(visit)
        summary = page.locator("#search-results .search-summary, #search-results p").first
        try:
            page.wait_for_function(
                "() => { const p = document.querySelector('#search-results p, .search-summary');"
                " return p && /found|did not match/i.test(p.textContent); }",
                timeout=PAGE_TIMEOUT_MS,
            )
        except Exception:
            problems.append("search: the search did not finish")
        links = page.evaluate(
            "() => Array.from(document.querySelectorAll('#search-results ul.search li a'))"
            ".map(a => a.href)"
        )
        if not links:
            text = summary.inner_text() if summary.count() else ""
            problems.append(f"search: {term!r} found nothing ({text.strip()[:120]!r})")
        return problems, links
    finally:
        page.close()
