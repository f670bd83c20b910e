"""The files a reader, a student or an instructor relies on outside the book's pages:
licences and citation, JupyterLab's settings (chapters open as notebooks), Binder's
configuration. Static checks; the browser checks run JupyterLab itself
(tests/browser/test_jupyterlab.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from attnclust.assignments import install_cell_source

ROOT = Path(__file__).resolve().parents[1]
REPO = "https://github.com/example/book"


def _launch_buttons():
    spec = importlib.util.spec_from_file_location("launch_buttons", ROOT / "_ext" / "launch_buttons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_citation_matches_the_package():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == project["version"]
    assert project["license"] in cff["license"] and "CC-BY-4.0" in cff["license"]
    assert cff["title"] and cff["authors"] and cff["message"]
    paper = cff["references"][0]
    assert paper["title"] == "Attention-based clustering" and paper["year"] == 2025


def test_licences_and_the_preface_say_how_to_reuse():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "creativecommons.org/licenses/by/4.0" in (ROOT / "LICENSE-text.md").read_text()
    preface = (ROOT / "chapters" / "preface.md").read_text()
    assert "CITATION.cff" in preface and "LICENSE-text.md" in preface


def test_jupyterlab_opens_chapters_as_notebooks():
    settings = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    viewers = settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    # make venv installs them where JupyterLab reads an environment's settings
    r = subprocess.run(["make", "-n", "-B", "-o", ".venv/.installed",
                        ".venv/share/jupyter/lab/settings/overrides.json"],
                       cwd=ROOT, capture_output=True, text=True, check=True)
    assert "jupyter/overrides.json" in r.stdout


def test_binder_installs_the_package_and_the_settings():
    assert "-r ../requirements.txt" in (ROOT / "binder" / "requirements.txt").read_text()
    post = ROOT / "binder" / "postBuild"
    assert post.stat().st_mode & 0o111, "postBuild must be executable"
    text = post.read_text()
    assert "pip install --no-deps --editable ." in text and "jupyter/overrides.json" in text
    assert "nbgitpuller" in (ROOT / "binder" / "requirements.txt").read_text()
    r = subprocess.run(["bash", "-n", str(post)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def binder_target(url: str) -> tuple[str, dict]:
    """(the repository path Binder builds, nbgitpuller's arguments) of a Binder link."""
    parts = urlsplit(url)
    pull = urlsplit(parse_qs(parts.query)["urlpath"][0])
    assert pull.path == "git-pull", url
    return parts.path, {k: v[0] for k, v in parse_qs(pull.query).items()}


def test_binder_and_colab_open_the_reader_edition():
    links = _launch_buttons().reader_edition_links(REPO + ".git/", "chapters/mixtures",
                                                   branch="dev", site_branch="site")
    assert links["Colab"] == ("https://colab.research.google.com/github/example/book/blob/site/"
                              "_sources/chapters/mixtures.ipynb")
    path, pull = binder_target(links["Binder"])
    assert links["Binder"].startswith("https://mybinder.org/v2/gh/example/book/dev?urlpath=")
    assert pull == {"repo": REPO, "branch": "site",
                    "urlpath": "lab/tree/book/_sources/chapters/mixtures.ipynb"}


@pytest.mark.parametrize("url", ["https://gitlab.com/example/book", "github.com/example/book",
                                 "https://github.com/example", "https://github.com/a/b/tree/x"])
def test_a_repository_colab_cannot_open_is_refused(url):
    with pytest.raises(ValueError, match="repository.url"):
        _launch_buttons().github_parts(url)


class _App:
    """What point_at_reader_edition reads of a Sphinx application."""

    def __init__(self, url):
        options = {"repository_url": url, "repository_branch": "main",
                   "launch_buttons": {"binderhub_url": "https://mybinder.org",
                                      "colab_url": "https://colab.research.google.com"}}
        self.config = type("Config", (), {"html_theme_options": options,
                                          "attnclust_site_branch": "gh-pages"})()


def _theme_buttons():
    """The header buttons as sphinx-book-theme makes them (a group of launch links)."""
    return [{"type": "group", "buttons": [
        {"type": "link", "text": "Binder", "url": "https://mybinder.org/v2/gh/example/book/main"
                                                  "?urlpath=lab/tree/chapters/page.md"},
        {"type": "link", "text": "Colab", "url": "https://colab.research.google.com/github/"
                                                 "example/book/blob/main/chapters/page.md"},
        {"type": "javascript", "text": "Live Code", "javascript": "initThebeSBT()"}]}]


def test_the_theme_buttons_are_pointed_at_the_reader_edition():
    lb = _launch_buttons()
    context = {"header_buttons": _theme_buttons()}
    lb.point_at_reader_edition(_App(REPO), "chapters/page", "page.html", context, None)
    binder, colab, live = context["header_buttons"][0]["buttons"]
    assert colab["url"].endswith("/example/book/blob/gh-pages/_sources/chapters/page.ipynb")
    assert binder_target(binder["url"])[1]["urlpath"] == "lab/tree/book/_sources/chapters/page.ipynb"
    assert live == _theme_buttons()[0]["buttons"][2]
    untouched = {"header_buttons": _theme_buttons()}  # no repository: nothing to point at
    lb.point_at_reader_edition(_App(""), "chapters/page", "page.html", untouched, None)
    assert untouched["header_buttons"] == _theme_buttons()


def _run_install_cell(source, monkeypatch, missing):
    """Run an install cell as IPython would (magics transformed), with ``attnclust``
    importable or (``missing``) not; returns the shell commands and magics it ran."""
    from IPython.core.inputtransformer2 import TransformerManager

    ran = []

    class Shell:
        def system(self, cmd):
            ran.append(("!", cmd))

        def run_line_magic(self, name, line):
            ran.append((name, line))
            monkeypatch.delitem(sys.modules, "attnclust")  # "installed": importable again

    if missing:
        monkeypatch.setitem(sys.modules, "attnclust", None)  # import attnclust fails
    monkeypatch.setattr(sys, "path", list(sys.path))
    exec(TransformerManager().transform_cell(source), {"get_ipython": Shell})
    return ran


def test_the_reader_editions_first_cell_installs_attnclust_only_where_missing(monkeypatch):
    source = install_cell_source(REPO)
    assert _run_install_cell(source, monkeypatch, missing=False) == []
    assert _run_install_cell(source, monkeypatch, missing=True) == [
        ("!", f"git clone --depth 1 {REPO} attnclust-book"),
        ("pip", "install --quiet --editable attnclust-book")]
    with pytest.raises(ModuleNotFoundError, match="clone of the book"):
        _run_install_cell(install_cell_source(""), monkeypatch, missing=True)


def test_notebook_editions_open_the_explorers_live():
    """The HTML needs an explorer's static frames (``static=True``); a notebook has a kernel
    and would only wait for them, so every edition calls the explorer without it."""
    from attnclust.assignments import parse_chapter, reader_notebook, student_notebook
    from attnclust.assignments.editions import live_widget_source

    assert live_widget_source("ac.book.widgets.training_explorer(static=True)") == \
        "ac.book.widgets.training_explorer()"
    assert live_widget_source("f(a, static=True, b=1)") == "f(a, b=1)"
    assert live_widget_source("f(static=False)") == "f(static=False)"
    with_widgets = [p for p in sorted((ROOT / "chapters").glob("*.md"))
                    if "static=True" in p.read_text()]
    assert len(with_widgets) >= 3
    for path in with_widgets:
        chapter = parse_chapter(path)
        for nb in (reader_notebook(chapter, {}), student_notebook(chapter)):
            widgets = [c.source for c in nb.cells
                       if c.cell_type == "code" and "widget" in c.metadata.get("tags", [])]
            assert widgets and all("_explorer(" in w and "static=True" not in w
                                   for w in widgets), (path.name, widgets)


def test_the_repository_pages_find_the_clone_or_say_they_need_one(tmp_path, monkeypatch):
    import attnclust.book as book

    monkeypatch.chdir(tmp_path)
    assert book.repository_root("x") == ROOT  # through the package, installed editable
    monkeypatch.setattr(book, "__file__", str(tmp_path / "site" / "attnclust" / "book" / "__init__.py"))
    with pytest.raises(FileNotFoundError, match="from a clone of the book's repository"):
        book.repository_root("the benchmark results")


def test_reader_edition_carries_the_builds_outputs():
    """Outputs are matched to cells by source in order; a widget cell keeps none; a LaTeX
    output defines the book's macros itself (JupyterLab may typeset it first)."""
    import nbformat

    from attnclust.assignments import parse_chapter, reader_notebook

    chapter = parse_chapter(ROOT / "chapters" / "mixtures.md")
    plain = reader_notebook(chapter, {})
    executed = nbformat.v4.new_notebook()
    for cell in plain.cells[2:]:
        if cell.cell_type == "code":
            done = nbformat.v4.new_code_cell(cell.source.replace("()", "(static=True)")
                                             if "widget" in cell.metadata.get("tags", [])
                                             else cell.source)
            done.outputs = [nbformat.v4.new_output(
                "display_data", {"text/latex": "$\\E x$", "text/plain": "E x"})]
            executed.cells.append(done)
    nb = reader_notebook(chapter, {}, executed=executed)
    code = [c for c in nb.cells[2:] if c.cell_type == "code"]
    widget = [c for c in code if "widget" in c.metadata.get("tags", [])]
    assert widget and not any(c.outputs for c in widget)
    rest = [c for c in code if c not in widget]
    assert rest and all(c.outputs for c in rest)
    latex = rest[0].outputs[0]["data"]["text/latex"]
    assert latex.startswith("$\\newcommand{\\R}") and latex.endswith("\\E x$"), latex
    nbformat.validate(nb)
