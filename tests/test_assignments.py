"""Course assignments: editions without solution text, and the autograder's promises.

Most tests use a small synthetic chapter written here in the book's exercise format (so they
do not depend on the real chapters' progress); the last ones run over the real chapters.
Tests that grade start Jupyter kernels (markers ``kernel`` and ``slow``); how long grading
takes is measured by ``make bench``.

The attack suite (section "Attacks") grades, in one run, honest, wrong, blank and malformed
submissions and submissions that try to get marks they did not earn or to harm others
(blanking the checks, forging results, monkeypatching, fake answer objects, reading the
solutions, rewriting the grades afterwards, destroying other submissions, injecting code
through the answers, hanging the checker, ...). Each must score exactly what its honest
answers earn; the victim keeps full marks; no file outside the sandboxes changes and no
process outlives grading. It needs the sandbox (bubblewrap and user namespaces, which
``make test`` installs and checks); where none can be made the suite fails and says why.
"""

from __future__ import annotations

import base64
import copy
import csv
import hashlib
import io
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from attnclust.assignments import (
    GradingError,
    autograder_material,
    check_output_path,
    course_chapters,
    discover_submissions,
    grade_notebook,
    grade_notebooks,
    instructor_notebook,
    parse_chapter,
    prepare_submission,
    read_submission,
    student_notebook,
    validate_material,
    write_csv,
)
from attnclust.assignments.__main__ import main as cli
from attnclust.assignments.answers import AnswerError, check_kind, decode
from attnclust.assignments import grading
from attnclust.assignments.grading import unanswered
from attnclust.assignments.source import KINDS, LEVELS, exercise_headline
from attnclust.assignments.source import MYST_HEADER, check_header

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
# verifies: that `ex_toy_2` is the mean of the five values
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


def _claim_value(words: str) -> dict:
    """The bundle that ``attnclust.book.claims.claim`` glues as a claim's sentence."""
    return {"text/markdown": f"CLAIM {words} HOLDS.",
            "text/plain": "<IPython.core.display.Markdown object>"}


def _fake_build(build: Path, source: Path, page: str, values: dict[str, dict],
                code: dict[int, str] | None = None) -> None:
    """What ``make book`` leaves in ``build/jupyter_execute`` for the chapter ``source``: the
    executed notebook ``page.ipynb`` (the chapter's cells; ``code``: code cell index ->
    another source, as a build of an older chapter ran) and the glued ``values``
    (name -> MIME bundle) in ``page.glue.json``, as MyST-NB writes them."""
    import jupytext

    executed = build / "jupyter_execute"
    (executed / page).parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(source)
    for i, new in (code or {}).items():
        [c for c in nb.cells if c.cell_type == "code"][i].source = new
    nbformat.write(nb, executed / f"{page}.ipynb")
    (executed / f"{page}.glue.json").write_text(json.dumps({
        k: {"data": v, "metadata": {"scrapbook": {"name": k}}, "output_type": "display_data"}
        for k, v in values.items()}))


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


def test_resubmission_is_explained_to_students_and_instructors(chapter):
    """The student edition says how to resubmit; the grading appendix says what the
    student does and what the instructor runs, and that only a changed file is regraded."""
    intro = student_notebook(chapter).cells[0].source
    assert "To resubmit, hand in the notebook again under the same name" in intro
    page = " ".join((ROOT / "chapters" / "grading.md").read_text().split())
    said = page[page.index("**Resubmission.**"):][:700]
    for words in ("hands in the notebook again under the same name",
                  "run the same `grade` command, with the same `--out`",
                  "Only the changed file is graded again", "an unchanged file keeps its grade"):
        assert words in said, words


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
    assert sorted(found.notebooks) == ["alice", "bob", "dora", "eli"] and not found.refused


def test_discover_submissions_refuses_duplicates_and_bad_folders(tmp_path):
    for name in ["dup.ipynb", "dup__toy.ipynb", "solo.ipynb"]:
        (tmp_path / name).write_text("{}")
    (tmp_path / "dup").mkdir()
    (tmp_path / "dup" / "toy.ipynb").write_text("{}")
    with pytest.raises(GradingError) as e:
        discover_submissions(tmp_path, "toy")
    assert "dup: dup.ipynb, dup/toy.ipynb, dup__toy.ipynb" in str(e.value)
    with pytest.raises(GradingError, match="does not exist"):
        discover_submissions(tmp_path / "absent", "toy")
    with pytest.raises(GradingError, match="is not a folder"):
        discover_submissions(tmp_path / "solo.ipynb", "toy")


# ---- hidden checks and the material -------------------------------------------------------

