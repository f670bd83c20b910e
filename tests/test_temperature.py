"""attnclust.temperature: the noise estimate, the self-masked layer, SURE (its divergence
against autodiff, its unbiasedness) and the two label-free rules for lam."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac
from attnclust import _kernels as kernels
from attnclust import temperature as T


def _prompts(key, n=6, L=40, d=5, K=2, sigma=0.5):
    """n prompts of the mixture r e_1, ..., r e_K (r = 2), equal weights, drawn with NumPy
    (seeded from the key): no JAX sampler to compile for every shape."""
    rng = np.random.default_rng(np.asarray(key))
    mus = np.broadcast_to(2.0 * np.eye(K, d), (n, K, d)).astype(np.float32)
    lab = rng.integers(0, K, size=(n, L))
    X = (np.take_along_axis(mus, lab[..., None], 1) + sigma * rng.standard_normal((n, L, d))).astype(np.float32)
    return X, lab, mus


def test_noise_variance_recovers_sigma(key):
    # K = 3 clusters in d = 10, L = 2000: the 8 noise-only directions average 8 x 2000
    # squared noise coordinates, so the estimate is within a few percent of sigma^2 = 0.16.
    X, _, _ = _prompts(key, n=3, L=2000, d=10, K=3, sigma=0.4)
    est = T.noise_variance(X, 3)
    assert est.shape == (3,)
    np.testing.assert_allclose(est, 0.16, rtol=0.05)
    # ignoring the centroid directions (K = 1) overestimates it by their scatter
    assert np.all(T.noise_variance(X, 1) > 0.16 * 1.3)


def test_noise_variance_gram_path_equals_covariance_path(key):
    """L <= d uses the L x L Gram matrix; it has the covariance's non-zero eigenvalues."""
    X, _, _ = _prompts(key, n=2, L=8, d=12)
    Xc = X - X.mean(1, keepdims=True)
    for i in range(2):
        ev = np.linalg.eigvalsh(np.cov(Xc[i].T.astype(np.float64)))
        np.testing.assert_allclose(T.noise_variance(X[i:i + 1], 2)[0], (ev.sum() - ev[-1]) / 11, rtol=1e-5)


