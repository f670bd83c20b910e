"""Every bad input named in the library's contract raises a ValueError that names the
parameter; extreme but valid inputs give finite outputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac

GOOD_MU = jnp.eye(2, 3)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(weights=jnp.array([0.5, 0.5]), centroids=jnp.zeros((0, 3)), sigma=1.0), "K"),
        (dict(weights=jnp.array([1.5, -0.5]), centroids=GOOD_MU, sigma=1.0), "weights"),
        (dict(weights=jnp.array([0.5, 0.6]), centroids=GOOD_MU, sigma=1.0), "weights"),
        (dict(weights=jnp.array([1 / 3] * 3), centroids=GOOD_MU, sigma=1.0), "weights"),
        (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=0.0), "sigma"),
        (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=-1.0), "sigma"),
        (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=float("inf")), "sigma"),
        (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU.at[0, 0].set(jnp.nan), sigma=1.0), "centroids"),
        (dict(weights=jnp.array([0.5, 0.5]), centroids=jnp.ones(3), sigma=1.0), "centroids"),
    ],
)
def test_mixture_rejects(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ac.GaussianMixture(**kwargs)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(K=0), "K"),
        (dict(K=6, d=5), "K"),
        (dict(r=-1.0), "r"),
        (dict(sigma=float("nan")), "sigma"),
        (dict(weights=[0.2, 0.2]), "weights"),
    ],
)
def test_orthogonal_mixture_rejects(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ac.orthogonal_mixture(**kwargs)


def test_samplers_reject(key, mixture):
    with pytest.raises(ValueError, match="L"):
        ac.sample(key, mixture, 2, 0)
    with pytest.raises(ValueError, match="n_prompts"):
        ac.sample(key, mixture, 0, 5)
    with pytest.raises(ValueError, match="n_prompts"):
        ac.sample_in_context(key, 2, 5, 2.0, 0.5, 0, 5)
    with pytest.raises(ValueError, match="kind"):
        ac.sample_in_context(key, 2, 5, 2.0, 0.5, 1, 5, kind="uniform")
    with pytest.raises(ValueError, match="sigma"):
        ac.sample_in_context(key, 2, 5, 2.0, 0.0, 1, 5)


@pytest.mark.parametrize("lam", [0.0, -1.0, float("nan"), float("inf")])
def test_layers_reject_bad_lam(key, mixture, lam):
    X, _ = ac.sample(key, mixture, 1, 4)
    theta = jnp.ones((2, 5))
    for call in (
        lambda: ac.two_head_layer(theta, X, lam),
        lambda: ac.identity_attention(X, lam),
        lambda: ac.head_output_limit(theta, X[0], mixture, lam),
        lambda: ac.identity_limit(X[0], mixture, lam),
        lambda: ac.population_risk(theta, mixture, lam),
        lambda: ac.empirical_risk(theta, X, lam),
        lambda: ac.fit(key, mixture, lam, steps=1, batch=1, L=2, progress=False),
    ):
        with pytest.raises(ValueError, match="lam"):
            call()


def test_shape_mismatches(key, mixture):
    X, _ = ac.sample(key, mixture, 1, 4)
    with pytest.raises(ValueError, match="theta"):
        ac.two_head_layer(jnp.ones((2, 4)), X, 1.0)
    with pytest.raises(ValueError, match="theta"):
        ac.population_risk(jnp.ones((2, 4)), mixture, 1.0)
    with pytest.raises(ValueError, match="theta"):
        ac.two_head_layer(jnp.ones(5), X, 1.0)
    with pytest.raises(ValueError, match="L"):
        ac.identity_attention(jnp.zeros((1, 0, 5)), 1.0)
    with pytest.raises(ValueError, match="X"):
        ac.identity_attention(jnp.zeros(5), 1.0)
    with pytest.raises(ValueError, match="block"):
        ac.identity_attention(X, 1.0, block=0)
    with pytest.raises(ValueError, match="theta"):
        ac.two_head_layer(jnp.full((2, 5), jnp.nan), X, 1.0)


def test_fit_rejects(key, mixture):
    with pytest.raises(ValueError, match="init"):
        ac.fit(key, mixture, steps=2, batch=1, L=2, init="huge", progress=False)
    with pytest.raises(ValueError, match="steps"):
        ac.fit(key, mixture, steps=0, batch=1, L=2, progress=False)
    with pytest.raises(ValueError, match="record_every"):
        ac.fit(key, mixture, steps=10, batch=1, L=2, record_every=3, progress=False)
    with pytest.raises(ValueError, match="lam"):
        ac.fit_many(jax.random.split(key, 3), mixture, lam=jnp.ones(2), steps=2, batch=1, L=2, progress=False)


def test_large_temperature_and_theta_stay_finite(key, mixture):
    """lam = 1e4 and |theta| = 1e3 saturate the softmaxes; max-subtraction keeps them finite."""
    X, _ = ac.sample(key, mixture, 2, 16)
    big = 1e3 * jax.random.normal(key, (2, 5))
    for lam in (1e4,):
        assert np.all(np.isfinite(ac.two_head_layer(big, X, lam)))
        assert np.all(np.isfinite(ac.identity_attention(X, lam)))
        assert np.all(np.isfinite(ac.identity_attention(X, lam, block=5)))
        assert np.all(np.isfinite(ac.identity_limit(X, mixture, lam)))
        assert np.all(np.isfinite(ac.head_output_limit(big, X, mixture, lam)))
        assert np.isfinite(ac.population_risk(big / 1e3, mixture, lam))
