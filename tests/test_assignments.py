"""Course assignments: editions without solution text, and the autograder's promises.

Most tests use a small synthetic chapter written here in the book's exercise format (so they
do not depend on the real chapters' progress); the last ones run over the real chapters.
Tests that grade start Jupyter kernels (markers ``kernel`` and ``slow``); how long grading
takes is measured by ``make bench``.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path

import nbformat
import pytest

from attnclust.assignments import (
    autograder_material,
    course_chapters,
    discover_submissions,
    grade_notebook,
    instructor_notebook,
    parse_chapter,
    prepare_submission,
    student_notebook,
)
from attnclust.assignments.__main__ import main as cli
from attnclust.assignments.grading import unanswered
from attnclust.assignments.source import MYST_HEADER

ROOT = Path(__file__).resolve().parents[1]

HEADER = MYST_HEADER

TOY = HEADER + '''
# Toy chapter

Narrative that stays in every edition.

```{code-cell} python3
import numpy as np
import sympy
x = sympy.Symbol("x", positive=True)
```

## Exercises

```{exercise} A derivative
:label: ex-toy-1

Differentiate $x^3$ with SymPy. Kind: derivation. Store your answer in `ex_toy_1`.
```

```{solution-start} ex-toy-1
:class: dropdown
```
The power rule, checked by SymPy: SECRET-EXPLANATION-ONE.
```{code-cell} python3
ex_toy_1 = sympy.diff(x**3, x)  # SECRET-CODE-ONE
```
```{solution-end}
```

```{code-cell} python3
:tags: [remove-input, check]
# check ex-toy-1 points=2
assert sympy.simplify(ex_toy_1 - 3 * x**2) == 0, "ex-toy-1: expected the derivative 3*x**2"
```

```{exercise} A mean
:label: ex-toy-2

Compute the mean of `np.arange(5)`. Kind: coding. Store your answer in `ex_toy_2`.
```

```{solution-start} ex-toy-2
:class: dropdown
```
SECRET-EXPLANATION-TWO, in two cells.
```{code-cell} python3
values = np.arange(5)
```
```{code-cell} python3
ex_toy_2 = float(values.mean())  # SECRET-CODE-TWO
```
```{solution-end}
```

```{code-cell} python3
:tags: [remove-input, check]
# check ex-toy-2 points=1
assert abs(float(ex_toy_2) - 2.0) < 1e-9, "ex-toy-2: expected the mean 2.0"
```

```{exercise} A choice
:label: ex-toy-3

Is $x^2$ convex? (a) yes (b) no. Kind: interpretation. Store your answer in `ex_toy_3`.
```

```{solution-start} ex-toy-3
:class: dropdown
```
SECRET-EXPLANATION-THREE: its second derivative is positive.
```{code-cell} python3
ex_toy_3 = "a"
```
```{solution-end}
```

```{code-cell} python3
:tags: [remove-input, check]
# check ex-toy-3 points=1
assert str(ex_toy_3).strip().lower() == "a", "ex-toy-3: expected (a)"
```

Closing narrative.
'''

SECRETS = ["SECRET-EXPLANATION-ONE", "SECRET-CODE-ONE", "SECRET-EXPLANATION-TWO",
           "SECRET-CODE-TWO", "SECRET-EXPLANATION-THREE", 'ex_toy_3 = "a"',
           "values = np.arange(5)"]


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("book")
    (root / "chapters").mkdir()
    (root / "chapters" / "toy.md").write_text(TOY)
    return root


@pytest.fixture(scope="module")
def chapter(book):
    return parse_chapter(book / "chapters" / "toy.md")


def _text(nb) -> str:
    return "\n".join(c.source for c in nb.cells)


def _replace(nb, startswith: str, source: str):
    nb = copy.deepcopy(nb)
    hits = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(startswith)]
    assert len(hits) == 1, startswith
    hits[0].source = source
    return nb


def test_parse_reads_exercises_points_and_variables(chapter):
    assert chapter.problems == []
    assert list(chapter.exercises) == ["ex-toy-1", "ex-toy-2", "ex-toy-3"]
    ex = chapter.exercises
    assert [e.points for e in ex.values()] == [2, 1, 1]
    assert [e.kind for e in ex.values()] == ["derivation", "coding", "interpretation"]
    assert [e.variable for e in ex.values()] == ["ex_toy_1", "ex_toy_2", "ex_toy_3"]
    assert len(ex["ex-toy-2"].solution_code) == 2


def test_student_edition_has_no_solution_text(chapter):
    nb = student_notebook(chapter)
    text = _text(nb)
    for secret in SECRETS:
        assert secret not in text, secret
    for ex in chapter.exercises.values():  # the generic test used on the real chapters
        for line in ex.solution_lines:
            assert line not in text.splitlines(), line
    assert "{solution" not in text and "{exercise" not in text
    assert "Narrative that stays" in text and "Closing narrative" in text
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert [c.source.splitlines()[0] for c in checks] == [
        "# check ex-toy-1 points=2", "# check ex-toy-2 points=1", "# check ex-toy-3 points=1"]
    starters = [c.source for c in nb.cells
                if c.cell_type == "code" and "YOUR ANSWER HERE" in c.source]
    assert starters == [f"ex_toy_{i} = None  # YOUR ANSWER HERE" for i in (1, 2, 3)]
    for c in nb.cells:
        if c.cell_type == "code":
            compile(c.source, "<cell>", "exec")
    nbformat.validate(nb)


def test_instructor_edition_keeps_solutions_without_directives(chapter):
    nb = instructor_notebook(chapter)
    text = _text(nb)
    for secret in SECRETS:
        assert secret in text, secret
    assert "{solution" not in text and "YOUR ANSWER HERE" not in text
    nbformat.validate(nb)


def test_non_gated_solution_and_colon_fences_are_hidden(tmp_path):
    src = HEADER + """
