"""Find and read the submitted notebooks of a folder (the appendix "Grading with the course
editions").

:func:`discover_submissions` maps each student to one notebook and accounts for every other
entry of the folder: a submission that is a link (symbolic, or a file with other names) gets
a row that refuses it, since a link can point at the instructor edition or at another
student's work; every file that is not graded is named in a warning, near-misses of the
naming rule included (a browser's ``alice__mixtures (1).ipynb``, a capitalised chapter name),
with the rule. :func:`read_submission` opens the notebook without following links and reads
it whatever its shape.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ._text import file_name, printable

__all__ = ["GradingError", "MAX_NOTEBOOK_BYTES", "NAMING_RULE", "Submissions",
           "discover_submissions", "file_digest", "read_submission"]

MAX_NOTEBOOK_BYTES = 256 << 20
"""Larger submission files are not read (0 points, with the reason)."""

NAMING_RULE = ("name each submission <student>__{chapter}.ipynb (two underscores), "
               "<student>.ipynb, or <student>/{chapter}.ipynb")
"""The naming rule, printed with every warning about a name (``{chapter}`` filled in)."""

_COPY_SUFFIX = re.compile(r"(?:\s*\(\d+\)|\s*-?\s*\(?copy\)?(?:\s*\(?\d+\)?)?)$", re.I)
"""What a browser or a file manager appends to a second copy of the same name: `` (1)``,
`` - Copy``, `` copy 2``, `` (copy)``."""


def _near(name: str, chapter: str) -> bool:
    """Whether ``name`` (a file name without ``.ipynb``) is ``chapter`` but for case, spaces
    around it or a copy's suffix."""
    return _COPY_SUFFIX.sub("", name.strip()).strip().casefold() == chapter.casefold()


def _student_name(text: str) -> str:
    """A student's name as the rows show it: in Unicode's composed form (NFC), so that the
    same name typed with a combining accent (e + U+0301) and with the accented letter (é) is
    one student."""
    return unicodedata.normalize("NFC", text)


def _newest_first(path: Path) -> tuple[float, int]:
    """Sort key of a copy, newest first: its modification time, then its copy's number
    (``(2)`` after ``(1)``, ``copy 3`` after ``copy``), so that copies saved within the same
    second are still ordered."""
    suffix = _COPY_SUFFIX.search(path.name[:-len(".ipynb")].strip())
    numbers = re.findall(r"\d+", suffix.group(0)) if suffix else []
    return (-path.lstat().st_mtime, -int(numbers[-1]) if numbers else 0)


def _invisible(name: str) -> bool:
    """Whether ``name`` holds characters that print as nothing (a zero-width space)."""
    return any(unicodedata.category(c) in ("Cf", "Cc") for c in name)


def _scripts(name: str) -> set[str]:
    """The writing systems of the letters of ``name`` (LATIN, CYRILLIC, GREEK...)."""
    return {unicodedata.name(c, "?").split()[0] for c in name if c.isalpha()}


class GradingError(ValueError):
    """A problem with the grader's input (paths, material, options) that stops grading
    before any notebook runs; the message is one line."""


@dataclass
class Submissions:
    """What a folder of submissions holds for one chapter.

    Attributes:
        folder: the folder.
        notebooks: student -> the notebook file to grade.
        refused: student -> why their submission is not graded (it gets 0 on every
            exercise, with this reason as feedback).
        warnings: one line for each file that is neither graded nor refused, or is graded
            under a name that breaks the rule.
    """

    folder: Path
    notebooks: dict[str, Path] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def students(self) -> list[str]:
        """Every student who gets rows, sorted."""
        return sorted({*self.notebooks, *self.refused})


def _is_notebook(name: str) -> bool:
    return name.lower().endswith(".ipynb")


_LINK = ("the submission is a symbolic link, which can point at someone else's notebook: "
         "submit the notebook file itself")
_HARD_LINK = ("the submission file has other names (hard links), which can be someone "
              "else's notebook: submit a copy of the notebook (cp, not ln)")


