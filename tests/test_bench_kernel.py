"""The C++ FFI kernels that ``make bench`` times beside the library's step
(benchmarks/kernel: pool.cc, build.sh, ffi_pool.py).

They are built with g++ into a temporary folder and checked against the library's pooling
(``rank_one_softmax_pool``) in float32: values and gradients with respect to lam, the
queries and the keys, at temperatures up to 1e4 and with as many or fewer queries than
keys, at a relative 1e-5 of the largest entry (both sum the same terms in another order:
float32 rounding over at most 40 terms is about 1e-6; an error in a formula is O(1)).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnclust._kernels import rank_one_softmax_pool

KERNEL = Path(__file__).resolve().parents[1] / "benchmarks" / "kernel"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ffi_pool(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: make bench builds the kernels with it")
    lib = tmp_path_factory.mktemp("kernel") / "libpool.so"
    subprocess.run(["bash", str(KERNEL / "build.sh"), sys.executable, str(lib)], check=True, capture_output=True)
    sys.path.insert(0, str(KERNEL))
    try:
        import ffi_pool as module
    finally:
        sys.path.remove(str(KERNEL))
    pool = module.load(lib)
    assert pool is not None
    return pool


def _loss(pool):
    return jax.jit(jax.value_and_grad(lambda lam, Pq, Pk, w: jnp.sum(w * pool(lam, Pq, Pk)), argnums=(0, 1, 2)))


@pytest.mark.parametrize("lam", [0.05, 1.0, 30.0, 1e4])
@pytest.mark.parametrize("Q,K", [(40, 40), (7, 40), (40, 3)])
def test_kernels_match_the_library(ffi_pool, lam, Q, K):
    rng = np.random.default_rng(Q * 100 + K)
    Pq, w = (jnp.asarray(rng.normal(size=(6, Q)), jnp.float32) for _ in range(2))
    Pk = jnp.asarray(rng.normal(size=(6, K)), jnp.float32)
    lam = jnp.float32(lam)
    np.testing.assert_allclose(ffi_pool(lam, Pq, Pk), rank_one_softmax_pool(lam, Pq, Pk), rtol=0, atol=1e-5)
    got, want = _loss(ffi_pool)(lam, Pq, Pk, w), _loss(rank_one_softmax_pool)(lam, Pq, Pk, w)
    for g, r in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(g, r, rtol=0, atol=1e-5 * max(1.0, float(jnp.abs(r).max())))


def test_kernels_run_inside_a_training_step(ffi_pool):
    """The pooling in the benchmark's training step (jit, scan, Adam), as make bench runs
    it: the same losses as the library's step, to float32 rounding."""
    sys.path.insert(0, str(KERNEL.parent))
    try:
        from roofline import step_runner
    finally:
        sys.path.remove(str(KERNEL.parent))
    lib, ker = step_runner(50, 4, 3), step_runner(50, 4, 3, pool=ffi_pool)
    np.testing.assert_allclose(np.asarray(ker()), np.asarray(lib()), rtol=1e-5, atol=1e-6)
