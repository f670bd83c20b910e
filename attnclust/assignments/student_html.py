"""A copy of the built HTML book without the solutions, for students (``make book-student``).

The HTML book (``make book``) shows every exercise's reference solution, its rubric and the
key of each multiple-choice question in a collapsed dropdown, one click away.
sphinx-exercise's own ``hide_solutions`` option cannot make a student book: with it the
``{solution-start}`` directive returns nothing, so the ``{solution-end}`` of a gated
solution (the book's solutions with code) is left without its start and the build fails,
and the solution's code cells, which sit between the two fences, would stay on the page.
This module works on the built pages instead: :func:`student_book` copies the HTML folder
and, in every page, removes each solution block (``<div class="solution ...">``, which
sphinx-exercise gives the whole solution, gated code and outputs included), the images
only those blocks showed, the page sources and reader notebooks (``_sources/``, which hold
the solutions) and the buttons that download them. :func:`solution_blocks` counts what is
left (a test and the command check it is none).

Not removed: the search index (words of the solutions can still be found by search, not
read) and the launch buttons, which open the chapter from the book's repository, whose
sources hold the solutions: a course that hands out this copy keeps the repository private
or builds the copy without a repository URL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["SOLUTION_SELECTOR", "solution_blocks", "strip_page", "student_book"]

SOLUTION_SELECTOR = "div.solution"
"""The CSS selector of a solution block in a page built by sphinx-exercise."""

_SOURCES = "_sources"


def _soup(html: str):
    import bs4

    return bs4.BeautifulSoup(html, "html.parser")


def strip_page(html: str) -> tuple[str, set[str]]:
    """``html`` without its solution blocks and its links to the page's sources (the
    download buttons of the ``.md`` and ``.ipynb``); and the ``src`` of every image that a
    removed block showed."""
    soup = _soup(html)
    images: set[str] = set()
    for block in soup.select(SOLUTION_SELECTOR):
        images |= {img.get("src", "") for img in block.find_all("img")}
        block.decompose()
    for link in soup.find_all("a", href=True):
        if _SOURCES + "/" in link["href"]:
            item = link.find_parent("li") or link
            item.decompose()
    return str(soup), images


def solution_blocks(folder: str | Path) -> dict[str, int]:
    """Page (relative path) -> its number of solution blocks, for the pages that have some."""
    folder = Path(folder)
    out = {}
    for page in sorted(folder.rglob("*.html")):
        n = len(_soup(page.read_text(encoding="utf-8")).select(SOLUTION_SELECTOR))
        if n:
            out[page.relative_to(folder).as_posix()] = n
    return out


def student_book(html: str | Path, out: str | Path) -> dict[str, int]:
    """Copy the built book ``html`` (``_build/html``) to ``out`` (replaced if it exists)
    without solutions (see the module docstring); return, per page, the number of solution
    blocks removed.

    Raises:
        ValueError: ``html`` is not a built book (no ``index.html``), ``out`` is inside it,
            or a solution block is left in the copy.
    """
    html, out = Path(html).resolve(), Path(out).resolve()
    if not (html / "index.html").is_file():
        raise ValueError(f"{html} is not a built HTML book (no index.html): run make book first")
    if out == html or html in out.parents:
        raise ValueError(f"{out} is inside the book {html}: choose a folder outside it")
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(html, out, ignore=shutil.ignore_patterns(_SOURCES, ".buildinfo"))
    removed: dict[str, int] = {}
    dropped: set[Path] = set()
    kept_refs: set[Path] = set()
    for page in sorted(out.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        before = text.count('class="solution')
        stripped, images = strip_page(text)
        page.write_text(stripped, encoding="utf-8")
        if before:
            removed[page.relative_to(out).as_posix()] = before
        dropped |= {(page.parent / src).resolve() for src in images if src and "://" not in src}
        kept_refs |= {(page.parent / img.get("src", "")).resolve()
                      for img in _soup(stripped).find_all("img") if img.get("src")}
    for image in dropped - kept_refs:
        if image.is_file() and out in image.parents:
            image.unlink()
    left = solution_blocks(out)
    if left:
        raise ValueError(f"solution blocks left in {out}: {left}")
    return removed
