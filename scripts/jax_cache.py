#!/usr/bin/env python3
"""Repair JAX's persistent compilation cache before the tests or the book use it.

JAX stores each compiled program as a file ``KEY-cache`` (compressed with zstandard when it
is installed, else zlib) and writes it in place, not atomically. A process killed during
that write (a test's timeout, Ctrl-C during a build) leaves a truncated entry: every later
process that needs the program warns "Error reading persistent compilation cache entry"
on stderr, compiles it again and never replaces the entry (JAX does not overwrite an
existing key), and ``make book`` (which fails on stderr in a cell) fails on every page that
compiles it. Entries that do not decompress are deleted here.

With a size limit (``JAX_COMPILATION_CACHE_MAX_SIZE`` other than -1; scripts/jax_env.py
leaves JAX's default, no limit) JAX also keeps a ``KEY-atime`` file per entry and, before every
write, reads the ``-atime`` file of every entry to choose what to evict; a ``-cache``
without its ``-atime`` then makes every write fail with a warning. With a limit set, such
entries are deleted too. ``-atime`` files without their ``-cache`` are always deleted.

scripts/jax_env.py calls :func:`repair` before the command it starts (``make book``, ``make
lab``, ``make bench``), and at the start of every pytest run, through tests/conftest.py.

Usage: python scripts/jax_cache.py [CACHE_DIR]   (default: $JAX_COMPILATION_CACHE_DIR)
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

CACHE_SUFFIX, ATIME_SUFFIX = "-cache", "-atime"

try:  # the codec JAX uses (jax._src.compilation_cache)
    import zstandard

    def _decompress(data: bytes) -> bytes:
        return zstandard.ZstdDecompressor().decompress(data)

    _DECOMPRESS_ERRORS: tuple[type[Exception], ...] = (zstandard.ZstdError,)
except ImportError:
    _decompress = zlib.decompress
    _DECOMPRESS_ERRORS = (zlib.error,)


def _size_limited() -> bool:
    return os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", "-1").strip() not in ("", "-1")


def repair(cache_dir: str | os.PathLike | None, size_limited: bool | None = None) -> list[str]:
    """Delete the broken entries of the cache in ``cache_dir`` (nothing when it is empty,
    None or missing) and return their keys, sorted: truncated ``-cache`` files, ``-atime``
    files without their ``-cache`` and, when ``size_limited`` (default: whether
    ``JAX_COMPILATION_CACHE_MAX_SIZE`` sets a limit), ``-cache`` files without ``-atime``."""
    if not cache_dir or not Path(cache_dir).is_dir():
        return []
    if size_limited is None:
        size_limited = _size_limited()
    root = Path(cache_dir)
    names = {p.name for p in root.iterdir()}
    broken = set()
    for name in names:
        if name.endswith(ATIME_SUFFIX) and name.removesuffix(ATIME_SUFFIX) + CACHE_SUFFIX not in names:
            broken.add(name.removesuffix(ATIME_SUFFIX))
        elif name.endswith(CACHE_SUFFIX):
            key = name.removesuffix(CACHE_SUFFIX)
            if size_limited and key + ATIME_SUFFIX not in names:
                broken.add(key)
                continue
            try:
                _decompress((root / name).read_bytes())
            except _DECOMPRESS_ERRORS:
                broken.add(key)
    for key in broken:
        for suffix in (CACHE_SUFFIX, ATIME_SUFFIX):
            (root / (key + suffix)).unlink(missing_ok=True)
    return sorted(broken)


def main(argv: list[str]) -> int:
    cache_dir = argv[0] if argv else os.environ.get("JAX_COMPILATION_CACHE_DIR")
    removed = repair(cache_dir)
    if removed:
        print(f"JAX compilation cache: removed {len(removed)} broken entries from {cache_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
