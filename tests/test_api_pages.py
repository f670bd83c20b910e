"""The API reference (chapters/api.md, chapters/api_modules.md, written from the package by
_ext/api_pages.py when the book is built) documents every public module and name of the
science core and of ``attnclust.book``; a module added to the package appears on it with no
edit of the pages; and the top level's docstring states the package's real import graph
and public surface. The pages are expanded here as Sphinx reads them (no book is built)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import attnclust
from attnclust import _public
from import_graph import imported_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnclust"
sys.path.insert(0, str(ROOT / "_ext"))
import api_pages  # noqa: E402

LEFT_OUT = ("assignments",)  # the grader: documented by its command line, not on these pages


def module_files() -> list[str]:
    """The public modules of the core and of attnclust.book, read off the files (not
    through the discovery the pages use)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] == "__main__" or any(p.startswith("_") for p in parts) or parts[1:2] == LEFT_OUT:
            continue
        out.append(".".join(parts))
    return out


def pages() -> tuple[str, str]:
    """api.md, and every other API page together, as Sphinx reads them."""
    sources = {p.stem: p.read_text() for p in sorted((ROOT / "chapters").glob("*.md"))}
    packages = api_pages.claimed(sources.values())
    others = [api_pages.expand(text, packages) for stem, text in sources.items()
              if stem != "api" and api_pages.MODULES.search(text)]
    return api_pages.expand(sources["api"], packages), "\n\n".join(others)


_DIRECTIVE = re.compile(r"^\.\. (auto\w+|py:data|currentmodule)::\s*(\S+)[ \t]*\n((?:[ \t]+:[\w-]+:.*\n)*)", re.M)


def entries(text: str) -> tuple[list[tuple[str, object]], dict[str, set[str]]]:
    """What the expanded pages document: (full name, object) of every function, class and
    constant, an automodule's members included; and each automodule's excluded members."""
    out, modules = [], {}
    current = None
    for kind, target, options in _DIRECTIVE.findall(text + "\n"):
        if kind == "currentmodule":
            current = target
        elif kind == "automodule":
            excluded = re.search(r":exclude-members:(.*)", options)
            modules[target] = {n.strip() for n in excluded[1].split(",")} if excluded else set()
            if ":members:" in options:
                mod = importlib.import_module(target)
                out += [(f"{target}.{n}", getattr(mod, n)) for n in _public.public_names(mod)
                        if n not in modules[target]]
        else:
            full = target if target.startswith("attnclust.") else f"{current}.{target}"
            module, _, name = full.rpartition(".")
            out.append((full, getattr(importlib.import_module(module), name)))
    return out, modules


def documented(text: str) -> tuple[set[int], set[str], dict[str, set[str]]]:
    """The ids of the functions and classes the pages document (unwrapped), the full names of
    the constants, and each automodule's excluded members."""
    found, modules = entries(text)
    objects = {id(inspect.unwrap(o)) for _, o in found if api_pages._kind(o) != "data"}
    return objects, {n for n, o in found if api_pages._kind(o) == "data"}, modules


def _has_doc(mod, name) -> bool:
    obj = getattr(mod, name)
    if api_pages._kind(obj) != "data":
        return bool((obj.__doc__ or "").strip())
    return name in _public._documented_assignments(mod)


def test_every_public_module_and_name_is_on_the_api_pages():
    api, modules_page = pages()
    objects, data, automodules = documented(api + "\n" + modules_page)
    missing = []
    for module in module_files():
        mod = importlib.import_module(module)
        names = _public.public_names(mod)
        if module != "attnclust" and module not in api_pages.top_level_modules():
            assert f"`{module}`" in modules_page, f"{module} has no section on the API pages"
            if not names:
                assert module in automodules, f"{module}: its docstring is not on the API pages"
        for name in names:
            obj = getattr(mod, name)
            if api_pages._kind(obj) == "data":
                ok = f"{module}.{name}" in data or (name in attnclust.__all__ and any(
                    d.endswith(f".{name}") and getattr(importlib.import_module(d.rpartition(".")[0]), name) is obj
                    for d in data))
            else:
                ok = id(inspect.unwrap(obj)) in objects
            if not ok:
                missing.append(f"{module}.{name}")
    assert not missing, f"public but not on the API pages: {missing}"


