"""attnclust.limits: the large-L limits of the two layers against long prompts
(chapters/attention.md, prop-head-limit; chapters/quantization.md, prop-identity-limit)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac
from attnclust import general_mixture as G
from attnclust.limits import general_identity_limit

L_BIG = 100_000
N_PROMPTS = 8


def _within_standard_errors(estimates, limit, n_se=5.0, bias=1e-3):
    """estimates: (N, ...) independent estimates; limit: (...)."""
    est = np.asarray(estimates, dtype=np.float64)
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    err = np.abs(est.mean(axis=0) - np.asarray(limit))
    assert np.all(err <= n_se * se + bias), (err, se)
    return err, se


@pytest.fixture
def queries():
    return jnp.array([[1.5, 0.3, 0.1, 0.0, 0.0], [0.2, -1.0, 0.0, 0.3, 0.0], [-0.4, 0.6, 0.5, 0.0, -0.2]])


@pytest.mark.slow
@pytest.mark.parametrize("lam", [0.5, 1.0, 2.0])
def test_head_output_limit_matches_large_L(key, queries, lam):
    mixture = ac.orthogonal_mixture(2, 5, 2.0, 0.5, weights=[0.3, 0.7])
    theta = jnp.array([[0.9, 0.1, 0.0, 0.2, 0.0], [0.05, 0.8, -0.1, 0.0, 0.1]])
    X, _ = ac.sample(key, mixture, N_PROMPTS, L_BIG)
    Z = jnp.broadcast_to(queries, (N_PROMPTS,) + queries.shape)
    finite = ac.two_head_attend(theta, Z, X, lam)
    _within_standard_errors(finite, ac.head_output_limit(theta, queries, mixture, lam))


@pytest.mark.slow
@pytest.mark.parametrize("lam", [0.5, 1.0, 2.0])
def test_identity_limit_matches_large_L(key, queries, lam):
    mixture = ac.orthogonal_mixture(3, 5, 2.0, 0.5, weights=[0.2, 0.3, 0.5])
    X, _ = ac.sample(key, mixture, N_PROMPTS, L_BIG)
    Z = jnp.broadcast_to(queries, (N_PROMPTS,) + queries.shape)
    finite = ac.identity_attend(Z, X, lam)
    _within_standard_errors(finite, ac.identity_limit(queries, mixture, lam))


@pytest.mark.slow
def test_identity_limit_is_not_the_untilted_mean(key, queries):
    """The check above can fail: the plain (untilted) mixture mean is far from the data."""
    mixture = ac.orthogonal_mixture(3, 5, 2.0, 0.5)
    X, _ = ac.sample(key, mixture, N_PROMPTS, 20_000)
    Z = jnp.broadcast_to(queries, (N_PROMPTS,) + queries.shape)
    finite = np.asarray(ac.identity_attend(Z, X, 1.0))
    wrong = np.broadcast_to(np.asarray(mixture.mean), queries.shape)
    with pytest.raises(AssertionError):
        _within_standard_errors(finite, wrong)


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
