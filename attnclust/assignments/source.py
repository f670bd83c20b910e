"""Read a chapter's exercises from its MyST source (the single source of truth).

A chapter (``chapters/<stem>.md``) is read with jupytext into notebook cells. An exercise is
written as in the book's brief (CONTRIBUTING.md, "Exercises")::

    ```{exercise} Short title
    :label: ex-<stem>-<n>

    Kind: coding. Level: standard. Time: about 15 minutes.
    Statement ... Store your answer in `ex_<stem>_<n>`.
    ```

    ```{solution-start} ex-<stem>-<n>
    :class: dropdown
    ```
    Explanation in Markdown.
    ```{code-cell} python3
    ex_<stem>_<n> = ...
    ```
    ```{solution-end}
    ```

    ```{code-cell} python3
    :tags: [remove-input, check]
    # check ex-<stem>-<n> points=2
    # verifies: what the check verifies, in words, without the expected value
    assert ..., "ex-<stem>-<n>: expected ..."
    ```

A solution may end with a **rubric** for the parts of the exercise that the student answers
in words (a proof, a project's report, the "explain why" of an open question): a paragraph
``**Rubric** (N points):`` and a numbered list whose items each end with their points, and
start with the written part they grade in bold where the exercise has several::

    **Rubric** (3 points):
    1. **(i)** The weights tend to $1/L$ (1 point).
    2. **(ii)** The normalisation by the largest score, ties handled (2 points).

Each written part (``(i)``, ``(ii)``; with no bold part, one part named by the kind:
:data:`SINGLE_PART`) is worth the points of its items (:class:`RubricItem`,
:class:`WrittenPart`); the student edition gives each its own Markdown answer cell, the
grader a row that the instructor fills in. An exercise's total is its checks' points plus its
rubric's (:attr:`Exercise.total_points`).

A check reads the exercise's answer variable and what the chapter's narrative code defines;
it runs, when grading, on the answer exported as data (:mod:`.answers`), in a copy of the
namespace of the chapter's own narrative code, not in the student's kernel. A ``proof``
(:data:`UNGRADED_KINDS`) has no check cell: its solution ends with a rubric for the
instructor, who grades it. The optional
``# verifies:`` lines say, for the student edition with hidden checks, what is checked.

:func:`parse_chapter` walks the cells once and returns a :class:`Chapter`: a list of
:class:`Piece` objects (narrative, exercise statements, solution content, check cells, in
source order) and one :class:`Exercise` record per label. The editions
(:mod:`attnclust.assignments.editions`) and the grader (:mod:`attnclust.assignments.grading`)
are built from that record only. The non-gated ``{solution}`` directive (a solution without
code cells) and gated exercises (``{exercise-start}`` ... ``{exercise-end}``) are read too.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import nbformat

from .markdown import References, split_fences

MYST_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
"""The jupytext header every chapter starts with: a MyST Markdown notebook on the python3
kernel (CONTRIBUTING.md; the appendix "Grading with the course editions", chapters/grading.md)."""

__all__ = [
    "CHECK_LINE", "Chapter", "Exercise", "HEADLINE", "KINDS", "LEVELS", "Piece", "RUBRIC_HEAD",
    "RubricItem", "SINGLE_PART", "UNGRADED_KINDS", "WrittenPart", "asks_to_write",
    "check_description", "check_header", "exercise_heading", "exercise_headline", "parse_chapter",
    "parse_notebook", "parse_rubric", "toc_chapters",
]

KINDS = ("derivation", "coding", "interpretation", "proof", "open question", "project")
"""The kinds of exercise a chapter may state: SymPy derivations, coding tasks and
multiple-choice interpretation questions (checked by code), open questions (a worked answer;
checked on what any right answer satisfies), proofs (written in words, graded by the
instructor against the rubric in the solution) and projects (a multi-step lab investigation,
handed in as a short report and graded by the instructor against the solution's rubric)."""

UNGRADED_KINDS = ("proof", "project")
"""Kinds that the grader does not check: no check cell, a Markdown answer cell in the student
edition, and the grader reports them as left to the instructor."""

LEVELS = ("warm-up", "standard", "challenge")
"""The difficulty an exercise states on its first line."""

HEADLINE = re.compile(r"^Kind: (?P<kind>[a-z][a-z ]*[a-z])\. Level: (?P<level>[a-z-]+)\. "
                      r"Time: about (?P<minutes>\d+) minutes\.")
"""The first line of an exercise's statement:
``Kind: <kind>. Level: <warm-up|standard|challenge>. Time: about <N> minutes.``"""


def exercise_headline(body: str) -> tuple[str, str, int] | None:
    """``(kind, level, minutes)`` from the first line of an exercise's statement, if it has the
    form of :data:`HEADLINE` with a known kind and level; else ``None``."""
    m = HEADLINE.match(body.strip())
    if not m or m["kind"] not in KINDS or m["level"] not in LEVELS:
        return None
    return m["kind"], m["level"], int(m["minutes"])

CHECK_LINE = re.compile(r"^\s*#\s*check\s+(?P<label>[\w.:-]+)\s+points\s*=\s*(?P<points>\d+(?:\.\d+)?)")
"""First line of a check cell: ``# check <label> points=<N>``."""

VERIFIES_LINE = re.compile(r"^\s*#\s*verifies:\s*(?P<text>.*\S)\s*$")
"""A line ``# verifies: <words>`` of a check cell: what the check verifies, shown instead of
the check in the student edition with hidden checks."""


RUBRIC_HEAD = re.compile(r"^\*\*Rubric\*\*\s*\((?P<total>\d+(?:\.\d+)?)\s+points?\)\s*[:.]?\s*$",
                         re.M)
"""The line that opens a rubric with points: ``**Rubric** (N points):``."""

_ANY_RUBRIC = re.compile(r"^\*\*Rubric\*\*", re.M)
_ITEM_START = re.compile(r"^\s{0,3}\d+\.\s+")
_ITEM = re.compile(r"^(?:\*\*(?P<part>[^*]+?)\*\*[:.]?\s+)?(?P<text>.*?)\s*"
                   r"\((?P<points>\d+(?:\.\d+)?)\s+points?\)\s*\.?$", re.S)

SINGLE_PART = {"project": "report", "proof": "proof"}
"""The name of the only written part of an exercise whose rubric names no part, by kind
(any other kind: ``"written answer"``)."""


@dataclass
class RubricItem:
    """One item of a rubric: what a grader looks for, in which written part, for how many
    points."""

    part: str
    text: str
    points: float


@dataclass
class WrittenPart:
    """A part of an exercise that the student answers in words: its name (``(i)``, or
    :data:`SINGLE_PART`'s), and its points, those of its rubric items."""

    name: str
    points: float


def parse_rubric(solution: str, kind: str = "") -> tuple[list[RubricItem], list[str]]:
    """The rubric items of a solution's Markdown (see the module docstring) and the problems
    found: a rubric without points, an item without points, a total that is not the sum of
    its items, items of several parts of which one names none."""
    problems: list[str] = []
    head = RUBRIC_HEAD.search(solution)
    if head is None:
        if _ANY_RUBRIC.search(solution):
            problems.append("a rubric without points: write '**Rubric** (N points):' and "
                            "end each item with its points, '(2 points)'")
        return [], problems
    items: list[list[str]] = []
    for line in solution[head.end():].lstrip("\n").splitlines():
        if not line.strip():
            if items:
                break
            continue
        if _ITEM_START.match(line):
            items.append([_ITEM_START.sub("", line, count=1).strip()])
        elif items:
            items[-1].append(line.strip())
        else:
            break
    parsed: list[RubricItem] = []
    for n, lines in enumerate(items, start=1):
        m = _ITEM.match(" ".join(lines))
        if not m:
            problems.append(f"rubric item {n} does not end with its points, '(2 points)'")
            continue
        part = (m["part"] or "").strip().rstrip(":.").strip()
        parsed.append(RubricItem(part, m["text"].strip(), float(m["points"])))
    if not items:
        problems.append("a rubric with no numbered items")
    named = {i.part for i in parsed if i.part}
    if named and any(not i.part for i in parsed):
        problems.append("a rubric item names no part, and others do: start each item with its "
                        "part in bold, '**(i)**'")
    if not named:
        single = SINGLE_PART.get(kind, "written answer")
        parsed = [RubricItem(single, i.text, i.points) for i in parsed]
    total = sum(i.points for i in parsed)
    if parsed and abs(total - float(head["total"])) > 1e-9:
        problems.append(f"the rubric says {float(head['total']):g} points, its items give "
                        f"{total:g}")
    return parsed, problems


# "show" asks to write when it opens a clause ("show that", "show (i) that"), not as a verb
# of seeing ("the tilt that the heads show")
_SHOW = r"show(?=\s+(?:that|how|why|\())"
_WRITE_WORDS = re.compile(r"\b(explain|say|prove|argue|conclude|justify|describe|discuss)\b|\b"
                          + _SHOW, re.I)
_WRITE_WORDS_CHOICE = re.compile(r"\b(explain|prove|argue|justify|describe|discuss)\b|\b" + _SHOW,
                                 re.I)


def asks_to_write(ex: "Exercise") -> bool:
    """Whether the statement of ``ex`` asks the student to write (to explain, say, show,
    prove, argue, conclude, or a question to answer in words), math and code aside: such an
    exercise needs a rubric (its written parts). A multiple-choice question's stem asks its
    question of the options, so only an explicit explain/show/prove/argue/justify counts there."""
    text = ex.statement.strip()
    text = text.split("\n", 1)[1] if exercise_headline(text) and "\n" in text else text
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " ", text, flags=re.S)
    if ex.kind == "interpretation":
        return bool(_WRITE_WORDS_CHOICE.search(text))
    return bool(_WRITE_WORDS.search(text) or "?" in text)


