"""scripts/jax_env.py, the one place of JAX's and XLA's settings: the tests and the book's
kernels share the compilation cache and compile at LLVM's level 1; make bench and make lab
keep XLA's default level; a user's own values are kept."""

import importlib.util
import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("jax_env", ROOT / "scripts" / "jax_env.py")
jax_env = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jax_env)


def test_configure_sets_the_cache_and_the_fast_flag_where_unset():
    env = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
    jax_env.configure(env, fast_compile=True)
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(ROOT / "_build" / ".jax-cache")
    assert env["JAX_COMPILATION_CACHE_MAX_SIZE"] == "-1"
    assert env["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false --xla_backend_optimization_level=1"
    jax_env.configure(env, fast_compile=True)  # twice: the flag once
    assert env["XLA_FLAGS"].count("--xla_backend_optimization_level") == 1
    slow = {}
    jax_env.configure(slow, fast_compile=False)
    assert "XLA_FLAGS" not in slow and set(slow) == set(jax_env.CACHE)


def test_configure_keeps_what_the_user_set():
    env = {"JAX_COMPILATION_CACHE_DIR": "", "XLA_FLAGS": "--xla_backend_optimization_level=3"}
    jax_env.configure(env, fast_compile=True)
    assert env["JAX_COMPILATION_CACHE_DIR"] == ""  # empty: no cache
    assert env["XLA_FLAGS"] == "--xla_backend_optimization_level=3"


def test_this_test_runs_with_the_settings():
    """tests/conftest.py applied them (whatever started pytest)."""
    for name in jax_env.CACHE:
        assert name in os.environ
    assert "--xla_backend_optimization_level" in os.environ.get("XLA_FLAGS", "")


def _recipe(target: str) -> list[list[str]]:
    """The commands ``make -n TARGET`` would run (split as the shell splits them)."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), target],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "MAKEFLAGS": ""})
    return [shlex.split(line) for line in out.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("target, program, fast", [
    ("book", "jupyter-book", True), ("bench-book", "benchmarks/run.py", False),
    ("lab", "jupyter", False), ("bench", "benchmarks/run.py", False)])
def test_make_targets_run_through_the_settings(target, program, fast):
    (command,) = [c for c in _recipe(target) if any(w.endswith(program) for w in c)]
    assert command[:2] == [".venv/bin/python", "scripts/jax_env.py"], command
    assert (command[2] == "--fast-compile") == fast, command
