"""Glued values in figures' alt text (_ext/glued_alt.py, and the reader editions).

- the role ``{glue:text}`name:fmt``` in an image's alt is replaced by the glued value,
  formatted as myst-nb formats the role; a name the page does not glue is a warning that
  names the figure (the book's -W build fails);
- the reader edition resolves the same roles in the cells' metadata with the build's values;
- every figure of the book whose finding is a measured quantity states it with a glued
  value in its alt text (FIGURES_WITHOUT_GLUED_ALT: the descriptive ones, and why).

The unit tests use a docutils document and a stand-in for Sphinx's application, no build;
the integration test builds a one-page book with the project's configuration.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import glued_alt

GLUED = {"lam_best": {"data": {"text/plain": "0.123456"}},
         "n_aligned": {"data": {"text/plain": "31"}},
         "label": {"data": {"text/plain": "'exact'"}}}


def test_resolve_alt_formats_values_as_the_glue_role_does():
    text, missing = glued_alt.resolve_alt(
        "Minimum at lambda = {glue:text}`lam_best:.3g`, {glue:text}`n_aligned` seeds aligned, "
        "the {glue}`label` curve.", GLUED)
    assert text == "Minimum at lambda = 0.123, 31 seeds aligned, the exact curve."
    assert missing == []
    text, missing = glued_alt.resolve_alt("At {glue:text}`lam_bset:.3g`.", GLUED)
    assert missing == ["lam_bset"] and text == "At {glue:text}`lam_bset:.3g`."
    # a value the spec cannot format (NumPy 2 scalars glued without float(): their repr)
    text, problems = glued_alt.resolve_alt("At {glue:text}`x:.2f`.", {"x": {"text/plain": "np.float64(0.5)"}})
    assert text == "At {glue:text}`x:.2f`." and len(problems) == 1 and problems[0].startswith("x (cannot format")
    assert glued_alt.resolve_alt("No role here, lambda in words.", {}) == (
        "No role here, lambda in words.", [])


def _page(alt: str) -> nodes.document:
    doc = new_document("page.md", get_default_settings(Parser))
    figure = nodes.figure(names=["fig-demo"])
    figure += nodes.image(uri="x.png", alt=alt)
    doc += figure
    return doc


def _app(tmp_path: Path, glued: dict) -> SimpleNamespace:
    (tmp_path / "chapters").mkdir(exist_ok=True)
    (tmp_path / "chapters" / "page.glue.json").write_text(json.dumps(glued))
    env = SimpleNamespace(docname="chapters/page",
                          mystnb_config=SimpleNamespace(output_folder=str(tmp_path)),
                          nb_metadata={"chapters/page": {"glue": list(glued)}})
    return SimpleNamespace(env=env)


def test_a_page_s_alt_texts_show_its_glued_values(tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(glued_alt.logger, "warning", lambda msg, **kw: warnings.append(msg))
    doc = _page("Distortion is lowest at lambda = {glue:text}`lam_best:.2f`.")
    glued_alt.resolve_page(_app(tmp_path, GLUED), doc)
    assert next(iter(doc.findall(nodes.image)))["alt"] == "Distortion is lowest at lambda = 0.12."
    assert warnings == []


def test_an_unknown_glue_name_in_alt_text_is_a_warning_naming_the_figure(tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(glued_alt.logger, "warning", lambda msg, **kw: warnings.append(msg))
    glued_alt.resolve_page(_app(tmp_path, GLUED), _page("At {glue:text}`lam_bset:.2f`."))
    assert len(warnings) == 1 and "'fig-demo'" in warnings[0] and "'lam_bset'" in warnings[0]
    # a page that glues nothing: every name is unknown
    warnings.clear()
    app = _app(tmp_path, {})
    glued_alt.resolve_page(app, _page("At {glue:text}`lam_best:.2f`."))
    assert len(warnings) == 1 and "'lam_best'" in warnings[0]


def test_the_book_loads_the_extension():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["glued_alt"] == "_ext/"


def test_the_reader_edition_resolves_alt_texts_with_the_build_s_values():
    from attnclust.assignments import editions
    from attnclust.assignments.markdown import References

    nb = nbformat.v4.new_notebook()
    meta = {"mystnb": {"image": {"alt": "Lowest at lambda = {glue:text}`lam_best:.2f`."},
                       "figure": {"name": "fig-demo"}}}
    nb.cells.append(nbformat.v4.new_code_cell("make()", metadata=meta))
    bundles = {k: v["data"] for k, v in GLUED.items()}
    editions._resolve_alt_texts(nb, References(glued=bundles))
    assert nb.cells[0].metadata["mystnb"]["image"]["alt"] == "Lowest at lambda = 0.12."
    assert meta["mystnb"]["image"]["alt"].startswith("Lowest at lambda = {glue:text}")  # a copy
    plain = nbformat.v4.new_notebook()
    plain.cells.append(nbformat.v4.new_code_cell("make()", metadata=json.loads(json.dumps(meta))))
    editions._resolve_alt_texts(plain, References())  # student/instructor: the name
    assert plain.cells[0].metadata["mystnb"]["image"]["alt"] == "Lowest at lambda = `lam_best`."


READER_CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.md")
                         if "\nkernelspec:" in p.read_text() and "alt:" in p.read_text())


@pytest.mark.parametrize("stem", READER_CHAPTERS)
def test_reader_editions_show_no_glue_role_in_alt_text(stem):
    """The download button's notebook, with a value glued for every name of the chapter as
    the build glues them: every figure cell's alt text is resolved."""
    from attnclust.assignments import parse_chapter, reader_notebook
    from attnclust.assignments.markdown import glue_names

    path = ROOT / "chapters" / f"{stem}.md"
    nb = reader_notebook(parse_chapter(path), {n: {"text/plain": "0.25"} for n in glue_names(path.read_text())})
    alts = [c.metadata.get("mystnb", {}).get("image", {}).get("alt", "") for c in nb.cells if c.cell_type == "code"]
    assert [a for a in alts if "{glue" in a] == []
    assert any("0.25" in a for a in alts) == any(glued_alt.GLUE_ROLE.search(a) for ch, _, a in figure_alts()
                                                 if ch == path.name)


