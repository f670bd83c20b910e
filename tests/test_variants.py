"""Settings beyond the isotropic mixture: non-isotropic samplers (attnclust.general_mixture),
training on samplers and on several mixtures, digits (attnclust.digits), the in-context
helpers, and the large-L formulas beyond the isotropic case."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac
from attnclust import baselines, stationary
from attnclust import digits as D
from attnclust import general_mixture as G
from attnclust.limits import general_identity_limit


# --- mixtures ---------------------------------------------------------------------------

@pytest.mark.bad_input
def test_general_mixture_validation():
    with pytest.raises(ValueError, match="weights"):
        G.GeneralMixture([0.5, 0.6], np.eye(2, 3), np.stack([np.eye(3)] * 2))
    with pytest.raises(ValueError, match="scales"):
        G.GeneralMixture([0.5, 0.5], np.eye(2, 3), np.eye(3))
    with pytest.raises(ValueError, match="centroids"):
        G.GeneralMixture([1.0], np.zeros(3), np.eye(3)[None])
    with pytest.raises(ValueError):
        G.GeneralMixture([0.5, 0.5], [[np.nan, 0, 0], [0, 1, 0]], np.stack([np.eye(3)] * 2))
    with pytest.raises(ValueError, match="sigmas"):
        G.per_component_sigma_mixture([0.3, -1.0])
    with pytest.raises(ValueError, match="direction"):
        G.anisotropic_mixture(direction="sideways")
    with pytest.raises(ValueError, match="angle"):
        ac.angled_mixture(4.0)
    with pytest.raises(ValueError, match="K must be <= d"):
        G.per_component_sigma_mixture([0.3] * 4, d=3)


def test_from_gaussian_and_noise_floor(mixture):
    g = G.GeneralMixture.from_gaussian(mixture)
    assert g.K == mixture.K and g.d == mixture.d
    assert g.noise_floor() == pytest.approx(ac.noise_floor(mixture))
    np.testing.assert_allclose(g.mean, np.asarray(mixture.mean), atol=1e-6)


@pytest.mark.slow
def test_sample_general_moments(key):
    g = G.anisotropic_mixture(r=2.0, d=3, K=2, along=0.8, across=0.3, weights=[0.3, 0.7])
    X, lab = G.sample_general(key, g, 4, 5000)
    X, lab = np.asarray(X).reshape(-1, 3), np.asarray(lab).reshape(-1)
    assert abs(np.mean(lab == 0) - 0.3) < 0.02
    for c in range(2):
        Xc = X[lab == c]
        np.testing.assert_allclose(Xc.mean(0), g.centroids[c], atol=0.05)
        np.testing.assert_allclose(np.cov(Xc.T), g.covariances[c], atol=0.05)
    # the radial cloud c is stretched along its own centroid
    assert g.covariances[0][0, 0] == pytest.approx(0.64) and g.covariances[0][1, 1] == pytest.approx(0.09)


@pytest.mark.slow
def test_sample_general_matches_isotropic_law(key, mixture):
    X, lab = G.sample_general(key, G.GeneralMixture.from_gaussian(mixture), 8, 500)
    resid = np.asarray(X) - np.asarray(mixture.centroids)[np.asarray(lab)]
    assert abs(resid.std() - 0.5) < 0.02


def test_angled_and_plusminus():
    m = ac.angled_mixture(math.pi / 3, r=2.0)
    mu = np.asarray(m.centroids)
    assert np.dot(mu[0], mu[1]) / 4 == pytest.approx(0.5, abs=1e-6)
    np.testing.assert_allclose(np.asarray(ac.angled_mixture(math.pi / 2).centroids), 2 * np.eye(2, 5), atol=1e-6)
    pm = ac.plusminus_mixture()
    assert pm.K == 4
    np.testing.assert_allclose(np.asarray(pm.mean), 0, atol=1e-7)


def test_stack_mixtures_pads_with_zero_weights(mixture):
    """(Training on the stacked mixtures: tests/test_train.py, test_fit_mixtures.)"""
    mixes = [mixture, ac.plusminus_mixture(), G.per_component_sigma_mixture([0.3, 0.7])]
    W, M, A = G.stack_mixtures(mixes)
    assert W.shape == (3, 4) and M.shape == (3, 4, 5) and A.shape == (3, 4, 5, 5)
    np.testing.assert_allclose(W.sum(1), 1.0)
    assert np.all(W[0, 2:] == 0)
    with pytest.raises(ValueError, match="same d"):
        G.stack_mixtures([mixture, ac.orthogonal_mixture(d=3)])


# --- digits -----------------------------------------------------------------------------

def test_load_digits_pca():
    X, y, means = D.load_digits_pca(classes=(3, 8), n_components=4)
    assert X.shape[1] == 4 and X.shape[0] == y.shape[0] and means.shape == (2, 4)
    assert set(np.unique(y)) == {0, 1}
    np.testing.assert_allclose(means[1], X[y == 1].mean(0), rtol=1e-5)
    Xc, _, _ = D.load_digits_pca(classes=(3, 8), n_components=4, centre=True)
    np.testing.assert_allclose(Xc.mean(0), 0, atol=1e-5)
    for bad in [(1, 1), (10,), ()]:
        with pytest.raises(ValueError, match="classes"):
            D.load_digits_pca(classes=bad)


def test_sample_rows(key):
    data = jnp.arange(12.0).reshape(6, 2)
    X, lab = D.sample_rows(key, data, 3, 7, labels=jnp.arange(6))
    assert X.shape == (3, 7, 2)
    np.testing.assert_array_equal(np.asarray(X)[..., 0], 2 * np.asarray(lab))


# --- in-context helpers -----------------------------------------------------------------

@pytest.mark.slow
def test_identity_stack(key):
    X, _, _ = ac.sample_in_context(key, 2, 5, 2.0, 0.5, 3, 20)
    st = ac.identity_stack(X, 0.7, 3)
    assert st.shape == (4, 3, 20, 5)
    np.testing.assert_allclose(st[1], ac.identity_attention(X, 0.7), atol=1e-6)
    np.testing.assert_allclose(st[2], ac.identity_attention(st[1], 0.7), atol=1e-6)
    assert ac.identity_stack(X, 0.7, 0).shape == (1, 3, 20, 5)


def test_centroid_helpers():
    mus = np.array([[[0.0, 0], [10, 0]], [[0, 0], [0, 10]]])
    lab = np.array([[0, 1, 1], [1, 0, 1]])
    own = np.asarray(ac.own_centroids(mus, lab))
    np.testing.assert_array_equal(own[0, 1], [10, 0])
    np.testing.assert_array_equal(own[1, 0], [0, 10])
    Z = np.array([[[1.0, 0], [9, 1], [6, 0]], [[0, 8], [1, 1], [0, 6]]])
    np.testing.assert_array_equal(np.asarray(ac.nearest_centroid(Z, mus)), [[0, 1, 1], [1, 0, 1]])
    np.testing.assert_array_equal(np.asarray(ac.nearest_centroid(Z, mus[0])), [[0, 1, 1], [0, 0, 0]])


def test_within_spread():
    Z = np.array([[[0.0], [2.0], [10.0], [10.0]]])  # cluster 0: {0, 2} spread 1; cluster 1: 0
    lab = np.array([[0, 0, 1, 1]])
    assert ac.within_spread(Z, lab, 2) == pytest.approx(0.5)
    stacked = np.stack([Z, 0 * Z])
    np.testing.assert_allclose(ac.within_spread(stacked, lab, 2), [0.5, 0.0])


@pytest.mark.bad_input  # ends with a wrong shape, for the ValueError
@pytest.mark.slow
def test_jax_baselines_agree_with_scikit_learn(key):
    X, lab, _ = ac.sample_in_context(key, 2, 5, 2.0, 0.6, 6, 40)
    ari_jax = ac.adjusted_rand(lab, baselines.kmeans_per_prompt_jax(key, X, 2)[0])
    ari_sk = ac.adjusted_rand(lab, baselines.kmeans_per_prompt(key, X, 2)[0])
    assert abs(ari_jax.mean() - ari_sk.mean()) < 0.05
    lab_em, mu_em = baselines.em_per_prompt_jax(key, X, 2)
    assert lab_em.shape == (6, 40) and mu_em.shape == (6, 2, 5)
    assert ac.adjusted_rand(lab, lab_em).mean() > 0.9
    with pytest.raises(ValueError, match="K=41"):
        baselines.kmeans_per_prompt_jax(key, X, 41)
    with pytest.raises(ValueError, match="shape"):
        baselines.kmeans_per_prompt_jax(key, X[0], 2)


def test_output_clusters_read_collapsed_points(key):
    Z = np.zeros((1, 10, 2))
    Z[0, 5:] = 3.0
    lab = baselines.output_clusters(key, Z, 2)
    assert ac.adjusted_rand(np.array([[0] * 5 + [1] * 5]), lab)[0] == pytest.approx(1.0)


# --- large-L formulas -------------------------------------------------------------------

def test_general_identity_limit_reduces_to_isotropic(key):
    m = ac.orthogonal_mixture(weights=[0.3, 0.7])
    z = 2 * jax.random.normal(key, (6, 5))
    np.testing.assert_allclose(general_identity_limit(z, G.GeneralMixture.from_gaussian(m), 0.9),
                               ac.identity_limit(z, m, 0.9), atol=1e-5)


@pytest.mark.slow
def test_general_identity_limit_matches_long_prompt(key):
    g = G.per_component_sigma_mixture([0.3, 0.7], d=3)
    X, _ = G.sample_general(key, g, 1, 60000)
    z = X[0, :4]
    got = np.asarray(ac.identity_attend(z[None], X, 0.8)[0])
    np.testing.assert_allclose(got, general_identity_limit(z, g, 0.8), atol=0.1)
    # and it differs from the isotropic formula with the pooled sigma
    iso = ac.GaussianMixture(jnp.asarray(g.weights), jnp.asarray(g.centroids), math.sqrt(g.noise_floor() / g.d))
    assert np.max(np.abs(np.asarray(ac.identity_limit(z, iso, 0.8)) - np.asarray(general_identity_limit(z, g, 0.8)))) > 0.1


@pytest.mark.slow
@pytest.mark.bad_input  # ends with a wrong shape, for the ValueError
def test_large_L_minimiser_reproduces_symbolic_tilt(mixture):
    th, risk = stationary.large_L_minimiser(np.array([[1.0, 0.1, 0, 0, 0], [0.1, 1.0, 0, 0, 0]]), mixture, 1.0)
    assert risk == pytest.approx(0.8949, abs=2e-3)
    np.testing.assert_allclose(ac.alignment(th, np.asarray(mixture.centroids)), 0.986, atol=2e-3)
    with pytest.raises(ValueError, match="theta0"):
        stationary.large_L_minimiser(np.ones(5), mixture)