def check_header(source: str) -> tuple[str, float] | None:
    """``(label, points)`` if the first non-empty line of ``source`` is a check header."""
    for line in source.splitlines():
        if line.strip():
            m = CHECK_LINE.match(line)
            return (m["label"], float(m["points"])) if m else None
    return None


def check_description(source: str) -> str:
    """The words of the ``# verifies:`` lines of a check cell, joined (empty if none)."""
    return " ".join(m["text"] for line in source.splitlines()
                    if (m := VERIFIES_LINE.match(line)))


PieceKind = Literal["text", "code", "exercise", "solution_text", "solution_code", "check",
                    "answer"]


@dataclass
class Piece:
    """One unit of the chapter in source order.

    ``kind``: ``text`` (narrative Markdown), ``code`` (a narrative code cell), ``exercise``
    (an exercise statement, rendered as Markdown), ``solution_text`` / ``solution_code``
    (content of a solution), ``check`` (a check cell), ``answer`` (the place where a
    solution stood: the student edition puts its prompt and starter cell there).
    """

    kind: PieceKind
    source: str
    label: str | None = None
    cell: nbformat.NotebookNode | None = None
    head: bool = False
    """An exercise's heading and statement (its number and points are written by
    :func:`exercise_heading` when an edition is made, once the whole chapter is read)."""


