"""The API reference pages written from the package (loaded from _config.yml).

The API pages (chapters/api*.md) hold prose and markers, fenced blocks that this extension
replaces when Sphinx reads the page (``source-read``) by MyST text with the autodoc
directives of what the package holds, found in the package itself (``attnclust._public``),
so that no module or name can be left off:

- ```` ```{api-names} attnclust.mixture ```` (api.md, one per section): every public name
  of that module. A function or class that the top level re-exports is documented as
  ``attnclust.<name>`` (what the chapters call ``ac.<name>``); any other name (a constant,
  a type) as ``attnclust.<module>.<name>``.
- ```` ```{api-names-rest} ```` (api.md, last): a section for each module of the top
  level's re-exports that has no ``api-names`` marker above.
- ```` ```{api-modules} attnclust.book ```` (any page, any number): a section for every
  public module inside that package (``automodule`` with ``:members:``), a package before
  its modules, except the modules of api.md and those that a marker of a package inside
  it covers (the markers of all pages are read: a module goes to the longest package that
  holds it; ``{api-modules} attnclust`` takes the rest). A function or class already
  documented (on api.md, on the page of a shorter package, or by a package that re-exports
  its module's names, as ``attnclust.symbolic`` does) is not documented again.

Why an extension, not sphinx-autoapi or ``autosummary :recursive:``: both document a module
tree by the files they find, with one page (or one stub) a module, and neither knows the
book's rule for what is public (``attnclust._public``: ``__all__``, and the top level's
re-exports documented once under the name the chapters use, ``ac.<name>``), nor spreads one
package over several pages by the longest-package rule above without documenting a name
twice; autoapi also parses the source instead of importing it, so the jaxtyping annotations
that ``api_types`` rewrites would not be the ones it shows. What is left to Sphinx is its own
``automodule``/``autofunction``, which this extension only writes out.

The course grader (``attnclust.assignments``) has its own documentation (its command line)
and is not on these pages. :func:`expand` is the whole transformation (plain text to plain
text), so the tests check the pages without building the book.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import types
from pathlib import Path

from attnclust._public import public_modules, public_names

NAMES = re.compile(r"^```\{api-names\}[ \t]+(\S+)[ \t]*\n```[ \t]*$", re.M)
REST = re.compile(r"^```\{api-names-rest\}[ \t]*\n```[ \t]*$", re.M)
MODULES = re.compile(r"^```\{api-modules\}[ \t]+(\S+)[ \t]*\n```[ \t]*$", re.M)
NOT_ON_THE_PAGES = ("attnclust.assignments",)
"""Public packages that the API pages leave out (with everything inside them)."""


def _kind(obj) -> str:
    inner = inspect.unwrap(obj) if callable(obj) else obj
    if inspect.isclass(inner):
        return "class"
    if inspect.isfunction(inner):
        return "function"
    return "data"


def top_level_modules() -> list[str]:
    """The modules that define the functions and classes ``attnclust`` re-exports, sorted."""
    import attnclust

    mods = {inspect.unwrap(obj).__module__ for name in attnclust.__all__
            if _kind(obj := getattr(attnclust, name)) != "data"}
    return sorted(mods)


def _alias(module, name: str) -> list[str]:
    """A type alias (``KeyLike = Union[...]``) as a ``py:data`` directive: its docstring and
    the alias as written in the source. (autodoc would write the alias from the object, and
    jaxtyping's types come out of that garbled.)"""
    source = inspect.getsource(module)
    body = ast.parse(source).body
    for stmt, after in zip(body, body[1:]):
        if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == [name]:
            doc = inspect.cleandoc(after.value.value) if isinstance(after, ast.Expr) else ""
            value = " ".join(ast.get_source_segment(source, stmt.value).split())
            return [f".. py:data:: {module.__name__}.{name}", "",
                    *(f"   {line}" if line else "" for line in doc.splitlines()), "",
                    f"   Alias of ``{value}``."]
    raise ValueError(f"{module.__name__}.{name}: no assignment found for the type alias")


def _is_alias(obj) -> bool:
    return isinstance(obj, types.GenericAlias) or type(obj).__module__ in ("typing", "collections.abc")


def names_block(module: str) -> str:
    """The MyST text documenting every public name of ``module`` (see the module docstring)."""
    import attnclust

    mod = importlib.import_module(module)
    lines = ["```{eval-rst}", ".. currentmodule:: attnclust", ""]
    for name in public_names(mod):
        obj = getattr(mod, name)
        kind = _kind(obj)
        if kind == "data" and _is_alias(obj):
            lines += [*_alias(mod, name), ""]
            continue
        top = kind != "data" and getattr(attnclust, name, None) is obj and name in attnclust.__all__
        lines.append(f".. auto{kind}:: {name if top else f'{module}.{name}'}")
        if kind == "class":
            lines.append("   :members:")
        lines.append("")
    lines[-1] = "```"
    return "\n".join(lines)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _heading(module: str, top: int = 1) -> str:
    """The section heading of ``module``, a module at dotted depth ``top`` at level 2."""
    return f"{'#' * min(2 + module.count('.') - top, 6)} `{module}`"


def claimed(texts) -> list[str]:
    """The packages that the ``api-modules`` markers of the page sources ``texts`` name."""
    return sorted({p for text in texts for p in MODULES.findall(text)})


def module_pages(packages: list[str]) -> dict[str, str]:
    """Every public module of ``attnclust`` that is not on api.md (nor left out) -> the
    package of the marker that documents it: the longest of ``packages`` it is inside.
    In page order: the modules of a shorter package first, a package before its modules."""
    skip = set(top_level_modules()) | {"attnclust"}
    out = {}
    for module in public_modules("attnclust"):
        if module in skip or any(_inside(module, p) for p in NOT_ON_THE_PAGES):
            continue
        owners = [p for p in packages if _inside(module, p)]
        if not owners:
            raise ValueError(f"{module}: no api-modules marker of the pages covers it; "
                             f"markers: {', '.join(packages) or 'none'}")
        out[module] = max(owners, key=len)
    return dict(sorted(out.items(), key=lambda item: len(item[1])))  # stable sort


def _documented_on_api_page() -> dict[int, str]:
    """id of each function and class that api.md documents -> its documented name."""
    out = {}
    for module in top_level_modules():
        mod = importlib.import_module(module)
        for name in public_names(mod):
            obj = getattr(mod, name)
            if _kind(obj) != "data":
                out.setdefault(id(inspect.unwrap(obj)), f"{module}.{name}")
    return out


def modules_text(package: str, packages: list[str]) -> str:
    """The MyST text of the marker ``{api-modules} package``, given the packages of every
    marker of the book (each module is documented once, under the marker that covers it;
    a function or class documented on an earlier page, or by an earlier module, is not
    documented again)."""
    documented = _documented_on_api_page()
    pages = module_pages(packages)
    top = package.count(".") + (package not in pages)  # the package's own section, if any, at level 2
    parts = []
    for module, owner in pages.items():
        mod = importlib.import_module(module)
        names = public_names(mod)
        elsewhere = {}
        for name in names:
            obj = getattr(mod, name)
            if _kind(obj) == "data":
                continue
            key = id(inspect.unwrap(obj))
            if key in documented:
                elsewhere[name] = documented[key]
            else:
                documented[key] = f"{module}.{name}"
        if owner != package:
            continue
        parts.append(_heading(module, top))
        if names and len(elsewhere) == len(names):
            owners = sorted({d.rsplit(".", 1)[0] for d in elsewhere.values()})
            parts.append("Every public name of this module is documented under "
                         + ", ".join(f"`{o}`" for o in owners) + ", which re-exports it.")
            continue
        block = ["```{eval-rst}", f".. automodule:: {module}"]
        if names:
            block.append("   :members:")
        if elsewhere:
            block.append(f"   :exclude-members: {', '.join(elsewhere)}")
        parts.append("\n".join([*block, "```"]))
    return "\n\n".join(parts)


def expand(text: str, packages: list[str]) -> str:
    """The page source with its markers replaced (see the module docstring); ``packages``:
    the packages of every ``api-modules`` marker of the book (:func:`claimed`)."""
    if REST.search(text):
        named = set(NAMES.findall(text))
        rest = [m for m in top_level_modules() if m not in named]
        text = REST.sub(lambda _: "\n\n".join(f"{_heading(m)}\n\n{names_block(m)}" for m in rest), text)
    text = NAMES.sub(lambda m: names_block(m[1]), text)
    return MODULES.sub(lambda m: modules_text(m[1], packages), text)


def _book_packages(app) -> list[str]:
    """The packages of the api-modules markers of every page of the book."""
    paths = [Path(app.env.doc2path(doc)) for doc in sorted(app.env.found_docs)]
    return claimed(p.read_text(encoding="utf-8") for p in paths if p.suffix == ".md")


_AS_WRITTEN: dict[str, list[str]] = {}


def keep_as_written(app, what, name, obj, options, lines) -> None:
    """Before Napoleon (priority 500): the docstring of a constant or attribute as written."""
    if what in ("data", "attribute"):
        _AS_WRITTEN[name] = list(lines)


def restore_as_written(app, what, name, obj, options, lines) -> None:
    """After Napoleon: a constant's or attribute's docstring back as written. Napoleon reads
    the words before a first colon ("Keys per tile: ...") as the constant's type, a
    cross-reference that cannot resolve; these docstrings have no sections to parse."""
    if what in ("data", "attribute") and name in _AS_WRITTEN:
        lines[:] = _AS_WRITTEN.pop(name)


def on_source_read(app, docname: str, source: list[str]) -> None:
    if "{api-" not in source[0]:
        return
    expanded = expand(source[0], _book_packages(app))
    if expanded != source[0]:
        source[0] = expanded
        # a module added to the package (a new file) changes its folder: read the page again
        package = Path(importlib.import_module("attnclust").__file__).parent
        for folder in [package, *(p for p in package.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
            app.env.note_dependency(str(folder))


def setup(app):
    app.connect("source-read", on_source_read)
    app.connect("autodoc-process-docstring", keep_as_written, priority=400)
    app.connect("autodoc-process-docstring", restore_as_written, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
