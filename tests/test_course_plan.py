"""The numbers of the instructors' plan (attnclust.assignments.plan): assignments by level,
a student's minutes with one lab, and the reading minutes of an optional section."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnclust.assignments import parse_chapter
from attnclust.assignments.source import MYST_HEADER
from attnclust.assignments.plan import (assignments, strip_section,
                                        student_minutes)
from attnclust.book.reading import WORDS_PER_MINUTE, section_minutes



def _exercise(n: int, kind: str, level: str, minutes: int) -> str:
    check = "" if kind == "project" else f"""
```{{code-cell}} python3
# check ex-toy-{n} points=1
assert ex_toy_{n} == 1, "ex-toy-{n}: expected 1"
```
"""
    solution = "Write it.\n\n**Rubric** (1 point):\n1. It is there (1 point).\n" if kind == "project" else f"""
```{{code-cell}} python3
ex_toy_{n} = 1
```
"""
    return f"""
```{{exercise}}
:label: ex-toy-{n}

Kind: {kind}. Level: {level}. Time: about {minutes} minutes.
Store your answer in `ex_toy_{n}`.
```

```{{solution-start}} ex-toy-{n}
:class: dropdown
```
{solution}
```{{solution-end}}
```
{check}"""


TEXT = MYST_HEADER + """
# Toy

Ten words of prose here, to be read by the learner today.

## Optional: a long aside

```{code-cell} python3
# a comment that looks like a heading
x = 1
```

""" + " ".join(["word"] * 400) + """

### A subsection of the aside

More words.

## Exercises
""" + "".join([_exercise(1, "coding", "warm-up", 10), _exercise(2, "derivation", "standard", 20),
               _exercise(3, "coding", "challenge", 30), _exercise(4, "project", "challenge", 90)])


@pytest.fixture
def toy(tmp_path) -> Path:
    path = tmp_path / "toy.md"
    path.write_text(TEXT)
    return path


def test_exercises_are_assigned_by_level_and_one_lab_counts(toy):
    course = {"toy": parse_chapter(toy)}
    work = assignments({1: ["toy"], 2: ["other"]}, course)
    assert (work[0].in_class, work[0].homework, work[0].optional, work[0].labs) == (
        [1], [2], [3], [4])
    assert work[0].minutes == {"in_class": 10, "homework": 20, "optional": 30, "labs": 90}
    assert work[1].in_class == work[1].homework == [] and work[1].minutes == {}
    assert student_minutes(work, course) == {"in_class": 10, "homework": 20, "lab_min": 90,
                                             "lab_max": 90, "total_min": 120, "total_max": 120}


def test_an_optional_section_is_measured_by_the_books_reading_measure(toy):
    stripped = strip_section(TEXT, "Optional: a long aside")
    assert "long aside" not in stripped and "A subsection" not in stripped
    assert "# a comment that looks like a heading" not in stripped  # inside the section
    assert "## Exercises" in stripped and "Ten words of prose" in stripped
    minutes = section_minutes(toy, ["Optional: a long aside"])["Optional: a long aside"]
    # its heading, 400 words and "More words.", nothing of the code
    assert minutes == pytest.approx((4 + 400 + 4 + 2) / WORDS_PER_MINUTE, abs=3 / WORDS_PER_MINUTE)
    with pytest.raises(ValueError, match="no section headed"):
        strip_section(TEXT, "Absent")
