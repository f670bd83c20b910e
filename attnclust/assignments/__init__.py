"""Course assignments: student and instructor notebooks of every chapter, and an autograder.

Two commands (``python -m attnclust.assignments --help``):

* ``build --out DIR [--chapters STEM ...]`` writes, for each chapter, ``DIR/student/<stem>.ipynb``
  (solutions replaced by a starter cell, check cells kept), ``DIR/instructor/<stem>.ipynb``
  (with the reference solutions) and ``DIR/autograder/<stem>.json`` (labels, points, checks).
* ``grade SUBMISSIONS --chapter STEM --out grades.csv [--timeout S]`` runs every submitted
  notebook in a fresh kernel and writes one CSV row per student and exercise.

The chapters' MyST sources (``chapters/*.md``) are the only source of truth
(:mod:`.source`); the editions are made in :mod:`.editions`, the grading in :mod:`.grading`.

Why not otter-grader or nbgrader (both looked at, November 2026): ``otter grade`` (7.0) grades
a folder only in Docker containers, and its local path ``otter run`` grades one submission
with no execution time limit (a looping notebook hangs it) and needs its own assignment
format (raw-cell question blocks, test files). ``nbgrader autograde`` runs locally with per-cell
time limits, but brings a course directory, an SQL gradebook with registered students, and
47 more packages (among them JupyterLab, Notebook 7, Jupyter Server, Alembic) into the book's
environment, and exports per-assignment totals rather than per-exercise points with
feedback. Both execute notebooks with nbclient; this package uses nbclient directly, with
the book's own exercise format.
"""

from __future__ import annotations

from pathlib import Path

from .editions import autograder_material, instructor_notebook, student_notebook, write_editions
from .grading import (
    ExerciseGrade,
    discover_submissions,
    grade_notebook,
    grade_submissions,
    prepare_submission,
    write_csv,
)
from .source import Chapter, Exercise, parse_chapter

__all__ = [
    "Chapter", "Exercise", "ExerciseGrade", "autograder_material", "build",
    "course_chapters", "discover_submissions", "grade_notebook", "grade_submissions",
    "instructor_notebook", "parse_chapter", "prepare_submission", "student_notebook",
    "write_csv", "write_editions", "COURSE_PARTS",
]

COURSE_PARTS = ("Theory", "Experiments")
"""Parts of ``_toc.yml`` whose chapters carry exercises (not "Using the book")."""


def course_chapters(root: str | Path = ".") -> list[str]:
    """Stems of the chapters with exercises: those of the ``_toc.yml`` parts in
    :data:`COURSE_PARTS`, in book order."""
    import yaml

    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text())
    stems = []
    for part in toc.get("parts", []):
        if part.get("caption") in COURSE_PARTS:
            stems += [Path(c["file"]).name for c in part.get("chapters", [])]
    return stems


def build(out: str | Path, chapters: list[str] | None = None,
          root: str | Path = ".") -> dict[str, dict[str, Path]]:
    """Write the student and instructor editions and the autograder material of ``chapters``
    (stems; default :func:`course_chapters`) under ``out``; return the paths per chapter."""
    root = Path(root)
    stems = chapters or course_chapters(root)
    return {stem: write_editions(parse_chapter(root / "chapters" / f"{stem}.md"), out)
            for stem in stems}