@dataclass
class Exercise:
    """One exercise: statement, reference solution and its checks."""

    label: str
    title: str = ""
    statement: str = ""
    kind: str = ""
    level: str = ""
    minutes: int = 0
    solution_text: list[str] = field(default_factory=list)
    solution_code: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    points: float = 0.0
    """The points of its check cells (what the grader gives)."""
    number: int = 0
    rubric: list[RubricItem] = field(default_factory=list)
    """The rubric of its written parts (:func:`parse_rubric`), from its solution."""

    @property
    def parts(self) -> list[WrittenPart]:
        """Its written parts, in the rubric's order, each worth its items' points."""
        out: dict[str, float] = {}
        for item in self.rubric:
            out[item.part] = out.get(item.part, 0.0) + item.points
        return [WrittenPart(name, pts) for name, pts in out.items()]

    @property
    def written_points(self) -> float:
        """The points of its written parts (graded by the instructor, from the rubric)."""
        return sum(item.points for item in self.rubric)

    @property
    def total_points(self) -> float:
        """Its checks' points plus its rubric's."""
        return self.points + self.written_points

    @property
    def graded(self) -> bool:
        """Whether the grader checks it (a proof is left to the instructor)."""
        return self.kind not in UNGRADED_KINDS

    @property
    def variable(self) -> str:
        """The answer variable: the ``ex_*`` name the solution assigns and the check reads."""
        assigned: list[str] = []
        for src in self.solution_code:
            assigned += [n for n in _assigned_names(src) if n.startswith("ex_")]
        used = [n for src in self.checks for n in _used_names(src) if n.startswith("ex_")]
        for name in reversed(assigned):
            if not used or name in used:
                return name
        if used:
            return used[0]
        return self.label.replace("-", "_").replace(".", "_")

    @property
    def solution_lines(self) -> list[str]:
        """Every non-empty line of the solution (Markdown and code), stripped."""
        return [ln.strip() for src in self.solution_text + self.solution_code
                for ln in src.splitlines() if ln.strip()]


