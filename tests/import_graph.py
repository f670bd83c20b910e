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


def _resolve(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:
        up = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(up + ([base] if base else []))
    return base


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(tree: ast.AST, package: str, modules: set[str]) -> set[str]:
    """The private names of other modules that ``tree`` (a module of ``package``) uses, as
    dotted "module.name": imported (``from .x import _f``) or read off an imported module
    (``from . import x`` then ``x._f``, or ``import a.x`` then ``a.x._f``). ``modules``: the
    dotted names of every module of the package, so that an imported name is known to be a
    module; importing a package-private module itself (``from . import _kernels``) is not a
    use of a private name."""
    found, aliases = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve(node, package)
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules:
                    aliases[a.asname or a.name] = full
                elif _private(a.name):
                    found.add(full)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    aliases[a.name.split(".")[0]] = a.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            parts, value = [], node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                owner = ".".join([aliases[value.id]] + parts[::-1])
                if owner in modules:
                    found.add(f"{owner}.{node.attr}")
    return found
