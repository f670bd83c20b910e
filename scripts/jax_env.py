#!/usr/bin/env python3
"""JAX's and XLA's settings for this checkout: the one place they are set.

Both the tests and the book read them from here: tests/conftest.py calls
:func:`configure` (with ``fast_compile``) before anything imports JAX, in every pytest
process (``make unit``, ``make quick``, ``make integration``, ``make browser`` or pytest
run directly), and the Makefile's other targets run their command through this script
(``python scripts/jax_env.py [--fast-compile] COMMAND ...``). Environment variables are
how JAX and XLA read them, and every process they start (an xdist worker, a Jupyter kernel,
a subprocess of a test) inherits them. The settings are not in the Makefile because pytest
run directly must get them too, nor only in tests/conftest.py because the book's kernels
never load it; a Python file serves both (no quoting of make or shell values, so a checkout
whose path holds a space works), and a user's own value of each variable is kept.

- JAX's persistent compilation cache in ``_build/.jax-cache``, shared by the tests (every
  xdist worker and the subprocesses they start), the book's kernels, ``make lab`` and
  ``make bench``: a program compiled once is read back by every later process instead of
  being compiled again (XLA compilation is most of the time of a test or a chapter on this
  CPU). Entries are keyed on the program, the backend and the JAX version, so a change to
  the library cannot be served a stale program. Every program is cached, however small or
  quick to compile, and the cache has no size limit (JAX's default): with one, JAX takes a
  file lock and, before every write, reads the last-use file of every entry to choose what
  to evict, a cost that grows with the thousands of entries a cold ``make unit`` writes.
  ``make clean`` removes it; ``JAX_COMPILATION_CACHE_DIR=`` (empty) runs without it.
- With ``fast_compile`` (the tests, ``make book``, ``make bench-book``), XLA compiles with
  LLVM's optimisation level 1 instead of its default 2: on a 2-core CPU, compiling is most
  of a test's or a chapter's time, and level 1 compiles several times faster for programs
  that run somewhat slower, with the same numbers up to float32 rounding
  (``tests/test_experiments_training.py`` runs the K = 3 minimiser search at both levels). ``make bench`` (the library's speed) and ``make lab`` keep XLA's default.
  An ``XLA_FLAGS`` that already names ``--xla_backend_optimization_level`` is left as it is
  (to test at another level).

Before it starts COMMAND, the script deletes the broken entries of the cache
(scripts/jax_cache.py; tests/conftest.py does the same once a pytest run).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = {
    "JAX_COMPILATION_CACHE_DIR": str(ROOT / "_build" / ".jax-cache"),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    "JAX_COMPILATION_CACHE_MAX_SIZE": "-1",
}
OPT_LEVEL = "--xla_backend_optimization_level"
FAST_COMPILE_FLAG = f"{OPT_LEVEL}=1"
USAGE = "usage: python scripts/jax_env.py [--fast-compile] COMMAND [ARG ...]"


def configure(environ: MutableMapping[str, str] = os.environ, *, fast_compile: bool) -> None:
    """Set the compilation cache's variables in ``environ`` where it has none, and, with
    ``fast_compile``, add the optimisation level 1 to ``XLA_FLAGS`` unless it names a level."""
    for name, value in CACHE.items():
        environ.setdefault(name, value)
    flags = environ.get("XLA_FLAGS", "")
    if fast_compile and OPT_LEVEL not in flags:
        environ["XLA_FLAGS"] = f"{flags} {FAST_COMPILE_FLAG}".strip()


def repair(environ: MutableMapping[str, str] = os.environ) -> list[str]:
    """Delete the broken entries of the cache that ``environ`` names (scripts/jax_cache.py);
    their keys."""
    spec = importlib.util.spec_from_file_location("jax_cache", Path(__file__).with_name("jax_cache.py"))
    jax_cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jax_cache)
    return jax_cache.repair(environ.get("JAX_COMPILATION_CACHE_DIR"))


def main(argv: list[str]) -> int:
    fast_compile = argv[:1] == ["--fast-compile"]
    command = argv[1:] if fast_compile else argv
    if not command or command[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    configure(os.environ, fast_compile=fast_compile)
    removed = repair(os.environ)
    if removed:
        print(f"JAX compilation cache: removed {len(removed)} broken entries from "
              f"{os.environ['JAX_COMPILATION_CACHE_DIR']}")
    sys.stdout.flush()
    os.execvp(command[0], command)
    return 127  # not reached: execvp replaces this process or raises


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
