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