def test_hidden_checks_say_what_they_verify_without_expected_values(chapter):
    nb = student_notebook(chapter, hidden_checks=True)
    checks = [c.source for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert [c.splitlines()[0] for c in checks] == [
        "# check ex-toy-1 points=2", "# check ex-toy-2 points=1", "# check ex-toy-3 points=1"]
    text = _text(nb)
    for expected in ("3 * x**2", "3*x**2", "2.0", '== "a"', "expected (a)", "assert"):
        assert expected not in text, expected
    assert all(ln.startswith("#") for c in checks for ln in c.splitlines())
    # the author's words first, then what to store, how it is compared and the tolerance
    assert ("# What the grader verifies: that `ex_toy_2` is the mean of the five values: "
            "`ex_toy_2` holds a number or an array; to within 1e-09 (absolute error) "
            "(exercise 2).") in checks[1]
    # no `# verifies:` line: the line is made from the statement and the check's code alone
    assert ("`ex_toy_1` holds a SymPy expression; compared symbolically (the simplified "
            "difference must be 0) (exercise 1)") in checks[0]
    assert "compared as a letter, ignoring case and spaces" in checks[2]
    assert "against the chapter's own computation" not in text
    assert "runs when your notebook is graded" in nb.cells[0].source
    assert "tells you whether" not in text and "says what the grader verifies" in text
    assert "3 * x**2" in _text(instructor_notebook(chapter))
    assert "3 * x**2" in autograder_material(chapter)["exercises"][0]["checks"][0]
    assert "2.0" in _text(student_notebook(chapter))  # the practice edition shows them


@pytest.mark.parametrize("flags", [[], ["--hidden-checks"]])
def test_build_hides_the_student_editions_checks_by_default(book, tmp_path, flags):
    """The student edition, for graded work, hides its checks unless asked to show them;
    the practice edition, for self-study, shows them; the instructor edition and the
    material keep them."""
    assert cli(["--root", str(book), "build", "--out", str(tmp_path), "--chapters", "toy",
                *flags]) == 0
    student = nbformat.read(tmp_path / "student" / "toy.ipynb", as_version=4)
    assert "3 * x**2" not in _text(student) and "What the grader verifies" in _text(student)
    assert student.cells[0].source.startswith("*Student edition")
    practice = nbformat.read(tmp_path / "practice" / "toy.ipynb", as_version=4)
    assert "3 * x**2" in _text(practice) and "What the grader verifies" not in _text(practice)
    assert practice.cells[0].source.startswith("*Practice edition, for self-study,")
    assert "3 * x**2" in _text(nbformat.read(tmp_path / "instructor" / "toy.ipynb", 4))
    material = json.loads((tmp_path / "autograder" / "toy.json").read_text())
    assert validate_material(material)["chapter"] == "toy"


def test_build_shows_the_student_editions_checks_on_request(book, tmp_path):
    assert cli(["--root", str(book), "build", "--out", str(tmp_path), "--chapters", "toy",
                "--visible-checks"]) == 0
    student = nbformat.read(tmp_path / "student" / "toy.ipynb", as_version=4)
    assert "3 * x**2" in _text(student) and "What the grader verifies" not in _text(student)
    with pytest.raises(SystemExit):  # the two flags contradict each other
        cli(["--root", str(book), "build", "--out", str(tmp_path), "--chapters", "toy",
             "--visible-checks", "--hidden-checks"])


GLUED_TOY = TOY.replace("Narrative that stays in every edition.\n", """Narrative that stays in every edition.
The mean of the toy data is {glue:text}`toy_mean:.2f` over {glue:text}`toy_n` values, and
{claim}`toy-mean-is-two`

```{code-cell} python3
---
mystnb:
  image:
    alt: "Five points whose mean, {glue:text}`toy_mean:.1f`, is marked."
---
from myst_nb import glue
from attnclust.book import claims
glue("toy_mean", 2.0, display=False)
glue("toy_n", 5, display=False)
claims.claim("toy-mean-is-two", "Over the 5 values the mean is exactly 2.", setting={})
```
""")
TOY_VALUES = {"toy_mean": {"text/plain": "2.0"}, "toy_n": {"text/plain": "5"},
              "claim:toy-mean-is-two": {"text/markdown": "Over the 5 values the mean is exactly 2.",
                                        "text/plain": "<IPython.core.display.Markdown object>"}}


@pytest.fixture
def glued_book(tmp_path) -> Path:
    """A toy book with a glued number and a claim in its text, built (``_build``)."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "toy.md").write_text(GLUED_TOY)
    _fake_build(tmp_path / "_build", tmp_path / "chapters" / "toy.md", "chapters/toy", TOY_VALUES)
    return tmp_path


@pytest.mark.parametrize("flags", [[], ["--visible-checks"]])
def test_editions_show_the_built_numbers_and_claim_sentences(glued_book, tmp_path, flags):
    """The student and instructor editions show the number the build glued, formatted as
    the role asks, and the claim's sentence, in their text and in a figure's alt text:
    never the glue name or the claim's id."""
    out = tmp_path / "out"
    assert cli(["--root", str(glued_book), "build", "--out", str(out), "--chapters", "toy",
                *flags]) == 0
    for edition in ("student", "practice", "instructor"):
        nb = nbformat.read(out / edition / "toy.ipynb", as_version=4)
        md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert ("The mean of the toy data is 2.00 over 5 values, and\nOver the 5 values the "
                "mean is exactly 2.") in md, edition
        assert "toy_mean" not in md and "toy-mean-is-two" not in md and "(claim `" not in md
        alts = [c.metadata["mystnb"]["image"]["alt"] for c in nb.cells if "mystnb" in c.metadata]
        assert alts == ["Five points whose mean, 2.0, is marked."], edition
        # the code that computes them is there, as the chapter has it
        assert any('glue("toy_mean", 2.0' in c.source for c in nb.cells if c.cell_type == "code")


def test_editions_are_not_built_without_the_books_values(glued_book, tmp_path, capsys):
    """No build, a build older than the chapter's code, or one without a value the text
    shows: one line naming ``make book``, and no edition of that chapter is written."""
    from attnclust.assignments import BookNotBuilt, chapter_values, write_editions

    source = glued_book / "chapters" / "toy.md"
    chapter = parse_chapter(source)
    assert chapter_values(chapter, glued_book / "_build", "chapters/toy")["toy_n"] == {
        "text/plain": "5"}
    stale = {"absent": None, "older code": ({**TOY_VALUES}, {1: "glue('toy_mean', 3.0)"}),
             "a value missing": ({k: v for k, v in TOY_VALUES.items() if k != "toy_n"}, None)}
    for why, build in stale.items():
        folder = tmp_path / why.replace(" ", "-")
        if build is not None:
            _fake_build(folder, source, "chapters/toy", build[0], build[1])
        with pytest.raises(BookNotBuilt, match="make book"):
            chapter_values(chapter, folder, "chapters/toy")
        out = tmp_path / f"out-{why.replace(' ', '-')}"
        assert cli(["--root", str(glued_book), "build", "--out", str(out), "--chapters", "toy",
                    "--build-dir", str(folder)]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "`make book`" in err and "toy" in err, (why, err)
        assert not (out / "student" / "toy.ipynb").exists(), why
    assert "no value for toy_n" in err
    from attnclust.assignments import build  # the same from Python, before writing anything

    with pytest.raises(BookNotBuilt, match="make book"):
        build(tmp_path / "from-python", ["toy"], root=glued_book, build_dir=tmp_path / "absent")
    assert not (tmp_path / "from-python").exists()
    assert build(tmp_path / "from-python", ["toy"], root=glued_book)["toy"]["student"].is_file()
    with pytest.raises(ValueError, match="no value for claim:toy-mean-is-two, toy_mean, toy_n"):
        write_editions(chapter, tmp_path / "nothing")  # the student never sees a name
    assert not (tmp_path / "nothing").exists()
    # a chapter that shows no built value needs no build (the toy book of the other tests)
    assert chapter_values(parse_chapter(_toy_without_values(tmp_path)), tmp_path / "absent",
                          "chapters/toy") == {}


def _toy_without_values(folder: Path) -> Path:
    (folder / "plain").mkdir()
    (folder / "plain" / "toy.md").write_text(TOY)
    return folder / "plain" / "toy.md"


def test_material_program_is_the_narrative_and_checks_without_solutions(chapter):
    program = autograder_material(chapter)["program"]
    text = "\n".join(item["source"] for item in program)
    for secret in SECRETS:
        assert secret not in text, secret
    assert [item["kind"] for item in program] == ["code", "check", "check", "check"]
    assert [(i["label"], i["occurrence"], i["names"], i["exercise_kind"])
            for i in program[1:]] == [("ex-toy-1", 0, ["ex_toy_1"], "derivation"),
                                      ("ex-toy-2", 0, ["ex_toy_2"], "coding"),
                                      ("ex-toy-3", 0, ["ex_toy_3"], "interpretation")]


def test_checks_that_need_another_checks_names_are_reported(tmp_path):
    src = TOY.replace('assert str(ex_toy_3)', '_seen = 1\nassert str(ex_toy_3)').replace(
        "Closing narrative.", "```{code-cell} python3\nprint(_seen)\n```")
    path = tmp_path / "shared.md"
    path.write_text(src)
    problems = parse_chapter(path).problems
    assert len(problems) == 1 and "`_seen`" in problems[0] and "check cell" in problems[0]


@pytest.mark.parametrize("change, why", [
    (lambda m: m.pop("program"), "no program"),
    (lambda m: m.update(exercises="x"), "no list of exercises"),
    (lambda m: m["exercises"][0].update(points="2"), "an exercise without"),
    (lambda m: m["program"].append({"kind": "check", "label": "nope", "source": ""}),
     "malformed program"),
    (lambda m: m.update(chapter=5), "no chapter name"),
])
def test_malformed_material_is_refused(chapter, change, why):
    material = json.loads(json.dumps(autograder_material(chapter)))
    change(material)
    with pytest.raises(GradingError, match=why):
        validate_material(material)


# ---- preparing submissions ----------------------------------------------------------------

def _exports(nb, final: bool = False) -> list[tuple[str, int]]:
    """The exports of a prepared notebook: where its checks are, or (``final``) the second
    ones at its end."""
    return [(c.metadata["attnclust"]["export"]["label"],
             c.metadata["attnclust"]["export"]["occurrence"])
            for c in nb.cells if "export" in c.metadata.get("attnclust", {})
            and c.metadata["attnclust"]["export"].get("final", False) == final]


def test_checks_become_exports_whatever_the_student_did(chapter):
    """Each check of the chapter is exported once, where its check cell is or at the end; a
    check cell left as the edition wrote it does not run in the kernel, one the student
    changed runs as the student's code before its export (nothing the student wrote is
    dropped), and a cell that lost its header is an ordinary cell."""
    material = autograder_material(chapter)
    for hidden in (False, True):
        nb = student_notebook(chapter, hidden_checks=hidden)
        prepared = prepare_submission(nb, material)
        assert _exports(prepared) == [("ex-toy-1", 0), ("ex-toy-2", 0), ("ex-toy-3", 0)]
        assert not any(check_header(c.source) for c in prepared.cells), hidden  # none runs
    nb = _replace(student_notebook(chapter), "# check ex-toy-2",
                  "# check ex-toy-2 points=1\nex_toy_2 = 3.0  # typed in the check cell")
    nb.cells = [c for c in nb.cells if not c.source.startswith("# check ex-toy-3")]
    nb.cells.append(nbformat.v4.new_code_cell("# check ex-toy-9 points=50\nassert True"))
    nb.cells.append(nbformat.v4.new_code_cell("# check ex-toy-1 points=2\nassert True"))
    copied = nbformat.v4.new_code_cell("ex_toy_1 = sympy.diff(x**4, x)")
    copied.metadata.update(tags=["check"], attnclust={"check": "ex-toy-1"})  # header gone
    nb.cells.insert(1, copied)
    prepared = prepare_submission(nb, material)
    assert _exports(prepared) == [("ex-toy-1", 0), ("ex-toy-2", 0), ("ex-toy-3", 0)]
    sources = [c.source for c in prepared.cells]
    assert "ex_toy_1 = sympy.diff(x**4, x)" in sources
    typed = sources.index("# check ex-toy-2 points=1\nex_toy_2 = 3.0  # typed in the check cell")
    assert prepared.cells[typed + 1].metadata["attnclust"]["export"]["label"] == "ex-toy-2"
    assert "# check ex-toy-9 points=50\nassert True" in sources  # the student's own cell
    assert "def _attnclust_export" in prepared.cells[0].source
    assert _exports(prepared, final=True) == [("ex-toy-1", 0), ("ex-toy-2", 0), ("ex-toy-3", 0)]
    assert prepared.cells[-1].source == "_attnclust_export('ex-toy-3', 0, ['ex_toy_3'])"


MALFORMED_CELLS = {
    "metadata attnclust a string": {"metadata": {"attnclust": "oops"}},
    "tags an integer": {"metadata": {"tags": 5}},
    "tags not strings": {"metadata": {"tags": [5, None]}},
    "check label an integer": {"metadata": {"attnclust": {"check": 5}}},
    "metadata a string": {"metadata": "oops"},
    "source an integer": {"source": 5},
    "source a list of numbers": {"source": [1, 2]},
    "outputs a string": {"outputs": "oops"},
    "no cell type": {"cell_type": None},
}


@pytest.mark.parametrize("name", MALFORMED_CELLS)
def test_malformed_cells_do_not_stop_grading(chapter, name):
    """Each odd cell shape (seen in real submissions) is dropped or cleaned; the answer
    cells around it are kept."""
    material = autograder_material(chapter)
    nb = json.loads(nbformat.writes(instructor_notebook(chapter)))
    odd = {"cell_type": "code", "source": "y = 1", "metadata": {}, "outputs": [],
           "execution_count": None}
    odd.update(MALFORMED_CELLS[name])
    nb["cells"].insert(2, odd)
    prepared = prepare_submission(nb, material)
    assert _exports(prepared) == [("ex-toy-1", 0), ("ex-toy-2", 0), ("ex-toy-3", 0)]
    assert "ex_toy_1 = sympy.diff(x**3, x)" in _text(prepared)
    nbformat.validate(prepared)


def test_notebook_without_cells_is_refused(chapter):
    with pytest.raises(GradingError, match="no list of cells"):
        prepare_submission({"cells": 5}, autograder_material(chapter))


@pytest.mark.parametrize("content, why", [
    (b"", "empty"), (bytes(range(256)) * 4, "not UTF-8"), (b"{", "not valid JSON"),
    (b"[1, 2]", "no JSON object"), (b'{"nbformat": 9, "cells": []}', "not a notebook"),
])
def test_unreadable_files_are_reported(tmp_path, content, why):
    path = tmp_path / "x.ipynb"
    path.write_bytes(content)
    with pytest.raises(GradingError, match=why):
        read_submission(path)


def test_old_and_long_notebooks_are_read(chapter, tmp_path):
    v3 = tmp_path / "v3.ipynb"
    v3.write_text(nbformat.writes(nbformat.convert(instructor_notebook(chapter), 3)))
    material = autograder_material(chapter)
    prepared = prepare_submission(read_submission(v3), material)
    assert "ex_toy_1 = sympy.diff(x**3, x)" in _text(prepared)
    long = instructor_notebook(chapter)
    long.cells += [nbformat.v4.new_code_cell(f"y{i} = {i}") for i in range(1000)]
    assert len(prepare_submission(json.loads(nbformat.writes(long)), material).cells) > 1000


def test_unanswered_exercises_are_recognised(chapter):
    material = autograder_material(chapter)
    student = student_notebook(chapter)
    assert unanswered(student, material) == {"ex-toy-1", "ex-toy-2", "ex-toy-3"}
    assert unanswered(instructor_notebook(chapter), material) == set()
    answered = copy.deepcopy(student)
    answered.cells.append(nbformat.v4.new_code_cell("ex_toy_2 = 2.0"))
    assert unanswered(answered, material) == {"ex-toy-1", "ex-toy-3"}
    padded = copy.deepcopy(student)
    padded.cells.append(nbformat.v4.new_code_cell("\n" * 10 + "  ex_toy_3 += 'a'"))
    assert unanswered(padded, material) == {"ex-toy-1", "ex-toy-2"}
    assert grading._assigns("x := 1", "x") and not grading._assigns("x == 1", "x")
    assert not grading._assigns("xy = 1", "x") and not grading._assigns("y = x", "x")


PROJECT = TOY.replace("Closing narrative.", """```{exercise} A lab
:label: ex-toy-4

Kind: project. Level: challenge. Time: about 30 minutes. Run it and write a report.
```

```{solution} ex-toy-4
:class: dropdown

**Rubric** (3 points):
1. SECRET-RUBRIC: the runs (2 points).
2. The report (1 point).
```

Closing narrative.""")


def test_a_project_is_read_shown_and_left_to_the_instructor(tmp_path):
    """A project (one of UNGRADED_KINDS) needs no check: the student edition gives a
    Markdown cell for the report and no starter code, the instructor edition keeps the
    rubric, and the grader's row for the report, 0 of the rubric's points, says that the
    instructor grades it."""
    from attnclust.assignments.editions import REPORT_STARTER

    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "toy.md").write_text(PROJECT)
    ch = parse_chapter(tmp_path / "chapters" / "toy.md")
    assert ch.problems == [] and ch.exercises["ex-toy-4"].kind == "project"
    assert ch.exercises["ex-toy-4"].points == 0 and ch.exercises["ex-toy-4"].written_points == 3
    assert (ch.check_points, ch.written_points, ch.total_points) == (4, 3, 7)
    student = student_notebook(ch)
    report = [c for c in student.cells if c.metadata.get("attnclust", {}).get("answer")
              == "ex-toy-4"]
    assert len(report) == 1 and report[0].cell_type == "markdown"
    assert REPORT_STARTER in report[0].source and "SECRET-RUBRIC" not in _text(student)
    assert "ex_toy_4 = None" not in _text(student)
    assert "SECRET-RUBRIC" in _text(instructor_notebook(ch))
    material = autograder_material(ch)
    run = grading._Run()
    settings = grading._settings(60, None, 60, True, None, ())
    grades = grading._score("ada", material, run, set(), {}, {}, settings)
    row = next(g for g in grades if g.exercise == "ex-toy-4")
    assert (row.points, row.max_points, row.part) == (0, 3, "report")
    assert row.feedback == ("ex-toy-4 report: ungraded here, a written part is graded by the "
                            "instructor against the rubric in the solution (3 points)")


HUGE_CELL = """
import sys, nbformat
from attnclust.assignments.grading import unanswered
nb = nbformat.read(sys.argv[1], 4)
nb.cells.append(nbformat.v4.new_code_cell("\\n" * 330_000 + "ex_toy_3 = 'a'"))
print(sorted(unanswered(nb, {"exercises": [{"label": "ex-toy-3", "variable": "ex_toy_3"},
                                             {"label": "ex-toy-1", "variable": "ex_toy_1"}]})))
"""


def test_a_cell_of_newlines_does_not_stall_the_grader(chapter, tmp_path):
    """A ``^\\s*name`` regular expression over a student's cell of 330,000 newlines
    backtracked for about 100 s an exercise, in the grader, where it made another student's
    notebook miss its time limit. Line by line the search takes milliseconds; the bound
    here is a hang guard two orders of magnitude above that, not a timing."""
    path = tmp_path / "student.ipynb"
    nbformat.write(student_notebook(chapter), path)
    r = subprocess.run([sys.executable, "-c", HUGE_CELL, str(path)], capture_output=True,
                       text=True, timeout=60, check=True)
    assert r.stdout.strip() == "['ex-toy-1']", r.stdout + r.stderr


# ---- answers as data ----------------------------------------------------------------------

from attnclust.assignments import _export  # noqa: E402  (the kernel's side, run here)


def _roundtrip(value):
    return decode(json.loads(json.dumps(_export._attnclust_encode(value))))


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=True))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return type(b) is float and math.isnan(b)
    return type(a) is type(b) and a == b


