"""scripts/book_cache.py: a page never shows outputs computed from older inputs (an older
attnclust, or an older data file that the page reads)."""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

from import_graph import imported_names

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "book_cache.py"

_spec = importlib.util.spec_from_file_location("book_cache", SCRIPT)
book_cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book_cache)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fake repository with a library, requirements and a previous build."""
    (tmp_path / "attnclust" / "sub").mkdir(parents=True)
    (tmp_path / "attnclust" / "__init__.py").write_text("X = 1\n")
    (tmp_path / "attnclust" / "sub" / "deep.py").write_text("Y = 2\n")
    (tmp_path / "requirements.txt").write_text("jax==0.10.2\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname='attnclust'\n")
    (tmp_path / "chapters").mkdir()
    for page in PAGES:
        (tmp_path / page).write_text(f"# {page}\n")
    (tmp_path / "chapters" / "references.bib").write_text("@book{a, year={1}}\n")
    (tmp_path / "_toc.yml").write_text("root: chapters/preface\n")
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "results.json").write_text("{}")
    (tmp_path / "benchmarks" / "book.json").write_text("{}")
    return tmp_path


PERF, INSTR, OTHER = "chapters/performance.md", "chapters/instructors.md", "chapters/mixtures.md"
PAGES = (PERF, INSTR, OTHER)


def fill_build(root: Path) -> Path:
    build = root / "_build"
    for d in (".jupyter_cache", "jupyter_execute", ".doctrees", "html", "screenshots"):
        (build / d).mkdir(parents=True, exist_ok=True)
        (build / d / "f").write_text("old")
    return build


def run_main(root: Path, *args: str) -> tuple[int, str]:
    """The script's ``main`` in this process (faster than :func:`run_script`): (status, stdout)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = book_cache.main(["--root", str(root), *args])
    return status, out.getvalue()


def run_script(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args],
        capture_output=True, text=True, check=False,
    )


def test_first_build_clears_and_writes_hash(repo: Path):
    build = fill_build(repo)
    r = run_script(repo)
    assert r.returncode == 0, r.stderr
    assert "every page executes" in r.stdout
    for d in book_cache.STALE_PATHS:
        assert not (build / d).exists(), d
    assert (build / "screenshots" / "f").exists()  # unrelated products survive
    assert (build / ".attnclust-hash").read_text().strip() == book_cache.library_hash(repo)
    assert json.loads((build / ".attnclust-pages.json").read_text()) == book_cache.page_hashes(repo)


def test_unchanged_library_keeps_cache(repo: Path):
    run_script(repo)
    build = fill_build(repo)
    r = run_script(repo)
    assert r.returncode == 0
    assert "reused" in r.stdout
    assert (build / ".jupyter_cache" / "f").exists()
    assert run_script(repo, "--check").returncode == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: (r / "attnclust" / "__init__.py").write_text("X = 3\n"),
        lambda r: (r / "attnclust" / "sub" / "deep.py").write_text("Y = 3\n"),
        lambda r: (r / "attnclust" / "new_module.py").write_text("Z = 0\n"),
        lambda r: (r / "attnclust" / "sub" / "deep.py").unlink(),
        lambda r: (r / "attnclust" / "sub" / "deep.py").rename(r / "attnclust" / "moved.py"),
        lambda r: (r / "requirements.txt").write_text("jax==0.10.3\n"),
        lambda r: (r / "pyproject.toml").write_text("[project]\nname='attnclust2'\n"),
    ],
    ids=["edit-init", "edit-nested", "add-module", "delete-module", "rename-module",
         "requirements", "pyproject"],
)
def test_library_change_clears_cache(repo: Path, edit):
    run_script(repo)
    build = fill_build(repo)
    edit(repo)
    assert run_script(repo, "--check").returncode == 1
    assert (build / ".jupyter_cache").exists()  # --check deletes nothing
    r = run_script(repo)
    assert r.returncode == 0
    for d in book_cache.STALE_PATHS:
        assert not (build / d).exists(), d
    assert run_script(repo, "--check").returncode == 0


def test_irrelevant_files_do_not_clear(repo: Path):
    run_script(repo)
    build = fill_build(repo)
    (repo / "attnclust" / "notes.txt").write_text("not code")
    pyc = repo / "attnclust" / "__pycache__"
    pyc.mkdir()
    (pyc / "x.py").write_text("# bytecode dir")
    (repo / "README.md").write_text("docs")
    (repo / "benchmarks" / "run.py").write_text("# the benchmarks' code")
    run_script(repo)
    assert (build / ".jupyter_cache" / "f").exists()
    assert (build / ".doctrees" / "f").exists()


