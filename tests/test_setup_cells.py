"""Setup cells are collapsed: a code cell of a chapter that only sets up (imports, IPython
magics such as ``%matplotlib inline``, and ``glue`` calls that hand numbers to the prose,
also in a ``for`` loop) shows nothing a reader needs to see first, so it carries a
``hide-input`` tag (or hides more: ``remove-input``, ``remove-cell``). Cells that compute,
draw or check stay open. The page as built is checked in test_book_offline.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnclust.assignments.markdown import Fenced, split_fences

ROOT = Path(__file__).resolve().parents[1]


def _is_glue(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    return (isinstance(func, ast.Name) and func.id == "glue") or (
        isinstance(func, ast.Attribute) and func.attr == "glue")


def _setup_only(body: list[ast.stmt]) -> bool:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or _is_glue(node):
            continue
        if isinstance(node, ast.For) and not node.orelse and _setup_only(node.body):
            continue
        return False
    return True


def is_setup(source: str) -> bool:
    """Whether a code cell's source only imports, runs magics and glues values."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    return bool(tree.body) and _setup_only(tree.body)


def _tags(cell: Fenced) -> list[str]:
    return [t.strip() for t in cell.options.get("tags", "").strip("[]").split(",") if t.strip()]


def open_setup_cells(text: str) -> list[str]:
    """The first line of every setup cell of a MyST text that shows its input."""
    return [cell.body.strip().splitlines()[0] for cell in split_fences(text)
            if isinstance(cell, Fenced) and cell.name == "code-cell" and is_setup(cell.body)
            and not any(t.startswith(("hide-", "remove-")) for t in _tags(cell))]


@pytest.mark.parametrize("source", [
    "import numpy as np\nfrom myst_nb import glue",
    "%matplotlib inline\nimport jax",
    'glue("a", 1, display=False)\nmyst_nb.glue("b", 2)',
    'import x\nfor i in range(3):\n    glue(f"v{i}", i, display=False)',
])
def test_setup_cells(source):
    assert is_setup(source)


@pytest.mark.parametrize("source", [
    "", "import numpy as np\nx = np.ones(3)", "make('figure')", "print(1)",
    "import x\nfor i in range(3):\n    print(i)", "def f(): pass", "not python (",
    'glue("a", compute())\nassert ok',
])
def test_other_cells(source):
    assert not is_setup(source)


PAGE = """# Page

```{code-cell} python3
import numpy as np
```

```{code-cell} python3
:tags: [skip-execution, hide-input]
glue("n", 1, display=False)
```

```{code-cell} python3
:tags: [remove-input]
import os
```

```{code-cell} python3
import sys
```

```{code-cell} python3
x = np.ones(3)
```
"""


def test_open_setup_cells_are_found():
    assert open_setup_cells(PAGE) == ["import numpy as np", "import sys"]


def test_every_chapter_collapses_its_setup_cells():
    open_cells = {path.name: found for path in sorted((ROOT / "chapters").glob("*.md"))
                  if (found := open_setup_cells(path.read_text()))}
    assert not open_cells, f"add :tags: [hide-input] to these setup cells: {open_cells}"