def test_what_automodule_documents_has_a_docstring():
    """automodule's :members: leaves out a member without a docstring: every public name of
    a module documented that way must have one (a constant: a string after it)."""
    _, modules_page = pages()
    _, _, automodules = documented(modules_page)
    bare = [f"{m}.{n}" for m, excluded in automodules.items()
            for n in _public.public_names(m) if n not in excluded and not _has_doc(importlib.import_module(m), n)]
    assert not bare, f"public names without a docstring (autodoc would leave them out): {bare}"


def test_nothing_is_documented_twice():
    api, modules_page = pages()
    found, _ = entries(api + "\n" + modules_page)
    names = [n for n, _ in found]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    ids = {}
    for name, obj in found:
        if api_pages._kind(obj) != "data":
            ids.setdefault(id(inspect.unwrap(obj)), []).append(name)
    assert [v for v in ids.values() if len(v) > 1] == [], "one function or class under two names"


def test_the_top_level_reexports_every_public_function_and_class_of_its_modules():
    assert len(api_pages.top_level_modules()) >= 6
    for module in api_pages.top_level_modules():
        mod = importlib.import_module(module)
        for name in _public.public_names(mod):
            obj = getattr(mod, name)
            if api_pages._kind(obj) != "data":
                assert name in attnclust.__all__ and getattr(attnclust, name) is obj, f"{module}.{name}"


def test_every_public_module_is_an_attribute_of_its_package():
    for module in module_files():
        parent, _, name = module.rpartition(".")
        if parent:
            assert getattr(importlib.import_module(parent), name) is importlib.import_module(module)
    with pytest.raises(AttributeError, match="no_such_module"):
        attnclust.no_such_module


def _core_imports() -> dict[str, set[str]]:
    """Core module (short name) -> the core modules it imports (short names)."""
    out = {}
    for module in module_files():
        parts = module.split(".")
        if len(parts) != 2 or parts[1] == "book":
            continue
        path = PACKAGE / f"{parts[1]}.py"
        if path.exists():
            names = imported_names(ast.parse(path.read_text()), "attnclust")
        else:  # a subpackage: what any of its files imports, each resolved in its own package
            names = set()
            for f in (PACKAGE / parts[1]).rglob("*.py"):
                package = ".".join(("attnclust", *f.relative_to(PACKAGE).parent.parts))
                names |= imported_names(ast.parse(f.read_text()), package)
        out[parts[1]] = {n.split(".")[1] for n in names if n.startswith("attnclust.") and n.count(".")}
    return {mod: deps & set(out) - {mod} for mod, deps in out.items()}


def _depends(graph, a, b) -> bool:
    """Whether b imports a, directly or through others."""
    seen, todo = set(), [b]
    while todo:
        m = todo.pop()
        for d in graph.get(m, ()):
            if d == a:
                return True
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return False


def test_the_flow_of_the_package_docstring_is_the_import_graph():
    graph = _core_imports()
    doc = attnclust.__doc__
    arrows = [line.strip().split(" -> ") for line in doc.splitlines() if " -> " in line and "``" not in line]
    assert arrows
    for chain in arrows:
        for a, b in zip(chain, chain[1:]):
            assert _depends(graph, a, b), f"the docstring says {b} builds on {a}; it does not import it"
    named = {m for chain in arrows for m in chain}
    alone = set(re.findall(r"``(\w+)``", doc.split("import none of the")[0].rsplit("\n\n", 1)[-1]))
    for mod, deps in graph.items():
        assert mod in named | alone, f"the docstring's flow does not name {mod}"
        if mod in alone:
            assert not deps, f"the docstring says {mod} imports none of the others; it imports {deps}"
    for a, b in ((m, n) for n, deps in graph.items() for m in deps):
        assert _path_shown(arrows, a, b), f"{b} imports {a}: no arrow of the docstring shows it"


def _path_shown(arrows, a, b) -> bool:
    """Whether the arrows of the docstring lead from a to b."""
    edges = {}
    for chain in arrows:
        for x, y in zip(chain, chain[1:]):
            edges.setdefault(y, set()).add(x)
    return _depends(edges, a, b)


