"""The numbers and claim sentences that the book's build computed for a chapter, which every
notebook edition shows in its text (the appendix "Grading with the course editions").

The book's build (``make book``: Jupyter Book and MyST-NB) executes every notebook page and
writes, into its ``jupyter_execute`` folder, the executed notebook ``<page>.ipynb`` and the
values its cells glued, ``<page>.glue.json`` (name -> the output ``glue(name, value)``
recorded; a claim's sentence under ``claim:<id>``, ``attnclust.book.claims``). The HTML
book prints these values in place of the roles ``{glue:text}`name:fmt```, ``{glue:md}`name```
and ``{claim}`id```; the editions print the same ones, read here by :func:`glued_values`:
the reader edition as the build finishes (``_ext/reader_notebooks.py``), the student and
instructor editions afterwards (``python -m attnclust.assignments build``,
:func:`chapter_values`).

Where the book has not been built, :func:`chapter_values` stops with an error that names
the command to run first (``make book``) rather than executing the chapters itself: the
editions then print the very numbers and sentences of the HTML book their students also
read (one execution, with the build's execution cache and time limits, shared by the book
and its editions), and making the editions stays a matter of seconds, where executing the
course chapters takes minutes. ``make assignments`` runs ``make book`` first when the book
has not been built. A build older than the chapter (a code cell changed since, or a glue
name or claim the build has no value for) is refused the same way: its values could
disagree with the chapter's code that the editions carry.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from .markdown import References, shown_keys
from .source import Chapter

__all__ = ["BUILD_COMMAND", "EXECUTED_FOLDER", "BookNotBuilt", "chapter_values", "glued_values",
           "shown_values"]

EXECUTED_FOLDER = "jupyter_execute"
"""The folder of the build folder (``_build``) where MyST-NB writes the executed notebooks
and their glued values (its ``output_folder``)."""

BUILD_COMMAND = "make book"
"""The command that builds the book, named in every :class:`BookNotBuilt` error."""


class BookNotBuilt(ValueError):
    """The book's build has no values for a chapter, or older ones than the chapter's."""


def glued_values(executed: str | Path, page: str) -> dict[str, dict]:
    """Name -> MIME bundle of each value that the build glued in ``page`` (the page's path
    from the book's root, without suffix: ``chapters/mixtures``), from MyST-NB's
    ``<page>.glue.json`` in ``executed`` (the build's ``jupyter_execute`` folder); empty
    where there is none (a page that glues nothing, or a book not built)."""
    path = Path(executed) / f"{page}.glue.json"
    if not path.is_file():
        return {}
    records = json.loads(path.read_text(encoding="utf8"))
    return {name: out.get("data", {}) for name, out in records.items()}


def shown_values(chapter: Chapter) -> set[str]:
    """The keys of the glued values that the chapter's editions show
    (:func:`.markdown.shown_keys`): those of its Markdown, solutions included, of the
    captions its figure references quote, and of its figures' alt texts."""
    refs = chapter.refs or References()
    keys: set[str] = set()
    for p in chapter.pieces:
        if p.cell is None:
            keys |= shown_keys(p.source, refs)
            continue
        image = p.cell.metadata.get("mystnb", {}).get("image", {})
        alt = image.get("alt") if isinstance(image, dict) else None
        if isinstance(alt, str):
            keys |= shown_keys(alt, refs)
    return keys


def _code(cells) -> list[str]:
    """The sources of the code cells among ``cells``, in order."""
    return [c.source.strip() for c in cells if c.cell_type == "code"]


def chapter_values(chapter: Chapter, build: str | Path, page: str) -> dict[str, dict]:
    """The values of :func:`glued_values` for the editions of ``chapter``, from the book's
    build folder ``build`` (``_build``); ``page``: the chapter's path from the book's root,
    without suffix. Empty for a chapter that shows none (:func:`shown_values`).

    Raises :class:`BookNotBuilt` (its message names :data:`BUILD_COMMAND`) where the build
    has not executed the chapter, executed other code than the chapter's (a cell changed
    since), or glued no value for a name or claim that the chapter shows."""
    needed = shown_values(chapter)
    if not needed:
        return {}
    executed = Path(build) / EXECUTED_FOLDER
    notebook = executed / f"{page}.ipynb"
    if not notebook.is_file():
        raise BookNotBuilt(
            f"{page}.md: the book has not been built (no {notebook}), and the editions show the "
            f"numbers and claims its build computed: run `{BUILD_COMMAND}` first")
    done = _code(nbformat.read(notebook, as_version=4).cells)
    if done != _code(p.cell for p in chapter.pieces if p.cell is not None):
        raise BookNotBuilt(
            f"{page}.md: the chapter's code changed since the book was built ({notebook} ran "
            f"other code), so its numbers may have too: run `{BUILD_COMMAND}` again")
    values = glued_values(executed, page)
    missing = sorted(needed - set(values))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5
                                          else "")
        raise BookNotBuilt(
            f"{page}.md: the book's build has no value for {shown}, which the chapter shows "
            f"(a build older than the chapter?): run `{BUILD_COMMAND}` again")
    return values
