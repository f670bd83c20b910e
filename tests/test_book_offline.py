"""The built book stands on its own: MathJax is served from the build (no CDN), and the
launch and repository buttons appear only when a repository URL is configured
(_config.yml's repository.url, _ext/launch_buttons.py); setup cells, tagged hide-input
(tests/test_setup_cells.py), are collapsed.

Two tiny books are built with the real _config.yml and _ext/ (one kernel each)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import nbformat
import pytest
import yaml

from attnclust.assignments import install_cell_source
from test_book_build import ROOT, build, make_book
from test_reader_paths import binder_target

pytestmark = pytest.mark.integration



def math_book(root: Path) -> Path:
    """A one-page book whose page has mathematics (Sphinx loads MathJax only there), a cell
    that computes and two that only set up (tagged hide-input, as the chapters' are)."""
    make_book(root, "print(1)")
    page = root / "chapters" / "page.md"
    page.write_text(page.read_text() + "\nThe risk $\\E\\|x - T(x)\\|^2$ in $\\R^d$.\n"
                    "\n```{code-cell} python3\n:tags: [hide-input]\nimport math\n```\n"
                    "\n```{code-cell} python3\n:tags: [hide-input]\nfrom myst_nb import glue\n"
                    "glue('the_ratio', 2 / 3, display=False)\n```\n"
                    "\nThe ratio is {glue:text}`the_ratio:.3f`.\n")
    return root

LAUNCH = re.compile(r"mybinder\.org|colab\.research\.google\.com|thebe-launch-button")


def _page(root: Path) -> str:
    return (root / "_build" / "html" / "chapters" / "page.html").read_text()


def test_real_config_has_no_repository_and_serves_mathjax(tmp_path):
    assert not yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    root = math_book(tmp_path)
    r = build(root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    html = _page(root)
    scripts = re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', html)
    assert scripts == ["../_static/mathjax/tex-chtml.js"], scripts
    assert (root / "_build" / "html" / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert "cdn.jsdelivr.net" not in html
    assert not LAUNCH.search(html), LAUNCH.search(html)
    assert "github.com/" not in html  # no repository button either
    # the setup cells (an import; a glue) are collapsed, the cell that prints is not
    assert html.count("tag_hide-input") == 2 and "Show code cell source" in html
    # the download button's notebook is the reader edition: values and roles resolved
    assert 'href="../_sources/chapters/page.ipynb"' in html
    reader = nbformat.read(root / "_build" / "html" / "_sources" / "chapters" / "page.ipynb", 4)
    text = "\n".join(c.source for c in reader.cells if c.cell_type == "markdown")
    assert "The ratio is 0.667." in text, text
    assert "{glue" not in text and "Reader edition" in text
    assert "\\newcommand{\\R}" in text  # the book's macros are defined
    # it carries the build's outputs: the cell that prints shows what it printed, the glue
    # cell (its record is for the build) shows nothing
    outputs = {c.source: c.outputs for c in reader.cells if c.cell_type == "code"}
    assert [o.get("text") for o in outputs["print(1)"]] == ["1\n"], outputs["print(1)"]
    assert not [o for outs in outputs.values() for o in outs
                if any(k.startswith("application/papermill") for k in o.get("data", {}))]
    # the student and instructor editions, made after the build, show the same value
    # (attnclust.assignments.built reads the build's glued values as the reader edition does)
    from attnclust.assignments.__main__ import main as assignments

    assert assignments(["--root", str(root), "build", "--out", str(root / "editions"),
                        "--chapters", "page"]) == 0
    for edition in ("student", "instructor"):
        nb = nbformat.read(root / "editions" / edition / "page.ipynb", 4)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert "The ratio is 0.667." in text and "the_ratio" not in text, (edition, text)


def test_configured_repository_brings_the_buttons_back(tmp_path):
    root = math_book(tmp_path)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["repository"]["url"] = "https://github.com/example/book"
    (root / "_config.yml").write_text(yaml.safe_dump(config))
    r = build(root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    html = _page(root)
    assert "mybinder.org/v2/gh/example/book/main" in html
    assert "https://github.com/example/book" in html
    # Binder and Colab open the page's reader edition on the built site's branch
    links = {text: unescape(url) for url, text in re.findall(
        r'<a href="([^"]*)"[^>]*title="Launch on (Binder|Colab)"', html)}
    assert links["Colab"] == ("https://colab.research.google.com/github/example/book/blob/"
                              "gh-pages/_sources/chapters/page.ipynb"), links
    assert binder_target(links["Binder"])[1] == {
        "repo": "https://github.com/example/book", "branch": "gh-pages",
        "urlpath": "lab/tree/book/_sources/chapters/page.ipynb"}
    reader = nbformat.read(root / "_build" / "html" / "_sources" / "chapters" / "page.ipynb", 4)
    first_code = next(c for c in reader.cells if c.cell_type == "code")
    assert first_code.source == install_cell_source("https://github.com/example/book")
