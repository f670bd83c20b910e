"""scripts/jax_cache.py: a broken entry of JAX's compilation cache (a process killed while
writing it) makes later processes warn on stderr, which fails the book; the repair deletes
such entries and nothing else."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import zlib

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "jax_cache.py"
_spec = importlib.util.spec_from_file_location("jax_cache", SCRIPT)
jax_cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jax_cache)

# Compile one program with the cache in CACHE and print how many cache warnings it raised.
COMPILE = """
import sys, warnings
warnings.simplefilter("always")
import jax, jax.numpy as jnp
with warnings.catch_warnings(record=True) as caught:
    jax.jit(lambda x: jnp.sin(x) * float(sys.argv[1]))(jnp.ones(3)).block_until_ready()
print(sum("persistent compilation cache" in str(w.message) for w in caught))
"""


def _compile(cache, salt, max_size="-1"):
    """Run COMPILE with the cache settings of scripts/jax_env.py (no size limit unless ``max_size``)."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu",
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
               JAX_COMPILATION_CACHE_MAX_SIZE=max_size)
    out = subprocess.run([sys.executable, "-c", COMPILE, str(salt)], env=env,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def test_repair_removes_only_broken_entries(tmp_path):
    good = zlib.compress(b"program")
    for name, data in (("a-cache", good), ("a-atime", b"t"), ("b-cache", good), ("c-atime", b"t"),
                       ("d-cache", good[:-3]), ("other.txt", b"x")):
        (tmp_path / name).write_bytes(data)
    # no size limit (scripts/jax_env.py's setting): a -cache needs no -atime, but must decompress
    assert jax_cache.repair(tmp_path, size_limited=False) == ["c", "d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-atime", "a-cache", "b-cache", "other.txt"]
    # with a size limit every -cache needs its -atime too
    assert jax_cache.repair(tmp_path, size_limited=True) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-atime", "a-cache", "other.txt"]
    assert jax_cache.repair(tmp_path, size_limited=True) == []
    assert jax_cache.repair(tmp_path / "missing") == [] and jax_cache.repair(None) == []


@pytest.mark.integration
def test_truncated_entry_warns_until_repaired(tmp_path):
    """With scripts/jax_env.py's settings (no size limit), a program whose entry was cut short (a
    process killed mid-write) warns in every later process; after the repair it does not."""
    assert _compile(tmp_path, 1.0) == 0
    (entry,) = tmp_path.glob("jit__lambda*-cache")
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    assert _compile(tmp_path, 1.0) >= 1
    assert _compile(tmp_path, 1.0) >= 1          # JAX does not replace the broken entry
    assert len(jax_cache.repair(tmp_path, size_limited=False)) == 1
    assert _compile(tmp_path, 1.0) == 0


LIMIT = "4000000000"


@pytest.mark.integration
def test_half_entry_breaks_limited_writes_until_repaired(tmp_path):
    """With a size limit set (JAX's file lock and LRU eviction on), after a ``-cache`` file
    loses its ``-atime`` compiling a new program warns; after the repair it does not."""
    assert _compile(tmp_path, 1.0, LIMIT) == 0
    # as if killed between the two writes of the salted program (a later read of an entry
    # rewrites its -atime: the programs run 2 reads back, like jnp.ones, would be repaired)
    (halved,) = tmp_path.glob("jit__lambda*-atime")
    halved.unlink()
    assert _compile(tmp_path, 2.0, LIMIT) >= 1
    assert len(jax_cache.repair(tmp_path, size_limited=True)) == 1
    assert _compile(tmp_path, 3.0, LIMIT) == 0
