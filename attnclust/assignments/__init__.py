"""Course assignments: student and instructor notebooks of every chapter, and an autograder.

Two commands (``python -m attnclust.assignments --help``):

* ``build --out DIR [--chapters STEM ...] [--visible-checks] [--build-dir DIR]`` writes, for
  each chapter with exercises (:func:`course_chapters`: the preface's too), with the numbers
  and claim sentences of the book's build in its text (:mod:`.built`: the book must have
  been built first, ``make book``), ``DIR/student/<stem>.ipynb`` (for graded work:
  solutions replaced by a starter cell and a Markdown cell per written part, each check cell
  saying in words what it verifies, :mod:`.describe`; with ``--visible-checks``, the checks
  shown), ``DIR/practice/<stem>.ipynb`` (for self-study: the same, its checks visible and
  telling whether an answer is right), ``DIR/instructor/<stem>.ipynb``
  (with the reference solutions) and ``DIR/autograder/<stem>.json`` (labels, points, checks,
  and the chapter's code that the checker runs).
* ``grade SUBMISSIONS --chapter STEM --out grades.csv [--timeout S] [--unsafe]`` runs every
  submitted notebook in a sandbox (:mod:`.sandbox`) and a fresh kernel, takes its answers
  out as data (:mod:`.answers`), runs the chapter's checks on them in a trusted process
  (``_checker.py``) and writes one CSV row per student and exercise, and one per written
  part (a proof's (i), a project's report: 0 of the rubric's points, which the instructor
  grades).

The chapters' MyST sources (``chapters/*.md``) are the only source of truth
(:mod:`.source`); the editions are made in :mod:`.editions`; the submissions are found and
read in :mod:`.submissions`, graded in :mod:`.grading` and kept on disk, as they are graded,
in :mod:`.gradebook`.

Why not otter-grader or nbgrader: ``otter grade`` (7.0) grades
a folder only in Docker containers, and its local path ``otter run`` grades one submission
with no execution time limit (a looping notebook hangs it) and needs its own assignment
format (raw-cell question blocks, test files). ``nbgrader autograde`` runs locally with per-cell
time limits, but brings a course directory, an SQL gradebook with registered students, and
47 more packages (among them JupyterLab, Notebook 7, Jupyter Server, Alembic) into the book's
environment, and exports per-assignment totals rather than per-exercise points with
feedback. Both execute notebooks with nbclient; this package uses nbclient directly, with
the book's own exercise format, and isolates each notebook with bubblewrap (no daemon, no
image, no root needed) rather than Docker.

The package imports its submodules (and so nbformat, jupytext, nbclient) on first use of a
name below, so that ``import attnclust.assignments`` and the command line's argument parsing
need only the base dependencies; the commands need the ``[assignments]`` extra
(``pip install 'attnclust[assignments]'``, see :data:`EXTRA_MODULES`).
"""

from __future__ import annotations

import importlib
from pathlib import Path

_EXPORTS = {
    "autograder_material": "editions", "instructor_notebook": "editions",
    "reader_notebook": "editions", "install_cell_source": "editions",
    "student_notebook": "editions", "write_editions": "editions",
    "ExerciseGrade": "gradebook", "Gradebook": "gradebook", "write_csv": "gradebook",
    "GradingError": "submissions", "Submissions": "submissions",
    "discover_submissions": "submissions", "read_submission": "submissions",
    "check_output_path": "grading", "grade_notebook": "grading",
    "grade_notebooks": "grading", "grade_submissions": "grading",
    "prepare_submission": "grading", "validate_material": "grading",
    "Chapter": "source", "Exercise": "source", "parse_chapter": "source",
    "BookNotBuilt": "built", "chapter_values": "built", "glued_values": "built",
}
"""Public name -> the submodule that defines it (imported on first access)."""

__all__ = [*_EXPORTS, "COURSE_PARTS", "EXTRA_MODULES", "build", "course_chapters"]

EXTRA_MODULES = ("nbformat", "nbclient", "jupytext", "yaml", "pybtex", "ipykernel")
"""Modules the package needs beyond attnclust's base dependencies: those of the
``[assignments]`` extra in pyproject.toml (ipykernel runs the graded notebooks)."""


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


COURSE_PARTS = ("Theory", "Experiments")
"""Parts of ``_toc.yml`` whose chapters carry exercises (not "Using the book")."""


def course_chapters(root: str | Path = ".") -> list[str]:
    """Stems of the chapters with exercises, in book order: the chapters of the ``_toc.yml``
    parts in :data:`COURSE_PARTS`, and the pages before them (the root page, the preface,
    and a part without caption) that state exercises: the preface's are session one's."""
    from .source import EXERCISE_FENCE, toc_chapters

    root = Path(root)

    def has_exercises(f: str) -> bool:
        path = root / f"{f}.md"
        return path.is_file() and EXERCISE_FENCE.search(path.read_text()) is not None

    return [Path(f).name for f, part in toc_chapters(root)
            if part in COURSE_PARTS or (part is None and has_exercises(f))]


def build(out: str | Path, chapters: list[str] | None = None, root: str | Path = ".",
          build_dir: str | Path | None = None) -> dict[str, dict[str, Path]]:
    """Write the student and instructor editions and the autograder material of ``chapters``
    (stems; default :func:`course_chapters`) under ``out``, with the numbers and claim
    sentences of the book's build in ``build_dir`` (default ``root/_build``;
    :func:`.built.chapter_values`, which raises ``BookNotBuilt`` where the book has not been
    built); return the paths per chapter."""
    from .built import chapter_values
    from .editions import write_editions
    from .source import parse_chapter

    root = Path(root)
    build_dir = Path(build_dir) if build_dir is not None else root / "_build"
    stems = chapters or course_chapters(root)
    chapters_read = {stem: parse_chapter(root / "chapters" / f"{stem}.md") for stem in stems}
    glued = {stem: chapter_values(ch, build_dir, f"chapters/{stem}")
             for stem, ch in chapters_read.items()}
    return {stem: write_editions(ch, out, glued=glued[stem]) for stem, ch in chapters_read.items()}