_leaves = (st.none() | st.booleans() | st.integers(-10**30, 10**30)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
           | st.complex_numbers(allow_nan=False, allow_infinity=False)
           | st.builds(lambda shape, kind, seed: np.random.default_rng(seed).normal(
               size=shape).astype(kind),
               st.lists(st.integers(0, 3), max_size=3).map(tuple),
               st.sampled_from(["float32", "float64", "int64", "bool", "complex128"]),
               st.integers(0, 9)))
_answers = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3)
                        | st.lists(inner, max_size=3).map(tuple)
                        | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@given(_answers)
def test_plain_answers_survive_the_export_exactly(value):
    assert _same(value, _roundtrip(value))


_symbols = st.sampled_from([sympy.Symbol("x", positive=True), sympy.Symbol("sigma"),
                            sympy.Symbol("lambda"), sympy.Dummy("d")])
_exprs = st.recursive(
    _symbols | st.integers(-50, 50).map(sympy.Integer)
    | st.fractions(max_denominator=9).map(sympy.Rational) | st.just(sympy.pi),
    lambda e: st.builds(sympy.Add, e, e) | st.builds(sympy.Mul, e, e)
    | st.builds(sympy.Pow, e, st.integers(-3, 3).map(sympy.Integer))
    | st.builds(sympy.exp, e) | st.builds(sympy.erfc, e) | st.builds(sympy.sqrt, e),
    max_leaves=10)


@given(_exprs)
def test_sympy_answers_are_rebuilt_equal(expr):
    assert _roundtrip(expr) == expr
    assert _roundtrip(sympy.Matrix([[expr], [1]])) == sympy.Matrix([[expr], [1]])


def test_answers_are_converted_to_plain_values():
    class Yes(str):
        def __eq__(self, other):
            return True
        __hash__ = str.__hash__

    class Lying(float):
        def __sub__(self, other):
            return 0.0

    got = _roundtrip([Yes("z"), Lying(7.0), np.float32(0.5), np.int64(3), jnp.arange(3.0)])
    assert [type(v) for v in got[:4]] == [str, float, float, int]
    assert got[0] == "z" and got[0] != "b" and got[1] - 3.0 == 4.0
    assert isinstance(got[4], np.ndarray) and got[4].tolist() == [0.0, 1.0, 2.0]
    assert not got[4].flags.writeable


def test_objects_of_other_types_are_refused():
    class Zero:
        def __sub__(self, other):
            return 0

        def __eq__(self, other):
            return True

    for value, shown in [(Zero(), "Zero"), (lambda: 1, "function"),
                         (np.array([object()]), "dtype object"), ({1: 2}, "str keys")]:
        with pytest.raises(AnswerError, match=shown):
            _roundtrip(value)


def _pickled_npy() -> str:
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize("encoded, why", [
    ({"t": "ndarray", "npy": _pickled_npy()}, "malformed array"),
    ({"t": "sympy", "srepr": "__import__('os').system('true')"}, "not a plain srepr"),
    ({"t": "sympy", "srepr": "__import__('os')"}, "not one of SymPy"),
    ({"t": "sympy", "srepr": "Symbol('x').__class__"}, "not a plain srepr"),
    ({"t": "sympy", "srepr": "Function('f')(Symbol('x'))"}, "not a plain srepr"),
    ({"t": "sympy", "srepr": "Add(Function('exec'), Integer(1))"}, "Function"),
    ({"t": "sympy", "srepr": "exp('__import__(\"os\").system(\"true\")')"}, "holds a string"),
    ({"t": "sympy", "srepr": "Symbol('__import__(\"os\")')"}, "holds a string"),
    ({"t": "sympy", "srepr": "Symbol('_x')"}, "holds a string"),
    ({"t": "sympy", "srepr": "Lambda(Symbol('x'), Symbol('x'))"}, "not one of SymPy"),
    ({"t": "sympy", "srepr": "Integer(" + "9" * 5000 + ")"}, "does not parse|unsupported"),
    ({"t": "sympy", "srepr": "[Integer(1)]"}, "not a SymPy object"),
    ({"t": "sympy", "srepr": "Symbol(x=lambda: 1)"}, "keyword"),
    ({"t": "int", "v": "1" * 5000}, "too large"),
    ({"t": "float", "v": "1e5; import os"}, "malformed number"),
    ({"t": "str", "v": 5}, "malformed"),
    ({"t": "list", "v": [{"t": "list", "v": []}] * 3, "x": 1}, None),
    ({"t": "pickle", "v": "gASV"}, "malformed answer"),
    ({"t": "missing"}, "not defined"),
    ({"t": "unsupported", "type": "builtins.function"}, "builtins.function"),
])
def test_malformed_or_dangerous_encodings_are_refused(encoded, why):
    if why is None:  # well formed after all (extra keys are ignored)
        assert decode(encoded) == [[], [], []]
        return
    with pytest.raises(AnswerError, match=why):
        decode(encoded)


def test_string_answers_only_for_interpretation_questions():
    check_kind("b", "interpretation")
    check_kind(sympy.Symbol("x"), "derivation")
    for kind in ("derivation", "coding", ""):
        with pytest.raises(AnswerError, match="is a string"):
            check_kind(["x**2"], kind)
        with pytest.raises(AnswerError, match="is a dict"):  # SymPy sympifies a dict's keys
            check_kind([{"x**2": 1}], kind)


def test_code_in_a_dict_key_never_runs_in_the_checker(tmp_path):
    """An answer that is a dict whose key is Python code: SymPy converts a dict by sympifying
    its keys, which evaluates them, so a check such as ``simplify(answer - 3*x**2)`` would run
    the key in the trusted checker (where it could forge every student's results). The
    answer is refused before the check runs, and the code never runs."""
    from attnclust.assignments import _checker

    canary = tmp_path / "ran"
    key = f"__import__('pathlib').Path({str(canary)!r}).write_text('x')"
    answer = {"t": "dict", "v": [[key, {"t": "int", "v": "1"}]]}
    item = {"kind": "check", "label": "ex-toy-1", "occurrence": 0, "names": ["ex_toy_1"],
            "exercise_kind": "derivation",
            "source": "assert sympy.simplify(ex_toy_1 - 3 * x**2) == 0"}
    namespace = {"sympy": sympy, "x": sympy.Symbol("x")}
    result = _checker._run_check(item, namespace, json.dumps({"ex_toy_1": answer}), 10.0)
    assert result["status"] == "refused" and "dict" in result["evalue"]
    assert not canary.exists()
    with pytest.raises(Exception):  # what the refusal prevents: SymPy runs the key
        sympy.simplify({key: 1} - 3 * sympy.Symbol("x")**2)
    assert canary.exists()


# ---- paths, CSV, command-line errors -----------------------------------------------------

def test_output_paths_are_checked(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(GradingError, match="cannot write"):
        check_output_path(tmp_path / "file" / "grades.csv")
    with pytest.raises(GradingError, match="is a folder"):
        check_output_path(tmp_path)
    assert check_output_path(tmp_path / "new" / "g.csv") == tmp_path / "new" / "g.csv"
    assert list((tmp_path / "new").iterdir()) == []


def test_csv_is_written_atomically(tmp_path, monkeypatch):
    from attnclust.assignments.gradebook import ExerciseGrade

    path = tmp_path / "grades.csv"
    write_csv([ExerciseGrade("a", "ex-1", 1, 1, "passed")], path)
    plain = tmp_path / "plain"
    plain.write_text("")
    assert path.stat().st_mode == plain.stat().st_mode  # not mkstemp's 0600
    before = path.read_text()

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        write_csv([ExerciseGrade("b", "ex-1", 0, 1, "x")], path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "plain"]


@pytest.fixture
def toy_subs(book, tmp_path):
    """A submissions folder with one notebook (the instructor edition of the toy chapter)."""
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(instructor_notebook(parse_chapter(book / "chapters" / "toy.md")),
                   subs / "ada.ipynb")
    (tmp_path / "afile").write_text("")
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "old.json").write_text('{"chapter": "toy", "exercises": []}')
    return tmp_path


CLI_ERRORS = [
    (["grade", "{t}/absent", "--chapter", "toy"], "does not exist"),
    (["grade", "{t}/afile", "--chapter", "toy"], "not a folder"),
    (["grade", "{t}/subs", "--chapter", "toy", "--material", "{t}/absent.json"], "no such file"),
    (["grade", "{t}/subs", "--chapter", "toy", "--material", "{t}/bad.json"], "not valid JSON"),
    (["grade", "{t}/subs", "--chapter", "toy", "--material", "{t}/old.json"], "older version"),
    (["grade", "{t}/subs", "--chapter", "toy", "--out", "{t}/afile/g.csv"], "cannot write"),
    (["grade", "{t}/subs", "--chapter", "toy", "--executed", "{t}/afile/x"], "cannot write"),
    (["grade", "{t}/subs", "--chapter", "nope"], "no chapter source"),
    (["build", "--out", "{t}/afile/x", "--chapters", "toy"], "cannot write"),
    (["--root", "{t}", "build", "--out", "{t}/o"], "no _toc.yml"),
    (["--root", "{t}/absent", "grade", "{t}/subs", "--chapter", "toy"], "no such folder"),
] + [(["grade", "{t}/subs", "--chapter", "toy", option, value], "must be a positive")
     for option in ("--timeout", "--cell-timeout", "--check-timeout")
     for value in ("0", "-5", "nan", "inf", "soon")] + [
    (["grade", "{t}/subs", "--chapter", "toy", "--jobs", "0"], "must be a positive integer"),
]


@pytest.mark.parametrize("argv, why", CLI_ERRORS)
def test_every_command_line_error_is_one_line(book, toy_subs, monkeypatch, capsys, argv, why):
    """Each error: one line on stderr, a non-zero exit status, no traceback, and no notebook
    graded (grading would fail this test)."""
    from attnclust.assignments import grading

    monkeypatch.setattr(grading, "grade_notebooks", lambda *a, **k: pytest.fail("graded"))
    argv = [a.format(t=toy_subs) for a in argv]
    if argv[0] != "--root":
        argv = ["--root", str(book), *argv]
    try:
        status = cli(argv)
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    assert status not in (0, None), err
    assert len(err.strip().splitlines()) == 1 and why in err and "Traceback" not in err, err