def _assigned_names(src: str) -> list[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return re.findall(r"^(ex_\w+)\s*=", src, flags=re.M)
    names = []
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for t in targets:
            names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return names


def _parse_code(src: str) -> ast.AST | None:
    lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _stored_and_loaded(src: str) -> tuple[set[str], set[str]]:
    """Names a cell defines (assignments, imports, defs) and names it reads."""
    tree = _parse_code(src)
    if tree is None:
        return set(), set()
    stored, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, (ast.Store, ast.Del)) else loaded).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return stored, loaded


def solution_only_uses(pieces: list["Piece"], exercises: dict[str, "Exercise"]) -> list[str]:
    """Cells that would break in the student edition: narrative or check code that reads a
    name defined only inside a solution (other than the exercise's own answer variable)."""
    outside: set[str] = set()
    for p in pieces:
        if p.kind in ("code", "check"):
            outside |= _stored_and_loaded(p.source)[0]
    answers = {e.variable for e in exercises.values()}
    only: dict[str, str] = {}  # name -> label of the solution defining it, so far
    problems = []
    for p in pieces:
        if p.kind == "solution_code":
            for name in _stored_and_loaded(p.source)[0] - outside:
                only.setdefault(name, p.label)
        elif p.kind in ("code", "check"):
            loaded = _stored_and_loaded(p.source)[1]
            own = exercises[p.label].variable if p.kind == "check" else None
            for name in sorted(loaded & set(only)):
                if name == own or (p.kind == "code" and name in answers):
                    if p.kind == "code":
                        problems.append(f"a code cell reads `{name}`, the answer of "
                                        f"{only[name]}: the student edition may not define it")
                    continue
                what = f"the check of {p.label}" if p.kind == "check" else "a code cell"
                problems.append(f"{what} reads `{name}`, defined only in the solution of "
                                f"{only[name]}: it fails in the student edition")
    return problems


def check_only_uses(pieces: list["Piece"]) -> list[str]:
    """Cells that would break when grading, where each check runs on its own copy of the
    narrative's namespace: a check or narrative cell that reads a name defined only in
    (another) check cell."""
    narrative: set[str] = set()
    for p in pieces:
        if p.kind in ("code", "solution_code"):
            narrative |= _stored_and_loaded(p.source)[0]
    problems = []
    for i, p in enumerate(pieces):
        if p.kind not in ("code", "check"):
            continue
        own = _stored_and_loaded(p.source)[0] if p.kind == "check" else set()
        others: set[str] = set()
        for q in pieces[:i]:
            if q.kind == "check":
                others |= _stored_and_loaded(q.source)[0]
        for name in sorted((_stored_and_loaded(p.source)[1] & others) - narrative - own):
            what = f"the check of {p.label}" if p.kind == "check" else "a code cell"
            problems.append(f"{what} reads `{name}`, defined only in an earlier check cell: "
                            "each check runs on its own when grading")
    return problems


def _used_names(src: str) -> list[str]:
    try:
        return [n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)]
    except SyntaxError:
        return re.findall(r"\bex_\w+", src)


