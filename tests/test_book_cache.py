"""scripts/book_cache.py: a page never shows outputs computed with an older attnclust."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

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
    return tmp_path


def fill_build(root: Path) -> Path:
    build = root / "_build"
    for d in (".jupyter_cache", "jupyter_execute", ".doctrees", "html", "screenshots"):
        (build / d).mkdir(parents=True, exist_ok=True)
        (build / d / "f").write_text("old")
    return build


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
        lambda r: (r / "benchmarks").mkdir() or (r / "benchmarks" / "results.json").write_text("{}"),
    ],
    ids=["edit-init", "edit-nested", "add-module", "delete-module", "rename-module",
         "requirements", "pyproject", "benchmark-results"],
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
    run_script(repo)
    assert (build / ".jupyter_cache" / "f").exists()


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