def test_no_sandbox_means_no_grading_unless_unsafe(book, toy_subs, monkeypatch, capsys):
    from attnclust.assignments import sandbox

    monkeypatch.setattr(sandbox, "probe", lambda: "bubblewrap is not installed")
    assert cli(["--root", str(book), "grade", str(toy_subs / "subs"), "--chapter", "toy",
                "--out", str(toy_subs / "g.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "bubblewrap is not installed" in err and "--unsafe" in err
    assert not (toy_subs / "g.csv").exists()


def test_the_sandbox_binds_only_the_environment(book, tmp_path):
    from attnclust.assignments import sandbox

    paths = sandbox.environment_paths([book, tmp_path])
    assert Path(sys.prefix).resolve() in paths
    assert not any(ROOT == p or ROOT in p.parents and p.name != "attnclust" and
                   ".venv" not in p.parts for p in paths)
    assert not any(p == Path.cwd().resolve() for p in paths if not (p / "bin").exists())
    with pytest.raises(sandbox.SandboxUnavailable, match="inside the Python environment"):
        sandbox.environment_paths([Path(sys.prefix) / "some" / "submissions"])


@pytest.mark.integration
def test_sandbox_is_available_here():
    """The attack suite needs the sandbox; make test installs bubblewrap. Where user
    namespaces are disabled this fails with the reason (grading would refuse there too)."""
    from attnclust.assignments import sandbox

    assert sandbox.probe() is None


# ---- grading, end to end -------------------------------------------------------------------
# One grading run, through the command line, holds the planted submissions of the toy
# chapter and the attack suite (below), so that kernels start once per notebook.

ATTACK_REPLACEMENTS = [
    ("x**3", "x**4"), ("3 * x**2", "4 * x**3"), ("3*x**2", "4*x**3"),
    ("np.arange(5)", "np.arange(7)"), ("2.0", "3.0"), ("five values", "seven values"),
    ("Is $x^2$ convex?", "Is $x^2$ concave?"), ('ex_toy_3 = "a"', 'ex_toy_3 = "b"'),
    ('== "a"', '== "b"'), ("expected (a)", "expected (b)"),
]
"""The toy chapter with other answers (4*x**3, 3.0, "b") than those of the example in
attnclust/assignments/example.py, which every sandbox can read as part of the package."""

ATTACK_TOY = TOY
for _old, _new in ATTACK_REPLACEMENTS:
    ATTACK_TOY = ATTACK_TOY.replace(_old, _new)

HONEST = {"ex_toy_1": "ex_toy_1 = sympy.diff(x**4, x)", "ex_toy_2": "ex_toy_2 = 3.0",
          "ex_toy_3": 'ex_toy_3 = "b"'}
WRONG = {"ex_toy_1": "ex_toy_1 = 3 * x", "ex_toy_2": "ex_toy_2 = 7.0",
         "ex_toy_3": 'ex_toy_3 = "a"'}
FULL = {"ex-toy-1": 2, "ex-toy-2": 1, "ex-toy-3": 1}
NONE = {"ex-toy-1": 0, "ex-toy-2": 0, "ex-toy-3": 0}
MARKER = "ATTNCLUST-ATTACK-PROCESS"
"""In the command line of every process an attack starts: none may be left after grading."""


@dataclass
class Attack:
    """A submission: the student edition with ``answers`` in the starter cells (None:
    left blank), ``pre`` cells after the first code cell, ``post`` cells at the end, or a
    whole ``file`` (bytes); ``expect``: the points it must score."""

    name: str
    expect: dict
    answers: dict | None = None
    pre: tuple = ()
    post: tuple = ()
    file: bytes | None = None
    what: str = ""


def _attacks(paths: dict) -> list[Attack]:
    """The attack suite; ``paths`` holds what a well-informed student would target: the
    book, the submissions folder, the grades CSV and a canary folder."""
    p = {k: str(v) for k, v in paths.items()}
    blanked = ("get_ipython().input_transformers_cleanup.append(lambda lines: [] if lines "
               "and lines[0].lstrip().startswith(('# check', '_attnclust_export')) "
               "else lines)")
    forge = f'''
import json, os
fake = [{{"event": "check", "index": 90 + i, "label": f"ex-toy-{{i}}", "status": "ok"}}
        for i in (1, 2, 3)] + [{{"event": "answer", "index": 90 + i, "label": f"ex-toy-{{i}}",
        "occurrence": 0, "values": {{f"ex_toy_{{i}}": {{"t": "str", "v": "forged"}}}}}}
        for i in (1, 2, 3)] + [{{"event": "done"}}]
lines = "".join(json.dumps(e) + "\\n" for e in fake)
for pid in {{os.getppid(), os.getpid()}}:
    try:
        argv = open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0")
    except OSError:
        continue
    for a in argv:  # the worker's results file, given on its command line
        if a.endswith(b".jsonl"):
            open(a, "a").write(lines)
    for fd in os.listdir(f"/proc/{{pid}}/fd"):  # the worker's event stream
        try:
            with open(f"/proc/{{pid}}/fd/{{fd}}", "w") as f:
                f.write(lines)
        except OSError:
            pass
open("{p['canary']}/forged", "w").write("forged")
os._exit(0)'''
    monkeypatch = '''
import builtins, sympy
builtins.abs = lambda v: 0
sympy.simplify = lambda e: 0'''
    fakes = {"ex_toy_1": '''
class Zero:
    def __sub__(self, other): return 0
    def __rsub__(self, other): return 0
    def __eq__(self, other): return True
ex_toy_1 = Zero()''', "ex_toy_2": "ex_toy_2 = None", "ex_toy_3": '''
class Yes(str):
    def __str__(self): return self
    def strip(self, *a): return self
    def lower(self): return self
    def __eq__(self, other): return True
    __hash__ = str.__hash__
ex_toy_3 = Yes("z")'''}
    read = f'''
import os, re
found, ancestors, pid = [], [], os.getpid()
while pid > 1 and len(ancestors) < 6:  # the processes that started this kernel: the grader
    ancestors.append(pid)
    pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
def look(path):
    try:
        text = open(path, errors="ignore").read()
    except OSError:
        return
    if "ex_toy_1 =" not in text or "found.append" in text:  # not its own notebook
        return
    found.append(path)
    for block in re.findall(r"```{{code-cell}} python3\\n(.*?)```", text, re.S):
        try:
            exec(block, globals())
        except Exception:
            pass
for top in ["{p['book']}", "{p['subs']}"] + [f"/proc/{{a}}/cwd" for a in ancestors]:
    for folder, _, files in os.walk(top):
        for name in files:
            if name.endswith((".md", ".ipynb", ".json")):
                look(os.path.join(folder, name))
print("FOUND:", found)'''
    rewrite = f'''
import subprocess, sys
subprocess.Popen([sys.executable, "-c", """
import csv, os, time
if os.fork():
    os._exit(0)
os.setsid()
for _ in range(240):
    time.sleep(0.25)
    try:
        rows = list(csv.DictReader(open("{p['csv']}")))
    except OSError:
        continue
    for r in rows:
        r["points"] = r["max_points"] if r["student"] == "a_rewrite" else "0"
    with open("{p['csv']}", "w") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
""", "{MARKER}"], start_new_session=True, stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)'''
    sabotage = f'''
import os, shutil
for path in ["{p['subs']}/z_victim.ipynb", "{p['book']}/chapters/toy.md"]:
    try:
        open(path, "w").write("destroyed")
    except OSError as e:
        print("cannot write", path, e)
for path in ["{p['book']}/chapters/new.md", "{p['canary']}/pwned"]:
    try:
        open(path, "w").write("planted")
    except OSError as e:
        print("cannot write", path, e)
shutil.rmtree("{p['subs']}", ignore_errors=True)'''
    inject = f'''
from IPython.display import display
import base64, io, numpy as np
class _Evil:
    def __reduce__(self):
        return (open, ("{p['canary']}/pickled", "w"))
_buf = io.BytesIO()
np.save(_buf, np.array([_Evil()], dtype=object), allow_pickle=True)
_payloads = {{
    "ex_toy_1": {{"t": "sympy", "srepr": "Add(Symbol('__import__(\\\\'os\\\\').system(\\\\'touch {p['canary']}/srepr\\\\')'), Integer(1))"}},
    "ex_toy_2": {{"t": "ndarray", "npy": base64.b64encode(_buf.getvalue()).decode()}},
    "ex_toy_3": {{"t": "sympy", "srepr": "__import__('os').system('touch {p['canary']}/eval')"}},
}}
def _attnclust_export(label, occurrence, names):
    display({{"application/vnd.attnclust.answer+json": {{"label": label,
             "occurrence": occurrence, "values": {{n: _payloads[n] for n in names}}}}}}, raw=True)'''
    hang = '''
from IPython.display import display
_honest_export = _attnclust_export
def _attnclust_export(label, occurrence, names):
    if label != "ex-toy-1":
        return _honest_export(label, occurrence, names)
    display({"application/vnd.attnclust.answer+json": {"label": label,
             "occurrence": occurrence, "values": {"ex_toy_1": {"t": "sympy",
             "srepr": "Pow(Integer(10), Integer(1000000000))"}}}}, raw=True)'''
    snoop = '''
import os, socket
PORT = ''' + str(paths.get("port", 9)) + '''
pids = [p for p in os.listdir("/proc") if p.isdigit()]
cmdlines = [open(f"/proc/{p}/cmdline", "rb").read().replace(b"\\0", b" ").decode(errors="ignore")
            for p in pids if os.path.exists(f"/proc/{p}/cmdline")]
print("PROCESSES:", len(pids), "|".join(cmdlines))
print("ROOT:", sorted(os.listdir("/")))
print("UID:", os.getuid())
for host, port in [("1.1.1.1", 53), ("127.0.0.1", PORT)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("NETWORK: reached", host)
    except OSError as e:
        print("NETWORK: unreachable", host, type(e).__name__)
try:
    os.unshare if False else None
    import subprocess
    r = subprocess.run(["unshare", "--user", "true"], capture_output=True)
    print("NESTED USERNS:", r.returncode)
except Exception as e:
    print("NESTED USERNS: error", e)'''
    kill_all = '''
import os, signal
if os.getuid() == 65534:  # only inside the sandbox: unsandboxed, this would kill everything
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in (1, os.getpid()):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass'''
    threads = '''
import threading, time
threading.stack_size(64 * 1024)
started = 0
try:
    for _ in range(3000):
        threading.Thread(target=time.sleep, args=(20,), daemon=True).start()
        started += 1
except RuntimeError as e:
    pass
print("THREADS:", started)'''
    stubborn = ("import time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
                "    except KeyboardInterrupt:\n        pass")
    nb_json = b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": "oops"}'
    partly = dict(HONEST, ex_toy_2="ex_toy_2 = float(np.arange(7).sum()) / 0")
    return [
        Attack("ref", FULL, HONEST, what="the reference answers"),
        Attack("z_victim", FULL, HONEST, what="an honest student, target of a_sabotage"),
        Attack("blank", NONE, what="the untouched student edition"),
        Attack("wrong", {"ex-toy-1": 0, "ex-toy-2": 1, "ex-toy-3": 1},
               dict(HONEST, ex_toy_1=WRONG["ex_toy_1"]), what="one wrong answer"),
        Attack("raising", {"ex-toy-1": 2, "ex-toy-2": 0, "ex-toy-3": 1}, partly,
               what="an answer cell that raises"),
        Attack("looping", {"ex-toy-1": 0, "ex-toy-2": 1, "ex-toy-3": 1},
               dict(HONEST, ex_toy_1="while True:\n    pass"), what="an endless loop"),
        Attack("stubborn", {"ex-toy-1": 2, "ex-toy-2": 1, "ex-toy-3": 0},
               dict(HONEST, ex_toy_3=stubborn), what="a loop that ignores SIGINT"),
        Attack("os_exit", {"ex-toy-1": 2, "ex-toy-2": 0, "ex-toy-3": 0},
               dict(HONEST, ex_toy_2="import os\nos._exit(0)"), what="os._exit in a cell"),
        Attack("alloc_1gb", FULL, HONEST, pre=("big = np.ones(2**27)\nbig[-1] = 2",),
               what="a 1 GiB allocation (within the 5 s cell timeout on a loaded machine)"),
        Attack("thousand_cells", FULL, HONEST, post=tuple(f"y{i} = {i}" for i in range(1000)),
               what="1000 cells"),
        Attack("v3", FULL, HONEST, what="an nbformat 3 notebook"),
        Attack("malformed_meta", FULL, HONEST,
               what="cells with metadata 'oops', tags 5, attnclust 'oops'..."),
        Attack("meta_oops", FULL, HONEST, what='one cell with "attnclust": "oops"'),
        Attack("empty", NONE, file=b"", what="an empty file"),
        Attack("binary", NONE, file=bytes(range(256)) * 8, what="a binary file"),
        Attack("bad_json", NONE, file=b'{"cells": [', what="malformed JSON"),
        Attack("no_cells", NONE, file=nb_json, what='"cells": "oops"'),
        Attack("a_blanked_checks", NONE, pre=(blanked,),
               what="an input transformer that blanks the check (and export) cells"),
        Attack("a_forged", NONE, pre=(forge,),
               what="forged results and answer events, then os._exit(0)"),
        Attack("a_monkeypatch", {"ex-toy-1": 0, "ex-toy-2": 0, "ex-toy-3": 1},
               dict(WRONG, ex_toy_3=HONEST["ex_toy_3"]), pre=(monkeypatch,),
               what="builtins.abs and sympy.simplify replaced, two wrong answers"),
        Attack("a_fakes", NONE, fakes,
               what="an answer whose __sub__ is 0, a str subclass whose __eq__ is True"),
        Attack("a_read_solutions", NONE, {"ex_toy_1": read, "ex_toy_2": "# read above",
                                          "ex_toy_3": "# read above"},
               what="reads the chapter, the submissions, the grader's cwd; runs solutions"),
        Attack("a_rewrite", NONE, pre=(rewrite,),
               what="a detached process that rewrites grades.csv after grading"),
        Attack("a_sabotage", NONE, pre=(sabotage,),
               what="overwrites another notebook, writes chapters/, deletes submissions"),
        Attack("a_inject", NONE, pre=(inject,),
               what="answers that are code: srepr eval, symbol names, pickles"),
        Attack("a_hang_checker", {"ex-toy-1": 0, "ex-toy-2": 1, "ex-toy-3": 1}, HONEST,
               pre=(hang,), what="an answer that hangs the checker (10**10**9)"),
        Attack("a_snoop", FULL, HONEST, post=(snoop,),
               what="lists processes and /, tries the network and nested namespaces"),
        Attack("a_kill_all", FULL, HONEST, post=(kill_all,),
               what="kills every process it can see, after its answers"),
        Attack("a_threads", FULL, HONEST, pre=(threads,),
               what="starts threads until it cannot"),
    ]


def test_attack_cells_are_python():
    """An attack that does not even compile would score 0 for the wrong reason."""
    for attack in _attacks({k: "/x" for k in ("book", "subs", "canary", "csv")}):
        for source in [*attack.pre, *attack.post, *(attack.answers or {}).values()]:
            compile(source, attack.name, "exec")


def _attack_notebook(student: nbformat.NotebookNode, attack: Attack) -> bytes:
    if attack.file is not None:
        return attack.file
    nb = copy.deepcopy(student)
    for cell in nb.cells:
        for var, source in (attack.answers or {}).items():
            if cell.cell_type == "code" and cell.source.startswith(f"{var} = None"):
                cell.source = source
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[first + 1:first + 1] = [nbformat.v4.new_code_cell(s) for s in attack.pre]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in attack.post]
    if attack.name == "v3":
        return nbformat.writes(nbformat.convert(nb, 3)).encode()
    data = json.loads(nbformat.writes(nb))
    if attack.name in ("malformed_meta", "meta_oops"):
        shapes = MALFORMED_CELLS.values() if attack.name == "malformed_meta" else [
            MALFORMED_CELLS["metadata attnclust a string"]]
        for i, shape in enumerate(shapes):
            odd = {"cell_type": "code", "source": f"y{i} = 1", "metadata": {}, "outputs": []}
            odd.update(shape)
            data["cells"].insert(2, odd)
    return json.dumps(data).encode()


def write_attack_submissions(root: Path, port: int = 9) -> dict:
    """Write the attack book (``root/book``), the submissions (``root/subs``), a canary
    folder; return the paths (also used to measure what the unsandboxed grader did).
    ``port``: a TCP port of the grader's machine that ``a_snoop`` tries to reach."""
    book = root / "book"
    (book / "chapters").mkdir(parents=True)
    (book / "chapters" / "toy.md").write_text(ATTACK_TOY)
    paths = {"book": book, "subs": root / "subs", "canary": root / "canary",
             "out": root / "out", "csv": root / "out" / "grades.csv",
             "executed": root / "out" / "executed", "port": port}
    paths["subs"].mkdir()
    paths["canary"].mkdir()
    (paths["canary"] / "file").write_text("unchanged")
    student = student_notebook(parse_chapter(book / "chapters" / "toy.md"))
    attacks = _attacks(paths)
    for attack in attacks:
        (paths["subs"] / f"{attack.name}.ipynb").write_bytes(_attack_notebook(student, attack))
    paths["attacks"] = attacks
    return paths


def _snapshot(*folders: Path) -> dict:
    out = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[str(path)] = "folder"
    return out


def _processes():
    """``(pid, command line, name, parent pid)`` of every process we can read."""
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        yield pid, cmd, stat[stat.index("(") + 1:stat.rindex(")")], int(rest[1])


def _left_over() -> list[str]:
    """Processes an attack started (:data:`MARKER`), and sandboxes of ours (bubblewrap)."""
    return [pid for pid, cmd, name, parent in _processes()
            if (MARKER.encode() in cmd and b"pytest" not in cmd)
            or (name == "bwrap" and parent == os.getpid())]


ATTACK_TIMEOUT = 60
"""Seconds per notebook in the attack run: the toy chapter needs a few; ``stubborn`` uses all
of them (the runs are two at a time, next to the others)."""


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Grade the attack suite once, through the command line, with the sandbox: the rows
    by (student, exercise), the paths, and what was seen around the run."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    paths = write_attack_submissions(tmp_path_factory.mktemp("attacks"),
                                     listener.getsockname()[1])
    watched = [paths["book"], paths["subs"], paths["canary"]]
    before = _snapshot(*watched)
    status = cli(["--root", str(paths["book"]), "grade", str(paths["subs"]), "--chapter", "toy",
                  "--out", str(paths["csv"]), "--executed", str(paths["executed"]),
                  "--timeout", str(ATTACK_TIMEOUT), "--cell-timeout", "5",
                  "--check-timeout", "3", "--jobs", "2"])
    right_after = paths["csv"].read_text()
    left_right_after = _left_over()
    time.sleep(3)  # what a detached process would do after grading, it would do now
    with open(paths["csv"], newline="") as f:
        rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
    try:
        listener.accept()
        reached = True
    except BlockingIOError:
        reached = False
    listener.close()
    return {"status": status, "reached_grader": reached, "rows": rows, "paths": paths, "csv_right_after": right_after,
            "before": before, "after": _snapshot(*watched),
            "left": left_right_after + _left_over()}


def _points(rows, student) -> dict:
    return {ex: int(float(rows[student, ex]["points"])) for ex in FULL}


ATTACK_NAMES = [a.name for a in _attacks({k: "/x" for k in ("book", "subs", "canary", "csv")})]


@pytest.mark.integration
@pytest.mark.parametrize("name", ATTACK_NAMES)
def test_each_submission_scores_what_its_honest_answers_earn(attacked, name):
    attack = next(a for a in attacked["paths"]["attacks"] if a.name == name)
    rows = attacked["rows"]
    feedback = {ex: rows[name, ex]["feedback"] for ex in FULL}
    assert _points(rows, name) == attack.expect, feedback


@pytest.mark.integration
def test_attack_run_gives_every_submission_its_rows(attacked):
    assert attacked["status"] == 0
    assert len(attacked["rows"]) == 3 * len(ATTACK_NAMES)
    assert set(next(iter(attacked["rows"].values()))) == {
        "student", "number", "exercise", "part", "points", "max_points", "feedback"}


@pytest.mark.integration
def test_no_file_outside_the_sandboxes_changed(attacked):
    assert attacked["after"] == attacked["before"]
    assert not any(p.name != "file" for p in attacked["paths"]["canary"].iterdir())


@pytest.mark.integration
def test_no_process_outlives_grading_and_grades_stay(attacked):
    assert attacked["left"] == []
    assert attacked["paths"]["csv"].read_text() == attacked["csv_right_after"]
    assert _points(attacked["rows"], "z_victim") == FULL


def _outputs(attacked, student: str) -> str:
    nb = nbformat.read(attacked["paths"]["executed"] / f"{student}.ipynb", as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.outputs)


@pytest.mark.integration
def test_the_sandbox_shows_nothing_of_the_grader(attacked):
    """What a submission saw: its own few processes (none of the grader's), a root with the
    environment only, uid 65534, no network, no nested user namespace, no solution."""
    seen = _outputs(attacked, "a_snoop")
    processes = next(ln for ln in seen.splitlines() if ln.startswith("PROCESSES:"))
    # the sandbox's own init (bubblewrap's), the worker, the kernel: none of the grader's
    assert "pytest" not in processes and "attacks" not in seen and "grade" not in processes
    assert int(processes.split()[1]) <= 4
    root = next(ln for ln in seen.splitlines() if ln.startswith("ROOT:"))
    assert "'home'" not in root and "'root'" in root  # /root: only the Python prefix in it
    assert "UID: 65534" in seen and "NETWORK: reached" not in seen
    assert "NETWORK: unreachable 127.0.0.1" in seen and not attacked["reached_grader"]
    assert "NETWORK: unreachable 1.1.1.1" in seen and "NESTED USERNS: 1" in seen
    assert "FOUND: []" in _outputs(attacked, "a_read_solutions")
    threads = int(_outputs(attacked, "a_threads").split("THREADS:")[1].split()[0])
    from attnclust.assignments.sandbox import Limits

    assert 0 < threads < Limits().processes


@pytest.mark.integration
def test_feedback_names_what_went_wrong(attacked):
    rows = attacked["rows"]
    assert rows["wrong", "ex-toy-1"]["feedback"] == "ex-toy-1: expected the derivative 4*x**3"
    assert "ZeroDivisionError" in rows["raising", "ex-toy-2"]["feedback"]
    assert "CellTimeoutError" in rows["looping", "ex-toy-1"]["feedback"]
    assert "interrupted" in rows["stubborn", "ex-toy-3"]["feedback"]
    assert rows["blank", "ex-toy-3"]["feedback"] == (
        "ex-toy-3: not answered (the starter cell is unchanged)")
    assert "the file is empty" in rows["empty", "ex-toy-1"]["feedback"]
    assert "no list of cells" in rows["no_cells", "ex-toy-1"]["feedback"]
    assert "not accepted" in rows["a_fakes", "ex-toy-1"]["feedback"]
    assert "Zero" in rows["a_fakes", "ex-toy-1"]["feedback"]
    assert "interrupted" in rows["a_hang_checker", "ex-toy-1"]["feedback"]
    assert "pickle" not in rows["a_inject", "ex-toy-2"]["feedback"] or \
        "not accepted" in rows["a_inject", "ex-toy-2"]["feedback"]
    assert all(rows[name, ex]["feedback"] == "passed" for name in ("ref", "z_victim")
               for ex in FULL)


def _verdicts_shown(folder: Path, student: str) -> dict[str, str]:
    """Exercise -> what the check cells of ``student``'s executed notebook print."""
    nb = nbformat.read(folder / f"{student}.ipynb", as_version=4)
    assert not [c for c in nb.cells if "_attnclust_export" in c.source], "grader cells left"
    return {c.metadata["attnclust"]["check"]: "".join(o.get("text", "") for o in c.outputs)
            for c in nb.cells if "check" in c.metadata.get("attnclust", {})}


@pytest.mark.integration
def test_executed_notebooks_show_each_checks_verdict(attacked):
    """``--executed``: each check cell of a student's executed notebook prints what the
    student edition's check would (correct, not right yet with the hint, not answered yet),
    and the grader's own cells are gone."""
    folder = attacked["paths"]["executed"]
    assert _verdicts_shown(folder, "wrong") == {
        "ex-toy-1": "ex-toy-1: not right yet. expected the derivative 4*x**3\n",
        "ex-toy-2": "ex-toy-2: correct\n", "ex-toy-3": "ex-toy-3: correct\n"}
    assert _verdicts_shown(folder, "blank")["ex-toy-3"] == (
        "ex-toy-3: not answered yet (store your answer in ex_toy_3)\n")
    assert _verdicts_shown(folder, "raising")["ex-toy-2"].startswith(
        "ex-toy-2: not answered yet (store your answer in ex_toy_2); an earlier cell raised "
        "ZeroDivisionError")
    assert "could not run" in _verdicts_shown(folder, "a_fakes")["ex-toy-1"]


@pytest.mark.integration
def test_grading_without_a_sandbox_still_checks_outside_the_kernel(tmp_path):
    """``unsafe``: no sandbox, but the checks still cannot be fooled by the kernel."""
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    (book / "chapters" / "toy.md").write_text(ATTACK_TOY)
    chapter = parse_chapter(book / "chapters" / "toy.md")
    attack = next(a for a in _attacks({k: tmp_path for k in ("book", "subs", "canary",
                                                             "csv")})
                  if a.name == "a_monkeypatch")
    nb = json.loads(_attack_notebook(student_notebook(chapter), attack))
    honest = json.loads(_attack_notebook(student_notebook(chapter),
                                         Attack("ref", FULL, HONEST)))
    grades = grade_notebooks({"a_monkeypatch": nb, "ref": honest}, autograder_material(chapter),
                             timeout=120, unsafe=True, executed_dir=tmp_path / "executed")
    assert [g.points for g in grades] == [0, 0, 1, 2, 1, 1]
    assert grades[0].feedback == "ex-toy-1: expected the derivative 4*x**3"
    assert grades[1].feedback == "ex-toy-2: expected the mean 3.0"
    # the executed notebooks show the checks' verdicts, not what the kernel made of them
    assert _verdicts_shown(tmp_path / "executed", "a_monkeypatch") == {
        "ex-toy-1": "ex-toy-1: not right yet. expected the derivative 4*x**3\n",
        "ex-toy-2": "ex-toy-2: not right yet. expected the mean 3.0\n",
        "ex-toy-3": "ex-toy-3: correct\n"}
    assert set(_verdicts_shown(tmp_path / "executed", "ref").values()) == {
        f"{ex}: correct\n" for ex in FULL}


# ---- the real chapters -------------------------------------------------------------------

REAL = course_chapters(ROOT)
FASTEST_REAL = "mixtures"


def test_course_chapters_are_the_theory_and_experiment_parts_and_the_preface():
    """The course editions cover every chapter with exercises: the Theory and Experiments
    parts, and the preface (its exercises are session one's); not the overview, which has
    none, nor the pages of "Using the book"."""
    from attnclust.assignments.source import EXERCISE_FENCE, toc_chapters

    assert REAL[0] == "preface" and "mixtures" in REAL
    assert "instructors" not in REAL and "at_a_glance" not in REAL and "grading" not in REAL
    with_exercises = [Path(f).name for f, _ in toc_chapters(ROOT)
                      if EXERCISE_FENCE.search((ROOT / f"{f}.md").read_text())]
    assert REAL == with_exercises


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
        if not ex.graded:  # a proof: a Markdown answer cell, graded by the instructor
            assert not ex.checks and ex.points == 0, ex.label
            assert any(c.cell_type == "markdown" and c.metadata.get("attnclust", {}).get(
                "answer") == ex.label for c in student.cells), ex.label
            assert any("rubric" in t.lower() for t in ex.solution_text), f"{ex.label}: no rubric"
            continue
        assert ex.checks and ex.points > 0, ex.label
        for check in ex.checks:  # the feedback names the exercise and what was expected
            assert ex.label in check and "expected" in check, f"{ex.label}: check message"
        leaked = [ln for ln in ex.solution_lines if ln in student_lines and ln not in outside]
        assert not leaked, f"{ex.label}: solution text in the student edition: {leaked}"
        assert f"{ex.variable} = None  # YOUR ANSWER HERE" in student_lines
    hidden = "\n".join(c.source for c in student_notebook(ch, hidden_checks=True).cells)
    for check in (c for ex in ch.exercises.values() for c in ex.checks):
        asserts = [ln for ln in check.splitlines() if ln.lstrip().startswith("assert")]
        assert not any(ln in hidden for ln in asserts), f"{stem}: a check is not hidden"


@pytest.mark.parametrize("stem", REAL)
def test_every_hidden_check_says_what_it_verifies(stem):
    """With hidden checks, every check of the book says specifically what it verifies: the
    answer variable, what to store, and the tolerance where the check has a literal one;
    never the general line, never a check's message or an expected letter."""
    from attnclust.assignments.describe import GENERIC_WORDS

    ch = parse_chapter(ROOT / "chapters" / f"{stem}.md")
    nb = student_notebook(ch, hidden_checks=True)
    cells = {c.metadata["attnclust"]["check"]: c.source for c in nb.cells
             if "check" in c.metadata.get("attnclust", {})}
    for ex in (e for e in ch.exercises.values() if e.checks):
        line = next(ln for ln in cells[ex.label].splitlines()
                    if ln.startswith("# What the grader verifies: "))
        assert GENERIC_WORDS not in line, ex.label
        assert f"`{ex.variable}` holds " in line and f"(exercise {ex.number})" in line, line
        assert "; " in line, f"{ex.label}: nothing said about the comparison: {line}"
        for check in ex.checks:
            messages = re.findall(r'"(ex-[^"]*expected[^"]*)"', check)
            assert not any(m.split(": ", 1)[1] in line for m in messages), ex.label
            if re.search(r"\babs\(.*\)\s*<\s*[0-9.e-]+\s*,", check) and ex.kind != "open question":
                assert "to within " in line, f"{ex.label}: no tolerance in {line}"
            if ex.kind == "interpretation":
                assert "compared as a letter" in line, line
                key = re.search(r'== "([a-d])"', check)
                assert not key or f'"{key[1]}"' not in line.replace('such as "a"', ""), line


def test_a_multiple_choice_prompt_follows_what_the_statement_asks_to_store(chapter):
    """A multiple-choice question asks for a letter, unless its statement asks to store
    something else: then its prompt asks for that (the book's Ex 30: a pair of an eigenvalue
    and a letter), not for the letter alone."""
    def prompt(nb, label):
        return next(par for c in nb.cells if c.cell_type == "markdown"
                    for par in c.source.split("\n\n")
                    if par.startswith("**Your answer to exercise") and label in par)

    assert "Choose one of the options and write its letter as a string" in prompt(
        student_notebook(chapter), "ex-toy-3")
    pair = copy.deepcopy(chapter)
    pair.exercises["ex-toy-3"].statement = pair.exercises["ex-toy-3"].statement.replace(
        "Store your answer in `ex_toy_3`", "Store the pair `(value, letter)` in `ex_toy_3`")
    text = prompt(student_notebook(pair), "ex-toy-3")
    assert "Choose one of the options and write its letter" not in text
    assert ("store the pair `(value, letter)` (the option's letter as a string, e.g. `\"a\"`) "
            "in `ex_toy_3`") in text
    real = parse_chapter(ROOT / "chapters" / "training_dynamics.md")
    ex = next(e for e in real.exercises.values() if "(eigenvalue, letter)" in e.statement)
    text = prompt(student_notebook(real), ex.label)
    assert "store the pair `(eigenvalue, letter)`" in text and "write its letter" not in text


@pytest.mark.parametrize("stem", REAL)
def test_every_course_exercise_states_its_kind_level_and_time(stem):
    """The first line of every exercise's statement is ``Kind: <kind>. Level: <level>. Time:
    about <N> minutes.``, with a known kind and level and a positive time."""
    ch = parse_chapter(ROOT / "chapters" / f"{stem}.md")
    for ex in ch.exercises.values():
        first = ex.statement.strip().splitlines()[0]
        assert exercise_headline(first), f"{ex.label}: first line {first!r}"
        assert ex.kind in KINDS and ex.level in LEVELS and ex.minutes > 0, ex.label


THEORY_CHAPTERS = ("mixtures", "attention", "population_risk", "quantization")


@pytest.mark.parametrize("stem", THEORY_CHAPTERS)
def test_theory_chapters_have_five_exercises_and_a_proof(stem):
    ch = parse_chapter(ROOT / "chapters" / f"{stem}.md")
    assert len(ch.exercises) >= 5, stem
    assert any(e.kind == "proof" for e in ch.exercises.values()), stem


def test_headline_reads_kind_level_and_time():
    assert exercise_headline("Kind: proof. Level: challenge. Time: about 30 minutes. Show") == (
        "proof", "challenge", 30)
    assert exercise_headline("Kind: open question. Level: standard. Time: about 20 minutes.") \
        == ("open question", "standard", 20)
    for bad in ("Kind: derivation. Show that", "Kind: proof. Level: hard. Time: about 5 minutes.",
                "Kind: essay. Level: standard. Time: about 5 minutes.",
                "Kind: coding. Level: standard. Time: 5 minutes."):
        assert exercise_headline(bad) is None, bad


PROOF_TOY = TOY.replace("Closing narrative.", """```{exercise} A proof
:label: ex-toy-4

Kind: proof. Level: standard. Time: about 10 minutes. Prove that $x^2$ is convex.
```

```{solution} ex-toy-4
:class: dropdown

SECRET-PROOF: the second derivative is 2.

**Rubric** (2 points):
1. The second derivative (1 point).
2. Its sign (1 point).
```

Closing narrative.""")


@pytest.fixture(scope="module")
def proof_chapter(tmp_path_factory):
    root = tmp_path_factory.mktemp("proofbook")
    (root / "chapters").mkdir()
    (root / "chapters" / "toy.md").write_text(PROOF_TOY)
    return parse_chapter(root / "chapters" / "toy.md")


def test_a_proof_needs_no_check_and_gets_a_markdown_answer_cell(proof_chapter):
    ch = proof_chapter
    assert ch.problems == []
    ex = ch.exercises["ex-toy-4"]
    assert (ex.kind, ex.level, ex.minutes, ex.graded, ex.points) == ("proof", "standard", 10,
                                                                     False, 0)
    nb = student_notebook(ch)
    answer = [c for c in nb.cells if c.metadata.get("attnclust", {}).get("answer") == ex.label]
    assert len(answer) == 1 and answer[0].cell_type == "markdown"
    text = _text(nb)
    assert "SECRET-PROOF" not in text and "graded by your instructor" in text
    assert f"{ex.variable} = None" not in text
    assert "SECRET-PROOF" in _text(instructor_notebook(ch))
    material = autograder_material(ch)
    assert {e["label"]: e["kind"] for e in material["exercises"]}["ex-toy-4"] == "proof"
    assert all(item.get("label") != ex.label for item in material["program"])


def test_a_proof_with_a_check_is_a_problem(tmp_path):
    (tmp_path / "toy.md").write_text(PROOF_TOY.replace("Closing narrative.", """```{code-cell} python3
:tags: [remove-input, check]
# check ex-toy-4 points=1
assert True, "ex-toy-4: expected"
```"""))
    assert any("not autograded" in p for p in parse_chapter(tmp_path / "toy.md").problems)


def test_the_grader_leaves_a_proof_to_the_instructor(proof_chapter):
    from attnclust.assignments import grading

    material = grading.validate_material(json.loads(json.dumps(autograder_material(proof_chapter))))
    settings = grading._settings(60, None, 60, True, None, ())
    grades = grading._score("ann", material, grading._Run(), set(), {}, {}, settings)
    proof = [g for g in grades if g.exercise == "ex-toy-4"]
    assert len(proof) == 1 and (proof[0].points, proof[0].max_points, proof[0].part) == (
        0, 2, "proof")
    assert "ungraded" in proof[0].feedback and "instructor" in proof[0].feedback
    zero = {g.exercise: g.feedback for g in grading._zero("ann", material, "unreadable")}
    assert "ungraded" in zero["ex-toy-4"] and "unreadable" in zero["ex-toy-1"]


@pytest.mark.integration
def test_real_chapter_reference_solutions_score_full_marks():
    """In the sandbox, with the checks run by the trusted checker from the chapter: every
    check's row has full marks; the written parts' rows are the instructor's to fill in."""
    ch = parse_chapter(ROOT / "chapters" / f"{FASTEST_REAL}.md")
    material = autograder_material(ch)
    assert material["exercises"], f"{FASTEST_REAL} has no exercises"
    grades = grade_notebook(instructor_notebook(ch), material, student="reference",
                            timeout=300, cell_timeout=240)
    failed = [(g.exercise, g.feedback) for g in grades if g.points != g.max_points and not g.part]
    assert not failed, failed
    written = [g for g in grades if g.part]  # left to the instructor, with their points
    assert written and all(g.points == 0 < g.max_points for g in written)


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
        "As measured, {claim}`icq-one-layer-quantizes`",
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
    assert "As measured, (claim `icq-one-layer-quantizes`)" in out
    assert "```python\nx = 1\n```" in out  # other fences are kept
    assert refs.macro_definitions() == r"$\newcommand{\R}{\mathbb{R}}$"


def test_a_figure_reference_quotes_its_caption_as_yaml_reads_it(tmp_path):
    """A caption quoted in the cell's YAML (it has a colon) is unescaped, as the book reads
    it: a reference to it shows ``$\\mathcal N$``, not the doubled backslash of the source."""
    from attnclust.assignments.markdown import References, to_jupyter

    (tmp_path / "page.md").write_text(
        "```{code-cell} python3\n---\nmystnb:\n  figure:\n    caption: \"Tilting of "
        "$\\\\mathcal N(m, v)$: the mean moves. Rest.\"\n    name: fig-t\n---\nplot()\n```\n"
        "```{code-cell} python3\n---\nmystnb:\n  figure:\n    caption: Plain $\\sigma$. Rest.\n"
        "    name: fig-p\n---\nplot()\n```\n")
    refs = References.from_chapters(tmp_path)
    assert to_jupyter("See {numref}`fig-t` and {numref}`fig-p`.", refs) == (
        "See Fig. “Tilting of $\\mathcal N(m, v)$: the mean moves” and Fig. “Plain $\\sigma$”.")


@pytest.mark.parametrize("stem", REAL)
def test_real_editions_have_no_myst_markup_left(stem, tmp_path):
    """The student and instructor editions that ``build`` writes from a build with a value
    for every number and claim the chapter shows (:func:`.built.shown_values`): no role,
    directive, glue name or claim id (``(claim `id`)``) is left in their Markdown or their
    figures' alt texts, and the values stand where the book shows them."""
    import re

    from attnclust.assignments.built import shown_values
    from attnclust.assignments.markdown import glue_names, raw_markup

    path = ROOT / "chapters" / f"{stem}.md"
    keys = shown_values(parse_chapter(path))
    values = {k: _claim_value(k[len("claim:"):].upper()) if k.startswith("claim:")
              else {"text/plain": "0.25"} for k in keys}
    _fake_build(tmp_path / "_build", path, f"chapters/{stem}", values)
    assert cli(["--root", str(ROOT), "build", "--out", str(tmp_path / "out"), "--chapters", stem,
                "--build-dir", str(tmp_path / "_build")]) == 0
    names = glue_names(path.read_text())
    for edition in ("student", "instructor"):
        nb = nbformat.read(tmp_path / "out" / edition / f"{stem}.ipynb", as_version=4)
        md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        alts = "\n".join(str(c.metadata.get("mystnb", {}).get("image", {}).get("alt", ""))
                         for c in nb.cells if c.cell_type == "code")
        assert not re.findall(r"\{[a-z]+(?::[a-z]+)?\}`", md), stem
        assert "```{prf:" not in md and "{glue" not in md + alts and "(claim `" not in md
        assert raw_markup(md, names) == [] and raw_markup(alts, names) == [], (stem, edition)
        assert r"\newcommand{\R}" in nb.cells[0].source
        claims = [k[len("claim:"):].upper() for k in keys if k.startswith("claim:")]
        shown = [c for c in claims if f"CLAIM {c} HOLDS" in md]
        if edition == "instructor":  # every claim of the chapter, in the solutions too
            assert shown == claims, stem


READER_CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.md")
                         if p.read_text().startswith("---") and "\nkernelspec:" in p.read_text())
