"""What is public in the package, found from the package itself rather than from lists.

A module is public when no part of its dotted name starts with an underscore; a name of a
module is public when it is in the module's ``__all__``, or, for a module without one,
when it does not start with an underscore and the module defines it: a function or class
whose ``__module__`` is the module, or a module-level assignment followed by a docstring
(a documented constant; ``a, b = ...`` documents both). Imported names are not the module's own. This is the rule of
Sphinx's ``automodule`` with ``:members:``.

The registries of the book (figures, committed experiments, explorers) import every public
module of their package with :func:`import_submodules`, so that a module dropped into the
package registers itself; the API reference lists every module of :func:`public_modules`
with the names of :func:`public_names`.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType


def _is_public(dotted: str) -> bool:
    return not any(part.startswith("_") for part in dotted.split("."))


def submodule_names(package: str) -> list[str]:
    """The public modules directly inside ``package`` (a dotted name), sorted, without
    importing them."""
    pkg = importlib.import_module(package)
    return sorted(f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)
                  if _is_public(m.name))


def import_submodules(package: str) -> list[ModuleType]:
    """Import every public module directly inside ``package`` (sorted by name) and return
    them; an import error is raised, not skipped."""
    return [importlib.import_module(name) for name in submodule_names(package)]


def public_modules(package: str = "attnclust") -> list[str]:
    """``package`` and every public module below it, at any depth, a package before the
    modules inside it, siblings sorted by name. Subpackages are imported (to find what is
    inside them); ``__main__`` is not a module of the API."""
    out = [package]
    for name in submodule_names(package):
        if name.rsplit(".", 1)[-1] == "__main__":
            continue
        if hasattr(importlib.import_module(name), "__path__"):
            out += public_modules(name)
        else:
            out.append(name)
    return out


def _documented_assignments(module: ModuleType) -> dict[str, int]:
    """Module-level names assigned and followed by a docstring: name -> line."""
    return dict(_parsed_assignments(getattr(module, "__file__", None)))


@functools.lru_cache(maxsize=None)
def _parsed_assignments(path: str | None) -> tuple[tuple[str, int], ...]:
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, TypeError, SyntaxError):
        return ()
    out = {}
    for stmt, after in zip(tree.body, tree.body[1:]):
        if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            continue
        targets = (stmt.targets if isinstance(stmt, ast.Assign) else
                   [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
        if len(targets) != 1:
            continue
        names = targets[0].elts if isinstance(targets[0], ast.Tuple) else targets
        for target in names:
            if isinstance(target, ast.Name):
                out.setdefault(target.id, stmt.lineno)
    return tuple(out.items())


def _defines(module: ModuleType, obj) -> bool:
    """Whether ``obj`` is a function or class of ``module``'s own (decorated ones included:
    ``functools.lru_cache``, ``jax.jit``)."""
    inner = inspect.unwrap(obj) if callable(obj) else obj
    return ((inspect.isfunction(inner) or inspect.isclass(inner))
            and getattr(inner, "__module__", None) == module.__name__)


def _source_line(obj) -> int:
    try:
        return inspect.getsourcelines(inspect.unwrap(obj))[1]
    except (OSError, TypeError):
        return 0


def public_names(module: ModuleType | str) -> list[str]:
    """The public names of ``module`` (see the module docstring): its ``__all__`` as
    written, or else its own functions, classes and documented constants in source order."""
    if isinstance(module, str):
        module = importlib.import_module(module)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    own = {name: _source_line(obj) for name, obj in vars(module).items()
           if not name.startswith("_") and _defines(module, obj)}
    for name, line in _documented_assignments(module).items():
        if not name.startswith("_") and name not in own and hasattr(module, name):
            own[name] = line
    return sorted(own, key=own.get)