:::{exercise} Words only
:label: ex-words-1

Explain. Kind: interpretation. Store your answer in `ex_words_1`.
:::

````{solution} ex-words-1
:class: dropdown

HIDDEN-WORDS with a nested block:
```python
HIDDEN-CODE = 1
```
````

After the solution.
"""
    path = tmp_path / "words.md"
    path.write_text(src)
    ch = parse_chapter(path)
    text = _text(student_notebook(ch))
    assert "HIDDEN" not in text and "After the solution." in text
    assert "ex_words_1 = None" in text
    assert "HIDDEN-WORDS" in _text(instructor_notebook(ch))


def test_names_defined_only_in_a_solution_are_reported(tmp_path):
    src = TOY.replace("Closing narrative.", "```{code-cell} python3\nprint(values)\n```")
    path = tmp_path / "leaky.md"
    path.write_text(src)
    problems = parse_chapter(path).problems
    assert len(problems) == 1 and "`values`" in problems[0] and "ex-toy-2" in problems[0]


def test_discover_submissions_naming(tmp_path):
    for name in ["alice__toy.ipynb", "bob.ipynb", "carl__other.ipynb", ".hidden.ipynb"]:
        (tmp_path / name).write_text("{}")
    (tmp_path / "dora").mkdir()
    (tmp_path / "dora" / "toy.ipynb").write_text("{}")
    (tmp_path / "eli").mkdir()
    (tmp_path / "eli" / "my work.ipynb").write_text("{}")
    found = discover_submissions(tmp_path, "toy")
    assert sorted(found) == ["alice", "bob", "dora", "eli"]


def test_tampered_checks_are_restored(chapter):
    material = autograder_material(chapter)
    nb = _replace(student_notebook(chapter), "# check ex-toy-2", "# check ex-toy-2 points=1\npass")
    nb.cells = [c for c in nb.cells if not c.source.startswith("# check ex-toy-3")]
    prepared = prepare_submission(nb, material)
    checks = [c.source for c in prepared.cells if "check" in c.metadata.get("tags", [])]
    assert checks == [e["checks"][0] for e in material["exercises"]]


def test_unanswered_exercises_are_recognised(chapter):
    material = autograder_material(chapter)
    student = student_notebook(chapter)
    assert unanswered(student, material) == {"ex-toy-1", "ex-toy-2", "ex-toy-3"}
    assert unanswered(instructor_notebook(chapter), material) == set()
    answered = copy.deepcopy(student)
    answered.cells.append(nbformat.v4.new_code_cell("ex_toy_2 = 2.0"))
    assert unanswered(answered, material) == {"ex-toy-1", "ex-toy-3"}


@pytest.fixture(scope="module")
def graded(book, chapter, tmp_path_factory):
    """Grade, through the command line, the reference solutions and planted submissions."""
    out = tmp_path_factory.mktemp("assign")
    assert cli(["--root", str(book), "build", "--out", str(out), "--chapters", "toy"]) == 0
    subs = out / "submissions"
    subs.mkdir()
    ref = nbformat.read(out / "instructor" / "toy.ipynb", as_version=4)
    nbformat.write(ref, subs / "ref__toy.ipynb")
    nbformat.write(_replace(ref, "ex_toy_1 =", "ex_toy_1 = 3 * x"), subs / "wrong__toy.ipynb")
    raising = _replace(ref, "ex_toy_1 =", "ex_toy_1 = 1 / 0")
    nbformat.write(raising, subs / "raising__toy.ipynb")
    looping = _replace(ref, "ex_toy_1 =", "while True:\n    pass")
    nbformat.write(looping, subs / "looping__toy.ipynb")
    student = out / "student" / "toy.ipynb"
    (subs / "blank").mkdir()
    (subs / "blank" / "toy.ipynb").write_bytes(student.read_bytes())
    csv_path = out / "grades.csv"
    assert cli(["--root", str(book), "grade", str(subs), "--chapter", "toy", "--out",
                str(csv_path), "--timeout", "120", "--cell-timeout", "10", "--jobs", "2"]) == 0
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {(r["student"], r["exercise"]): r for r in rows}, out


@pytest.mark.slow
@pytest.mark.kernel
def test_csv_has_one_row_per_student_and_exercise(graded):
    rows, _ = graded
    assert len(rows) == 5 * 3
    assert set(next(iter(rows.values()))) == {"student", "exercise", "points", "max_points",
                                              "feedback"}


@pytest.mark.slow
@pytest.mark.kernel
def test_reference_solutions_score_full_marks(graded):
    rows, _ = graded
    for ex, pts in [("ex-toy-1", "2"), ("ex-toy-2", "1"), ("ex-toy-3", "1")]:
        assert rows["ref", ex]["points"] == pts == rows["ref", ex]["max_points"]
        assert rows["ref", ex]["feedback"] == "passed"


@pytest.mark.slow
@pytest.mark.kernel
def test_planted_wrong_answer_loses_that_exercise_only(graded):
    rows, _ = graded
    bad = rows["wrong", "ex-toy-1"]
    assert bad["points"] == "0"
    assert "ex-toy-1" in bad["feedback"] and "expected the derivative 3*x**2" in bad["feedback"]
    assert rows["wrong", "ex-toy-2"]["points"] == "1" and rows["wrong", "ex-toy-3"]["points"] == "1"


@pytest.mark.slow
@pytest.mark.kernel
def test_raising_notebook_keeps_other_points(graded):
    rows, _ = graded
    assert rows["raising", "ex-toy-1"]["points"] == "0"
    assert "ZeroDivisionError" in rows["raising", "ex-toy-1"]["feedback"]
    assert rows["raising", "ex-toy-2"]["points"] == "1"
    assert rows["raising", "ex-toy-3"]["points"] == "1"


@pytest.mark.slow
@pytest.mark.kernel
def test_looping_cell_is_interrupted_and_the_rest_graded(graded):
    rows, _ = graded
    assert rows["looping", "ex-toy-1"]["points"] == "0"
    assert "CellTimeoutError" in rows["looping", "ex-toy-1"]["feedback"]
    assert rows["looping", "ex-toy-2"]["points"] == "1"
    assert rows["looping", "ex-toy-3"]["points"] == "1"


@pytest.mark.slow
@pytest.mark.kernel
def test_untouched_student_edition_scores_zero(graded):
    rows, _ = graded
    assert [rows["blank", f"ex-toy-{i}"]["points"] for i in (1, 2, 3)] == ["0", "0", "0"]
    assert rows["blank", "ex-toy-3"]["feedback"] == (
        "ex-toy-3: not answered (the starter cell is unchanged)")


@pytest.mark.slow
@pytest.mark.kernel
def test_notebook_that_never_finishes_is_stopped(graded, chapter):
    """A loop that swallows the interrupt: the whole-notebook limit kills the kernel; checks
    that ran before keep their points, the others get 0 with a time-limit feedback."""
    _, out = graded
    ref = nbformat.read(out / "instructor" / "toy.ipynb", as_version=4)
    stubborn = _replace(ref, "ex_toy_3 =", "import time\nwhile True:\n    try:\n"
                        "        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass")
    grades = grade_notebook(stubborn, autograder_material(chapter), student="s",
                            timeout=25, cell_timeout=5)
    by = {g.exercise: g for g in grades}
    assert by["ex-toy-1"].points == 2 and by["ex-toy-2"].points == 1
    assert by["ex-toy-3"].points == 0
    assert "ex-toy-3" in by["ex-toy-3"].feedback
    assert "time limit" in by["ex-toy-3"].feedback or "interrupted" in by["ex-toy-3"].feedback


# ---- the real chapters -------------------------------------------------------------------

REAL = course_chapters(ROOT)
FASTEST_REAL = "mixtures"


def test_course_chapters_are_the_theory_and_experiment_parts():
    assert "mixtures" in REAL and "instructors" not in REAL and "preface" not in REAL


@pytest.mark.parametrize("stem", REAL)
def test_real_chapter_exercises_and_student_edition(stem):
    """Every course chapter has >= 3 well-formed exercises (derivation, coding,
    interpretation), and its student edition contains no line of any solution that is not
    also in the chapter outside the solutions."""
    ch = parse_chapter(ROOT / "chapters" / f"{stem}.md")
    assert ch.problems == [], ch.problems
    assert len(ch.exercises) >= 3, f"{stem}: {len(ch.exercises)} exercises"
    kinds = {e.kind for e in ch.exercises.values()}
    assert {"derivation", "coding", "interpretation"} <= kinds, f"{stem}: kinds {kinds}"
    student = student_notebook(ch)
    student_lines = {ln.strip() for c in student.cells for ln in c.source.splitlines()}
    outside = {ln.strip() for p in ch.pieces if p.kind not in ("solution_text", "solution_code")
               for ln in p.source.splitlines()}
    for ex in ch.exercises.values():
        assert ex.checks and ex.points > 0, ex.label
        for check in ex.checks:  # the feedback names the exercise and what was expected
            assert ex.label in check and "expected" in check, f"{ex.label}: check message"
        leaked = [ln for ln in ex.solution_lines if ln in student_lines and ln not in outside]
        assert not leaked, f"{ex.label}: solution text in the student edition: {leaked}"
        assert f"{ex.variable} = None  # YOUR ANSWER HERE" in student_lines


@pytest.mark.slow
@pytest.mark.kernel
def test_real_chapter_reference_solutions_score_full_marks():
    ch = parse_chapter(ROOT / "chapters" / f"{FASTEST_REAL}.md")
    material = autograder_material(ch)
    assert material["exercises"], f"{FASTEST_REAL} has no exercises"
    grades = grade_notebook(instructor_notebook(ch), material, student="reference",
                            timeout=300, cell_timeout=240)
    failed = [(g.exercise, g.feedback) for g in grades if g.points != g.max_points]
    assert not failed, failed


def test_to_jupyter_rewrites_roles_and_directives():
    """Every MyST role and directive the chapters use becomes what the HTML book shows."""
    from attnclust.assignments.markdown import References, to_jupyter

    refs = References(titles={"mixtures": "Gaussian mixtures"},
                      results={"prop-x": "Proposition (Head limit)"},
                      figures={"fig-a": "Distortion against lam. Dotted: the bound."},
                      citations={"lloyd1982least": "Lloyd, 1982", "k2": "A and B, 2001"},
                      macros={"R": r"\mathbb{R}"})
    text = "\n".join([
        "(sec-x)=",
        "See {doc}`mixtures`, {doc}`the start <mixtures>`, {prf:ref}`prop-x`, {numref}`fig-a`,",
        "{eq}`eq-1`, {cite}`lloyd1982least,k2` and {glue:text}`best_lam:.3f` and {glue}`n`.",
        "",
        "```{prf:proposition} Head limit",
        ":label: prop-x",
        "",
        "For $x \\in \\R$, {cite}`lloyd1982least`.",
        "```",
        "",
        "```{prf:proof}",
        "Obvious.",
        "```",
        "",
        "```{bibliography}",
        "```",
        "",
        "```python",
        "x = 1",
        "```",
    ])
    out = to_jupyter(text, refs)
    assert "(sec-x)=" not in out and "{" + "bibliography" not in out
    assert ("See *Gaussian mixtures*, the start, Proposition (Head limit), Fig. “Distortion against lam”,"
            in out)
    assert "equation (eq-1), (Lloyd, 1982; A and B, 2001) and `best_lam` and `n`." in out
    assert "> **Proposition (Head limit).** For $x \\in \\R$, (Lloyd, 1982)." in out
    assert "> *Proof.* Obvious. ∎" in out
    assert "```python\nx = 1\n```" in out  # other fences are kept
    assert refs.macro_definitions() == r"$\newcommand{\R}{\mathbb{R}}$"


@pytest.mark.parametrize("stem", REAL)
def test_real_editions_have_no_myst_markup_left(stem):
    import re

    ch = parse_chapter(ROOT / "chapters" / f"{stem}.md")
    for nb in (student_notebook(ch), instructor_notebook(ch)):
        md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert not re.findall(r"\{[a-z]+(?::[a-z]+)?\}`", md), stem
        assert "```{prf:" not in md and "{glue" not in md
        assert r"\newcommand{\R}" in nb.cells[0].source
