"""_ext/setup_cells.py: which code cells count as setup, and the tag it adds when a page is
read (the page as built is checked in test_book_offline.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from attnclust.assignments.markdown import Fenced, split_fences

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("setup_cells", ROOT / "_ext" / "setup_cells.py")
setup_cells = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(setup_cells)


@pytest.mark.parametrize("source", [
    "import numpy as np\nfrom myst_nb import glue",
    "%matplotlib inline\nimport jax",
    'glue("a", 1, display=False)\nmyst_nb.glue("b", 2)',
    'import x\nfor i in range(3):\n    glue(f"v{i}", i, display=False)',
])
def test_setup_cells(source):
    assert setup_cells.is_setup(source)


@pytest.mark.parametrize("source", [
    "", "import numpy as np\nx = np.ones(3)", "make('figure')", "print(1)",
    "import x\nfor i in range(3):\n    print(i)", "def f(): pass", "not python (",
    'glue("a", compute())\nassert ok',
])
def test_other_cells(source):
    assert not setup_cells.is_setup(source)


PAGE = """---
jupytext:
  text_representation: {format_name: myst}
---
# Page

```{code-cell} python3
import numpy as np
```

```{code-cell} python3
:tags: [skip-execution]
glue("n", 1, display=False)
```

```{code-cell} python3
:tags: [remove-input]
import os
```

```{code-cell} python3
---
mystnb: {figure: {name: fig-x}}
---
import os
```

```{code-cell} python3
x = np.ones(3)
```
"""


def _tags(text: str) -> list[str]:
    return [p.options.get("tags", "") for p in split_fences(text)
            if isinstance(p, Fenced) and p.name == "code-cell"]


def test_tags_added_where_setup_only():
    out = setup_cells.collapse_setup_cells(PAGE)
    assert _tags(out) == ["[hide-input]", "[skip-execution, hide-input]", "[remove-input]", "", ""]
    assert out.replace(":tags: [hide-input]\n", "", 1).replace(", hide-input]", "]") == PAGE


def test_every_chapter_reads_back_unchanged_apart_from_tags():
    """The text a page is built from is its source plus tags: nothing else moves."""
    for path in sorted((ROOT / "chapters").glob("*.md")):
        text = path.read_text()
        out = setup_cells.collapse_setup_cells(text)
        assert out.replace(":tags: [hide-input]\n", "").replace(", hide-input]", "]") == text, path