"""The chapters the book offers as reader editions (every notebook page)."""


@pytest.mark.parametrize("stem", READER_CHAPTERS)
def test_reader_editions_have_no_raw_markup(stem):
    """The reader edition (the download button's notebook), with a value glued for every
    glue name and claim of the chapter as the build glues them: no role, directive,
    equation label, glue name or claim id is left in its Markdown (:func:`.markdown.raw_markup`, the scan the
    browser test runs on what JupyterLab renders)."""
    from attnclust.assignments import reader_notebook
    from attnclust.assignments.markdown import glue_names, glued_keys, raw_markup

    path = ROOT / "chapters" / f"{stem}.md"
    names = glue_names(path.read_text())
    nb = reader_notebook(parse_chapter(path), {
        k: _claim_value("measured") if k.startswith("claim:") else {"text/plain": "0.25"}
        for k in glued_keys(path.read_text())})
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert raw_markup(md, names) == [], stem


def test_raw_markup_scan_finds_what_a_reader_should_not_see():
    from attnclust.assignments.markdown import raw_markup

    for planted in ("$$ x $$ (eq-planted)", "$$\nx\n$$ (eq-planted)", "by equation (eq-head-limit)",
                    "see (fig-a)", "{eq}`eq-x`", "```{prf:theorem}", ":label: thm-x", "{glue}`n`",
                    "as measured, (claim `icq-x`)"):
        assert raw_markup(f"A fine sentence.\n{planted}\nMore.") != [], planted
    assert raw_markup("the best `lam` is `best_lam`.", {"best_lam"}) == ["`best_lam`"]
    assert raw_markup("**Exercise 2** (`ex-mixtures-2`): by (2), $$x \\tag{2}$$ and "
                      "(Lloyd, 1982); `lam`.", {"best_lam"}) == []


