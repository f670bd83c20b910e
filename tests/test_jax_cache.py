"""scripts/jax_cache.py: a half-written entry of JAX's compilation cache (a process killed
between its two files) makes every later write warn on stderr, which fails the book; the
repair deletes such entries and nothing else."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "jax_cache.py"
_spec = importlib.util.spec_from_file_location("jax_cache", SCRIPT)
jax_cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jax_cache)

# Compile one new program with the cache in CACHE (the Makefile's settings: size limit on)
# and print how many cache warnings it raised.
COMPILE = """
import sys, warnings
warnings.simplefilter("always")
import jax, jax.numpy as jnp
with warnings.catch_warnings(record=True) as caught:
    jax.jit(lambda x: jnp.sin(x) * float(sys.argv[1]))(jnp.ones(3)).block_until_ready()
print(sum("persistent compilation cache" in str(w.message) for w in caught))
"""


def _compile(cache, salt):
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu",
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
               JAX_COMPILATION_CACHE_MAX_SIZE="4000000000")
    out = subprocess.run([sys.executable, "-c", COMPILE, str(salt)], env=env,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def test_repair_removes_only_half_entries(tmp_path):
    for name in ("a-cache", "a-atime", "b-cache", "c-atime", "other.txt"):
        (tmp_path / name).write_bytes(b"x")
    assert jax_cache.repair(tmp_path) == ["b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-atime", "a-cache", "other.txt"]
    assert jax_cache.repair(tmp_path) == []
    assert jax_cache.repair(tmp_path / "missing") == [] and jax_cache.repair(None) == []


@pytest.mark.subprocess
@pytest.mark.slow
def test_half_entry_breaks_writes_until_repaired(tmp_path):
    """The failure the repair exists for, with the JAX installed here: after a ``-cache``
    file loses its ``-atime``, compiling a new program warns; after the repair it does not."""
    assert _compile(tmp_path, 1.0) == 0
    # as if killed between the two writes of the salted program (a later read of an entry
    # rewrites its -atime: the programs run 2 reads back, like jnp.ones, would be repaired)
    (halved,) = tmp_path.glob("jit__lambda*-atime")
    halved.unlink()
    assert _compile(tmp_path, 2.0) >= 1
    assert len(jax_cache.repair(tmp_path)) == 1
    assert _compile(tmp_path, 3.0) == 0
