"""The notebook editions as JupyterLab renders and runs them: display mathematics inside a
quoted definition or theorem has no ">" markers in it (Jupyter typesets them as glyphs),
and an unanswered student notebook runs top to bottom, each check saying "not answered
yet" instead of failing with an unrelated error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnclust.assignments import instructor_notebook, parse_chapter, student_notebook
from attnclust.assignments.example import EXAMPLE_CHAPTER

ROOT = Path(__file__).resolve().parents[1]
DISPLAY = re.compile(r"\$\$.*?\$\$", re.S)
CHAPTERS = sorted(p for p in (ROOT / "chapters").glob("*.md") if "{exercise}" in p.read_text())


@pytest.mark.slow
def test_no_quote_marker_inside_display_math():
    quoted = 0
    for path in CHAPTERS:
        chapter = parse_chapter(path)
        for nb in (student_notebook(chapter), instructor_notebook(chapter)):
            for cell in nb.cells:
                if cell.cell_type != "markdown":
                    continue
                for line in cell.source.split("\n"):
                    quoted += line.startswith("> $$")
                for math in DISPLAY.findall(cell.source):
                    assert not re.search(r"\n\s*>", math), f"{path.name}: {math[:120]!r}"
    assert quoted, "no quoted display equation at all: the check would test nothing"


@pytest.mark.integration
def test_unanswered_student_notebook_runs_and_says_not_answered(tmp_path):
    from nbclient import NotebookClient

    src = tmp_path / "toy.md"
    src.write_text(EXAMPLE_CHAPTER)
    chapter = parse_chapter(src)
    nb = student_notebook(chapter)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    said = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    for label in chapter.exercises:
        assert f"{label}: not answered yet" in said, said


@pytest.mark.integration
def test_student_checks_print_their_verdict_and_never_stop_the_notebook(tmp_path):
    """A wrong answer, an answer of the wrong kind and a right one: each check says so (the
    hint from the check's message) and the notebook runs on to the end."""
    from nbclient import NotebookClient

    src = tmp_path / "toy.md"
    src.write_text(EXAMPLE_CHAPTER)
    chapter = parse_chapter(src)
    nb = student_notebook(chapter)
    answers = {"ex_toy_1": "ex_toy_1 = 2 * x", "ex_toy_2": "ex_toy_2 = 'two'",
               "ex_toy_3": "ex_toy_3 = 'a'"}
    for cell in nb.cells:
        for var, code in answers.items():
            if cell.cell_type == "code" and cell.source.startswith(f"{var} = None"):
                cell.source = code
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    said = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "ex-toy-1: not right yet. expected the derivative 3*x**2" in said, said
    assert "ex-toy-2: the check could not run on your answer (ValueError" in said, said
    assert "ex-toy-3: correct" in said, said


FASTEST_COURSE_CHAPTER = "mixtures"
"""The course chapter whose student edition runs fastest (as in tests/test_assignments.py)."""


def _verdicts(nb, labels) -> dict[str, str]:
    """Label -> what its check cell printed."""
    return {c.metadata["attnclust"]["check"]: "".join(o.get("text", "") for o in c.outputs
                                                       if o.output_type == "stream")
            for c in nb.cells if c.metadata.get("attnclust", {}).get("check") in labels}


@pytest.mark.integration
def test_real_student_edition_checks_say_pass_or_fail_and_never_stop(tmp_path):
    """A course chapter's student edition, run top to bottom with a reference answer, a
    wrong choice, an answer of the wrong kind and one left unanswered: no cell stops the
    notebook, and each check prints one clear verdict, "correct", "not right yet." with a
    hint, "could not run on your answer" or "not answered yet"."""
    from nbclient import NotebookClient

    chapter = parse_chapter(ROOT / "chapters" / f"{FASTEST_COURSE_CHAPTER}.md")
    exercises = [e for e in chapter.exercises.values() if e.graded]  # a proof has no check
    solved = next(e for e in exercises if e.kind in ("derivation", "coding"))
    chosen = next(e for e in exercises if e.kind == "interpretation")
    reference = "\n".join(p.source for p in chapter.pieces
                          if p.kind == "solution_code" and p.label == chosen.label)
    right = re.search(rf"{chosen.variable}\s*=\s*[\"'](\w)[\"']", reference)[1]
    others = [e for e in exercises if e not in (solved, chosen)]
    answers = {solved.variable: "\n".join(p.source for p in chapter.pieces if
                                          p.kind == "solution_code" and p.label == solved.label),
               chosen.variable: f"{chosen.variable} = {'ab'[right == 'a']!r}",
               others[0].variable: f"{others[0].variable} = 'two'"}
    nb = student_notebook(chapter)
    for cell in nb.cells:
        for var, code in answers.items():
            if cell.cell_type == "code" and cell.source.startswith(f"{var} = None"):
                cell.source = code
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "chapters")}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.output_type == "error"]
    assert not errors, errors[0]
    said = _verdicts(nb, chapter.exercises)
    assert set(said) == {e.label for e in exercises}
    assert said[solved.label] == f"{solved.label}: correct\n"
    assert said[chosen.label].startswith(f"{chosen.label}: not right yet. ")
    assert "expected" in said[chosen.label], said[chosen.label]  # the check's hint
    assert said[others[0].label].startswith(
        (f"{others[0].label}: the check could not run on your answer (",
         f"{others[0].label}: not right yet. ")), said[others[0].label]
    for ex in others[1:]:
        assert said[ex.label] == (f"{ex.label}: not answered yet (store your answer in "
                                  f"{ex.variable})\n")
    for label, text in said.items():
        assert text.count("\n") == 1, (label, text)  # one verdict, nothing else
