"""The grades of a grading run, on disk as they are given (the appendix "Grading with the
course editions", chapters/grading.md).

:func:`write_csv` writes the grades CSV (one row per student and exercise) atomically: a
temporary file in the same folder, renamed over the old one, so that a run killed at any
moment leaves either the old file or the new one, never half of one. Every cell a
submission controls is made safe for a spreadsheet and for UTF-8 (:mod:`._text`).

:class:`Gradebook` keeps a run's grades as they come and rewrites the CSV, and beside it a
journal (``.<csv name>.journal.json``), after each round of grading. The journal records,
for each student whose grades are final, the SHA-256 of the submission file they were given
for, and a fingerprint of the material, the options and the grader's version; a run started
again with the same CSV keeps those grades and grades only the rest (a submission whose file
changed, one the grader could not check, one not reached before the run stopped).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ._text import csv_cell

__all__ = ["CSV_FIELDS", "ExerciseGrade", "Gradebook", "Totals", "atomic_write", "grade_keys",
           "totals", "write_csv"]

CSV_FIELDS = ["student", "number", "exercise", "part", "points", "max_points", "feedback"]
"""The columns of the grades CSV: ``number`` is the exercise's number as the book and the
editions number it, ``exercise`` its label, ``part`` empty for what its checks give and the
written part's name (``(i)``, ``proof``, ``report``) for a row the instructor grades."""


@dataclass
class ExerciseGrade:
    """One row of the grades CSV (:meth:`row`: its cells, safe for a spreadsheet)."""

    student: str
    exercise: str
    points: float
    max_points: float
    feedback: str
    final: bool = True
    """False when the grader, not the submission, kept it from being checked (a resumed
    run grades it again); not a column of the CSV."""
    part: str = ""
    """Empty for the points of the exercise's checks; the name of a written part for its
    row, which the instructor grades against the rubric (0 points until then)."""
    number: int = 0
    """The exercise's number, as the book and the editions number it (0: not known)."""

    def row(self) -> dict:
        return {"student": csv_cell(self.student), "number": str(self.number or ""),
                "exercise": csv_cell(self.exercise), "part": csv_cell(self.part),
                "points": _fmt(self.points), "max_points": _fmt(self.max_points),
                "feedback": csv_cell(self.feedback)}


def grade_keys(material: dict) -> list[tuple[str, str]]:
    """``(label, part)`` of each row a student gets, in order: an exercise's checks (part
    ``""``; for a kind that checks grade, or a proof or project without written parts), then
    its written parts."""
    from .source import UNGRADED_KINDS

    keys = []
    for ex in material["exercises"]:
        parts = [p["name"] for p in ex.get("parts") or ()]
        if ex.get("kind") not in UNGRADED_KINDS or not parts:
            keys.append((ex["label"], ""))
        keys += [(ex["label"], name) for name in parts]
    return keys


@dataclass
class Totals:
    """A student's points: ``checked`` of ``checked_max`` from the checks, and ``written``
    of ``written_max`` from the written parts (0 until the instructor fills them in)."""

    checked: float = 0.0
    checked_max: float = 0.0
    written: float = 0.0
    written_max: float = 0.0

    @property
    def points(self) -> float:
        return self.checked + self.written

    @property
    def max_points(self) -> float:
        return self.checked_max + self.written_max


def totals(grades: Iterable[ExerciseGrade]) -> dict[str, Totals]:
    """Each student's :class:`Totals`, summed over the rows, in the order students first
    appear."""
    out: dict[str, Totals] = {}
    for g in grades:
        t = out.setdefault(g.student, Totals())
        if g.part:
            t.written += g.points
            t.written_max += g.max_points
        else:
            t.checked += g.points
            t.checked_max += g.max_points
    return out


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once, at import: os.umask can only be read by setting it