def test_equations_are_numbered_as_the_book_numbers_them():
    """Labelled display equations are numbered per page, 1, 2, ... in page order (Sphinx's
    numbering, the book's table of contents not being numbered); each edition shows the
    number beside the equation (``\\tag``) and ``{eq}`` references as "(N)"."""
    from attnclust.assignments.markdown import References, equation_numbers, to_jupyter

    text = ("$$ a $$\n\n$$\nb\n$$ (eq-b)\n\n```{prf:proposition} P\n:label: prop-p\n\n"
            "$$ c $$ (eq-c)\n```\n\n```python\n'$$ d $$ (eq-code)'\n```\n\nBy {eq}`eq-c`.")
    numbers = equation_numbers(text)
    assert numbers == {"eq-b": 1, "eq-c": 2}
    out = to_jupyter(text, References(equations=numbers))
    assert "$$\nb \\tag{1}\n$$" in out and "c \\tag{2}" in out and "By (2)." in out
    assert "(eq-b)" not in out and "(eq-c)" not in out
    assert equation_numbers((ROOT / "chapters" / "attention.md").read_text()) == {
        "eq-two-head-layer": 1, "eq-head-limit": 2}
    ch = parse_chapter(ROOT / "chapters" / "attention.md")
    md = "\n".join(c.source for c in instructor_notebook(ch).cells if c.cell_type == "markdown")
    assert "\\tag{2}" in md and "can be read off (1)" in " ".join(md.split())