def test_the_api_page_sections_follow_the_import_graph():
    graph = _core_imports()
    order = [m.rsplit(".", 1)[-1] for m in api_pages.NAMES.findall((ROOT / "chapters" / "api.md").read_text())]
    assert sorted(order) == sorted(m.rsplit(".", 1)[-1] for m in api_pages.top_level_modules())
    for i, early in enumerate(order):
        for late in order[i + 1:]:
            assert not _depends(graph, late, early), f"api.md shows {early} before {late}, which it builds on"


def test_the_pages_are_written_by_the_extension():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["api_pages"] == "_ext/"
    api, modules_page = pages()
    assert "{api-" not in api + modules_page
    assert api_pages.REST.search((ROOT / "chapters" / "api.md").read_text())
    assert api_pages.MODULES.search((ROOT / "chapters" / "api_modules.md").read_text())[1] == "attnclust"


@pytest.fixture
def dropped(tmp_path, monkeypatch):
    """A module ``attnclust.toy_api_module`` with one public function, dropped into the
    package's path."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "toy_api_module.py").write_text(textwrap.dedent('''
        """A module nobody listed."""

        def toy_function(x):
            """Return x."""
            return x
        '''))
    monkeypatch.setattr(attnclust, "__path__", [*attnclust.__path__, str(folder)])
    importlib.invalidate_caches()
    yield "attnclust.toy_api_module"
    sys.modules.pop("attnclust.toy_api_module", None)


def test_a_module_added_to_the_package_appears_on_the_modules_page(dropped):
    """On the page of the core's modules (no marker of another page covers it)."""
    _, modules_page = pages()
    assert f"## `{dropped}`" in modules_page and f".. automodule:: {dropped}\n   :members:" in modules_page


def test_a_module_whose_names_the_top_level_reexports_gets_a_section_of_its_own(dropped, monkeypatch):
    toy = importlib.import_module(dropped)
    monkeypatch.setattr(attnclust, "toy_function", toy.toy_function, raising=False)
    monkeypatch.setattr(attnclust, "__all__", [*attnclust.__all__, "toy_function"])
    api, modules_page = pages()
    assert f"## `{dropped}`" in api and ".. autofunction:: toy_function" in api
    assert f"`{dropped}`" not in modules_page


def test_public_names_follow_the_rule(tmp_path, monkeypatch):
    """A module's public names: its ``__all__``, or its own functions and classes (decorated
    ones too) and the constants followed by a docstring, in source order; not what it
    imports, not a name with a leading underscore, not an undocumented constant."""
    (tmp_path / "toy_rule.py").write_text(textwrap.dedent('''
        import functools
        from math import sqrt

        LIMIT = 3
        """A documented constant."""
        UNDOCUMENTED = 4
        A, B = 1, 2
        """Both documented."""

        def own():
            """Own function."""

        @functools.lru_cache
        def cached():
            """Decorated."""

        def _private():
            pass

        class Thing:
            """A class."""
        '''))
    (tmp_path / "toy_all.py").write_text('from math import sqrt\n__all__ = ["sqrt", "later"]\nlater = 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert _public.public_names("toy_rule") == ["LIMIT", "A", "B", "own", "cached", "Thing"]
        assert _public.public_names("toy_all") == ["sqrt", "later"]
    finally:
        sys.modules.pop("toy_rule", None)
        sys.modules.pop("toy_all", None)


def test_a_module_is_on_the_page_of_the_innermost_package_a_marker_names(tmp_path, monkeypatch):
    import attnclust.book.figures as figures

    folder = tmp_path / "figs"
    folder.mkdir()
    (folder / "planted_api_figures.py").write_text('def planted():\n    """A figure helper."""\n')
    monkeypatch.setattr(figures, "__path__", [*figures.__path__, str(folder)])
    importlib.invalidate_caches()
    try:
        sources = {p.stem: p.read_text() for p in (ROOT / "chapters").glob("*.md")}
        packages = api_pages.claimed(sources.values())
        on = {stem for stem, text in sources.items() if api_pages.MODULES.search(text)
              and "`attnclust.book.figures.planted_api_figures`" in api_pages.expand(text, packages)}
        assert on == {"api_figures"}
        with pytest.raises(ValueError, match="no api-modules marker"):
            api_pages.module_pages(["attnclust.book"])
    finally:
        sys.modules.pop("attnclust.book.figures.planted_api_figures", None)
