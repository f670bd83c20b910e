"""attnclust.stationary: value/gradient/Hessian of R_inf, Newton stationary points and
their classification, the hand-derived head gradient and fixed-point map, the paired
R_L - R_inf estimator and the log-log slope."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac
from attnclust import stationary
from attnclust import stationary as st
from attnclust import symbolic as sym

LAM = 1.0


@pytest.fixture(scope="module")
def mix():
    return ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5)


@pytest.fixture(scope="module")
def theta_star():
    tm = sym.tilted_minimiser(1.0, 2.0, 0.5, d=5)
    th = np.zeros((2, 5))
    th[0, :2] = tm.c, tm.eps
    th[1, :2] = tm.eps, tm.c
    return th


@pytest.mark.slow
def test_value_grad_hess_matches_library(mix):
    theta = np.eye(2, 5) + 0.2 * np.asarray(jax.random.normal(jax.random.PRNGKey(0), (2, 5)))
    v, g, h = st.value_grad_hess(theta, mix, LAM)
    assert np.isclose(v, float(ac.population_risk(theta, mix, LAM)), rtol=1e-6)
    g_ref = np.asarray(jax.jit(jax.grad(lambda t: ac.population_risk(t, mix, LAM)))(jnp.asarray(theta, jnp.float32)))
    assert np.allclose(g, g_ref, rtol=1e-4, atol=1e-5)
    assert h.shape == (10, 10) and np.allclose(h, h.T, atol=1e-3 * np.abs(h).max())
    # Hessian against central differences of the gradient along one direction
    u = np.zeros((2, 5)); u[0, 1] = 1.0
    eps = 1e-2
    gp = st.value_grad_hess(theta + eps * u, mix, LAM)[1]
    gm = st.value_grad_hess(theta - eps * u, mix, LAM)[1]
    assert np.allclose((gp - gm).ravel() / (2 * eps), h @ u.ravel(), rtol=2e-2, atol=2e-2)


@pytest.mark.usefixtures("typecheck_off")
def test_value_grad_hess_validates(mix):
    with pytest.raises(ValueError, match="theta"):
        st.value_grad_hess(np.zeros(5), mix, LAM)
    with pytest.raises(ValueError, match="lam"):
        st.value_grad_hess(np.zeros((2, 5)), mix, -1.0)


def test_critical_point_kind():
    assert st.critical_point_kind(np.array([0.5, 1.0])) == "local minimum"
    assert st.critical_point_kind(np.array([-0.5, 1.0])) == "saddle"
    assert st.critical_point_kind(np.array([-0.5, -1.0])) == "local maximum"
    assert st.critical_point_kind(np.array([0.0, 1.0])) == "degenerate minimum"
    assert st.critical_point_kind(np.array([0.0, 0.0])) == "degenerate"


@pytest.mark.slow
def test_newton_finds_tilted_minimum(mix, theta_star):
    p = st.newton_stationary(theta_star + 0.02, mix, LAM)
    assert p.grad_norm < 1e-4
    assert p.kind == "local minimum" and p.index == 0
    assert np.allclose(p.theta, theta_star, atol=2e-3)
    assert np.allclose(ac.alignment(p.theta, mix.centroids), 0.9859, atol=1e-3)


@pytest.mark.slow
def test_newton_finds_between_saddle(mix):
    e = np.eye(5)
    start = np.stack([0.9 * (e[0] + e[1]), 0.9 * (e[0] - e[1])]) / np.sqrt(2)
    p = st.newton_stationary(start, mix, LAM)
    assert p.grad_norm < 1e-4
    assert p.kind == "saddle" and p.index == 1
    assert np.allclose(ac.alignment(p.theta, mix.centroids), np.sqrt(0.5), atol=1e-4)


@pytest.mark.slow
def test_head_gradient_equals_autodiff_on_same_samples(mix):
    key = jax.random.PRNGKey(3)
    n = 4000
    z, _ = ac.sample(key, mix, n, 1)
    theta = jnp.asarray(np.eye(2, 5) + 0.3 * np.asarray(jax.random.normal(jax.random.PRNGKey(4), (2, 5))))
    g_hand = st.head_gradient(theta, z[:, 0], mix, LAM)
    g_auto = np.asarray(jax.jit(jax.grad(lambda t: ac.population_risk_mc(key, t, mix, LAM, n)))(theta))
    assert np.allclose(g_hand, g_auto, rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_head_gradient_general_K_and_weights():
    mixture = ac.GaussianMixture(jnp.array([0.2, 0.3, 0.5]),
                                 jnp.array([[1.5, 0, 0], [0, 2.0, 0.5], [-1.0, 0.3, 1.0]]), 0.4)
    key = jax.random.PRNGKey(5)
    z, _ = ac.sample(key, mixture, 3000, 1)
    theta = jnp.asarray(jax.random.normal(jax.random.PRNGKey(6), (3, 3)) * 0.6)
    g_hand = st.head_gradient(theta, z[:, 0], mixture, 0.7)
    g_auto = np.asarray(jax.jit(jax.grad(lambda t: ac.population_risk_mc(key, t, mixture, 0.7, 3000)))(theta))
    assert np.allclose(g_hand, g_auto, rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_fixed_point_map(mix, theta_star):
    z, _ = ac.sample(jax.random.PRNGKey(7), mix, 100_000, 1)
    z = z[:, 0]
    moved = st.fixed_point_map(theta_star, z, mix, LAM)
    assert np.linalg.norm(moved - theta_star) < 0.02
    aligned = np.zeros((2, 5)); aligned[0, 0] = aligned[1, 1] = 0.886
    assert np.linalg.norm(st.fixed_point_map(aligned, z, mix, LAM) - aligned) > 0.05
    # a fixed point of the map has zero gradient: stationarity <=> fixed point (same samples)
    g = st.head_gradient(theta_star, z, mix, LAM)
    num_minus_den_theta = moved - theta_star
    assert np.linalg.norm(g) < 0.1 and np.linalg.norm(num_minus_den_theta) < 0.02


@pytest.mark.slow
def test_block_gaps_equal_two_head_layer(mix, theta_star):
    X, _ = ac.sample(jax.random.PRNGKey(8), mix, 3, 16)
    L = 4
    dl = np.asarray(st._block_gaps(jnp.asarray(theta_star, jnp.float32), X, mix, jnp.float32(LAM), L))
    Xb = X.reshape(3 * 16 // L, L, 5)
    fin = jnp.sum((Xb - ac.two_head_layer(theta_star, Xb, LAM)) ** 2, -1)
    inf = jnp.sum((Xb - ac.head_output_limit(theta_star, Xb, mix, LAM)) ** 2, -1)
    assert np.allclose(dl.reshape(-1, L), np.asarray(fin - inf), atol=1e-4)


@pytest.mark.slow
def test_risk_gap_small(mix, theta_star):
    out = st.risk_gap(jax.random.PRNGKey(9), theta_star, mix, LAM, [8, 32], n_tokens=8192)
    assert out["gap"].shape == (2,) and np.all(out["se"] > 0)
    assert out["gap"][0] > out["gap"][1] > 0
    assert np.isclose(out["r_inf"], 0.8949, atol=1e-3)
    with pytest.raises(ValueError, match="divide"):
        st.risk_gap(jax.random.PRNGKey(9), theta_star, mix, LAM, [8, 12])


def test_loglog_slope():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    slope, se = st.loglog_slope(x, 3.0 * x**-0.75)
    assert np.isclose(slope, -0.75) and se < 1e-8
    slope, se = st.loglog_slope(x, 3.0 * x**-1.0, se=0.01 * x**-1.0)
    assert np.isclose(slope, -1.0) and se < 0.05


@pytest.mark.slow
@pytest.mark.usefixtures("typecheck_off")  # ends with a wrong shape, for the ValueError
def test_large_L_minimiser_reproduces_symbolic_tilt(mixture):
    th, risk = stationary.large_L_minimiser(np.array([[1.0, 0.1, 0, 0, 0], [0.1, 1.0, 0, 0, 0]]), mixture, 1.0)
    assert risk == pytest.approx(0.8949, abs=2e-3)
    np.testing.assert_allclose(ac.alignment(th, np.asarray(mixture.centroids)), 0.986, atol=2e-3)
    with pytest.raises(ValueError, match="theta0"):
        stationary.large_L_minimiser(np.ones(5), mixture)


# --------------------------------------------------------------------------- finite L


def _small_sample(n=24, L=10, K=2, seed=0):
    mix = ac.orthogonal_mixture(K=K)
    return mix, ac.sample(jax.random.PRNGKey(seed), mix, n, L)[0]


@pytest.mark.slow
def test_empirical_hessian_matches_jax_hessian_of_the_risk():
    """The blocked Hessian-vector products (24 prompts: two blocks of 12) equal jax.hessian
    of ac.empirical_risk on the whole sample, and the value and gradient match too."""
    mix, X = _small_sample()
    theta = np.array([[0.8, 0.3, 0.1, 0, 0], [0.2, 0.9, 0, -0.1, 0]])
    value, grad, hess = st.empirical_value_grad_hess(theta, X, LAM)
    f = lambda t: ac.empirical_risk(t, X, LAM)  # noqa: E731
    assert value == pytest.approx(float(f(theta)), rel=1e-5)
    # jitted: one compilation each, not one per operation of the eager trace
    np.testing.assert_allclose(grad, np.asarray(jax.jit(jax.grad(f))(jnp.asarray(theta, jnp.float32))), atol=1e-5)
    ref = np.asarray(jax.jit(jax.hessian(f))(jnp.asarray(theta, jnp.float32))).reshape(10, 10)
    np.testing.assert_allclose(hess, ref, atol=2e-4)
    np.testing.assert_allclose(hess, hess.T, atol=2e-4)


def _symmetrised(X):
    """X with its images under e1 <-> e2 and under x_j -> -x_j (j >= 3): a sample whose risk
    has the symmetry of the split family exactly."""
    swap = X[..., [1, 0, 2, 3, 4]]
    flip = X * jnp.array([1, 1, -1, -1, -1.0])
    return jnp.concatenate([X, swap, flip, swap * jnp.array([1, 1, -1, -1, -1.0])])


@pytest.mark.slow
def test_empirical_stationary_in_a_symmetric_family():
    """Newton kept in the split family (theta_1 along e1 + e2, theta_2 along e1 - e2) stays in
    it, and on a sample with the family's symmetry it finds a true stationary point: the
    gradient off the family vanishes too."""
    mix, X = _small_sample(n=6)
    Xs = _symmetrised(X)  # 24 prompts of 10 tokens: the shape of the other tests, one compilation
    u, w = np.array([1.0, 1, 0, 0, 0]) / np.sqrt(2), np.array([1.0, -1, 0, 0, 0]) / np.sqrt(2)
    D = np.zeros((2, 2, 5))
    D[0, 0], D[1, 1] = u, w
    start = np.stack([0.8 * u, 0.8 * w])
    p = st.empirical_stationary(start, Xs, LAM, directions=D)
    moved = (p.theta - start).ravel()
    basis = D.reshape(2, -1) / np.linalg.norm(D.reshape(2, -1), axis=1, keepdims=True)
    assert np.linalg.norm(moved - basis.T @ (basis @ moved)) < 1e-6  # in the family
    assert np.linalg.norm(moved) > 1e-3  # it did move: 0.8 is not the stationary point
    assert p.grad_norm < 1e-4  # full gradient: a stationary point of the symmetric sample
    assert len(p.eigenvalues) == 10 and np.all(np.diff(p.eigenvalues) >= 0)


@pytest.mark.slow
def test_empirical_stationary_unrestricted_converges():
    """Newton in every direction (the chord method) reaches a stationary point of the sample,
    where it stops at once when restarted, and its spectrum is the Hessian's there."""
    mix, X = _small_sample(seed=1)
    start = np.array([[0.95, -0.1, 0, 0, 0], [-0.1, 0.95, 0, 0, 0]])
    p = st.empirical_stationary(start, X, LAM)
    assert p.grad_norm < 1e-5 and p.iterations > 1
    again = st.empirical_stationary(p.theta, X, LAM)
    assert again.iterations == 0 or np.allclose(again.theta, p.theta, atol=1e-4)
    _, grad, hess = st.empirical_value_grad_hess(p.theta, X, LAM)
    np.testing.assert_allclose(p.eigenvalues, np.linalg.eigvalsh(hess), atol=1e-4)


@pytest.mark.usefixtures("typecheck_off")
def test_empirical_bad_input():
    X = np.random.default_rng(0).normal(size=(4, 5, 5))
    theta = np.eye(2, 5)
    with pytest.raises(ValueError, match="X"):
        st.empirical_value_grad_hess(theta, X[0], LAM)
    with pytest.raises(ValueError, match="directions"):
        st.empirical_stationary(theta, X, LAM, directions=np.ones((2, 5)))
    with pytest.raises(ValueError, match="lam"):
        st.empirical_stationary(theta, X, -1.0)
