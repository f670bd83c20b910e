#!/usr/bin/env python3
"""Keep the book's execution cache honest: a page never shows outputs computed from older inputs.

`make book` runs this before `jupyter-book build`. Jupyter Book's execution cache
(jupyter-cache, in _build/.jupyter_cache) is keyed on each notebook's *code* only, and
Sphinx re-reads a page only when its *source* changed. So after an edit to the library, or to
a data file that a page reads, a plain rebuild would keep showing the old figures and numbers.

Two keys, stored in the build folder before the build (safe: whatever the build then caches
was computed from the current inputs):

- the library hash (_build/.attnclust-hash): attnclust/**/*.py, the book's Sphinx
  extensions _ext/*.py, requirements.txt and pyproject.toml, which every page may use. When it differs (or is missing), the cache and
  everything derived from it is deleted and every page executes again:

      _build/.jupyter_cache   executed notebooks
      _build/jupyter_execute  notebooks and images written from the cache
      _build/.doctrees        Sphinx's pickled environment (else pages are not re-read)
      _build/html             the pages themselves

- one hash per page (_build/.attnclust-pages.json) over the repository files that the page
  reads besides the library, itself or through a library function (:data:`PAGE_INPUTS`;
  tests/test_book_cache.py checks the table against the file names in the chapters' code and
  in the library modules they use). When a page's hash differs, only that page's executions
  are removed from the cache, and .doctrees, so that Sphinx re-reads the pages: the others
  come back from the cache without executing.

Screenshots and other files in _build are kept.

Usage: python scripts/book_cache.py [--root DIR] [--build-dir DIR] [--check]
  --check   only report (exit 1 when stale), delete nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

HASH_FILE = ".attnclust-hash"
PAGES_FILE = ".attnclust-pages.json"
CACHE_DIR = ".jupyter_cache"
# Paths (relative to the repository root) whose contents feed the library hash: the library,
# and the book's Sphinx extensions (_ext/: the API pages render the library's signatures
# through _ext/api_types.py, and Sphinx does not re-read a page when an extension changes).
HASHED_GLOBS = ("attnclust/**/*.py", "_ext/*.py")
HASHED_FILES = ("requirements.txt", "pyproject.toml")
# Page source -> the files (globs, relative to the root) it reads besides the library.
PAGE_INPUTS: dict[str, tuple[str, ...]] = {
    # ROOT is found by _toc.yml; results.json through attnclust.book.figures.performance, and the
    # GPU run's gpu.json once one is committed (a pattern is globbed at every build, so a file
    # that does not exist yet is followed from the build after it appears)
    "chapters/performance.md": ("_toc.yml", "benchmarks/results.json", "benchmarks/gpu.json"),
    # attnclust.assignments: course_chapters reads _toc.yml, parse_chapter the chapters, and
    # markdown.References every chapter, the bibliography and the MathJax macros; the teaching
    # plan's reading minutes (attnclust.book.reading: the chapters) and compute times
    # (reading.compute_seconds: benchmarks/book.json, written by make bench-book)
    "chapters/instructors.md": ("_toc.yml", "_config.yml", "chapters/*.md",
                                "chapters/references.bib", "benchmarks/book.json"),
    # the grading appendix: the same course tools, on every chapter with exercises, and the
    # compute times (benchmarks/book.json) its example reads through the course plan
    "chapters/grading.md": ("_toc.yml", "_config.yml", "chapters/*.md", "chapters/references.bib",
                            "benchmarks/book.json"),
    # committed results files (attnclust.book.results.load: results/NAME.json), read through
    # attnclust.book.experiments.landscape / .training / .beyond
    "chapters/training_dynamics.md": ("attnclust/book/results/*.json",),
    "chapters/beyond.md": ("attnclust/book/results/*.json",),
    # the benchmark's committed sweeps (results/icq-sweeps.json) and, through the modules it
    # imports, the benchmark timings of the Performance page
    "chapters/icq_experiments.md": ("attnclust/book/results/*.json", "benchmarks/results.json"),
}
# Inputs that may not exist yet (a GPU run is committed only when one was made); every other
# input must match a file (tests/test_book_cache.py), so that a rename cannot drop it silently.
OPTIONAL_INPUTS = ("benchmarks/gpu.json",)
# Build products that depend on executed outputs (relative to the build dir).
STALE_PATHS = (CACHE_DIR, "jupyter_execute", ".doctrees", "html")


def _files(root: Path, patterns) -> list[Path]:
    """Files matching ``patterns`` under ``root``, sorted by relative path for a stable hash."""
    paths: set[Path] = set()
    for pattern in patterns:
        paths.update(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts)
    return sorted(paths, key=lambda p: p.relative_to(root).as_posix())


def hashed_paths(root: Path) -> list[Path]:
    """The files whose contents define the library version, sorted for a stable hash."""
    return _files(root, HASHED_GLOBS + HASHED_FILES)


def _digest(root: Path, paths: list[Path]) -> str:
    """sha256 over (relative path, contents) of ``paths``."""
    h = hashlib.sha256()
    for p in paths:
        rel = p.relative_to(root).as_posix().encode()
        data = p.read_bytes()
        h.update(len(rel).to_bytes(8, "little") + rel)
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def library_hash(root: Path) -> str:
    """sha256 over (relative path, contents) of every file of :func:`hashed_paths`."""
    return _digest(root, hashed_paths(root))


def page_hashes(root: Path) -> dict[str, str]:
    """Page source -> sha256 over the files of its :data:`PAGE_INPUTS`."""
    return {page: _digest(root, _files(root, inputs)) for page, inputs in PAGE_INPUTS.items()}


def stored_hash(build_dir: Path) -> str | None:
    try:
        return (build_dir / HASH_FILE).read_text().strip() or None
    except FileNotFoundError:
        return None


def stored_page_hashes(build_dir: Path) -> dict[str, str]:
    try:
        return json.loads((build_dir / PAGES_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def stale(root: Path, build_dir: Path) -> list[str]:
    """What is stale: ``["attnclust"]`` when the library hash differs (every page), else the
    pages whose inputs changed since the last build (empty: up to date)."""
    if stored_hash(build_dir) != library_hash(root):
        return ["attnclust"]
    old = stored_page_hashes(build_dir)
    return [page for page, h in page_hashes(root).items() if old.get(page) != h]


def _remove(p: Path) -> bool:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
        return True
    if p.exists() or p.is_symlink():
        p.unlink()
        return True
    return False


def remove_executions(cache_dir: Path, pages: list[str]) -> list[str]:
    """Remove the jupyter-cache records of ``pages`` (sources relative to the root, matched
    on the end of the record's path, so a moved checkout matches too); return their paths."""
    if not cache_dir.is_dir():
        return []
    from jupyter_cache import get_cache

    cache = get_cache(cache_dir)
    removed = []
    for record in cache.list_cache_records():
        uri = Path(record.uri).as_posix()
        if any(uri == page or uri.endswith("/" + page) for page in pages):
            cache.remove_cache(record.pk)
            removed.append(record.uri)
    return removed


def ensure_fresh(root: Path, build_dir: Path) -> tuple[list[str], list[str]]:
    """Delete what is stale (see the module docstring) and store the new hashes.

    Returns (stale, removed): :func:`stale`'s answer, and what was deleted (build paths
    relative to ``build_dir``, and the cached executions' page paths).
    """
    what = stale(root, build_dir)
    removed: list[str] = []
    if what == ["attnclust"]:
        removed = [name for name in STALE_PATHS if _remove(build_dir / name)]
    elif what:
        removed = remove_executions(build_dir / CACHE_DIR, what)
        if _remove(build_dir / ".doctrees"):
            removed.append(".doctrees")
    if what:
        build_dir.mkdir(parents=True, exist_ok=True)
        (build_dir / HASH_FILE).write_text(library_hash(root) + "\n")
        (build_dir / PAGES_FILE).write_text(json.dumps(page_hashes(root), indent=1) + "\n")
    return what, removed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root")
    ap.add_argument("--build-dir", type=Path, default=None, help="default: ROOT/_build")
    ap.add_argument("--check", action="store_true", help="report only; exit 1 when stale")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    build_dir = (args.build_dir or root / "_build").resolve()
    if args.check:
        what = stale(root, build_dir)
        print(f"book cache: stale ({', '.join(what)})" if what else "book cache: up to date")
        return 1 if what else 0
    what, removed = ensure_fresh(root, build_dir)
    names = ", ".join(removed) or "nothing cached yet"
    if what == ["attnclust"]:
        print(f"book cache: new attnclust/requirements hash; cleared: {names}; every page executes")
    elif what:
        print(f"book cache: inputs of {', '.join(what)} changed; cleared: {names}; "
              "these pages execute, the others come from the cache")
    else:
        print("book cache: attnclust and the pages' inputs unchanged; cached outputs are reused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