def _cache_executions(cache_dir: Path, root: Path) -> None:
    """One execution of each page, recorded as myst-nb does (uri: the source's path)."""
    cache = get_cache(cache_dir)
    for i, page in enumerate(PAGES):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"x = {i}")])
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(root / page)), check_validity=False)


def cache_pages(root: Path) -> Path:
    """A build folder whose jupyter-cache database holds one execution of each page."""
    build = root / "_build"
    _cache_executions(build / ".jupyter_cache", root)
    for d in (".doctrees", "html"):
        (build / d).mkdir(exist_ok=True)
        (build / d / "f").write_text("old")
    return build


def cached_pages(build: Path) -> set[str]:
    return {Path(r.uri).relative_to(build.parent).as_posix()
            for r in get_cache(build / ".jupyter_cache").list_cache_records()}


@pytest.mark.parametrize(
    "path, text, pages",
    [
        ("benchmarks/gpu.json", '{"new": 1}', {PERF}),  # a GPU run committed
        ("benchmarks/results.json", '{"new": 1}', {PERF}),
        ("benchmarks/book.json", '{"chapters_s": {}}', {INSTR}),  # the plan's compute times
        ("_toc.yml", "root: chapters/mixtures\n", {PERF, INSTR}),
        (OTHER, "# edited chapter\n", {INSTR}),
        ("chapters/new_chapter.md", "# new\n", {INSTR}),
        ("chapters/references.bib", "@book{b, year={2}}\n", {INSTR}),
        ("_config.yml", "title: u\n", {INSTR}),
    ],
)
def test_page_input_change_reexecutes_that_page_only(repo: Path, path, text, pages):
    """Editing a file a page reads makes that page stale, and only it: its executions leave
    the cache, the other pages' stay; .doctrees goes (Sphinx re-reads), html stays."""
    run_main(repo)
    build = cache_pages(repo)
    assert run_main(repo, "--check")[0] == 0
    (repo / path).write_text(text)
    status, out = run_main(repo, "--check")
    assert status == 1 and all(p in out for p in pages), out
    assert cached_pages(build) == set(PAGES)  # --check deletes nothing
    assert run_main(repo)[0] == 0
    assert cached_pages(build) == set(PAGES) - pages
    assert not (build / ".doctrees").exists()
    assert (build / "html" / "f").exists()
    assert run_main(repo, "--check")[0] == 0


def test_page_records_match_a_moved_checkout(tmp_path: Path):
    """Executions recorded by a checkout at another path (myst-nb stores absolute paths)
    are still found by the page's path in the repository; no cache: nothing to remove."""
    elsewhere = Path("/elsewhere/attnclust")
    _cache_executions(tmp_path / "cache", elsewhere)
    assert book_cache.remove_executions(tmp_path / "cache", [PERF]) == [str(elsewhere / PERF)]
    left = {r.uri for r in get_cache(tmp_path / "cache").list_cache_records()}
    assert left == {str(elsewhere / INSTR), str(elsewhere / OTHER)}
    assert book_cache.remove_executions(tmp_path / "absent", [PERF]) == []


# --- PAGE_INPUTS covers every file a page reads -------------------------------------------

_EXT = ("json", "yml", "yaml", "bib", "md", "csv", "txt", "toml", "npz", "npy")
_NOT_READ = {"attnclust.assignments.editions": {"*.json"}, "attnclust.book": {"_toc.yml"}}
"""File names a module names without reading their contents: write_editions writes
OUT/autograder/<stem>.json (outside the repository), and repository_root only asks whether a
folder holds _toc.yml (to find the clone), which no page's output depends on."""


def _literals(source: str) -> set[str]:
    """String constants of Python ``source`` (an f-string with ``*`` for each field)."""
    tree = ast.parse(source)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out.add("".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
    return out


def _repo_files() -> list[str]:
    r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                       capture_output=True, text=True, check=True)
    return [f for f in r.stdout.splitlines() if not f.endswith(".py")]


def _file_names(literals: set[str], files: list[str]) -> set[str]:
    """The literals that name a repository data file: their last path part, with an
    extension of :data:`_EXT`, matches (as a glob) the name of a file in the repository."""
    names = {f.rsplit("/", 1)[-1] for f in files}
    out = set()
    for lit in literals:
        name = lit.rsplit("/", 1)[-1]
        if "\n" in lit or name.rsplit(".", 1)[-1] not in _EXT:
            continue
        if any(fnmatch.fnmatchcase(n, name) for n in names):
            out.add(name)
    return out


