"""A worked example of the whole pipeline on a tiny chapter (used by chapters/grading.md).

:data:`EXAMPLE_CHAPTER` is a three-exercise chapter in the book's exercise format, the third
with a written part (a rubric of one point) besides its check; it imports only NumPy and
SymPy, so a kernel runs it in a second or two. :func:`run_example` builds its
editions in a folder, makes two submissions (the reference solutions, and a student edition
with one wrong answer and one answer that raises), grades the folder (in the sandbox when
this machine can make one) and returns the rows of the CSV.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import nbformat

from .editions import write_editions
from .grading import grade_submissions
from .source import MYST_HEADER, parse_chapter

__all__ = ["EXAMPLE_CHAPTER", "rows_to_html", "run_example"]

EXAMPLE_CHAPTER = MYST_HEADER + '''
# Toy chapter

```{code-cell} python3
import numpy as np
import sympy
x = sympy.Symbol("x", positive=True)
```

```{exercise} A derivative
:label: ex-toy-1

Differentiate $x^3$. Kind: derivation. Store your answer in `ex_toy_1`.
```

```{solution-start} ex-toy-1
:class: dropdown
```
The power rule.
```{code-cell} python3
ex_toy_1 = sympy.diff(x**3, x)
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
One call.
```{code-cell} python3
ex_toy_2 = float(np.arange(5).mean())
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

Is $x^2$ convex? (a) yes (b) no. Kind: interpretation. Store your answer in `ex_toy_3`,
and explain your choice.
```

```{solution-start} ex-toy-3
:class: dropdown
```
Its second derivative is positive.

**Rubric** (1 point):
1. The second derivative, 2, and its sign (1 point).
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
'''

STUDENT_ANSWERS = {
    "ex_toy_1": "ex_toy_1 = 3 * x  # wrong: forgot the square",
    "ex_toy_2": "ex_toy_2 = float(np.arange(5).sum()) / 0  # raises ZeroDivisionError",
    "ex_toy_3": 'ex_toy_3 = "a"',
}
"""What the planted student writes in each starter cell."""


def run_example(folder: str | Path, *, timeout: float = 120.0, jobs: int = 2,
                unsafe: bool | None = None) -> dict:
    """Build, submit and grade the toy chapter under ``folder``; ``unsafe``: grade without
    a sandbox (default: only where none can be made, :func:`.sandbox.probe`).

    Returns ``{"rows": [csv rows as dicts], "seconds": grading time, "paths": editions,
    "csv": path, "student_cell": the starter cell of ex-toy-1, "sandboxed": bool,
    "no_sandbox_reason": why there was none, or None}``.
    """
    from .sandbox import probe

    reason = probe()
    if unsafe is None:
        unsafe = reason is not None
    folder = Path(folder)
    (folder / "chapters").mkdir(parents=True, exist_ok=True)
    src = folder / "chapters" / "toy.md"
    src.write_text(EXAMPLE_CHAPTER)
    chapter = parse_chapter(src)
    paths = write_editions(chapter, folder / "assignments")
    subs = folder / "submissions"
    subs.mkdir(exist_ok=True)
    nbformat.write(nbformat.read(paths["instructor"], as_version=4), subs / "ada__toy.ipynb")
    student = nbformat.read(paths["student"], as_version=4)
    starter = next(c.source for c in student.cells if c.source.startswith("ex_toy_1 ="))
    for cell in student.cells:
        for var, answer in STUDENT_ANSWERS.items():
            if cell.cell_type == "code" and cell.source.startswith(f"{var} = None"):
                cell.source = answer
    nbformat.write(student, subs / "ben__toy.ipynb")
    from .editions import autograder_material

    t0 = time.monotonic()
    csv_path = folder / "grades.csv"
    grade_submissions(subs, autograder_material(chapter), out=csv_path, fresh=True,
                      timeout=timeout, jobs=jobs, unsafe=unsafe, hidden=[folder / "chapters"])
    seconds = time.monotonic() - t0
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {"rows": rows, "seconds": seconds, "paths": paths, "csv": csv_path,
            "student_cell": starter, "sandboxed": not unsafe, "no_sandbox_reason": reason}


def rows_to_html(rows: list[dict], columns: list[str] | None = None) -> str:
    """An HTML table of CSV rows (dicts), every value escaped."""
    import html

    if columns is None:
        columns = list(rows[0]) if rows else []

    def line(values, tag):
        return "<tr>" + "".join(f"<{tag}>{html.escape(str(v))}</{tag}>" for v in values) + "</tr>"

    body = "".join(line([r[c] for c in columns], "td") for r in rows)
    return f"<table><thead>{line(columns, 'th')}</thead><tbody>{body}</tbody></table>"
