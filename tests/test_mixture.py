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
    np.testing.assert_allclose(g(stack), [3 * ac.DEFAULT.sigma] * 3)


@pytest.mark.usefixtures("typecheck_off")
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


@pytest.mark.usefixtures("typecheck_off")
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


@pytest.mark.usefixtures("typecheck_off")
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


# ---------------------------------------------------------------- bad and extreme input of the mixtures and samplers
# Each call of these tables either raises a clear error or returns a correct finite result
# (tests/bad_input.py's ``check_case``).

from bad_input import check_case, collector, INF, KEY, MIX, MU, NAN, nan_at, W  # noqa: E402

_BAD: list = []
case = collector(_BAD)

G = ac.GaussianMixture
for s in [0.0, -1.0, NAN, INF, 1e39, "0.5", 0.5 + 0j, None, [0.5], np.ones(2)]:
    case(f"GaussianMixture sigma={s!r}", lambda s=s: G(W, MU, s), ["sigma"], error=True)
case("GaussianMixture sigma=1 (int)", lambda: G(W, MU, 1), check=lambda m: isinstance(m.sigma, float) and m.sigma == 1.0)
case("GaussianMixture sigma=np.float32", lambda: G(W, MU, np.float32(0.5)), check=lambda m: isinstance(m.sigma, float))
for w in [[NAN, 1.0], [1.5, -0.5], [1.5, 1.5], [0.45, 0.45], [1.0], [[0.5, 0.5]], [0.5 + 0j, 0.5], ["a", "b"], [INF, 0.0]]:
    case(f"GaussianMixture weights={w!r}", lambda w=w: G(w, MU, 0.5), ["weights"], error=True)
case("GaussianMixture weights list", lambda: G([0.5, 0.5], MU, 0.5), check=lambda m: np.allclose(m.weights, 0.5))
for label, mu in [("nan", nan_at(MU)), ("inf", nan_at(MU, INF)), ("1e39*eye", np.eye(2, 5) * 1e39),
                  ("1-D", np.ones(5)), ("3-D", np.ones((1, 2, 5))), ("complex", MU + 1j),
                  ("strings", np.array([["a"] * 5] * 2))]:
    case(f"GaussianMixture centroids {label}", lambda mu=mu: G(W, mu, 0.5), ["centroids"], error=True)
case("GaussianMixture centroids K=0", lambda: G(np.zeros(0), np.zeros((0, 5)), 0.5), ["centroids", "K", "weights"], error=True)
case("GaussianMixture centroids d=0", lambda: G(W, np.zeros((2, 0)), 0.5), ["centroids", "d"], error=True)
case("GaussianMixture centroids list", lambda: G(W, MU.tolist(), 0.5), check=lambda m: np.allclose(m.centroids, MU))
case("GaussianMixture centroids float16", lambda: G(W, MU.astype(np.float16), 0.5), check=lambda m: m.centroids.dtype == jnp.float32)
case("GaussianMixture centroids int", lambda: G(W, MU.astype(int), 0.5), check=lambda m: np.allclose(m.centroids, MU))

om = ac.orthogonal_mixture
for kw, names in [(dict(K=0), ["K"]), (dict(K=-1), ["K"]), (dict(K=6, d=5), ["K"]), (dict(K=2.5), ["K"]),
                  (dict(K="2"), ["K"]), (dict(d=0), ["d"]), (dict(r=0.0), ["r"]), (dict(r=-1.0), ["r"]),
                  (dict(r=NAN), ["r"]), (dict(r=INF), ["r"]), (dict(r=1e39), ["r"]), (dict(r="2"), ["r"]),
                  (dict(sigma=0.0), ["sigma"]), (dict(sigma=NAN), ["sigma"]), (dict(sigma="0.5"), ["sigma"]),
                  (dict(sigma=1e39), ["sigma"]), (dict(weights=[0.2, 0.2]), ["weights"]),
                  (dict(weights=[1.5, -0.5]), ["weights"]), (dict(weights=[1.0]), ["weights"]),
                  (dict(r=1e20), ["r", "centroids"])]:
    err = "r" not in kw or kw["r"] != 1e20
    case(f"orthogonal_mixture {kw}", lambda kw=kw: om(**kw), names, error=err)
