#!/usr/bin/env python3
"""Repair JAX's persistent compilation cache before the tests or the book use it.

With a size limit (the Makefile sets ``JAX_COMPILATION_CACHE_MAX_SIZE``, which turns on the
cache's file lock), JAX stores each compiled program as two files, ``KEY-cache`` then
``KEY-atime`` (its last use), and every later write first reads the ``-atime`` file of every
entry to choose what to evict. A process killed between the two writes (a test's timeout,
Ctrl-C during a build) leaves a ``-cache`` file without its ``-atime``; from then on every
write in every process fails with "Error writing persistent compilation cache entry ...
FileNotFoundError" on stderr, and ``make book`` (which fails on stderr in a cell) fails on
every page. Such half entries are deleted here (the program is compiled again when next
needed), as are ``-atime`` files left without their ``-cache``.

``make book`` runs this first; tests/conftest.py calls :func:`repair` at the start of every
pytest run (``make unit``, ``make quick``, ``make browser`` or pytest directly).

Usage: python scripts/jax_cache.py [CACHE_DIR]   (default: $JAX_COMPILATION_CACHE_DIR)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE_SUFFIX, ATIME_SUFFIX = "-cache", "-atime"


def repair(cache_dir: str | os.PathLike | None) -> list[str]:
    """Delete the half-written entries of the cache in ``cache_dir`` (nothing when it is
    empty, None or missing) and return their keys, sorted."""
    if not cache_dir or not Path(cache_dir).is_dir():
        return []
    root = Path(cache_dir)
    names = {p.name for p in root.iterdir()}
    halves = []
    for name in names:
        for suffix, other in ((CACHE_SUFFIX, ATIME_SUFFIX), (ATIME_SUFFIX, CACHE_SUFFIX)):
            if name.endswith(suffix) and name.removesuffix(suffix) + other not in names:
                (root / name).unlink(missing_ok=True)
                halves.append(name.removesuffix(suffix))
    return sorted(halves)


def main(argv: list[str]) -> int:
    cache_dir = argv[0] if argv else os.environ.get("JAX_COMPILATION_CACHE_DIR")
    removed = repair(cache_dir)
    if removed:
        print(f"JAX compilation cache: removed {len(removed)} half-written entries from {cache_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
