"""The imports a piece of Python makes, read from its syntax tree: shared by the tests of the
package's import graph (test_main.py) and of what each chapter reads (test_book_cache.py)."""

import ast


def imported_names(tree: ast.AST, package: str) -> set[str]:
    """Dotted names imported anywhere in ``tree``, function bodies included: ``import a.b``
    gives "a.b"; ``from .x import f`` in ``package`` gives "package.x" and "package.x.f"
    (relative imports resolved against ``package``, the importing module's package)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
    return out
