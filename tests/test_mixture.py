"""attnclust.mixture: the isotropic Gaussian mixtures and their samplers (chapters/mixtures.md, def-mixture)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac


@pytest.mark.slow
def test_same_key_same_arrays(mixture):
    a = ac.sample(jax.random.PRNGKey(3), mixture, 4, 9)
    b = ac.sample(jax.random.PRNGKey(3), mixture, 4, 9)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = ac.sample_in_context(jax.random.PRNGKey(3), 2, 5, 2.0, 0.5, 4, 9)
    d = ac.sample_in_context(jax.random.PRNGKey(3), 2, 5, 2.0, 0.5, 4, 9)
    for x, y in zip(c, d):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_in_context_centroids_are_orthogonal_with_norm_r(key):
    _, labels, mus = ac.sample_in_context(key, 3, 6, 2.5, 0.3, 50, 20)
    gram = np.einsum("nkd,njd->nkj", mus, mus)
    np.testing.assert_allclose(gram, np.broadcast_to(2.5**2 * np.eye(3), gram.shape), atol=1e-4)
    # fresh centroids for every prompt
    assert np.abs(mus[0] - mus[1]).max() > 0.1
    assert set(np.unique(labels)) == {0, 1, 2}


@pytest.mark.slow
def test_sample_label_frequencies_follow_weights(key):
    """With n = 40,000 labels, a frequency's standard error is <= 0.0025: 4 s.e. = 0.01."""
    m = ac.orthogonal_mixture(3, 4, 1.0, 0.2, weights=[0.2, 0.3, 0.5])
    X, labels = ac.sample(key, m, 400, 100)
    freq = np.bincount(np.asarray(labels).ravel(), minlength=3) / labels.size
    np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.01)
    resid = np.asarray(X) - np.asarray(m.centroids)[np.asarray(labels)]
    np.testing.assert_allclose(resid.std(), 0.2, rtol=0.01)


def test_angled_and_plusminus():
    m = ac.angled_mixture(math.pi / 3, r=2.0)
    mu = np.asarray(m.centroids)
    assert np.dot(mu[0], mu[1]) / 4 == pytest.approx(0.5, abs=1e-6)
    np.testing.assert_allclose(np.asarray(ac.angled_mixture(math.pi / 2).centroids), 2 * np.eye(2, 5), atol=1e-6)
    pm = ac.plusminus_mixture()
    assert pm.K == 4
    np.testing.assert_allclose(np.asarray(pm.mean), 0, atol=1e-7)


def test_vmap_over_a_stack_of_mixtures_with_an_axes_prefix():
    mixes = [ac.orthogonal_mixture(r=r) for r in (1.0, 2.0, 3.0)]
    stack = jax.tree.map(lambda *x: jnp.stack(x), *mixes)
    f = jax.vmap(lambda m, s: jnp.sum(m.centroids) * s, in_axes=(ac.GaussianMixture.axes(0, 0, 0), None))
    np.testing.assert_allclose(f(stack, 2.0), [4.0, 8.0, 12.0])
    # sigma not mapped: every call sees the stack's whole (3,) sigma
    g = jax.vmap(lambda m: jnp.sum(m.sigma) * jnp.sum(m.weights), in_axes=(ac.GaussianMixture.axes(0, 0, None),))
    np.testing.assert_allclose(g(stack), [1.5, 1.5, 1.5])


@pytest.mark.bad_input
def test_axes_prefix_takes_ints_or_none():
    with pytest.raises(TypeError, match="axis"):
        ac.GaussianMixture.axes(0, "0", None)


class _ArrayLike:
    """What pandas hands over: an object with ``__array__`` and nothing else."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


_MU = np.eye(2, 3)


@pytest.mark.bad_input
@pytest.mark.parametrize("fields, name", [
    (dict(weights=_ArrayLike([2.0, -1.0]), centroids=_ArrayLike(_MU), sigma=-1.0), "weights"),
    (dict(weights=_ArrayLike([0.5, 0.5]), centroids=_ArrayLike(_MU), sigma=-1.0), "sigma"),
    (dict(weights=_ArrayLike([0.5, 0.5]), centroids=_MU, sigma=_ArrayLike(np.nan)), "sigma"),
    (dict(weights=memoryview(np.array([2.0, -1.0])), centroids=_MU, sigma=0.5), "weights"),
    (dict(weights=[0.5, 0.5], centroids=memoryview(np.array([[np.nan, 0, 0], [0, 1, 0]])), sigma=0.5), "centroids"),
])
def test_array_likes_are_validated_like_arrays(fields, name):
    """Fields given as __array__ objects (a pandas Series) or memoryviews are read and checked
    as arrays; they skipped every check (weights [2, -1] with sigma -1 were accepted)."""
    with pytest.raises(ValueError, match=name):
        ac.GaussianMixture(**fields)


def test_array_likes_give_the_same_mixture():
    m = ac.GaussianMixture(_ArrayLike([0.25, 0.75]), memoryview(_MU.astype(np.float32)), _ArrayLike(0.5))
    np.testing.assert_array_equal(m.weights, [0.25, 0.75])
    np.testing.assert_array_equal(m.centroids, _MU)
    assert m.sigma == 0.5


@pytest.mark.bad_input
@pytest.mark.parametrize("call, names", [
    (lambda: ac.sample(jax.random.PRNGKey(0), ac.orthogonal_mixture(), 10**10, 50), ["n_prompts", "L", "memory"]),
    (lambda: ac.sample_in_context(jax.random.PRNGKey(0), 2, 5, 2.0, 0.5, 10**10, 50), ["n_prompts", "memory"]),
    (lambda: ac.random_orthogonal_centroids(jax.random.PRNGKey(0), 10**12, 2, 5, 2.0), ["n_prompts", "memory"]),
])
def test_a_sample_too_large_for_memory_is_refused_before_xla(call, names):
    """10**10 prompts of 50 tokens are 10 TB: a ValueError naming the sizes, where XLA ended
    the whole process."""
    with pytest.raises(ValueError) as info:
        call()
    assert all(n in str(info.value) for n in names), str(info.value)
