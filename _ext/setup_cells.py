"""Setup cells collapsed by default (loaded from _config.yml, sphinx.local_extensions).

A code cell that only sets up (imports, IPython magics such as ``%matplotlib inline``, and
``glue`` calls that hand numbers to the prose, also in a ``for`` loop) shows nothing a
reader needs to see first: its input is collapsed behind a "Show code cell source"
toggle, as a ``hide-input`` tag would do. Cells that compute, draw or check stay open.
The chapters' sources are not changed: the tag is added when Sphinx reads a page
(``source-read``), so a chapter opened in Jupyter is the file as written.
"""

from __future__ import annotations

import ast
import re

from attnclust.assignments.markdown import Fenced, split_fences

HIDE = "hide-input"
_TAGS = re.compile(r"^(?P<head>:tags:\s*\[)(?P<tags>[^\]]*)\]\s*$", re.M)


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


def _collapse(cell: Fenced) -> str:
    tags = [t.strip() for t in cell.options.get("tags", "").strip("[]").split(",") if t.strip()]
    if cell.body.lstrip().startswith("---") or any(t.startswith(("hide-", "remove-")) for t in tags):
        return cell.raw  # options as a YAML block, or already hidden or removed
    if not is_setup(cell.body):
        return cell.raw
    lines = cell.raw.split("\n")
    if tags:
        for i, line in enumerate(lines):
            if (m := _TAGS.match(line.strip())):
                lines[i] = f"{m['head']}{', '.join([*tags, HIDE])}]"
                break
    else:
        lines.insert(1, f":tags: [{HIDE}]")
    return "\n".join(lines)


def collapse_setup_cells(text: str) -> str:
    """The MyST text with a ``hide-input`` tag on every setup cell (see :func:`is_setup`)."""
    if "{code-cell}" not in text:
        return text
    return "\n".join(_collapse(p) if isinstance(p, Fenced) and p.name == "code-cell" else
                     (p.raw if isinstance(p, Fenced) else p) for p in split_fences(text))


def on_source_read(app, docname: str, source: list[str]) -> None:
    source[0] = collapse_setup_cells(source[0])


def setup(app):
    app.connect("source-read", on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
