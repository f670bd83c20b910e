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
from typing import NamedTuple

__all__ = ["SOLUTION_SELECTOR", "StrippedPage", "solution_blocks", "strip_page", "student_book"]

SOLUTION_SELECTOR = "div.solution"
"""The CSS selector of a solution block in a page built by sphinx-exercise."""

_SOURCES = "_sources"


def _soup(html: str):
    import bs4

    return bs4.BeautifulSoup(html, "html.parser")


class StrippedPage(NamedTuple):
    """One page without its solutions: the HTML, how many solution blocks it lost, the
    ``src`` of the images those blocks showed and of the images the page still shows."""

    html: str
    blocks: int
    dropped_images: set[str]
    kept_images: set[str]


def strip_page(html: str) -> StrippedPage:
    """``html`` without its solution blocks and its links to the page's sources (the
    download buttons of the ``.md`` and ``.ipynb``), from one parse of the page."""
    soup = _soup(html)
    blocks = soup.select(SOLUTION_SELECTOR)
    dropped: set[str] = set()
    for block in blocks:
        dropped |= {img.get("src", "") for img in block.find_all("img")}
        block.decompose()
    for link in soup.find_all("a", href=True):
        if _SOURCES + "/" in link["href"]:
            item = link.find_parent("li") or link
            item.decompose()
    kept = {img["src"] for img in soup.find_all("img") if img.get("src")}
    return StrippedPage(str(soup), len(blocks), dropped, kept)


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
        stripped = strip_page(page.read_text(encoding="utf-8"))
        page.write_text(stripped.html, encoding="utf-8")
        if stripped.blocks:
            removed[page.relative_to(out).as_posix()] = stripped.blocks
        dropped |= {(page.parent / src).resolve() for src in stripped.dropped_images if src and "://" not in src}
        kept_refs |= {(page.parent / src).resolve() for src in stripped.kept_images}
    for image in dropped - kept_refs:
        if image.is_file() and out in image.parents:
            image.unlink()
    left = solution_blocks(out)
    if left:
        raise ValueError(f"solution blocks left in {out}: {left}")
    return removed
