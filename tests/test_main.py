"""The command line ``python -m attnclust reproduce`` on a registry holding one cheap figure:
listing, drawing, unknown names (exit status 2), the subcommand hook. No book figure is
drawn here. Packaging: the base install (no extras) runs ``reproduce``, ``assignments``
says which extra it needs, and the package's import graph has no cycle."""

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from attnclust import __main__ as cli
from attnclust.assignments import EXTRA_MODULES
from attnclust.book.figures import _registry
from attnclust.book.figures._registry import FIGURES, FigureSpec
from import_graph import imported_names, private_uses


def _tiny(size="small"):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1 if size == "small" else 2])
    return fig


@pytest.fixture
def tiny_registry(monkeypatch):
    """Replace the registry by one cheap figure; restore it afterwards."""
    saved = dict(FIGURES)
    FIGURES.clear()
    FIGURES["tiny-line"] = FigureSpec("tiny-line", "icq_experiments", "A diagonal line.", _tiny)
    monkeypatch.setattr(_registry, "_load_all", lambda: None)
    yield
    FIGURES.clear()
    FIGURES.update(saved)


def test_list(tiny_registry, capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tiny-line" in out and "icq_experiments" in out and "A diagonal line." in out


def test_reproduce_one_writes_png_and_pdf(tiny_registry, tmp_path):
    assert cli.main(["reproduce", "tiny-line", "--out", str(tmp_path / "figs"), "--quiet"]) == 0
    assert (tmp_path / "figs" / "tiny-line.png").stat().st_size > 0
    assert (tmp_path / "figs" / "tiny-line.pdf").stat().st_size > 0


def test_reproduce_all_no_pdf_full_size(tiny_registry, tmp_path):
    assert cli.main(["reproduce", "all", "--out", str(tmp_path), "--size", "full", "--no-pdf", "--quiet"]) == 0
    assert (tmp_path / "tiny-line.png").exists()
    assert not (tmp_path / "tiny-line.pdf").exists()


def test_unknown_name_exits_2_with_list(tiny_registry, tmp_path, capsys):
    assert cli.main(["reproduce", "no-such-figure", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no-such-figure" in err and "tiny-line" in err
    assert not any(tmp_path.iterdir())


def test_missing_out_or_names_exit_2(tiny_registry, capsys):
    assert cli.main(["reproduce", "tiny-line"]) == 2
    assert cli.main(["reproduce", "--out", "x"]) == 2
    assert "--out" in capsys.readouterr().err


def test_bad_size_is_a_usage_error(tiny_registry):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "tiny-line", "--out", "x", "--size", "huge"])
    assert exc.value.code == 2


@pytest.mark.parametrize("dpi", ["0", "-3", "many"])
def test_bad_dpi_is_a_one_line_usage_error(tiny_registry, tmp_path, capsys, dpi):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "tiny-line", "--out", str(tmp_path / "f"), "--dpi", dpi])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and "--dpi" in err, err
    assert not (tmp_path / "f").exists()