def test_exercises_are_numbered_as_the_book_numbers_them():
    """The book numbers its exercises on from one chapter to the next, in the order of
    _toc.yml (sphinx-exercise's numbers); every edition of a chapter uses the same numbers,
    so "exercise 30" is the same exercise in the HTML and in the notebooks. A chapter of no
    book starts at 1."""
    from attnclust.assignments.source import exercise_offset, toc_chapters

    root = Path(__file__).resolve().parents[1]
    numbers = []
    for f, _ in toc_chapters(root):
        numbers += [ex.number for ex in parse_chapter(root / f"{f}.md").exercises.values()]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 30
    assert exercise_offset(Path("/nowhere/chapters/toy.md")) == 0


# ---- one numbering, written parts, points --------------------------------------------------

WRITTEN_TOY = TOY.replace("Closing narrative.", '''```{exercise} A root, and why
:label: ex-toy-4

Kind: open question. Level: standard. Time: about 10 minutes. Find a root of $x^2 - 4$ and
explain why it is one. Store it in `ex_toy_4`.
```

```{solution-start} ex-toy-4
:class: dropdown
```
SECRET-WHY: $2^2 - 4 = 0$.

**Rubric** (2 points):
1. The substitution (1 point).
2. SECRET-RUBRIC-ITEM: the value zero named (1 point).
```{code-cell} python3
ex_toy_4 = 2.0
```
```{solution-end}
```

```{code-cell} python3
:tags: [remove-input, check]
# check ex-toy-4 points=1
assert abs(float(ex_toy_4) ** 2 - 4) < 1e-9, "ex-toy-4: expected a root of x**2 - 4"
```

```{exercise} Two facts
:label: ex-toy-5

Kind: proof. Level: standard. Time: about 10 minutes. Prove (i) that $x^2 \\ge 0$ and
(ii) that $x^2 = 0$ only at $0$.
```

```{solution} ex-toy-5
:class: dropdown

**(i)** SECRET-PART-ONE: a square. **(ii)** SECRET-PART-TWO: a product of non-zeros.

**Rubric** (5 points):
1. **(i)** The square written as a product (2 points).
2. **(i)** Its sign (1 point).
3. **(ii)** The product of two non-zero numbers (2 points).
```

Closing narrative.''')


def _book(root: Path, chapters: dict[str, str]) -> Path:
    """A book at ``root``: ``chapters`` (stem -> source) in its ``_toc.yml``, the first as
    its root page and the others in a part "Theory"."""
    (root / "chapters").mkdir(parents=True, exist_ok=True)
    for stem, text in chapters.items():
        (root / "chapters" / f"{stem}.md").write_text(text)
    first, *rest = chapters
    (root / "_toc.yml").write_text(
        f"format: jb-book\nroot: chapters/{first}\nparts:\n  - caption: Theory\n    chapters:\n"
        + "".join(f"      - file: chapters/{stem}\n" for stem in rest))
    return root


@pytest.fixture(scope="module")
def written_chapter(tmp_path_factory):
    """WRITTEN_TOY as the second chapter of a book whose first has TOY's three exercises:
    its exercises are numbered 4 to 8, as the book numbers them."""
    root = _book(tmp_path_factory.mktemp("writtenbook"),
                 {"first": TOY, "toy": WRITTEN_TOY})
    return parse_chapter(root / "chapters" / "toy.md")


