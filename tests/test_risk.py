"""Closed forms against sampling (chapters/attention.md, prop-head-limit;
chapters/population_risk.md, def-risks and prop-rinf; chapters/quantization.md,
prop-identity-limit).

Tolerances are derived from the sample: a finite-L output is a ratio of two sample means,
so independent prompts give independent estimates whose spread measures its error; we
assert |mean estimate - limit| <= 5 standard errors + the O(1/L) bias bound used below.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac


def _random_setting(seed, K, H, d):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    centroids = 1.5 * jax.random.normal(k1, (K, d))
    weights = jax.nn.softmax(jnp.arange(K, dtype=jnp.float32) * 0.3)
    mixture = ac.GaussianMixture(weights, centroids, 0.6)
    theta = 0.7 * jax.random.normal(k2, (H, d))
    return mixture, theta


@pytest.mark.slow
@pytest.mark.parametrize("K,H,d,lam", [(2, 2, 5, 1.0), (3, 3, 4, 0.7), (2, 3, 6, 1.5), (4, 1, 3, 2.0)])
def test_population_risk_quadrature_matches_monte_carlo(K, H, d, lam):
    """Gauss-Hermite R_inf against 400,000 Monte Carlo draws (5 standard errors)."""
    mixture, theta = _random_setting(K * 10 + H, K, H, d)
    z, _ = ac.sample(jax.random.PRNGKey(7), mixture, 400_000, 1)
    z = z[:, 0]
    losses = np.asarray(jnp.sum((z - ac.head_output_limit(theta, z, mixture, lam)) ** 2, -1))
    se = losses.std() / np.sqrt(losses.size)
    quad = float(ac.population_risk(theta, mixture, lam))
    assert abs(quad - losses.mean()) <= 5 * se + 1e-4 * abs(quad), (quad, losses.mean(), se)
    mc = float(ac.population_risk_mc(jax.random.PRNGKey(7), theta, mixture, lam, 400_000))
    assert mc == pytest.approx(losses.mean(), rel=1e-5)


def test_population_risk_quadrature_has_converged(mixture):
    """40 nodes per dimension agree with 80 to float32 precision (relative 1e-5)."""
    theta = jnp.array([[1.0, 0.2, 0.0, 0.1, 0.0], [0.1, 0.9, 0.3, 0.0, 0.0]])
    for lam in (0.5, 1.0, 3.0):
        a = float(ac.population_risk(theta, mixture, lam, n_nodes=40))
        b = float(ac.population_risk(theta, mixture, lam, n_nodes=80))
        assert a == pytest.approx(b, rel=1e-5)


@pytest.mark.slow
def test_empirical_risk_approaches_population_risk(mixture):
    """R_L -> R_inf as L grows, at theta = 0.9 e_h (near the aligned minimiser).

    Measured (400,000 tokens per L; standard error about 0.001):
    R_10 - R_inf = -0.034, R_20 - R_inf = -0.010, R_40 - R_inf = -0.001, and within 2 s.e.
    of zero from L = 80 on: the gap shrinks faster than 1/L (about 1/L^1.8 from 10 to 20).
    """
    theta = 0.9 * jnp.eye(2, 5)
    r_inf = float(ac.population_risk(theta, mixture, 1.0))
    gaps, ses = {}, {}
    for i, L in enumerate([10, 20, 80]):
        vals = []
        for j in range(4):
            X, _ = ac.sample(jax.random.PRNGKey(1000 * i + j), mixture, 100_000 // L, L)
            vals.append(float(ac.empirical_risk(theta, X, 1.0)))
        gaps[L], ses[L] = np.mean(vals) - r_inf, np.std(vals, ddof=1) / 2
    assert gaps[10] < -10 * ses[10]  # a real finite-L effect, measured at -0.034
    assert abs(gaps[20]) < abs(gaps[10]) / 2
    assert abs(gaps[80]) <= 5 * ses[80] + 2e-3


@pytest.mark.slow
def test_population_risk_gradient_matches_finite_differences(mixture):
    """Central differences, step 1e-2: truncation ~ h^2 |R'''| ~ 1e-4 and float32 rounding
    ~ 1e-7 / 1e-2 = 1e-5, so an absolute tolerance of 2e-3 is generous but still catches a
    wrong gradient (entries are of order 1)."""
    theta = jnp.array([[1.1, 0.3, -0.2, 0.0, 0.1], [0.2, 0.7, 0.0, 0.4, 0.0]])
    f = jax.jit(lambda t: ac.population_risk(t, mixture, 1.0))  # compiled once for the 21 calls
    g = np.asarray(jax.grad(f)(theta))
    h = 1e-2
    fd = np.zeros_like(g)
    for idx in np.ndindex(*theta.shape):
        e = jnp.zeros_like(theta).at[idx].set(h)
        fd[idx] = (float(f(theta + e)) - float(f(theta - e))) / (2 * h)
    np.testing.assert_allclose(g, fd, atol=2e-3, rtol=1e-3)
    assert np.abs(g).max() > 0.1


@pytest.mark.bad_input
@pytest.mark.parametrize("n_nodes", [257, 500, 20_000])
def test_population_risk_refuses_more_nodes_than_the_rule_holds(n_nodes):
    """NumPy's Gauss-Hermite rule is NaN beyond about 370 nodes (the risk came out as an
    "overflow") and costs O(n^3) (20,000 nodes ran for minutes, or ran out of memory): a
    ValueError naming the limit, before any allocation."""
    m = ac.orthogonal_mixture()
    with pytest.raises(ValueError, match=r"n_nodes must be an integer in 2\.\.256"):
        ac.population_risk(m.centroids, m, 1.0, n_nodes=n_nodes)
    assert np.isfinite(float(ac.population_risk(m.centroids, m, 1.0, n_nodes=256)))


@pytest.mark.bad_input
def test_empirical_risk_of_an_empty_batch_is_refused():
    """No prompt to average over: the mean of nothing was reported as a float32 overflow."""
    m = ac.orthogonal_mixture()
    X = np.zeros((0, 8, 5), np.float32)
    with pytest.raises(ValueError, match="X must hold at least one prompt"):
        ac.empirical_risk(m.centroids, X, 1.0)
    assert ac.two_head_layer(m.centroids, X, 1.0).shape == (0, 8, 5)  # a layer of no prompts is fine