def _module_file(name: str) -> Path | None:
    path = ROOT / Path(*name.split("."))
    for p in (path.with_suffix(".py"), path / "__init__.py"):
        if p.is_file():
            return p
    return None


def _imports(tree: ast.AST, package: str) -> set[str]:
    """attnclust modules imported anywhere in ``tree`` (``package``: for relative imports)."""
    return {m for m in imported_names(tree, package) if m.split(".")[0] == "attnclust" and _module_file(m)}


def _closure(modules: set[str]) -> set[str]:
    """``modules`` and every attnclust module they import, at any depth; a package that
    loads its submodules on attribute access (a module ``__getattr__``) counts as all of its
    public ones (those ``__getattr__`` serves: never a module whose name starts with an
    underscore, which its own package imports by name)."""
    seen, todo = set(), list(modules)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        path = _module_file(m)
        tree = ast.parse(path.read_text())
        package = m if path.name == "__init__.py" else m.rsplit(".", 1)[0]
        todo += _imports(tree, package)
        if path.name == "__init__.py" and any(
                isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            todo += [f"{m}.{p.stem}" for p in path.parent.glob("*.py") if not p.stem.startswith("_")]
    return seen


def _code_cells(page: Path) -> list[str]:
    import jupytext

    return [c.source for c in jupytext.read(page).cells if c.cell_type == "code"]


def _figure_modules(cells: list[str]) -> set[str]:
    """Modules of the figures a page draws with ``make("name")``."""
    from attnclust.book.figures import FIGURES, names

    names()  # imports every figure module
    made = set()
    for src in cells:
        for node in ast.walk(ast.parse(src)):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "make"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                made.add(FIGURES[node.args[0].value].func.__module__)
    return made


@pytest.mark.slow
def test_page_inputs_cover_every_file_read():
    """Every data file that a chapter's code names, or that a library module it uses names
    (imported, at any depth, or drawing one of its figures), is a declared input of the page
    (or is hashed for every page). Catches a new ``json.loads(Path(...).read_text())``
    in a chapter or in the library that :data:`book_cache.PAGE_INPUTS` does not cover."""
    files = _repo_files()
    shared = {f.rsplit("/", 1)[-1] for f in book_cache.HASHED_FILES}
    missing = {}
    for page in sorted((ROOT / "chapters").glob("*.md")):
        cells = [src for src in _code_cells(page) if not src.lstrip().startswith(("%", "!"))]
        used = _closure(set().union(*(_imports(ast.parse(s), "") for s in cells))
                        | _figure_modules(cells))
        literals = set().union(*(_literals(s) for s in cells),
                               *(_literals(_module_file(m).read_text()) - _NOT_READ.get(m, set())
                                 for m in used))
        rel = page.relative_to(ROOT).as_posix()
        declared = {d.rsplit("/", 1)[-1] for d in book_cache.PAGE_INPUTS.get(rel, ())}
        named = _file_names(literals, files) - shared
        if gap := {n for n in named if not any(fnmatch.fnmatchcase(n, d) for d in declared)}:
            missing[rel] = sorted(gap)
    assert not missing, f"files read but not in PAGE_INPUTS: {missing}"


def test_page_inputs_name_existing_pages_and_files():
    """A declared page exists, and each of its inputs matches a file: a renamed file would
    silently drop out of the page's key."""
    for page, inputs in book_cache.PAGE_INPUTS.items():
        assert (ROOT / page).is_file(), page
        for pattern in set(inputs) - set(book_cache.OPTIONAL_INPUTS):
            assert list(ROOT.glob(pattern)), f"{page}: {pattern} matches no file"


def test_makefile_book_runs_cache_step_before_build():
    """`make book` must call the hash step before jupyter-book (dry run, nothing built)."""
    r = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "book"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    # -o treats the venv stamp as up to date, so no install commands appear
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    cache = [i for i, ln in enumerate(lines) if "scripts/book_cache.py" in ln]
    build = [i for i, ln in enumerate(lines) if "jupyter-book build" in ln]
    assert cache and build, r.stdout
    assert cache[0] < build[0]
    assert "-W" in lines[build[0]] and "-n" in lines[build[0]] and "--keep-going" in lines[build[0]]