def _markdown(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_every_edition_names_an_exercise_by_the_books_number(written_chapter):
    """Headings, answer prompts, solutions and the autograder material use the number the
    book gives an exercise (on from the chapters before it), never the chapter's own count:
    before, the heading said "Exercise 1" and its answer cell "exercise 4"."""
    import re

    ch = written_chapter
    assert [e.number for e in ch.exercises.values()] == [4, 5, 6, 7, 8]
    for nb in (student_notebook(ch), instructor_notebook(ch),
               student_notebook(ch, hidden_checks=True)):
        md = _markdown(nb) + "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        said = {int(n) for n in re.findall(r"[Ee]xercises? (\d+)", md)}
        assert said and said <= {4, 5, 6, 7, 8}, said
        for ex in ch.exercises.values():
            assert f"**Exercise {ex.number}** (`{ex.label}`) — {ex.title}" in md
    assert [e["number"] for e in autograder_material(ch)["exercises"]] == [4, 5, 6, 7, 8]


def test_rubric_items_carry_points_and_name_their_written_part():
    from attnclust.assignments.source import parse_rubric

    items, problems = parse_rubric("Text.\n\n**Rubric** (3 points):\n1. **(i)** A (1 point).\n"
                                   "2. **(ii)** B, which runs\n   over two lines (2 points).\n\n"
                                   "After the rubric.", "proof")
    assert problems == []
    assert [(i.part, i.text, i.points) for i in items] == [
        ("(i)", "A", 1.0), ("(ii)", "B, which runs over two lines", 2.0)]
    single, problems = parse_rubric("**Rubric** (4 points):\n1. Runs (1.5 points).\n"
                                    "2. Report (2.5 points).", "project")
    assert problems == [] and {i.part for i in single} == {"report"}
    assert parse_rubric("**Rubric** (1 point):\n1. Why (1 point).", "open question")[0][0].part \
        == "written answer"
    for bad, why in [("**Rubric** (what a grader looks for):\n1. A.", "without points"),
                     ("**Rubric** (3 points):\n1. A (1 point).", "its items give 1"),
                     ("**Rubric** (2 points):\n1. A.\n2. B (2 points).", "does not end with"),
                     ("**Rubric** (2 points):\n1. **(i)** A (1 point).\n2. B (1 point).",
                      "names no part"),
                     ("**Rubric** (2 points):\n\nNo list.", "no numbered items")]:
        assert any(why in p for p in parse_rubric(bad, "proof")[1]), (bad, why)
    assert parse_rubric("No rubric at all.", "proof") == ([], [])


def test_a_proof_or_project_without_a_rubric_with_points_is_a_problem(tmp_path):
    no_points = PROOF_TOY.replace("**Rubric** (2 points):\n1. The second derivative (1 point).\n"
                                  "2. Its sign (1 point).", "Rubric: the second derivative.")
    (tmp_path / "toy.md").write_text(no_points)
    assert any("needs a rubric with points" in p
               for p in parse_chapter(tmp_path / "toy.md").problems)


def test_written_parts_get_answer_cells_points_and_rows(written_chapter):
    """Every written part gets its own Markdown answer cell in the student edition (after
    the check cell, for an exercise that code also checks), with its points; the instructor
    edition has the solution's text and the points by part; the material and the grader give
    each written part a row of 0 of its points, which the totals keep apart from the
    checks'."""
    from attnclust.assignments.gradebook import grade_keys, totals

    ch = written_chapter
    assert ch.problems == []
    why, proof = ch.exercises["ex-toy-4"], ch.exercises["ex-toy-5"]
    assert [(p.name, p.points) for p in why.parts] == [("written answer", 2.0)]
    assert [(p.name, p.points) for p in proof.parts] == [("(i)", 3.0), ("(ii)", 2.0)]
    assert (why.points, why.written_points, why.total_points) == (1, 2, 3)
    assert (ch.check_points, ch.written_points, ch.total_points) == (5, 7, 12)

    student = student_notebook(ch)
    cells = student.cells
    answers = [(i, c.metadata["attnclust"].get("part")) for i, c in enumerate(cells)
               if c.cell_type == "markdown" and "answer" in c.metadata.get("attnclust", {})]
    assert [part for _, part in answers] == ["written answer", "(i)", "(ii)"]
    check4 = next(i for i, c in enumerate(cells)
                  if c.metadata.get("attnclust", {}).get("check") == "ex-toy-4")
    assert answers[0][0] > check4  # the written answer after the code's answer and its check
    text = _text(student)
    for secret in ("SECRET-WHY", "SECRET-PART-ONE", "SECRET-PART-TWO", "SECRET-RUBRIC-ITEM"):
        assert secret not in text
    assert "**Your written answer to exercise 7** (`ex-toy-4`, 2 points)" in text
    assert "**Your answer to exercise 8 (i)** (`ex-toy-5`, 3 points)" in text
    assert "**Your answer to exercise 8 (ii)** (`ex-toy-5`, 2 points)" in text
    assert "12 points (5 checked by code, 7 for the written parts)" in cells[0].source
    assert ("**Exercise 7** (`ex-toy-4`) — A root, and why (3 points: 1 checked by code, 2 for "
            "the written part)") in text

    instructor = _text(instructor_notebook(ch))
    for secret in ("SECRET-WHY", "SECRET-PART-ONE", "SECRET-PART-TWO", "SECRET-RUBRIC-ITEM"):
        assert secret in instructor
    assert "*5 points: (i) 3, (ii) 2 (written parts: grade them against the rubric" in instructor
    assert "*3 points: checks 1, written answer 2 (written parts" in instructor

    material = grading.validate_material(json.loads(json.dumps(autograder_material(ch))))
    assert (material["check_points"], material["written_points"], material["total_points"]) \
        == (5, 7, 12)
    assert grade_keys(material) == [("ex-toy-1", ""), ("ex-toy-2", ""), ("ex-toy-3", ""),
                                    ("ex-toy-4", ""), ("ex-toy-4", "written answer"),
                                    ("ex-toy-5", "(i)"), ("ex-toy-5", "(ii)")]
    settings = grading._settings(60, None, 60, True, None, ())
    rows = grading._score("ann", material, grading._Run(), set(), {}, {}, settings)
    assert [(g.exercise, g.part) for g in rows] == grade_keys(material)
    assert [g.number for g in rows] == [4, 5, 6, 7, 7, 8, 8]
    written = [g for g in rows if g.part]
    assert [(g.points, g.max_points) for g in written] == [(0, 2), (0, 3), (0, 2)]
    assert all("graded by the instructor against the rubric" in g.feedback for g in written)
    zero = grading._zero("ann", material, "unreadable")
    assert [(g.exercise, g.part) for g in zero] == grade_keys(material)
    # the totals: what the checks gave, and the written parts' points, apart
    full = [grading.ExerciseGrade("ann", g.exercise, g.max_points, g.max_points, "", True,
                                  g.part, g.number) for g in rows]
    t = totals(rows + [replace_student(g, "bob") for g in full])
    assert (t["ann"].checked, t["ann"].checked_max, t["ann"].written_max) == (0, 5, 7)
    assert (t["bob"].points, t["bob"].max_points) == (12, 12)


def replace_student(grade, student: str):
    from dataclasses import replace

    return replace(grade, student=student)


def test_the_csv_has_the_number_and_the_part_of_each_row(tmp_path):
    from attnclust.assignments.gradebook import CSV_FIELDS

    path = write_csv([grading.ExerciseGrade("ann", "ex-toy-5", 0.0, 3.0, "later", True, "(i)",
                                            8)], tmp_path / "g.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_FIELDS
    assert rows == [{"student": "ann", "number": "8", "exercise": "ex-toy-5", "part": "(i)",
                     "points": "0", "max_points": "3", "feedback": "later"}]


def test_material_of_the_previous_format_is_still_read(chapter):
    """Material written before the written parts (format 2: no parts, no number) grades as
    before: each exercise's checks, and the chapter's total their points."""
    material = json.loads(json.dumps(autograder_material(chapter)))
    for ex in material["exercises"]:
        del ex["parts"], ex["rubric"], ex["number"]
    for key in ("total_points", "check_points", "written_points"):
        del material[key]
    material = grading.validate_material(material)
    assert material["total_points"] == material["check_points"] == 4
    assert material["written_points"] == 0
    bad = json.loads(json.dumps(autograder_material(chapter)))
    bad["exercises"][0]["parts"] = [{"name": "(i)", "points": -1}]
    with pytest.raises(GradingError, match="written parts"):
        grading.validate_material(bad)


def test_asks_to_write_finds_what_a_student_answers_in_words():
    from attnclust.assignments.source import Exercise, asks_to_write

    def ex(kind, text):
        return Exercise("ex-t-1", kind=kind,
                        statement=f"Kind: {kind}. Level: standard. Time: about 5 minutes.\n{text}")

    assert asks_to_write(ex("open question", "Find a mixture, and say why it works."))
    assert asks_to_write(ex("derivation", "Show (i) that $a \\le b$. Store it in `x`."))
    assert asks_to_write(ex("derivation", "Along which direction do they grow?"))
    assert asks_to_write(ex("interpretation", "Pick one and explain your choice. (a) x (b) y"))
    assert not asks_to_write(ex("interpretation", "Which statement is right? Say which. (a) x"))
    assert not asks_to_write(ex("interpretation", "What do the heads show? (a) x (b) y"))
    assert not asks_to_write(ex("coding", "Compute `f(x)?` with `show()`. Store it in `x`."))


@pytest.mark.parametrize("stem", REAL)
def test_real_exercises_give_every_written_part_a_cell_and_points(stem):
    """In the book: every exercise whose statement asks the student to write has a rubric
    with points; a proof or project is graded by its rubric alone; an exercise of several
    written parts names each in its statement and opens each part's solution with it in
    bold; the student edition has one Markdown answer cell per written part."""
    from attnclust.assignments.source import RUBRIC_HEAD, asks_to_write

    ch = parse_chapter(ROOT / "chapters" / f"{stem}.md")
    assert ch.problems == [], ch.problems
    student = student_notebook(ch)
    cells = {(c.metadata["attnclust"]["answer"], c.metadata["attnclust"].get("part"))
             for c in student.cells if c.cell_type == "markdown"
             and "answer" in c.metadata.get("attnclust", {})}
    for ex in ch.exercises.values():
        if asks_to_write(ex) or not ex.graded:
            assert ex.rubric and ex.written_points > 0, f"{ex.label}: no rubric with points"
        assert {(ex.label, p.name) for p in ex.parts} <= cells, ex.label
        assert ex.total_points == ex.points + sum(p.points for p in ex.parts) > 0, ex.label
        if len(ex.parts) > 1:
            solution = "\n".join(ex.solution_text)
            before_rubric = solution[:RUBRIC_HEAD.search(solution).start()]
            for part in ex.parts:
                assert part.name in ex.statement, (ex.label, part.name)
                assert f"**{part.name}**" in before_rubric, (ex.label, part.name)
    assert ch.total_points == sum(e.total_points for e in ch.exercises.values())


# ---- the student HTML book: the built book without its solutions -------------------------

_PAGE = """<html><body><nav><ul><li><a href="../_sources/chapters/toy.ipynb" download>.ipynb</a></li>
<li><a href="../_sources/chapters/toy.md">.md</a></li></ul></nav>
<div class="exercise admonition" id="ex-toy-1"><p>Differentiate x cubed.</p></div>
<div class="solution dropdown admonition" id="chapters/toy-solution-2">
<p class="admonition-title">Solution to Exercise 1</p><p>The answer is 3 x squared.</p>
<p><strong>Rubric</strong> (2 points):</p><img src="../_images/solution.png" alt="a solution"/>
</div>
<img src="../_images/narrative.png" alt="the narrative's figure"/></body></html>"""


@pytest.fixture
def built_html(tmp_path) -> Path:
    """A toy built book: a page with an exercise, its solution (with a figure) and the
    download buttons of its sources."""
    html = tmp_path / "html"
    for path, text in {"index.html": "<html><body>index</body></html>",
                       "chapters/toy.html": _PAGE, "_sources/chapters/toy.ipynb": "{}",
                       "_sources/chapters/toy.md": "solution", "_images/solution.png": "png",
                       "_images/narrative.png": "png"}.items():
        (html / path).parent.mkdir(parents=True, exist_ok=True)
        (html / path).write_text(text)
    return html


def test_the_student_html_book_has_no_solutions(built_html, tmp_path):
    from attnclust.assignments.student_html import solution_blocks, student_book

    assert solution_blocks(built_html) == {"chapters/toy.html": 1}
    out = tmp_path / "student"
    assert student_book(built_html, out) == {"chapters/toy.html": 1}
    page = (out / "chapters" / "toy.html").read_text()
    assert solution_blocks(out) == {}
    assert "Solution to Exercise" not in page and "3 x squared" not in page and "Rubric" not in page
    assert "Differentiate x cubed." in page and "narrative.png" in page  # the rest stays
    assert "_sources" not in page and not (out / "_sources").exists()  # no notebook, no .md
    assert not (out / "_images" / "solution.png").exists()
    assert (out / "_images" / "narrative.png").is_file()
    assert solution_blocks(built_html) == {"chapters/toy.html": 1}  # the book is untouched
    (out / "stale.html").write_text("old")
    student_book(built_html, out)  # replaces the folder
    assert not (out / "stale.html").exists()
    with pytest.raises(ValueError, match="inside the book"):
        student_book(built_html, built_html / "student")
    with pytest.raises(ValueError, match="not a built HTML book"):
        student_book(tmp_path / "nowhere", tmp_path / "x")


def test_student_html_command(built_html, tmp_path, capsys):
    out = tmp_path / "student"
    assert cli(["student-html", "--html", str(built_html), "--out", str(out)]) == 0
    assert "1 solution blocks removed from 1 pages" in capsys.readouterr().out
    assert cli(["student-html", "--html", str(tmp_path / "none"), "--out", str(out)]) == 1
    assert "make book" in capsys.readouterr().err