@dataclass
class Chapter:
    """A parsed chapter: its pieces in order, its exercises, and problems found."""

    stem: str
    pieces: list[Piece]
    exercises: dict[str, Exercise]
    metadata: dict
    problems: list[str] = field(default_factory=list)
    refs: References | None = None  # what its MyST roles point to

    @property
    def check_points(self) -> float:
        """The points its check cells give (the grader's share)."""
        return sum(e.points for e in self.exercises.values())

    @property
    def written_points(self) -> float:
        """The points of its exercises' written parts (the instructor's share)."""
        return sum(e.written_points for e in self.exercises.values())

    @property
    def total_points(self) -> float:
        """Every exercise's points: the checks' and the rubrics'."""
        return self.check_points + self.written_points

    def program(self) -> list[dict]:
        """What the trusted checker runs: the narrative code cells and the check cells in
        source order, without the solutions (``{"kind": "code", "source"}`` and
        ``{"kind": "check", "label", "occurrence", "source", "names", "exercise_kind"}``,
        ``names`` being the answer variables that the check reads)."""
        answers = {e.variable for e in self.exercises.values()}
        seen: dict[str, int] = {}
        items = []
        for p in self.pieces:
            if p.kind == "code":
                items.append({"kind": "code", "source": p.source})
            elif p.kind == "check":
                ex = self.exercises[p.label]
                loaded = _stored_and_loaded(p.source)[1]
                names = [ex.variable] + sorted((loaded & answers) - {ex.variable})
                items.append({"kind": "check", "label": p.label,
                              "occurrence": seen.get(p.label, 0), "source": p.source,
                              "names": names, "exercise_kind": ex.kind})
                seen[p.label] = seen.get(p.label, 0) + 1
        return items


def _points(x: float) -> str:
    return f"{x:g} point{'s' * (x != 1)}"


def exercise_heading(ex: Exercise, points: bool = True) -> str:
    """The heading and statement of ``ex`` in an edition: its number as the book numbers it
    (``**Exercise 41**``), its label and title, and with ``points`` its total, split between
    the checks and the written parts when it has both."""
    title = f" — {ex.title}" if ex.title else ""
    worth = ""
    if points and ex.total_points:
        split = (f": {ex.points:g} checked by code, {ex.written_points:g} for the written "
                 f"part{'s' * (len(ex.parts) > 1)}" if ex.points and ex.written_points else "")
        worth = f" ({_points(ex.total_points)}{split})"
    return f"**Exercise {ex.number}** (`{ex.label}`){title}{worth}\n\n{ex.statement}".rstrip()


def parse_notebook(nb: nbformat.NotebookNode, stem: str) -> Chapter:
    """Parse a notebook read from a chapter's MyST source (see the module docstring)."""
    pieces: list[Piece] = []
    exercises: dict[str, Exercise] = {}
    problems: list[str] = []
    in_solution: str | None = None
    in_exercise: str | None = None  # inside {exercise-start} ... {exercise-end}

    def get(label: str) -> Exercise:
        if label not in exercises:
            exercises[label] = Exercise(label=label, number=len(exercises) + 1)
        return exercises[label]

    def add_text(text: str) -> None:
        if not text.strip():
            return
        if in_solution:
            get(in_solution).solution_text.append(text.strip("\n"))
            pieces.append(Piece("solution_text", text.strip("\n"), in_solution))
        elif in_exercise:
            ex = get(in_exercise)
            ex.statement = (ex.statement + "\n\n" + text.strip("\n")).strip("\n")
            pieces.append(Piece("exercise", text.strip("\n"), in_exercise))
        else:
            pieces.append(Piece("text", text.strip("\n")))

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for part in split_fences(cell.source):
                if isinstance(part, str):
                    add_text(part)
                    continue
                name = part.name
                if name in ("exercise", "exercise-start"):
                    label = part.options.get("label")
                    if not label:
                        problems.append(f"exercise {part.arg!r} has no :label:")
                        label = f"ex-{stem}-unlabelled-{len(exercises) + 1}"
                    ex = get(label)
                    ex.title = part.arg
                    ex.statement = part.body.strip()
                    head = exercise_headline(part.body)
                    if head:
                        ex.kind, ex.level, ex.minutes = head
                    else:
                        km = re.search(r"Kind\W{0,6}(derivation|coding|interpretation|proof|project)",
                                       part.body, re.I)
                        ex.kind = km[1].lower() if km else ex.kind
                    pieces.append(Piece("exercise", exercise_heading(ex, points=False), label,
                                        head=True))
                    if name == "exercise-start":
                        in_exercise = label
                elif name == "exercise-end":
                    in_exercise = None
                elif name == "solution-start":
                    if in_solution:
                        problems.append(f"solution of {in_solution} not closed before "
                                        f"solution of {part.arg}")
                    in_solution = part.arg
                    if part.arg not in exercises:
                        problems.append(f"solution for unknown exercise {part.arg!r}")
                    get(part.arg)
                    pieces.append(Piece("answer", "", part.arg))
                elif name == "solution-end":
                    if not in_solution:
                        problems.append("solution-end without solution-start")
                    in_solution = None
                elif name == "solution":
                    label = part.arg
                    if label not in exercises:
                        problems.append(f"solution for unknown exercise {label!r}")
                    get(label).solution_text.append(part.body)
                    pieces.append(Piece("answer", "", label))
                    pieces.append(Piece("solution_text", part.body, label))
                else:
                    add_text(part.raw)
        elif cell.cell_type == "code":
            header = check_header(cell.source)
            tags = cell.metadata.get("tags", [])
            if header or "check" in tags:
                if not header:
                    problems.append("check cell without a '# check <label> points=N' first line")
                    pieces.append(Piece("code", cell.source, cell=cell))
                    continue
                label, points = header
                if label not in exercises:
                    problems.append(f"check for unknown exercise {label!r}")
                ex = get(label)
                ex.checks.append(cell.source)
                ex.points += points
                pieces.append(Piece("check", cell.source, label, cell=cell))
            elif in_solution:
                get(in_solution).solution_code.append(cell.source)
                pieces.append(Piece("solution_code", cell.source, in_solution, cell=cell))
            else:
                pieces.append(Piece("code", cell.source, cell=cell))
        else:  # raw cells
            pieces.append(Piece("text", cell.source))
    if in_solution:
        problems.append(f"solution of {in_solution} is never closed ({{solution-end}})")
    problems += solution_only_uses(pieces, exercises) + check_only_uses(pieces)
    for ex in exercises.values():
        ex.rubric, rubric_problems = parse_rubric("\n\n".join(ex.solution_text), ex.kind)
        problems += [f"{ex.label}: {p}" for p in rubric_problems]
        if not ex.graded and not ex.rubric and not rubric_problems:
            problems.append(f"{ex.label}: a {ex.kind} needs a rubric with points in its solution")
        if ex.graded and not ex.checks:
            problems.append(f"{ex.label}: no check cell")
        if not ex.graded and ex.checks:
            problems.append(f"{ex.label}: a {ex.kind} is not autograded, yet it has a check cell")
        if not (ex.solution_code or ex.solution_text):
            problems.append(f"{ex.label}: no solution")
    return Chapter(stem, pieces, exercises, copy.deepcopy(dict(nb.metadata)), problems)