def test_unwritable_out_is_one_line_before_drawing(tiny_registry, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert cli.main(["reproduce", "tiny-line", "--out", str(tmp_path / "file" / "figs")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot write" in err and "Traceback" not in err


def test_no_subcommand_prints_help(capsys):
    assert cli.main([]) == 2
    assert "reproduce" in capsys.readouterr().out


def test_subcommand_hook(monkeypatch, capsys):
    def add_hello(sub):
        p = sub.add_parser("hello")
        p.set_defaults(func=lambda args: print("hi") or 0)

    monkeypatch.setattr(cli, "SUBCOMMANDS", cli.SUBCOMMANDS + [add_hello])
    assert cli.main(["hello"]) == 0
    assert capsys.readouterr().out.strip() == "hi"


# Modules of the extras (pyproject.toml) that attnclust could import, absent from a bare
# `pip install attnclust`. (Not sphinx or torch: SciPy and jaxtyping use them whenever their
# names are in sys.modules.)
EXTRAS = (*EXTRA_MODULES, "jupyter_book", "myst_nb", "jupyter_cache", "matplotlib", "PIL",
          "ipywidgets", "IPython")


def _run_without_extras(*argv: str) -> subprocess.CompletedProcess:
    """``python -m attnclust ARGV`` in a fresh process where importing any of :data:`EXTRAS`
    fails (their sys.modules entries are None), as in a virtual environment with the base
    dependencies only (the closing check of the issue does it in a real one)."""
    code = ("import runpy, sys\n"
            f"for m in {EXTRAS!r}: sys.modules[m] = None\n"
            "runpy.run_module('attnclust', run_name='__main__', alter_sys=True)")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.integration
def test_module_entry_point_lists_real_registry():
    """``python -m attnclust reproduce --list`` in a fresh process (imports the figure
    modules, draws nothing)."""
    out = subprocess.run([sys.executable, "-m", "attnclust", "reproduce", "--list"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for name in ("icq-distortion", "icq-stack", "beyond-digits"):
        assert name in out.stdout


@pytest.mark.integration
def test_reproduce_without_figures_extra_names_it():
    """With the science core alone (no matplotlib), ``reproduce`` exits 1 with one line
    naming the extra to install, and no traceback."""
    out = _run_without_extras("reproduce", "--list")
    assert out.returncode == 1, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'attnclust[figures]'" in lines[0], out.stderr


@pytest.mark.integration
def test_assignments_without_extra_in_a_fresh_process():
    """Without the [assignments] extra, ``assignments build`` exits 1 with one line naming
    the extra, and no traceback: nothing on the way imports the extra first."""
    out = _run_without_extras("assignments", "build", "--out", "unused")
    assert out.returncode == 1, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'attnclust[assignments]'" in lines[0], out.stderr
    assert "nbformat" in lines[0]


@pytest.mark.parametrize("command", [["build", "--out", "OUT"],
                                     ["grade", "SUBMISSIONS", "--chapter", "mixtures"]])
def test_assignments_commands_check_the_extra_first(monkeypatch, tmp_path, capsys, command):
    """Each assignments command names a missing module of the extra and exits 1 before
    doing anything (no output folder, no grading)."""
    from attnclust.assignments import __main__ as asg_cli

    monkeypatch.setattr(asg_cli, "EXTRA_MODULES", ("nbformat", "attnclust_no_such_module"))
    argv = [str(tmp_path / a) if a.isupper() else a for a in command]
    with pytest.raises(SystemExit) as exit_:
        cli.main(["assignments", *argv])
    assert "(missing: attnclust_no_such_module)" in str(exit_.value.code)
    assert "pip install 'attnclust[assignments]'" in str(exit_.value.code)
    assert not list(tmp_path.iterdir())


PACKAGE = Path(cli.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at module level or inside a function
    (a deferred import is still a dependency), parent packages left out (Python imports a
    package before its modules)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for t in imported_names(ast.parse(path.read_text()), package):
            while t and t not in modules:  # attnclust.x.function -> attnclust.x
                t = t.rpartition(".")[0]
            if t and t != name and not name.startswith(t + "."):
                deps.add(t)
        graph[name] = deps
    return graph


def test_the_audiences_depend_one_way():
    """The science core imports nothing of the book's machinery or of the course tools, and
    the course tools nothing of the core or the book (they share only the command-line
    helpers, ``attnclust._cli``): each part can be read, installed and tested on its own."""
    graph = _import_graph()
    part = {name: _audience(PACKAGE.parent / Path(*name.split("."))) for name in graph}
    crossing = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                      if (part[m] == "core" and part[d] != "core")
                      or (part[m] == "assignments" and part[d] not in ("assignments",) and d != "attnclust._cli"))
    assert not crossing, crossing
    assert any(part[m] == "book" and part[d] == "core" for m, deps in graph.items() for d in deps)


def test_import_graph_is_acyclic():
    """No import cycle among the package's modules, deferred imports included: every module
    then imports first in a fresh interpreter, and each can be read on its own."""
    graph = _import_graph()
    assert {"attnclust.assignments.markdown", "attnclust.assignments.source"} <= set(graph)
    assert "attnclust.assignments.markdown" in graph["attnclust.assignments.source"]  # sees imports
    done: set[str] = set()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycles.append(path[path.index(module):] + [module])
            return
        if module in done:
            return
        for dep in sorted(graph[module]):
            visit(dep, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


PRIVATE_BY_DESIGN = {
    "attnclust.assignments._export._ATTNCLUST_MIME":
        "_export.py runs in a student's notebook namespace, where its names stay underscored",
}
"""Private names that another module may import, with the reason."""


def _private_uses() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    out = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        uses = {u for u in private_uses(ast.parse(path.read_text()), package, set(modules))
                if u.rpartition(".")[0] != name}
        if uses - set(PRIVATE_BY_DESIGN):
            out[name] = uses - set(PRIVATE_BY_DESIGN)
    return out


def test_no_module_uses_another_modules_private_names():
    """A module's underscore names are its own: another module of the package uses only its
    public names (the package-private modules ``_kernels``, ``_validate`` and ``_cli`` give
    theirs no underscore), so that a private helper can change without breaking a caller."""
    assert not _private_uses(), _private_uses()


def test_private_uses_are_found_in_every_form():
    """The check above sees an imported private name, one read off an imported module, and
    one read off a dotted import; not a private module imported as such, nor a public name."""
    modules = {"pkg", "pkg.a", "pkg.b", "pkg._k"}
    src = ("from .a import _f, g\nfrom . import b, _k\nimport pkg.a\nfrom pkg import a as A\n"
           "b._h(); pkg.a._i; A._j; _k.public; b.ok\n")
    assert private_uses(ast.parse(src), "pkg", modules) == {"pkg.a._f", "pkg.b._h", "pkg.a._i", "pkg.a._j"}


@pytest.mark.integration
def test_every_module_imports_in_a_fresh_interpreter():
    """Each module of the package imports, in reverse order of name (subpackages' modules
    before their packages are used), in one fresh interpreter with the full environment."""
    names = sorted(_import_graph(), reverse=True)
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr


def _requirement_names(reqs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def _extra(project: dict, name: str) -> set[str]:
    """The distributions an extra installs, the extras it names (``attnclust[a,b]``) included."""
    out = set()
    for req in project["optional-dependencies"][name]:
        if req.startswith("attnclust["):
            for sub in req[len("attnclust["):req.index("]")].split(","):
                out |= _extra(project, sub.strip())
        else:
            out |= _requirement_names([req])
    return out


def _audience(path: Path) -> str:
    """Which part of the package a file belongs to: the science core, the book's machinery
    (``attnclust.book``), the course tools (``attnclust.assignments``) or the command line."""
    parts = path.relative_to(PACKAGE).parts
    if parts and parts[0] in ("book", "assignments"):
        return parts[0]
    return "cli" if parts in (("__main__.py",), ("__main__",)) else "core"


def test_every_import_is_a_declared_dependency():
    """Each third-party module that a module of the package imports belongs to what its part
    of the package declares in pyproject.toml: the science core to the base dependencies
    (``pip install attnclust`` alone), ``attnclust.book`` to the [book] extra (figures,
    explorers, the build's glue), ``attnclust.assignments`` to [assignments] (whose modules
    are EXTRA_MODULES), the command line to the base and [figures] (``reproduce`` checks
    for matplotlib before it imports it)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    base = _requirement_names(project["dependencies"])
    allowed_by = {"core": base, "book": base | _extra(project, "book"),
                  "assignments": base | _extra(project, "assignments"),
                  "cli": base | _extra(project, "figures")}
    extra = _extra(project, "assignments")
    dists = importlib.metadata.packages_distributions()
    undeclared = set()
    for path in PACKAGE.rglob("*.py"):
        allowed = allowed_by[_audience(path)]
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for top in {n.split(".")[0] for n in names}:
                if top in sys.stdlib_module_names or top == "attnclust":
                    continue
                owners = {d.lower().replace("_", "-") for d in dists.get(top, [top])}
                if not owners & allowed:
                    undeclared.add(f"{path.relative_to(PACKAGE.parent)}: {top}")
    assert not undeclared, sorted(undeclared)
    assert {d.lower().replace("_", "-") for m in EXTRA_MODULES for d in dists[m]} <= extra