case("orthogonal_mixture K=5 d=5", lambda: om(K=5, d=5), check=lambda m: m.K == 5)

roc = ac.random_orthogonal_centroids


def orthonormal(n, K, d, r):
    def check(C):
        C = np.asarray(C, np.float64)
        return C.shape == (n, K, d) and np.allclose(C @ np.swapaxes(C, -1, -2), r**2 * np.eye(K), atol=1e-4 * r**2)
    return check


N_SETS = ["n", "n_prompts"]  # the argument was renamed n -> n_prompts: either name is clear
for args, names in [((-1, 2, 5, 2.0), N_SETS), ((0, 2, 5, 2.0), N_SETS), ((2.5, 2, 5, 2.0), N_SETS),
                    ((2, 6, 5, 2.0), ["K"]), ((2, 0, 5, 2.0), ["K"]), ((2, 2, 0, 2.0), ["d", "K"]),
                    ((2, 2, 5, NAN), ["r"]), ((2, 2, 5, -1.0), ["r"]), ((2, 2, 5, INF), ["r"]),
                    ((2, 2, 5, 1e39), ["r"]), ((2, 2, 5, 0.0), ["r"]), ((2, 2, 5, "2"), ["r"])]:
    case(f"random_orthogonal_centroids{args}", lambda a=args: roc(KEY, *a), names, error=True)
case("random_orthogonal_centroids ok", lambda: roc(KEY, 3, 2, 5, 2.0), check=orthonormal(3, 2, 5, 2.0))
case("random_orthogonal_centroids new key", lambda: roc(jax.random.key(0), 3, 2, 5, 2.0), check=orthonormal(3, 2, 5, 2.0))
case("random_orthogonal_centroids K=d", lambda: roc(KEY, 2, 5, 5, 1.0), check=orthonormal(2, 5, 5, 1.0))

for args, names in [((0, 4), ["n_prompts"]), ((-1, 4), ["n_prompts"]), ((2, 0), ["L"]), ((2, 2.5), ["L"]),
                    ((2.0, 4), ["n_prompts"])]:
    case(f"sample n, L = {args}", lambda a=args: ac.sample(KEY, MIX, *a), names, error=True)
case("sample mixture=None", lambda: ac.sample(KEY, None, 2, 4), ["mixture"], error=True)
case("sample mixture=dict", lambda: ac.sample(KEY, {"weights": W}, 2, 4), ["mixture"], error=True)
case("sample key=None", lambda: ac.sample(None, MIX, 2, 4), ["key"], error=True)
case("sample key=0", lambda: ac.sample(0, MIX, 2, 4), ["key"], error=True)
case("sample new-style key", lambda: ac.sample(jax.random.key(0), MIX, 2, 4), check=lambda r: r[0].shape == (2, 4, 5))

sic = ac.sample_in_context
for kw, names in [(dict(K=6, d=5), ["K"]), (dict(r=NAN), ["r"]), (dict(r=-1.0), ["r"]), (dict(sigma=0.0), ["sigma"]),
                  (dict(sigma="0.5"), ["sigma"]), (dict(sigma=1e39), ["sigma"]), (dict(r=1e39), ["r"]),
                  (dict(weights=[0.5, 0.6]), ["weights"]), (dict(weights=[NAN, 1.0]), ["weights"]),
                  (dict(kind="uniform"), ["kind"]), (dict(n_prompts=0), ["n_prompts"]), (dict(L=0), ["L"]),
                  (dict(K=0), ["K"]), (dict(d=0), ["d"])]:
    base = dict(K=2, d=5, r=2.0, sigma=0.5, n_prompts=2, L=4)
    case(f"sample_in_context {kw}", lambda kw=kw, base=base: sic(KEY, **{**base, **kw}), names, error=True)
case("sample_in_context gaussian K>d", lambda: sic(KEY, 6, 5, 2.0, 0.5, 2, 4, kind="gaussian"),
     check=lambda r: r[2].shape == (2, 6, 5))
case("sample_in_context new key", lambda: sic(jax.random.key(0), 2, 5, 2.0, 0.5, 2, 4),
     check=lambda r: r[0].shape == (2, 4, 5))


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("c", _BAD)
def test_bad_input_to_mixtures_and_samplers(c):
    """Mixtures and samplers: a clear error or a correct result for every case."""
    check_case(c)
