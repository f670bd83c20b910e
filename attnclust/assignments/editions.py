"""Student and instructor notebooks of a chapter, and the autograder material.

Both editions are plain Jupyter notebooks, their Markdown rewritten by
``markdown.to_jupyter`` (roles, theorem directives, macros), with the numbers and claim
sentences that the book's build computed in the text, as the HTML book shows them
(``glued``: :mod:`.built` reads them from the build; :func:`write_editions` refuses to
write an edition that would show a glue name or a claim's id in their place): the MyST
directives of the exercises are turned into Markdown (``**Exercise 2** (`ex-mixtures-2`) —
title``), the ``{solution-start}`` / ``{solution-end}`` fences are removed. The instructor edition keeps every solution; the
student edition replaces each by a prompt and a starter cell ``ex_<stem>_<n> = None  # YOUR
ANSWER HERE`` (valid Python, so a student notebook runs top to bottom). The student edition
is made for graded work with ``hidden_checks`` (what :func:`write_editions` and ``build`` do
by default): each check cell keeps only its header line and says in words what it verifies
(:func:`.describe.describe_check`: what to store, how it is compared, the tolerance),
without the code and the expected values. The practice edition, for self-study, is the
same notebook with the check cells visible, so students can check themselves (a check says
"not answered yet" while its answer is still ``None``, then "correct" or "not right yet"). The instructor edition and the autograder material always keep the
checks; when grading, the checks run outside the student's kernel, from the chapter source
(:mod:`.grading`), whatever the student did to the check cells.

This is its own processing step on purpose: sphinx-exercise's ``hide_solutions`` option
crashes the HTML build on gated solutions, and it only concerns HTML anyway.
"""

from __future__ import annotations

import copy
import json
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import nbformat

from .markdown import References, render_roles, to_jupyter
from .describe import asks_for_letter_only, describe_check, stored_object
from .source import SINGLE_PART, Chapter, Exercise, WrittenPart, check_header, exercise_heading

__all__ = ["STARTER_MARK", "autograder_material", "guarded_check_source", "hidden_check_source",
           "install_cell_source", "instructor_notebook", "points_summary", "reader_notebook",
           "student_notebook", "write_editions"]

STARTER_MARK = "# YOUR ANSWER HERE"


def _new_nb(chapter: Chapter) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    meta = {k: v for k, v in chapter.metadata.items() if k != "jupytext"}
    meta.setdefault("kernelspec", {"display_name": "Python 3", "language": "python",
                                   "name": "python3"})
    meta.setdefault("language_info", {"name": "python"})
    nb.metadata.update(meta)
    return nb