EXERCISE_FENCE = re.compile(r"^(?:`{3,}|:{3,})\{exercise(?:-start)?\}", re.M)
"""The opening line of an exercise directive (plain or gated) in a chapter's source."""


def toc_chapters(root: str | Path) -> list[tuple[str, str | None]]:
    """``(file, part caption)`` of every page of the book's ``_toc.yml`` under ``root``, in
    book order: its root page first (no part), then each part's chapters (``file`` as the
    table of contents writes it, ``chapters/mixtures``)."""
    import yaml

    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text()) or {}
    pages = [(toc["root"], None)] if toc.get("root") else []
    return pages + [(c["file"], part.get("caption")) for part in toc.get("parts", [])
                    for c in part.get("chapters", []) if c.get("file")]


def exercise_offset(path: str | Path) -> int:
    """How many exercises the book has before the chapter at ``path``: the exercises of the
    chapters that come before it in the book's ``_toc.yml`` (the folder above ``chapters/``),
    which the book numbers on from one chapter to the next; 0 for a chapter of no book."""
    path = Path(path).resolve()
    root = path.parent.parent
    if not (root / "_toc.yml").is_file():
        return 0
    files = [root / f"{f}.md" for f, _ in toc_chapters(root)]
    if path not in files:
        return 0
    return sum(len(EXERCISE_FENCE.findall(f.read_text())) for f in files[:files.index(path)]
               if f.is_file())


def parse_chapter(path: str | Path) -> Chapter:
    """Read ``chapters/<stem>.md`` (MyST notebook) with jupytext and parse its exercises,
    numbered as the book numbers them (on from the chapters before it: :func:`exercise_offset`)."""
    import jupytext

    path = Path(path)
    nb = jupytext.read(path)
    chapter = parse_notebook(nb, path.stem)
    offset = exercise_offset(path)
    for ex in chapter.exercises.values():
        ex.number += offset
    chapter.refs = References.from_chapters(path.parent)
    return chapter