# --- every quantitative figure states its finding with a glued value -------------------------

FIGURE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n---\n(.*?)\n---\n", re.DOTALL | re.MULTILINE)

FIGURES_WITHOUT_GLUED_ALT = {
    # descriptive figures: they show samples or a layout, no measured finding to state
    "fig-mixture-prompts": "samples of prompts of the two models",
}
"""Figure name -> why its alt text states no computed value; besides these, the explorers'
static views (names with ``explorer``), which show one setting of the sliders."""


def figure_alts() -> list[tuple[str, str, str]]:
    """(chapter, figure name, alt text) of every figure cell of the chapters."""
    out = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        for m in FIGURE_CELL.finditer(path.read_text()):
            meta = (yaml.safe_load(m.group(1)) or {}).get("mystnb", {})
            alt = meta.get("image", {}).get("alt")
            name = meta.get("figure", {}).get("name")
            if alt and name:
                out.append((path.name, str(name), str(alt)))
    return out


GLUE_CALL = re.compile(r"""\b(?:glue|gl)\(\s*(f?)(["'])(.+?)\2""")


def glued_names(text: str) -> list[re.Pattern]:
    """A pattern per ``glue("name", ...)`` / ``gl("name", ...)`` call of a chapter (an f-string's
    fields match any text)."""
    pats = []
    for m in GLUE_CALL.finditer(text):
        name = re.escape(m[3])
        pats.append(re.compile((re.sub(r"\\\{[^}]*\\\}", ".+", name) if m[1] else name) + "$"))
    return pats


def test_every_glue_name_in_an_alt_text_is_glued_by_its_chapter():
    """The build's check (an unknown name fails it), without the build: a typo is caught here."""
    unknown = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        pats = glued_names(path.read_text())
        for chapter, name, alt in figure_alts():
            if chapter != path.name:
                continue
            unknown += [f"{chapter} {name}: {m['name']}" for m in glued_alt.GLUE_ROLE.finditer(alt)
                        if not any(p.match(m["name"].strip()) for p in pats)]
    assert not unknown, "alt texts use names no cell of their chapter glues: " + "; ".join(unknown)


def test_glued_names_reads_plain_and_f_string_calls():
    pats = glued_names('glue("a_b", 1)\ngl(f"c_{k}_d", 2)\n')
    assert [bool(any(p.match(n) for p in pats)) for n in ("a_b", "c_x_d", "c_d", "a_bc")] == [True, True, False, False]


@pytest.mark.parametrize("chapter,name,alt", figure_alts(), ids=lambda v: v if v.startswith("fig") else "")
def test_a_quantitative_figure_s_alt_text_states_a_glued_value(chapter, name, alt):
    if name in FIGURES_WITHOUT_GLUED_ALT or "explorer" in name:
        return
    assert glued_alt.GLUE_ROLE.search(alt), (
        f"{chapter}: the alt text of {name} states no computed value: write its finding with "
        f"{{glue:text}}`name:fmt` (or list it in FIGURES_WITHOUT_GLUED_ALT with the reason)")


@pytest.mark.integration
def test_a_built_page_shows_the_glued_value_in_its_alt_text(tmp_path):
    import subprocess

    from test_book_build import FLAGS, scaffold

    from attnclust.assignments.source import MYST_HEADER

    scaffold(tmp_path)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: chapters/page\n")
    cell = ("```{{code-cell}} python3\n---\nmystnb:\n  image:\n"
            "    alt: \"Lowest at lambda = {{glue:text}}`{name}:.2f`.\"\n"
            "  figure:\n    caption: A curve.\n    name: fig-demo\n---\n"
            "%matplotlib inline\nimport matplotlib.pyplot as plt\n"
            "from myst_nb import glue\nglue('lam_best', 0.123456, display=False)\n"
            "plt.plot([0, 1]); plt.show()\n```\n")
    page = tmp_path / "chapters" / "page.md"
    bin_dir = Path(sys.executable).parent

    def build() -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "jupyter-book"), "build", str(tmp_path), *FLAGS],
                              capture_output=True, text=True, timeout=600, check=False)

    page.write_text(MYST_HEADER + "\n\n# Page\n\n" + cell.format(name="lam_best"))
    ok = build()
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    html = (tmp_path / "_build" / "html" / "chapters" / "page.html").read_text()
    assert 'alt="Lowest at lambda = 0.12."' in html
    page.write_text(MYST_HEADER + "\n\n# Page\n\n" + cell.format(name="lam_bset"))
    bad = build()
    assert bad.returncode != 0 and "fig-demo" in bad.stdout + bad.stderr
