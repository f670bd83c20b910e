#!/usr/bin/env python3
"""Keep the book's execution cache honest: never serve outputs of an older attnclust.

`make book` runs this before `jupyter-book build`. Jupyter Book's execution cache
(jupyter-cache, in _build/.jupyter_cache) is keyed on each notebook's *code* only, and
Sphinx re-reads a page only when its *source* changed. So after an edit to the library a
plain rebuild would keep showing figures and numbers computed with the old library.

This script hashes everything that can change what a cell computes without changing the
chapter text: the library sources (attnclust/**/*.py), requirements.txt,
pyproject.toml, and the benchmark data that the Performance page reads
(benchmarks/results.json, benchmarks/book.json). The hash of the last build is stored in _build/.attnclust-hash. When it
differs (or is missing), the cache and everything derived from it is deleted:

    _build/.jupyter_cache   executed notebooks
    _build/jupyter_execute  notebooks and images written from the cache
    _build/.doctrees        Sphinx's pickled environment (else pages are not re-read)
    _build/html             the pages themselves

and the new hash is written, so the next build re-executes every page. Writing the hash
before the build is safe: whatever the build then caches was computed with the current
library. Screenshots and other files in _build are kept.

Usage: python scripts/book_cache.py [--root DIR] [--build-dir DIR] [--check]
  --check   only report (exit 1 when stale), delete nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

HASH_FILE = ".attnclust-hash"
# Paths (relative to the repository root) whose contents feed the hash.
HASHED_GLOBS = ("attnclust/**/*.py",)
HASHED_FILES = ("requirements.txt", "pyproject.toml", "benchmarks/results.json", "benchmarks/book.json")
# Build products that depend on executed outputs (relative to the build dir).
STALE_PATHS = (".jupyter_cache", "jupyter_execute", ".doctrees", "html")


def hashed_paths(root: Path) -> list[Path]:
    """The files whose contents define the library version, sorted for a stable hash."""
    paths: set[Path] = set()
    for pattern in HASHED_GLOBS:
        paths.update(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts)
    for name in HASHED_FILES:
        p = root / name
        if p.is_file():
            paths.add(p)
    return sorted(paths, key=lambda p: p.relative_to(root).as_posix())


def library_hash(root: Path) -> str:
    """sha256 over (relative path, contents) of every hashed file."""
    h = hashlib.sha256()
    for p in hashed_paths(root):
        rel = p.relative_to(root).as_posix().encode()
        data = p.read_bytes()
        h.update(len(rel).to_bytes(8, "little") + rel)
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def stored_hash(build_dir: Path) -> str | None:
    try:
        return (build_dir / HASH_FILE).read_text().strip() or None
    except FileNotFoundError:
        return None


def is_stale(root: Path, build_dir: Path) -> bool:
    return stored_hash(build_dir) != library_hash(root)


def ensure_fresh(root: Path, build_dir: Path) -> tuple[bool, list[Path]]:
    """Delete cached execution products if the library changed.

    Returns (changed, removed): whether the hash differed from the stored one, and the
    paths that were deleted.
    """
    current = library_hash(root)
    if stored_hash(build_dir) == current:
        return False, []
    removed = []
    for name in STALE_PATHS:
        p = build_dir / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
            removed.append(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
            removed.append(p)
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / HASH_FILE).write_text(current + "\n")
    return True, removed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root")
    ap.add_argument("--build-dir", type=Path, default=None, help="default: ROOT/_build")
    ap.add_argument("--check", action="store_true", help="report only; exit 1 when stale")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    build_dir = (args.build_dir or root / "_build").resolve()
    if args.check:
        stale = is_stale(root, build_dir)
        print("book cache: stale" if stale else "book cache: up to date")
        return 1 if stale else 0
    changed, removed = ensure_fresh(root, build_dir)
    if changed:
        names = ", ".join(p.relative_to(build_dir).as_posix() for p in removed) or "nothing cached yet"
        print(f"book cache: new attnclust/requirements hash; cleared: {names}; every page executes")
    else:
        print("book cache: attnclust unchanged since last build; cached outputs are reused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