def atomic_write(path: Path, text: str) -> None:
    """Write ``path`` (UTF-8) through a temporary file renamed over it, with the permissions
    a plain ``open`` would give (those of the file it replaces, if any)."""
    # a short fixed prefix: the temporary name must fit where ``path``'s own name just fits
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".attnclust-", suffix=".tmp")
    try:
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_UMASK
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv(grades: Iterable[ExerciseGrade], path: str | Path) -> Path:
    """Write the grades as CSV with the columns :data:`CSV_FIELDS`, atomically (a temporary file in the same folder, renamed over ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
    w.writeheader()
    for g in grades:
        w.writerow(g.row())
    atomic_write(path, buf.getvalue())
    return path


_GRADE_FIELDS = {f.name for f in fields(ExerciseGrade)}


def _grades(rows: object) -> list[ExerciseGrade] | None:
    """The grades a journal entry holds, or None if it is malformed."""
    if not isinstance(rows, list):
        return None
    try:
        return [ExerciseGrade(**r) for r in rows
                if isinstance(r, dict) and set(r) == _GRADE_FIELDS] or None
    except TypeError:
        return None


class Gradebook:
    """The grades of one run, by student, written to ``out`` (the CSV) and its journal as
    they come (``out=None``: kept in memory only).

    ``material`` gives each student's expected exercises, ``fingerprint`` identifies what
    the grades depend on besides the submission files, ``students`` is the order of the
    CSV's rows; ``fresh=True`` ignores an earlier journal.
    """

    def __init__(self, out: str | Path | None, material: dict, fingerprint: str,
                 students: Iterable[str], *, fresh: bool = False):
        self.out = None if out is None else Path(out)
        self.order = list(students)
        self.fingerprint = fingerprint
        self._keys = grade_keys(material)
        self._rows: dict[str, list[ExerciseGrade]] = {}
        self._files: dict[str, str] = {}
        self.kept: list[str] = []
        """Students whose earlier grades were kept."""
        self.stale = False
        """True when the journal found was written for other material or options."""
        if self.out is not None and not fresh:
            self._load()

    @property
    def journal(self) -> Path | None:
        """The journal's path: ``.<csv name>.journal.json`` beside the CSV."""
        return None if self.out is None else self.out.with_name(f".{self.out.name}.journal.json")

    def _load(self) -> None:
        try:
            data = json.loads(self.journal.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or not isinstance(data.get("students"), dict):
            return
        if data.get("fingerprint") != self.fingerprint:
            self.stale = True
            return
        for student, entry in data["students"].items():
            grades = _grades(entry.get("rows")) if isinstance(entry, dict) else None
            if (student in self.order and grades is not None
                    and isinstance(entry.get("file"), str)
                    and [(g.exercise, g.part) for g in grades] == self._keys
                    and all(g.student == student and g.final for g in grades)):
                self._rows[student], self._files[student] = grades, entry["file"]

    def keep(self, student: str, digest: str | None) -> bool:
        """True, keeping the earlier grades, when ``student``'s grades in the journal were
        given for a file of SHA-256 ``digest``; otherwise False (they are dropped)."""
        if digest is not None and self._files.get(student) == digest:
            self.kept.append(student)
            return True
        self._rows.pop(student, None)
        self._files.pop(student, None)
        return False

    def record(self, student: str, grades: list[ExerciseGrade],
               digest: str | None = None) -> None:
        """Add ``student``'s grades, given for a file of SHA-256 ``digest`` (None: not a
        file that can be graded again, e.g. a link), and write the CSV and the journal."""
        self._rows[student] = grades
        if digest is not None and all(g.final for g in grades):
            self._files[student] = digest
        else:
            self._files.pop(student, None)
        self.write()

    def grades(self) -> list[ExerciseGrade]:
        """The grades so far, in the order of the students."""
        return [g for s in self.order if s in self._rows for g in self._rows[s]]

    def write(self) -> None:
        """Write the CSV, then the journal (both atomically); nothing when ``out`` is None."""
        if self.out is None:
            return
        write_csv(self.grades(), self.out)
        entries = {s: {"file": d, "rows": [asdict(g) for g in self._rows[s]]}
                   for s, d in self._files.items()}
        atomic_write(self.journal, json.dumps({"fingerprint": self.fingerprint,
                                               "students": entries}))