def test_layers_match_the_library(key):
    X, _, _ = _prompts(key, n=3, L=12)
    np.testing.assert_allclose(T.identity_layer(X, 0.8), ac.identity_attention(X, 0.8), atol=1e-5)
    # the masked layer, by its definition: a softmax over k != l
    G = 0.8 * np.einsum("nld,nkd->nlk", X, X).astype(np.float64)
    np.fill_diagonal(G[0], -np.inf), np.fill_diagonal(G[1], -np.inf), np.fill_diagonal(G[2], -np.inf)
    W = np.exp(G - G.max(-1, keepdims=True))
    ref = (W / W.sum(-1, keepdims=True)) @ X
    np.testing.assert_allclose(T.masked_identity_attention(X, 0.8), ref, atol=1e-5)
    np.testing.assert_allclose(T.identity_layer(X, 0.8, mask_self=True), ref, atol=1e-5)
    # a temperature per prompt
    lam = np.array([0.3, 1.0, 2.0])
    for i in range(3):
        np.testing.assert_allclose(T.identity_layer(X, lam)[i], ac.identity_attention(X[i], lam[i]), atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("mask_self", [False, True])
def test_divergence_closed_form_equals_autodiff(key, mask_self):
    """The divergence of prop-icq-sure against the trace of the Jacobian (float64)."""
    X, _, _ = _prompts(key, n=1, L=7, d=4)
    with jax.enable_x64(True):
        X64 = jnp.asarray(X, jnp.float64)
        lam = jnp.asarray([0.9], jnp.float64)
        J = jax.jit(jax.jacfwd(lambda x: kernels.layer_weights(x[None], lam, mask_self)[0] @ x))(X64[0])
        _, _, div = kernels.sure_terms(X64, lam, mask_self)
        np.testing.assert_allclose(np.asarray(div[0]), np.einsum("ldld->l", np.asarray(J)), rtol=1e-10, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("mask_self", [False, True])
def test_sure_is_unbiased(key, mask_self):
    """Mean SURE at the true sigma over 400 prompts equals the mean true distortion within 4
    standard errors of their paired difference (it would not with the divergence dropped:
    that biases SURE down by 2 sigma^2 E div, here > 10 standard errors)."""
    X, lab, mus = _prompts(key, n=400, L=30, d=5)
    own = np.asarray(ac.own_centroids(mus, lab))
    for lam in (0.3, 1.5):
        sure = T.identity_sure(X, lam, 0.25, mask_self=mask_self)
        Q = np.asarray(T.identity_layer(X, lam, mask_self=mask_self))
        D = np.mean(np.sum((Q - own) ** 2, -1), -1)
        diff = sure - D
        assert abs(diff.mean()) < 4 * diff.std() / np.sqrt(len(diff))


@pytest.mark.slow
def test_sure_lambda_picks_the_grid_minimum_near_the_oracle(key):
    X, lab, mus = _prompts(key, n=16, L=50)
    ch = T.sure_lambda(X, 2)
    assert ch.sure.shape == (len(T.SURE_GRID), 16) and ch.outputs.shape == X.shape
    best = np.argmin(ch.sure, 0)
    np.testing.assert_allclose(ch.lam, T.SURE_GRID[best] / ch.sigma2, rtol=1e-5)
    np.testing.assert_allclose(ch.outputs, T.identity_layer(X, ch.lam), atol=1e-5)
    # its distortion is within 10% of the best grid point's (the oracle, which sees centroids)
    own = np.asarray(ac.own_centroids(mus, lab))
    D = [np.mean(np.sum((np.asarray(T.identity_layer(X, g / ch.sigma2)) - own) ** 2, -1), -1) for g in T.SURE_GRID]
    D_chosen = np.mean(np.sum((ch.outputs - own) ** 2, -1))
    assert D_chosen <= 1.1 * np.mean(np.min(D, axis=0))


@pytest.mark.slow
def test_stack_lambda_minimises_the_within_cluster_sum(key):
    X, lab, _ = _prompts(key, n=5, L=40)
    ch = T.stack_lambda(key, X, 2, depth=3)
    assert ch.labels.shape == (5, 40) and ch.outputs.shape == X.shape and ch.wcss.shape == (len(T.STACK_GRID), 5)
    np.testing.assert_allclose(ch.lam, T.STACK_GRID[np.argmin(ch.wcss, 0)] / ch.sigma2, rtol=1e-6)
    assert np.all(ac.adjusted_rand(lab, ch.labels) > 0.9)  # separation 4: the clusters are found


@pytest.mark.usefixtures("typecheck_off")
def test_validation():
    X = np.zeros((2, 5, 3))
    with pytest.raises(ValueError, match="shape"):
        T.noise_variance(np.zeros((5, 3)), 2)
    with pytest.raises(ValueError, match="K"):
        T.noise_variance(X, 0)
    with pytest.raises(ValueError, match="L >= 2"):
        T.noise_variance(np.zeros((2, 1, 3)), 1)
    with pytest.raises(ValueError, match="lam"):
        T.identity_layer(X, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="lam"):
        T.identity_layer(X, -1.0)
    with pytest.raises(ValueError, match="L >= 2"):
        T.masked_identity_attention(np.zeros((1, 3)), 1.0)
    with pytest.raises(ValueError, match="grid"):
        T.sure_lambda(np.random.default_rng(0).normal(size=(2, 5, 3)), 2, grid=[-1.0])
    with pytest.raises(ValueError, match="depth"):
        T.stack_lambda(jax.random.PRNGKey(0), X, 2, depth=0)