def _code_cell(source: str, template: nbformat.NotebookNode | None = None,
               extra_meta: dict | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if template is not None:
        meta = {k: v for k, v in template.metadata.items() if k not in ("execution",)}
        cell.metadata.update(meta)
    if extra_meta:
        cell.metadata.update(extra_meta)
    return cell


_STATIC_ARG = re.compile(r"(?:(?<=\()\s*static\s*=\s*True\s*,?\s*|\s*,\s*static\s*=\s*True\s*(?=[,)]))")


def _is_widget(cell: nbformat.NotebookNode | None) -> bool:
    """Whether ``cell`` is tagged ``widget`` (a chapter's explorer)."""
    return cell is not None and "widget" in cell.metadata.get("tags", [])


def live_widget_source(source: str) -> str:
    """A widget cell's code as the notebooks run it: without ``static=True``.

    In the chapter, an explorer is called with ``static=True`` so that the executed HTML page
    also holds its frames over a grid of slider values (``attnclust.book.widgets.static``),
    for readers without a kernel; a notebook has a kernel, never shows those frames, and
    would wait for all of them (minutes for the training explorer) before the live
    explorer appears. ``f(static=True)`` becomes ``f()``, ``f(a, static=True)`` ``f(a)``."""
    return _STATIC_ARG.sub("", source)


def _check_cell(piece_source: str, template, label: str) -> nbformat.NotebookNode:
    cell = _code_cell(piece_source, template)
    tags = list(cell.metadata.get("tags", []))
    if "check" not in tags:
        tags.append("check")
    cell.metadata["tags"] = tags
    cell.metadata["attnclust"] = {"check": label}
    return cell


def hidden_check_source(source: str, variable: str, number: int, kind: str = "",
                        statement: str = "") -> str:
    """A check cell of the student edition with hidden checks: its header line, then what
    it verifies in words, as comments: its ``# verifies:`` lines, if any, then what to store
    in the answer ``variable`` of exercise ``number`` (as its ``statement`` asks), how it is
    compared and to what tolerance (:func:`.describe.describe_check`), never the expected
    value."""
    label, points = check_header(source)
    words = describe_check(source, variable, number, kind, statement)
    return (f"# check {label} points={points:g}\n"
            f"# What the grader verifies: {words.rstrip('.')}.\n"
            "# The check itself runs when your notebook is graded; this edition does not "
            "show it.")


CORRECT = "{label}: correct"
NOT_ANSWERED = "{label}: not answered yet (store your answer in {var})"
NOT_RIGHT = "{label}: not right yet."
COULD_NOT_RUN = "{label}: the check could not run on your answer ({error}); see what the exercise asks to store in {var}"
"""The verdicts a check cell of the student edition prints (:func:`guarded_check_source`),
which the grader writes into an executed notebook in the same words
(:func:`.grading.verdict`). ``NOT_RIGHT`` is followed by the check's message as the hint."""


def guarded_check_source(source: str, variable: str) -> str:
    """A visible check cell of the student edition: the chapter's check, run only once the
    answer is set, that prints its verdict and never stops the notebook. Before the answer
    is set (the starter cell leaves ``None``) it says "not answered yet"; then "correct",
    "not right yet" with the check's message as the hint, or, where the check cannot even
    run on the answer (a value of the wrong kind), the error and what to store. Running the
    whole notebook therefore reaches every exercise, whatever the answers. ``variable``: the
    exercise's answer variable."""
    header, _, body = source.lstrip("\n").partition("\n")
    label, _ = check_header(header)
    var = variable
    before, _, after = COULD_NOT_RUN.format(label=label, var=var, error="\0").partition("\0")
    return (f"{header}\n"
            f"if {var} is None:\n"
            f"    print({NOT_ANSWERED.format(label=label, var=var)!r})\n"
            "else:\n"
            "    try:\n"
            + textwrap.indent(body.strip("\n") or "pass", "        ", lambda line: True) + "\n"
            "    except AssertionError as _failed:\n"
            f"        print({NOT_RIGHT.format(label=label)!r},\n"
            f"              str(_failed).removeprefix(\"{label}: \") or \"The check failed.\")\n"
            "    except Exception as _error:\n"
            f"        print({before!r} + f\"{{type(_error).__name__}}: {{_error}}\" + {after!r})\n"
            "    else:\n"
            f"        print({CORRECT.format(label=label)!r})\n")


def _pts(x: float) -> str:
    return f"{x:g} point{'s' * (x != 1)}"


def _prompt(ex: Exercise, hidden: bool = False) -> str:
    """The prompt before the starter cell: how to work, and what to store where, as the
    statement asks it (its ``Store ... in `ex_...``` sentence, :func:`.describe.stored_object`).
    A multiple-choice question asks for an option's letter, unless its statement asks to store
    something else (a computed value and the letter, say): then it is worked like a coding
    task, and the letter in the stored value is a string."""
    how = {
        "derivation": "Derive it (SymPy helps) in the cell below, adding cells as needed",
        "coding": "Write your code in the cell below, adding cells as needed",
        "interpretation": "Choose one of the options and write its letter as a string, "
                          "e.g. `\"a\"`",
    }.get(ex.kind, "Work it out in the cell below, adding cells as needed")
    what = stored_object(ex.statement, ex.variable) or "your answer"
    if ex.kind == "interpretation" and not asks_for_letter_only(ex):
        how = ("Do what the exercise asks in the cell below, adding cells as needed, then "
               "choose one of the options")
        what += " (the option's letter as a string, e.g. `\"a\"`)"
    return (f"**Your answer to exercise {ex.number}** (`{ex.label}`, {_pts(ex.points)} checked "
            f"by code). {how}; store {what} in `{ex.variable}`. The check cell after it "
            + ("says what the grader verifies." if hidden else "tells you whether it is right."))


PROOF_STARTER = "*Write your proof here.*"
"""The text of the Markdown answer cell that the student edition gives a proof exercise."""

REPORT_STARTER = "*Write your report here.*"
"""The text of the Markdown answer cell that the student edition gives a project."""

PART_STARTER = "*Write your answer to {part} here.*"
"""The text of the Markdown answer cell of one written part of several (``{part}``: ``(i)``)."""

WRITTEN_STARTER = "*Write your answer here.*"
"""The text of the Markdown answer cell of an exercise's only written part, in a kind other
than a proof or a project (the "explain why" of an open question)."""


def _part_names(ex: Exercise) -> list[WrittenPart]:
    """The written parts the student edition gives a Markdown cell: the rubric's, or, for a
    proof or project without one, a single part of no points."""
    if ex.parts:
        return ex.parts
    return [WrittenPart(SINGLE_PART.get(ex.kind, "written answer"), 0.0)] if not ex.graded else []


def _single(ex: Exercise) -> bool:
    return len(_part_names(ex)) == 1


def _part_prompt(ex: Exercise, part: WrittenPart) -> str:
    """The prompt before the Markdown answer cell of one written part of ``ex``."""
    worth = f", {_pts(part.points)}" if part.points else ""
    graded = "No check runs on it: your instructor grades it" + (
        " against the rubric." if part.points else ".")
    if ex.kind == "project" and _single(ex):
        return (f"**Your report for exercise {ex.number}** (`{ex.label}`{worth}), a project: "
                "write it in the Markdown cell below, adding code cells for your runs as "
                f"needed. {graded}")
    latex = "(LaTeX between dollar signs), adding cells as needed. "
    if _single(ex):
        what = (f"**Your {ex.kind} for exercise {ex.number}**" if ex.kind == "proof" else
                f"**Your written answer to exercise {ex.number}**")
        asks = ("it" if not ex.graded else
                "in words what the exercise asks you to say, explain or show,")
        return f"{what} (`{ex.label}`{worth}). Write {asks} in the Markdown cell below {latex}{graded}"
    return (f"**Your answer to exercise {ex.number} {part.name}** (`{ex.label}`{worth}). Write "
            f"it in the Markdown cell below {latex}{graded}")


def _markdown_answer_cell(ex: Exercise, part: WrittenPart) -> nbformat.NotebookNode:
    if not _single(ex):
        text = PART_STARTER.format(part=part.name)
    else:
        text = {"project": REPORT_STARTER, "proof": PROOF_STARTER}.get(ex.kind, WRITTEN_STARTER)
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["attnclust"] = {"answer": ex.label, "part": part.name}
    return cell


def _ungraded_note(chapter: Chapter) -> str:
    """A sentence naming the exercises answered in words (proofs, projects, and the written
    parts of the others), or nothing."""
    written = [e for e in chapter.exercises.values() if _part_names(e)]
    if not written:
        return ""
    names = ", ".join(
        f"{e.number} ({'a ' + e.kind if not e.graded else 'its written part' + 's' * (len(e.parts) > 1)})"
        for e in written)
    return (f" Exercise{'s' if len(written) > 1 else ''} {names}"
            f" {'are' if len(written) > 1 else 'is'} answered in words, in Markdown cells (one "
            "for each written part), and graded by your instructor against a rubric, not by "
            "code.")


def points_summary(chapter: Chapter) -> str:
    """``N points (C checked by code, W for the written parts)``, or ``N points`` when one of
    them is zero."""
    total = f"{_pts(chapter.total_points)}"
    if chapter.check_points and chapter.written_points:
        return (f"{total} ({chapter.check_points:g} checked by code, "
                f"{chapter.written_points:g} for the written parts)")
    return total


def _rubric_line(ex: Exercise) -> str:
    """The instructor edition's line after "Solution to exercise N": the exercise's points,
    by check and by written part (the rubric's sums)."""
    bits = [f"checks {ex.points:g}"] if ex.points else []
    bits += [f"{p.name} {p.points:g}" for p in ex.parts]
    return (f"*{_pts(ex.total_points)}: " + ", ".join(bits) + " (written parts: grade them "
            "against the rubric below).*" if ex.parts else f"*{_pts(ex.total_points)}.*")


_VALUES_NOTE = (" The numbers and measured statements in the text are those of the book's "
                "build; the code cells compute them again when you run the notebook.")
"""What every edition's first cell says of the values in its text (:mod:`.built`)."""


def _intro(chapter: Chapter, student: bool, hidden: bool = False) -> str:
    n, pts = len(chapter.exercises), points_summary(chapter)
    if student:
        check = ("the check cell after it says what the grader verifies (the check itself "
                 "runs when your notebook is graded)" if hidden else
                 "the check cell after it tells you whether your answer is right")
        edition = "Student edition" if hidden else "Practice edition, for self-study,"
        return (f"*{edition} of the chapter `{chapter.stem}` of the attnclust book: "
                f"{n} exercises, {pts}; each exercise's heading gives its points.* For each exercise that code checks, replace "
                f"the starter cell (`{STARTER_MARK}`) by your work, keeping the answer variable's name; "
                f"{check}. Answers are numbers, strings (for the multiple-choice "
                "questions), NumPy or JAX arrays, or SymPy expressions. Run the whole "
                "notebook from the top before handing it in. To resubmit, hand in the "
                "notebook again under the same name: a changed file is graded again, an "
                "unchanged one keeps its grade." + _ungraded_note(chapter) + _VALUES_NOTE)
    return (f"*Instructor edition of the chapter `{chapter.stem}` of the attnclust book: "
            f"{n} exercises, {pts}, with the reference solutions; after each solution's "
            "heading, its points by check and written part, and the written parts' rubrics "
            "in the solutions.*" + _VALUES_NOTE)


def _assemble(chapter: Chapter, student: bool, hidden: bool = False,
              course: bool = True) -> nbformat.NotebookNode:
    """The edition's cells; ``course``: a course edition (student or instructor), whose
    headings show each exercise's points (the reader edition's do not)."""
    nb = _new_nb(chapter)
    macros = chapter.refs.macro_definitions() if chapter.refs else ""
    intro = _intro(chapter, student, hidden)
    nb.cells.append(nbformat.v4.new_markdown_cell(intro + (f"\n\n{macros}" if macros else "")))
    md: list[str] = []

    def flush() -> None:
        if md:
            nb.cells.append(nbformat.v4.new_markdown_cell(to_jupyter("\n\n".join(md), chapter.refs)))
            md.clear()

    # the written parts of an exercise that code checks come after its last check cell
    last_check = {p.label: i for i, p in enumerate(chapter.pieces) if p.kind == "check"}

    def written(ex: Exercise) -> None:
        for part in _part_names(ex):
            md.append(_part_prompt(ex, part))
            flush()
            nb.cells.append(_markdown_answer_cell(ex, part))

    for i, p in enumerate(chapter.pieces):
        ex = chapter.exercises.get(p.label) if p.label else None
        if p.kind == "exercise" and p.head and ex is not None:
            md.append(exercise_heading(ex, points=course))
        elif p.kind in ("text", "exercise"):
            md.append(p.source)
        elif p.kind == "code":
            flush()
            nb.cells.append(_code_cell(live_widget_source(p.source) if _is_widget(p.cell)
                                       else p.source, p.cell))
        elif p.kind == "answer":
            if student and not ex.graded:
                written(ex)
            elif student:
                md.append(_prompt(ex, hidden))
                flush()
                nb.cells.append(_code_cell(f"{ex.variable} = None  {STARTER_MARK}",
                                           extra_meta={"attnclust": {"answer": ex.label}}))
                if p.label not in last_check:
                    written(ex)
            else:
                md.append(f"**Solution to exercise {ex.number}** (`{ex.label}`)."
                          + (f" {_rubric_line(ex)}" if course else ""))
        elif p.kind == "solution_text":
            if not student:
                md.append(p.source)
        elif p.kind == "solution_code":
            if not student:
                flush()
                nb.cells.append(_code_cell(p.source, p.cell,
                                           {"attnclust": {"solution": p.label}}))
        elif p.kind == "check":
            flush()
            source = (hidden_check_source(p.source, ex.variable, ex.number, ex.kind,
                                          ex.statement) if hidden else
                      guarded_check_source(p.source, ex.variable) if student else p.source)
            nb.cells.append(_check_cell(source, p.cell, p.label))
            if student and last_check.get(p.label) == i and ex.graded:
                written(ex)
    flush()
    _resolve_alt_texts(nb, chapter.refs or References())
    return nb


def _resolve_alt_texts(nb: nbformat.NotebookNode, refs: References) -> None:
    """Each figure cell's alt text (``mystnb: image: alt:``) with its roles resolved as in the
    Markdown (``{glue:text}`name:fmt``` -> the value the build glued, in the reader edition;
    the name in code style in the others), as the HTML book's ``_ext/glued_alt.py`` does."""
    for cell in nb.cells:
        image = cell.metadata.get("mystnb", {}).get("image", {}) if cell.cell_type == "code" else {}
        alt = image.get("alt") if isinstance(image, dict) else None
        resolved = render_roles(alt, refs) if isinstance(alt, str) else alt
        if resolved != alt:
            cell.metadata["mystnb"] = copy.deepcopy(cell.metadata["mystnb"])  # not the chapter's
            cell.metadata["mystnb"]["image"]["alt"] = resolved


def _with_values(chapter: Chapter, glued: dict[str, dict] | None) -> Chapter:
    """``chapter`` whose roles show the values ``glued`` (name -> MIME bundle, as the
    build glued them, :func:`.built.glued_values`)."""
    if not glued:
        return chapter
    return replace(chapter, refs=replace(chapter.refs or References(), glued=dict(glued)))


def student_notebook(chapter: Chapter, hidden_checks: bool = False,
                     glued: dict[str, dict] | None = None) -> nbformat.NotebookNode:
    """The chapter without its solutions: a prompt and a starter cell in place of each;
    with ``hidden_checks`` (the student edition for graded work, as :func:`write_editions`
    makes it), each check cell says what it verifies instead of its code; without (the
    practice edition, for self-study), the checks are visible.
    ``glued``: the build's values that its text shows (:func:`.built.chapter_values`;
    without them, each glue name and claim id stands in its place, as for grading)."""
    return _assemble(_with_values(chapter, glued), student=True, hidden=hidden_checks)


def instructor_notebook(chapter: Chapter,
                        glued: dict[str, dict] | None = None) -> nbformat.NotebookNode:
    """The whole chapter with its reference solutions, as a clean notebook; ``glued`` as
    for :func:`student_notebook`."""
    return _assemble(_with_values(chapter, glued), student=False)


READER_NOTE = ("*Reader edition of the chapter `{stem}` of the attnclust book*, made from the "
               "executed book." + _VALUES_NOTE + " Solutions to the exercises follow each "
               "exercise.")


def install_cell_source(repository: str = "") -> str:
    """The first code cell of a reader edition: nothing where ``attnclust`` imports (a clone
    with ``make lab``, Binder); elsewhere (Colab) it clones the book's ``repository`` (a git
    URL) into ``attnclust-book`` and installs it there, editable, so that the package finds
    the committed results at the clone's root. With no repository it says where to run."""
    if repository:
        fetch = (f"    !git clone --depth 1 {repository} attnclust-book\n"
                 "    %pip install --quiet --editable attnclust-book\n"
                 "    import sys\n"
                 "    sys.path.insert(0, 'attnclust-book')  # this kernel sees the clone now\n"
                 "    import attnclust")
    else:
        fetch = ('    raise ModuleNotFoundError("attnclust is not installed: run this notebook '
                 'from a clone of the book\'s repository (make lab)") from None')
    return ("# Colab, or any Python without attnclust: install the book's package first.\n"
            f"try:\n    import attnclust\nexcept ModuleNotFoundError:\n{fetch}")


def reader_notebook(chapter: Chapter, glued: dict[str, dict],
                    repository: str = "",
                    executed: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """The chapter as a notebook for reading and running (the download button of each page
    and the launch buttons, chapter "Preface"): the instructor edition's Markdown, with the
    numbers the build glued (``glued``: name -> MIME bundle, as myst-nb writes
    ``<page>.glue.json``) in the text, and a first code cell that installs ``attnclust``
    from ``repository`` where it is missing (:func:`install_cell_source`). With
    ``executed`` (the notebook the build executed), each code cell carries that build's
    outputs, figures included (:func:`carry_outputs`)."""
    nb = _assemble(_with_values(chapter, glued), student=False, course=False)
    macros = (chapter.refs or References()).macro_definitions()
    nb.cells[0].source = READER_NOTE.format(stem=chapter.stem) + (f"\n\n{macros}" if macros else "")
    if executed is not None:
        carry_outputs(nb, executed, macros.strip("$"))
    nb.cells.insert(1, _code_cell(install_cell_source(repository),
                                  extra_meta={"attnclust": {"install": True}}))
    return nb


_MATH_OPEN = re.compile(r"\$\$?|\\\[")


def carry_outputs(nb: nbformat.NotebookNode, executed: nbformat.NotebookNode,
                  macros: str = "") -> None:
    """Copy the outputs of ``executed``'s code cells into ``nb``'s code cells of the same
    source, matched in order (an edition has the chapter's code cells in the chapter's
    order, some left out). A widget cell keeps none:
    its output is a live widget's view, which a notebook opened without the build's kernel
    cannot show ("model not found"); running the cell opens the explorer. ``macros`` (TeX
    ``\\newcommand`` definitions) go at the start of every LaTeX output:
    JupyterLab typesets the saved outputs as it opens the notebook, possibly before the
    first cell that defines them."""
    done = [c for c in executed.cells if c.cell_type == "code"]
    i = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or _is_widget(cell):
            continue
        source = cell.source.strip()
        j = next((k for k in range(i, len(done)) if done[k].source.strip() == source), None)
        if j is None:
            continue
        cell.outputs = copy.deepcopy(done[j].get("outputs", []))
        for out in cell.outputs:
            latex = out.get("data", {}).get("text/latex")
            if macros and isinstance(latex, str) and (opening := _MATH_OPEN.match(latex)):
                out["data"]["text/latex"] = opening.group(0) + macros + latex[opening.end():]
        cell.execution_count = done[j].get("execution_count")
        i = j + 1


MATERIAL_FORMAT = 3
"""Version of the autograder material's layout (2: with the chapter's ``program``; 3: with
each exercise's number, written parts and rubric, and the chapter's points by checks and by
written parts; an exercise's ``statement``, which says what a hidden check verifies, is
optional)."""


def autograder_material(chapter: Chapter) -> dict:
    """What grading needs, as JSON-able data: each exercise's label, number (the book's),
    variable, kind, statement, points (its checks'), checks, written parts (``parts``: name and points)
    and rubric, and the ``program`` that the trusted checker runs (the chapter's narrative
    code and checks in order, without the solutions: :meth:`.Chapter.program`). The
    chapter's ``total_points`` are ``check_points`` plus ``written_points``."""
    return {
        "format": MATERIAL_FORMAT,
        "chapter": chapter.stem,
        "total_points": chapter.total_points,
        "check_points": chapter.check_points,
        "written_points": chapter.written_points,
        "exercises": [
            {"label": e.label, "number": e.number, "title": e.title, "kind": e.kind,
             "statement": e.statement,
             "variable": e.variable, "points": e.points, "checks": e.checks,
             "parts": [{"name": p.name, "points": p.points} for p in e.parts],
             "rubric": [{"part": r.part, "text": r.text, "points": r.points} for r in e.rubric]}
            for e in chapter.exercises.values()
        ],
        "program": chapter.program(),
    }


def write_editions(chapter: Chapter, out: str | Path, hidden_checks: bool = True,
                   glued: dict[str, dict] | None = None) -> dict[str, Path]:
    """Write ``out/student/<stem>.ipynb`` (for graded work: with ``hidden_checks``, the
    default, each check says in words what it verifies, without its code and expected
    values), ``out/practice/<stem>.ipynb`` (for self-study: the checks visible, each telling
    whether an answer is right), ``out/instructor/<stem>.ipynb`` and
    ``out/autograder/<stem>.json``; return the four paths. ``glued``: the build's values
    that the chapter's text shows (:func:`.built.chapter_values`); a ``ValueError`` names
    those missing, before anything is written: a student never sees a glue name or a
    claim's id."""
    from .built import shown_values

    missing = sorted(shown_values(chapter) - set(glued or {}))
    if missing:
        raise ValueError(f"{chapter.stem}: no value for {', '.join(missing)}: the editions show "
                         "the values the book's build glued (attnclust.assignments.chapter_values)")
    out = Path(out)
    paths = {
        "student": out / "student" / f"{chapter.stem}.ipynb",
        "practice": out / "practice" / f"{chapter.stem}.ipynb",
        "instructor": out / "instructor" / f"{chapter.stem}.ipynb",
        "autograder": out / "autograder" / f"{chapter.stem}.json",
    }
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(student_notebook(chapter, hidden_checks, glued), paths["student"])
    nbformat.write(student_notebook(chapter, False, glued), paths["practice"])
    nbformat.write(instructor_notebook(chapter, glued), paths["instructor"])
    paths["autograder"].write_text(json.dumps(autograder_material(chapter), indent=1) + "\n")
    return paths