def _link_reason(path: Path) -> str | None:
    """Why ``path`` (an entry of the folder, or of a student's folder) is refused as a link,
    or None."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"the submission cannot be read ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return _LINK
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return _HARD_LINK
    return None


def discover_submissions(folder: str | Path, chapter: str) -> Submissions:
    """The submissions of ``folder`` for ``chapter``.

    Accepted layouts (mixed freely):

    * ``folder/<student>__<chapter>.ipynb`` (two underscores; the chapter is what follows the
      last two, so a student's name may hold them); a chapter name that differs only in case,
      by spaces or by a copy's suffix (a browser's `` (1)``, a file manager's `` - Copy``) is
      taken too, with a warning, unless the student also has a file named exactly; files
      named after another chapter are ignored, with a warning that lists them;
    * ``folder/<student>.ipynb``;
    * ``folder/<student>/<chapter>.ipynb``, a folder with exactly one notebook in it, or the
      newest of its copies of ``<chapter>.ipynb`` (near-misses as above, with a warning).

    Students' names are compared in Unicode's composed form (NFC): the same name typed with
    a combining accent and with the accented letter is one student. A name that mixes
    writing systems (a Cyrillic letter among Latin ones) is graded with a warning, since it
    can pass for another student's.

    Hidden files and folders (``.ipynb_checkpoints``) are ignored without a word; every other
    file that is not graded gets a warning. A symbolic link, or a file with other names (a
    hard link), is refused: its student gets a row saying why.

    Raises:
        GradingError: ``folder`` does not exist or is not a folder, or two files give the
            same student (the message lists them).
    """
    folder = Path(folder)
    if not folder.exists():
        raise GradingError(f"no submissions folder {folder} (it does not exist)")
    if not folder.is_dir():
        raise GradingError(f"{folder} is not a folder of submissions")
    rule = NAMING_RULE.format(chapter=chapter)
    out = Submissions(folder)
    found: dict[str, list[Path]] = {}
    near: dict[str, list[Path]] = {}
    refused: dict[str, list[tuple[Path, str]]] = {}
    other_chapters: list[str] = []

    def shown(p: Path) -> str:
        return printable(file_name(str(p.relative_to(folder))))

    for p in sorted(folder.iterdir()):
        name = p.name
        if name.startswith("."):
            continue
        if p.is_dir() and not p.is_symlink():
            _discover_folder(p, chapter, shown, found, refused, out.warnings, rule)
            continue
        if p.is_symlink() and p.is_dir():  # a linked student folder
            refused.setdefault(_student_name(file_name(name)), []).append((p, _LINK))
            continue
        if not _is_notebook(name) or not (p.is_file() or p.is_symlink()):
            out.warnings.append(f"{shown(p)}: ignored, not a notebook (.ipynb); {rule}")
            continue
        named = _student_of(file_name(name[:-len(".ipynb")]), chapter)
        if named is None:
            other_chapters.append(shown(p))
            continue
        student, exact = named
        link = _link_reason(p)
        if link is not None:
            refused.setdefault(student, []).append((p, link))
        elif exact:
            found.setdefault(student, []).append(p)
        else:
            near.setdefault(student, []).append(p)
    for student, paths in near.items():
        if student in found or student in refused:
            out.warnings.extend(f"{shown(p)}: ignored, {printable(student)} also has a "
                                f"submission named exactly; {rule}" for p in paths)
            continue
        if len(paths) > 1:  # two near-misses: keep the newest, name the others
            paths = sorted(paths, key=_newest_first)
            out.warnings.extend(f"{shown(p)}: ignored, an older copy of "
                                f"{shown(paths[0])}" for p in paths[1:])
        found[student] = [paths[0]]
        out.warnings.append(f"{shown(paths[0])}: graded as {printable(student)}'s submission "
                            f"although its name breaks the rule; {rule}")
    if other_chapters:
        out.warnings.append(f"ignored, named after other chapters than {chapter!r}: "
                            + ", ".join(other_chapters))
    for student in sorted({*found, *refused}):
        if len(_scripts(student)) > 1:
            out.warnings.append(f"{printable(student)}: a name that mixes writing systems ("
                                + ", ".join(sorted(_scripts(student))).lower() + "), which can "
                                "look like another student's; graded under it")
        if _invisible(student):
            out.warnings.append(f"{printable(student)}: a name with characters that print as "
                                "nothing, which can look like another student's; graded under it")
    entries = {s: [p for p in found.get(s, [])] + [p for p, _ in refused.get(s, [])]
               for s in {*found, *refused}}
    duplicates = {s: ps for s, ps in entries.items() if len(ps) > 1}
    if duplicates:
        def names(ps: list[Path]) -> str:
            shown_names = sorted(shown(p) for p in ps)
            same = len({_student_name(n) for n in shown_names}) < len(shown_names)
            return ", ".join(shown_names) + (" (the same name in two Unicode forms: an accent "
                                             "typed as one character and as two)" if same else "")

        listed = "; ".join(f"{printable(s)}: {names(ps)}" for s, ps in sorted(duplicates.items()))
        raise GradingError(f"more than one submission for the same student in "
                           f"{printable(folder)} ({listed}); keep one per student")
    for student, paths in found.items():
        out.notebooks[student] = paths[0]
    for student, items in refused.items():
        out.refused[student] = items[0][1]
    return out


def _student_of(stem: str, chapter: str) -> tuple[str, bool] | None:
    """``(student, named exactly)`` for a notebook's file name without ``.ipynb``, or None
    when it is named after another chapter. The chapter is what follows the last ``__`` (a
    student's name may hold ``__`` itself); a name that is the chapter's but for case, spaces
    or a copy's suffix is a near-miss (graded, with a warning)."""
    student, sep, chap = stem.rpartition("__")
    if not sep:
        return _student_name(stem.strip()), stem == stem.strip()
    if chap == chapter:
        return _student_name(student), True
    if _near(chap, chapter):
        return _student_name(student), False
    return None


def _discover_folder(p: Path, chapter: str, shown, found: dict, refused: dict,
                     warnings: list, rule: str) -> None:
    """A student's folder ``p``: its notebook named after ``chapter``, or its only one."""
    student = _student_name(file_name(p.name))
    entries = [q for q in sorted(p.iterdir()) if not q.name.startswith(".")]
    nbs = [q for q in entries if _is_notebook(q.name)]
    exact = [q for q in nbs if q.name == f"{chapter}.ipynb"]
    near = sorted((q for q in nbs if q not in exact and _near(q.name[:-len(".ipynb")], chapter)),
                  key=_newest_first)
    pick = exact or (nbs if len(nbs) == 1 else near[:1])
    if not exact and len(nbs) > 1 and near:  # copies of the chapter's notebook: the newest
        warnings.extend(f"{shown(q)}: ignored, " + (f"an older copy than {shown(pick[0])}" if q in near
                        else f"not named {chapter}.ipynb (graded: {shown(pick[0])})")
                        for q in nbs if q != pick[0])
        warnings.append(f"{shown(pick[0])}: graded as {printable(student)}'s submission although "
                        f"its name breaks the rule; {rule}")
    if not pick:
        what = "no notebook" if not nbs else f"{len(nbs)} notebooks and none named " \
                                               f"{chapter}.ipynb"
        warnings.append(f"{shown(p)}/: ignored, it holds {what}; {rule}")
        return
    link = _link_reason(pick[0])
    if link is not None:
        refused.setdefault(student, []).append((pick[0], link))
    elif pick[0].is_file():
        found.setdefault(student, []).append(pick[0])
    else:
        warnings.append(f"{shown(pick[0])}: ignored, not a notebook file; {rule}")


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of ``path``, opened without following a link, and its status.

    Raises:
        GradingError: it is a link, not a regular file, or has other names.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if os.path.islink(path):
            raise GradingError(_LINK) from e
        raise GradingError(f"the file cannot be read ({e.strerror or e})") from e
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = "the submission is not a regular file"
    elif st.st_nlink > 1:
        why = _HARD_LINK
    if why is not None:
        os.close(fd)
        raise GradingError(why)
    return fd, st


def file_digest(path: str | Path) -> str:
    """The SHA-256 of a submission file (hex), read as :func:`read_submission` reads it.

    Raises:
        GradingError: see :func:`read_submission`.
    """
    fd, _ = _open_regular(Path(path))
    with os.fdopen(fd, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_submission(path: str | Path) -> dict:
    """The notebook in ``path`` as a dict (nbformat 4; older formats converted).

    Raises:
        GradingError: the file is a link or not a regular file, too large, not text, not
            JSON, or not a notebook.
    """
    fd, st = _open_regular(Path(path))
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_NOTEBOOK_BYTES:
            raise GradingError(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
        raw = f.read(MAX_NOTEBOOK_BYTES + 1)
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise GradingError(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
    if not raw:
        raise GradingError("the file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise GradingError("the file is not a text notebook (not UTF-8)") from e
    del raw
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise GradingError(f"the file is not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise GradingError("the file is not a notebook (no JSON object)")
    if data.get("nbformat") != 4:
        try:
            data = json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))
        except Exception as e:  # noqa: BLE001 -- any failure to convert: not a notebook
            raise GradingError(f"the file is not a notebook nbformat reads "
                               f"({type(e).__name__}: {printable(e)[:200]})") from e
    return data
