"""Symbolic-versus-numeric tests for the closed forms of the theory chapters and for the
package attnclust.symbolic that keeps the reused ones.

Chapters: "Gaussian mixtures and clustering" (chapters/mixtures.md), "Attention as soft
pooling" (attention.md), "The two-head layer and its population risk" (population_risk.md)
and "In-context quantization with identity attention" (quantization.md). Each test holds a
formula (SymPy-derived or the package's closed form) against an independent evaluation:
scipy quadrature, Gauss-Hermite quadrature of the defining expectation, sampling, or the
library's JAX numerics (automatic differentiation included). None compares a formula with
a transcription of itself.

The library computes in float32 (relative rounding about 6e-8 per operation, a few dozen
operations per output), so comparisons against it use ``F32`` (1e-5 relative, 1e-5
absolute near zero) unless a test says otherwise. Sampling tolerances are a number of
standard errors, stated where used.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as hst
from scipy import integrate, optimize, special, stats

import attnclust as A
from attnclust import symbolic as S

F32 = dict(rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------
# The shared helpers of attnclust.symbolic
# --------------------------------------------------------------------------------------


def test_logistic_derivative_rewrite_and_stable_lambdify():
    x = sp.Symbol("x", real=True)
    ell = S.logistic(x)
    assert S.logistic(0) == sp.Rational(1, 2)
    assert float(S.logistic(sp.Float(0.3))) == pytest.approx(special.expit(0.3), rel=1e-15)
    assert S.logistic(x).evalf() == S.logistic(x)  # a symbolic argument stays unevaluated
    # the short derivative logistic (1 - logistic) is the derivative of 1 / (1 + e^{-x})
    assert sp.simplify((sp.diff(ell, x) - sp.diff(ell.rewrite(sp.exp), x)).rewrite(sp.exp)) == 0
    # lambdified through expit / jax.nn.sigmoid: no overflow at |x| = 800, where
    # 1 / (1 + exp(800)) would overflow to inf in float64
    f_np = S.lambdify_expr((x,), ell)
    f_jax = S.lambdify_expr((x,), ell, backend="jax")
    grid = np.array([-800.0, -3.0, 0.0, 0.7, 800.0])
    want = 1 / (1 + np.exp(-np.clip(grid, -700, 700)))
    with np.errstate(over="raise", invalid="raise"):
        np.testing.assert_allclose(f_np(grid), want, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(np.asarray(f_jax(jnp.asarray(grid))), want, **F32)
    assert r"\operatorname{logistic}\left(x\right)^{2}" == sp.latex(ell**2)
    # a clear error for another backend (TypeError from the type checker when tests run
    # with it, else the function's own ValueError)
    with pytest.raises((ValueError, TypeError), match="backend"):
        S.lambdify_expr((x,), ell, backend="torch")


@pytest.mark.parametrize("K", [2, 3])
def test_softmax_exprs_against_scipy(K):
    # K = 2 takes the logistic form, K = 3 the exponential one
    a = sp.symbols(f"a_1:{K + 1}", real=True)
    f = S.lambdify_expr(a, S.softmax_exprs(list(a)))
    vals = np.random.default_rng(K).normal(size=(6, K)) * 3
    got = np.array([f(*row) for row in vals])
    np.testing.assert_allclose(got, special.softmax(vals, axis=1), rtol=1e-12)


def test_gauss_hermite_exact_below_degree_2n():
    # E Z^k for Z ~ N(0, 1) is (k - 1)!! for even k and 0 for odd k; n nodes integrate
    # polynomials of degree < 2n exactly, and degree 2n is where the rule first errs
    x, w = S.gauss_hermite(4)
    for k in range(8):
        exact = float(np.prod(np.arange(k - 1, 0, -2))) if k % 2 == 0 else 0.0
        assert w @ x**k == pytest.approx(exact, abs=1e-12)
    assert abs(w @ x**8 - 105.0) > 1.0


@pytest.mark.parametrize("K", [2, 3])
def test_head_coefficient_expr_is_the_head_limit_of_the_library(K):
    # the symbolic phi_h (prop-head-limit, used by the aligned and tilt integrands) against
    # ac.head_output_limit, with two components (logistic form) and three (exp form)
    th = sp.symbols("a_1:4", real=True)
    zz = sp.symbols("z_1:4", real=True)
    lam, sigma = sp.symbols("lambda sigma", positive=True)
    rng = np.random.default_rng(3 + K)
    mus = rng.normal(size=(K, 3))
    w = rng.dirichlet(np.ones(K))
    phi = S.head_coefficient_expr(th, zz, mus.tolist(), w.tolist(), lam, sigma)
    f = S.lambdify_expr((*th, *zz, lam, sigma), phi)
    theta = rng.normal(size=(2, 3)) * 0.8
    z = rng.normal(size=(4, 3))
    ours = sum(np.outer(f(*theta[h], *z.T, 0.9, 0.6), theta[h]) for h in range(2))
    lib = np.asarray(A.head_output_limit(jnp.asarray(theta), jnp.asarray(z), A.GaussianMixture(w, mus, 0.6), 0.9))
    np.testing.assert_allclose(ours, lib, **F32)


def test_jax_lambdify_matches_numpy_and_differentiates():
    D = S.aligned_reduction()
    sy = D.symbols
    args = (sy["u"], sy["c"], sy["lambda"], sy["r"], sy["sigma"])
    f_jax = S.lambdify_expr(args, D.g_integrand, backend="jax")
    u = np.linspace(-1, 3, 7)
    np.testing.assert_allclose(np.asarray(f_jax(jnp.asarray(u), 0.9, 1.0, 2.0, 0.5)),
                               D.g_fn(u, 0.9, 1.0, 2.0, 0.5), **F32)
    # jax.grad of the lambdified integrand in c = the symbolic c-derivative
    dg = jax.grad(lambda c: f_jax(1.3, c, 1.0, 2.0, 0.5))(0.9)
    assert float(dg) == pytest.approx(float(D.dg_fn(1.3, 0.9, 1.0, 2.0, 0.5)), rel=1e-5)


# --------------------------------------------------------------------------------------
# "Attention as soft pooling": the tilting lemma and the finite-L head
# --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tilting_lemma_integrals_are_the_closed_forms():
    # the integrals sympy returns simplify to the closed forms; a wrong constant does not
    L = S.tilting_lemma()
    sy = L.symbols
    assert sp.simplify(L.mgf - L.mgf_closed) == 0
    assert sp.simplify(L.tilted_mean - L.tilted_mean_closed) == 0
    assert sp.simplify(L.weight_derived - L.weight_closed.rewrite(sp.exp)) == 0
    assert sp.simplify(L.mgf - sp.exp(sy["t"] * sy["m"] + sy["t"] ** 2 * sy["s"] ** 2)) != 0
    assert sp.simplify(L.tilted_mean - (sy["m"] + sy["t"] * sy["s"])) != 0


def _tilted_density(t, m, s):
    """u -> e^{tu} N(u; m, s^2), with the exponents combined so nothing overflows."""
    return lambda u: np.exp(t * u - (u - m) ** 2 / (2 * s**2)) / np.sqrt(2 * np.pi * s**2)


def _quad(f, centre, s):
    # the tilted density is a Gaussian bump at m + t s^2 of width s: +-20 s holds all but
    # e^{-200} of its mass
    return integrate.quad(f, centre - 20 * s, centre + 20 * s, epsabs=0, epsrel=1e-12, limit=200)[0]


def test_lemma_against_quad():
    # scipy quad on a smooth Gaussian bump is accurate to ~1e-12 relative, so rtol 1e-8
    # leaves margin while catching any wrong constant.
    L = S.tilting_lemma()
    rng = np.random.default_rng(1)
    for _ in range(5):
        t, m, s = rng.uniform(-2, 2), rng.uniform(-2, 2), rng.uniform(0.2, 1.5)
        f = _tilted_density(t, m, s)
        mgf = _quad(f, m + t * s**2, s)
        first = _quad(lambda u: u * f(u), m + t * s**2, s)
        np.testing.assert_allclose(L.mgf_fn(t, m, s), mgf, rtol=1e-8)
        np.testing.assert_allclose(L.tilted_mean_fn(t, m, s), first / mgf, rtol=1e-8, atol=1e-10)
        # two-component mixture, shared s: tilted weight of component 1
        m2, pi1 = rng.uniform(-2, 2), rng.uniform(0.1, 0.9)
        num = pi1 * mgf
        den = num + (1 - pi1) * _quad(_tilted_density(t, m2, s), m2 + t * s**2, s)
        np.testing.assert_allclose(L.weight_fn(t, m, m2, s, pi1), num / den, rtol=1e-8)


def test_lemma_against_sampling():
    # Monte Carlo with n = 200_000 draws; |t| s <= 0.6 keeps e^{tu} light-tailed enough
    # that the sample standard error is reliable.  Tolerance: 5 standard errors (the
    # tilted mean's SE by the delta method for a ratio of means).
    L = S.tilting_lemma()
    rng = np.random.default_rng(2)
    n = 200_000
    for _ in range(3):
        t, m, s = rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0.2, 0.6)
        u = m + s * rng.standard_normal(n)
        e = np.exp(t * u)
        se_mgf = e.std(ddof=1) / np.sqrt(n)
        assert abs(e.mean() - L.mgf_fn(t, m, s)) < 5 * se_mgf
        ratio = (u * e).mean() / e.mean()
        se_ratio = ((u - ratio) * e).std(ddof=1) / np.sqrt(n) / e.mean()
        assert abs(ratio - L.tilted_mean_fn(t, m, s)) < 5 * se_ratio


def _delta_method_constants():
    """L Var(N/D) and L (E[N/D] - phi) to first order in 1/L, derived by SymPy from the
    lemma's moment generating function (chapter "Attention as soft pooling" and the
    exercise on the bias of a head), for u ~ N(m, s^2)."""
    TL = S.tilting_lemma()
    t, m, s = TL.symbols["t"], TL.symbols["m"], TL.symbols["s"]
    tau = sp.Symbol("tau", real=True)
    mom = lambda k, at: sp.diff(TL.mgf.subs(t, tau), tau, k).subs(tau, at)  # E[u^k e^{at u}]
    phi = m + t * s**2
    var = sp.simplify((mom(2, 2 * t) - 2 * phi * mom(1, 2 * t) + phi**2 * mom(0, 2 * t)) / mom(0, t) ** 2)
    EN, ED = mom(1, t), mom(0, t)
    bias = sp.simplify(-(mom(1, 2 * t) - EN * ED) / ED**2 + EN * (mom(0, 2 * t) - ED**2) / ED**3)
    return (t, m, s), var, bias


def test_head_variance_and_bias_constants_against_simulation():
    # The delta method's constants: L Var(N/D) -> v (1 + t^2 v) e^{t^2 v} and
    # L (E[N/D] - phi) -> -t v e^{t^2 v}, with v = s^2.
    (t, m, s), var, bias = _delta_method_constants()
    v = s**2
    assert sp.simplify(var - v * (1 + t**2 * v) * sp.exp(t**2 * v)) == 0
    assert sp.simplify(bias + t * v * sp.exp(t**2 * v)) == 0
    # Simulation: 100,000 prompts of L = 100 keys from N(0.3, 0.25), tilt t = 1, in chunks.
    t_, m_, s_, L, n = 1.0, 0.3, 0.5, 100, 100_000
    rng = np.random.default_rng(7)
    ratios = []
    for _ in range(10):
        u = m_ + s_ * rng.standard_normal((n // 10, L))
        w = np.exp(t_ * (u - u.max(axis=1, keepdims=True)))
        ratios.append((w * u).sum(1) / w.sum(1))
    ratio = np.concatenate(ratios)
    num = lambda e: float(e.subs({t: t_, m: m_, s: s_}))  # noqa: E731
    # variance: the sample variance has relative standard error sqrt(2 / n) ~ 0.5%; the
    # neglected O(1/L^2) terms are a few percent at L = 100, so 10% relative
    assert L * ratio.var(ddof=1) == pytest.approx(num(var), rel=0.1)
    # bias: -t v e^{t^2 v} / L = -0.0032, 16 standard errors (0.0002) from zero; 5
    # standard errors plus 15% for the O(1/L^2) terms
    se = ratio.std(ddof=1) / np.sqrt(n)
    got = ratio.mean() - (m_ + t_ * s_**2)
    assert abs(got - num(bias) / L) < 5 * se + 0.15 * abs(num(bias) / L)
    assert got < -5 * se  # a finite prompt undershoots the tilted mean


# --------------------------------------------------------------------------------------
# "The two-head layer and its population risk"
# --------------------------------------------------------------------------------------


def _random_mixture(seed, d=4, K=3):
    rng = np.random.default_rng(seed)
    return A.GaussianMixture(rng.dirichlet(np.ones(K) * 2), rng.normal(size=(K, d)) * 1.5, 0.6)


@pytest.mark.parametrize("which", ["default", "random"])
def test_reference_levels_of_the_risk(which):
    # R(Theta -> 0) = E||z||^2 = sum_c pi_c ||mu_c||^2 + d sigma^2 (5.25 for the default
    # mixture), and no two-head layer beats the sum of the d - 2 smallest eigenvalues of
    # E[z z^T] (prop-risk-floor). Heads of norm 1e-4 make the layer's output ~1e-8.
    mix = A.orthogonal_mixture(2, 5, 2.0, 0.5) if which == "default" else _random_mixture(1)
    mu, pi, sigma = np.asarray(mix.centroids, float), np.asarray(mix.weights, float), float(mix.sigma)
    d = mu.shape[1]
    second = pi @ np.sum(mu**2, axis=1) + d * sigma**2
    assert float(A.population_risk(np.full((2, d), 1e-4), mix, 1.0)) == pytest.approx(second, rel=1e-4)
    floor = np.sort(np.linalg.eigvalsh(sigma**2 * np.eye(d) + (mu.T * pi) @ mu))[: d - 2].sum()
    if which == "default":
        assert floor == pytest.approx(3 * 0.25)
    rng = np.random.default_rng(2)
    risks = [float(A.population_risk(rng.normal(size=(2, d)) * scale, mix, lam))
             for scale in (0.3, 0.8, 1.5) for lam in (0.3, 1.0) for _ in range(3)]
    assert min(risks) >= floor * (1 - 1e-5)
    # the floor is attained by projecting on the principal plane, a map the layer cannot
    # represent exactly, so the layer's best is strictly above: far above at random heads
    assert min(risks) > floor + 0.05


def test_aligned_reduction_is_the_head_limit():
    # f(u; c) of prop-aligned is what the general head coefficient gives at theta_h = c e_h
    # (symbolically), and what the library's T_inf outputs along e_1 (numerically)
    D = S.aligned_reduction()
    sy = D.symbols
    z1, z2, c, lam, r, sigma = (sy[k] for k in ("z_1", "z_2", "c", "lambda", "r", "sigma"))
    phi1 = S.head_coefficient_expr([c, 0], [z1, z2], [[r, 0], [0, r]], [sp.Rational(1, 2)] * 2, lam, sigma)
    assert sp.simplify((c * phi1 - D.f.subs(sy["u"], z1)).rewrite(sp.exp)) == 0
    mix = A.orthogonal_mixture(2, 3, 2.0, 0.5)
    z = np.random.default_rng(3).normal(size=(6, 3)) + 1.0
    theta = np.array([[0.9, 0, 0], [0, 0.9, 0]])
    lib = np.asarray(A.head_output_limit(jnp.asarray(theta, jnp.float32), jnp.asarray(z, jnp.float32), mix, 1.3))
    np.testing.assert_allclose(lib[:, 0], D.f_fn(z[:, 0], 0.9, 1.3, 2.0, 0.5), **F32)
    np.testing.assert_allclose(lib[:, 1], D.f_fn(z[:, 1], 0.9, 1.3, 2.0, 0.5), **F32)


def test_aligned_origin_is_a_stationary_local_maximum():
    # kappa = 0: the layer outputs 0, so the risk is E||z||^2 = r^2 + d sigma^2; f depends
    # on kappa^2, so g'(0) = 0; and g decreases just off it (a local maximum along the line)
    lam, r, sigma, d = 1.0, 2.0, 0.5, 5
    assert S.aligned_risk(0.0, 0.0, lam, r, sigma, d) == pytest.approx(r**2 + d * sigma**2, rel=1e-12)
    assert S.aligned_risk_grad(0.0, lam, r, sigma) == 0.0
    assert S.aligned_risk_grad(0.05, lam, r, sigma) < 0


def test_fixed_point_quadrature_converged_and_curvature_by_differences():
    # Quadrature error: the integrand is analytic in a strip, so Gauss-Hermite converges
    # geometrically; 40 and 160 nodes agreeing to 1e-10 shows the default 80 is exact to
    # far below anything the tests compare.
    a = S.aligned_fixed_point(1.0, 2.0, 0.5, n=40)
    b = S.aligned_fixed_point(1.0, 2.0, 0.5, n=160)
    assert abs(a.c - b.c) < 1e-10 and abs(a.risk - b.risk) < 1e-10
    # the scan it reports is the one it ran: every root inside it, its end c_max
    first, last, points = S.aligned_fixed_point(1.0, 2.0, 0.5, n=40, c_max=3.0).scan
    assert last == 3.0 and 0 < first < a.c and points > 1
    assert all(first <= c <= a.scan[1] for c in a.roots)
    assert len(a.roots) == 1 and S.aligned_risk_grad(a.c, 1.0, 2.0, 0.5) == pytest.approx(0.0, abs=1e-10)
    # g''(kappa*) (the symbolic second derivative) against a central difference of g'
    # (step 1e-4: truncation ~1e-8 g'''', rounding ~1e-12 / 1e-4)
    h = 1e-4
    fd = (S.aligned_risk_grad(a.c + h, 1.0, 2.0, 0.5) - S.aligned_risk_grad(a.c - h, 1.0, 2.0, 0.5)) / (2 * h)
    assert a.curvature > 0 and a.curvature == pytest.approx(fd, rel=1e-6)
    # ... and g' against a central difference of the risk, away from the fixed point
    R = lambda cc: S.aligned_risk(cc, a.c, 1.0, 2.0, 0.5)  # noqa: E731
    assert S.aligned_risk_grad(1.3 * a.c, 1.0, 2.0, 0.5) == pytest.approx(
        (R(1.3 * a.c + h) - R(1.3 * a.c - h)) / (2 * h), rel=1e-6)
    # the branch over lambda is the fixed point at each lambda
    br = S.aligned_branch([0.5, 2.0], 2.0, 0.5)
    for lam, c in zip(br["lam"], br["c"]):
        assert c == pytest.approx(S.aligned_fixed_point(float(lam), 2.0, 0.5).c, rel=1e-12)


def _aligned_theta(c, d, eps=0.0):
    th = np.zeros((2, d))
    th[0, 0] = th[1, 1] = c
    th[0, 1] = eps
    return jnp.asarray(th, jnp.float32)


# d = 5 twice and 3 once: varied d, but only two shapes for the jit compile cache
@pytest.mark.slow
@pytest.mark.parametrize("lam,r,sigma,d", [(1.0, 2.0, 0.5, 5), (0.5, 3.0, 0.7, 3), (2.0, 1.5, 0.4, 5)])
def test_aligned_risk_gradient_and_tilt_vs_library(lam, r, sigma, d):
    mix = A.orthogonal_mixture(2, d, r, sigma)
    fp = S.aligned_fixed_point(lam, r, sigma, d=d)
    risk = lambda th: A.population_risk(th, mix, lam)  # noqa: E731
    # R_inf(c* e_1, c* e_2): float32 risk of size ~1 -> 1e-5 relative.
    assert float(risk(_aligned_theta(fp.c, d))) == pytest.approx(fp.risk, rel=1e-5)
    # away from c* too (the reduction, not just the fixed point)
    assert float(risk(_aligned_theta(1.3 * fp.c, d))) == pytest.approx(
        S.aligned_risk(1.3 * fp.c, 1.3 * fp.c, lam, r, sigma, d), rel=1e-5)
    grad = jax.jit(jax.grad(risk))  # one compilation for both points
    g = np.asarray(grad(_aligned_theta(fp.c, d)), float)
    scale = max(1.0, abs(fp.curvature) * fp.c)
    # on-manifold component vanishes at c*: float32 gradient noise ~1e-6 * scale
    assert abs(g[0, 0]) < 1e-4 * scale and abs(g[1, 1]) < 1e-4 * scale
    # ... and equals the symbolic g'(c) elsewhere on the manifold
    g2 = np.asarray(grad(_aligned_theta(1.3 * fp.c, d)), float)
    assert g2[0, 0] == pytest.approx(S.aligned_risk_grad(1.3 * fp.c, lam, r, sigma), rel=1e-4, abs=1e-4)
    # off-manifold component along the other centroid = the derived tilt gradient
    tilt = S.tilt_gradient(lam, r, sigma, c=fp.c)
    assert abs(tilt) > 0.1  # nonzero for the default (non-centred) mixture
    assert g[0, 1] == pytest.approx(tilt, rel=1e-4)
    assert g[1, 0] == pytest.approx(tilt, rel=1e-4)  # by the swap symmetry
    # directions orthogonal to both centroids: zero (odd integrand)
    assert np.all(np.abs(g[:, 2:]) < 1e-5)


def test_tilt_decomposition_against_autodiff_of_the_library():
    # The two mechanisms of sec-risk-tilt, cluster by cluster: the package differentiates
    # the SymPy integrand; here the coefficient term -2 (z_1 - T_1) kappa dphi_1/deps and
    # the direction term -2 (z_2 - T_2) phi_1 are built from the library's JAX head
    # coefficients (jax.grad for dphi_1/deps) and averaged with the same 2-D Gauss-Hermite
    # rule. float32 integrand of size ~10 -> 1e-4 absolute.
    lam, r, sigma = 1.0, 2.0, 0.5
    out = S.tilt_decomposition(lam, r, sigma)
    kappa = out["c"]
    mix = A.orthogonal_mixture(2, 2, r, sigma)

    def phi(eps, z):  # (phi_1, phi_2) at theta_1 = (kappa, eps), theta_2 = (0, kappa)
        th = jnp.array([[kappa, eps], [0.0, kappa]], jnp.float32)
        return A.head_coefficients(z @ th.T, th, mix, lam)

    def terms(z):
        p = phi(0.0, z)
        T = jnp.array([kappa * p[0], kappa * p[1]])
        dphi1 = jax.grad(lambda e: phi(e, z)[0])(0.0)
        return jnp.stack([-2 * (z[0] - T[0]) * kappa * dphi1, -2 * (z[1] - T[1]) * p[0]])

    x, w = S.gauss_hermite(60)
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    W = np.outer(w, w).ravel()
    integrand = jax.jit(jax.vmap(terms))  # one compilation for both clusters
    for c, mu in enumerate(np.asarray(mix.centroids, float)):
        Z = jnp.asarray(np.stack([mu[0] + sigma * X1.ravel(), mu[1] + sigma * X2.ravel()], -1), jnp.float32)
        coef, direc = 0.5 * (W @ np.asarray(integrand(Z), float))
        assert coef == pytest.approx(out["coefficient"][c], abs=1e-4)
        assert direc == pytest.approx(out["direction"][c], abs=1e-4)
    # the sum is the tilt gradient; head 1's mean offset on cluster 2 is c <theta_1, mean>
    # = c^2 r / 2 exactly (the logistic of a centred Gaussian has mean 1/2); the
    # coefficient term comes from cluster 2 and the direction term from cluster 1
    assert out["total"] == pytest.approx(S.tilt_gradient(lam, r, sigma, c=kappa), rel=1e-10)
    assert out["offset"] == pytest.approx(out["offset_untilted"], rel=1e-12)
    assert out["coefficient"][1] > 0.9 * out["coefficient"].sum() > 0
    assert out["direction"][0] > out["direction"].sum() > 0


@pytest.mark.slow
def test_tilted_minimiser_is_stationary_for_library():
    lam, r, sigma, d = 1.0, 2.0, 0.5, 5
    tm = S.tilted_minimiser(lam, r, sigma, d=d)
    assert tm.eps < 0 and 0.95 < tm.cos < 0.999  # tilted away from the other centroid
    assert tm.risk < tm.aligned_risk
    mix = A.orthogonal_mixture(2, d, r, sigma)
    th = jnp.asarray([[tm.c, tm.eps, 0, 0, 0], [tm.eps, tm.c, 0, 0, 0]], jnp.float32)
    assert float(A.population_risk(th, mix, lam)) == pytest.approx(tm.risk, rel=1e-5)
    g = np.asarray(jax.jit(jax.grad(lambda t: A.population_risk(t, mix, lam)))(th))
    assert np.max(np.abs(g)) < 1e-4  # float32 gradient noise; the aligned point has 3.4


@pytest.mark.slow
def test_centred_mixtures_have_no_tilt():
    lam, r, sigma = 1.0, 2.0, 0.5
    # quadrature of an odd integrand: zero to rounding
    assert abs(S.tilt_gradient(lam, r, sigma, "antipodal")) < 1e-10
    assert abs(S.tilt_gradient(lam, r, sigma, "plusminus")) < 1e-10
    d = 3
    # antipodal: the default mixture centred, mu_1 = -mu_2 = (r / sqrt 2) e_1
    rho = r / np.sqrt(2)
    mus = np.zeros((2, d))
    mus[0, 0], mus[1, 0] = rho, -rho
    mix = A.GaussianMixture(np.array([0.5, 0.5]), mus, sigma)
    c = S.setting_fixed_point("antipodal", lam, r, sigma, 60)
    th = jnp.asarray([[c, 0, 0], [c, 0, 0]], jnp.float32)
    g = np.asarray(jax.jit(jax.grad(lambda t: A.population_risk(t, mix, lam)))(th))
    assert np.all(np.abs(g) < 1e-3), g
    # plusminus: K = 4 centroids +-r e_1, +-r e_2, heads on e_1 and e_2
    mus = np.zeros((4, d))
    mus[0, 0], mus[1, 0], mus[2, 1], mus[3, 1] = r, -r, r, -r
    mix = A.GaussianMixture(np.full(4, 0.25), mus, sigma)
    c = S.setting_fixed_point("plusminus", lam, r, sigma, 60)
    th = jnp.asarray([[c, 0, 0], [0, c, 0]], jnp.float32)
    g = np.asarray(jax.jit(jax.grad(lambda t: A.population_risk(t, mix, lam)))(th))
    assert np.all(np.abs(g) < 1e-3), g


def test_flat_softmax_affine_limit():
    # As lam -> 0, T_inf(z) = sum_h theta_h theta_h^T mean + lam sum_h (theta_h^T Sigma
    # theta_h) theta_h theta_h^T z + O(lam^2) (Sigma the covariance of the tokens). SymPy
    # differentiates the symbolic phi_h in lam at 0; the library's T_inf must then differ from the
    # affine map by O(lam^2): the error falls by about 4 when lam halves.
    mix = _random_mixture(4, d=3, K=2)
    mu, pi, sigma = np.asarray(mix.centroids, float), np.asarray(mix.weights, float), float(mix.sigma)
    pi = pi / pi.sum()  # the library stores float32 weights, which need not sum to 1 in float64
    rng = np.random.default_rng(5)
    theta, z = rng.normal(size=(2, 3)), rng.normal(size=3)
    lam = sp.Symbol("lambda", positive=True)
    mean = pi @ mu
    Sigma = sigma**2 * np.eye(3) + ((mu - mean).T * pi) @ (mu - mean)
    for th in theta:
        phi = S.head_coefficient_expr(th.tolist(), z.tolist(), mu.tolist(), pi.tolist(), lam, sigma)
        assert float(phi.subs(lam, 0)) == pytest.approx(th @ mean, rel=1e-10)
        assert float(sp.diff(phi, lam).subs(lam, 0)) == pytest.approx((th @ Sigma @ th) * (th @ z), rel=1e-10)
    affine = lambda l: sum(np.outer(th, th) @ mean + l * (th @ Sigma @ th) * np.outer(th, th) @ z for th in theta)  # noqa: E731
    err = [np.linalg.norm(np.asarray(A.head_output_limit(jnp.asarray(theta, jnp.float32), jnp.asarray(z, jnp.float32), mix, l), float) - affine(l))
           for l in (0.08, 0.04)]
    assert 3.0 < err[0] / err[1] < 5.0, err  # float32 rounding (~1e-6) is far below err[1]


# --------------------------------------------------------------------------------------
# "In-context quantization with identity attention"
# --------------------------------------------------------------------------------------


def test_identity_limit_float64_vs_library():
    rng = np.random.default_rng(4)
    mus = rng.normal(size=(3, 5)) * 2
    w = np.array([0.5, 0.25, 0.25])
    z = rng.normal(size=(4, 5))
    mix = A.GaussianMixture(w, mus, 0.5)
    np.testing.assert_allclose(
        S.identity_limit_float64(z, mus, w, 0.5, 0.7),
        np.asarray(A.identity_limit(jnp.asarray(z), mix, 0.7)), **F32)


def test_identity_attention_float64_is_the_library_layer_in_float64():
    # the float64 reference of the quantization chapter's float tolerances: the same layer
    # as the float32 library, to float32 rounding, and computed in float64 (its dtype, and a
    # non-zero distance to the float32 outputs, which a float32 "reference" would not have)
    X = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (4, 30, 5)), np.float32) * 2
    ref = S.identity_attention_float64(X, 0.9)
    lib = np.asarray(A.identity_attention(X, 0.9))
    assert ref.dtype == np.float64 and ref.shape == X.shape
    np.testing.assert_allclose(ref, lib, **F32)
    assert 0 < np.abs(ref - lib).max() < 1e-4
    # a large lam does not overflow: the maximum is subtracted
    assert np.all(np.isfinite(S.identity_attention_float64(X, 1e3)))


def test_identity_limit_is_the_tilted_mean():
    # Q_inf(z) = E[x e^{lam <z, x>}] / E[e^{lam <z, x>}] (prop-identity-limit), the
    # expectations by tensor Gauss-Hermite over each component (d = 2, K = 2, unequal
    # weights): exact to ~1e-12 for these smooth integrands, so 1e-9
    rng = np.random.default_rng(8)
    mus, pi, sigma, lam = rng.normal(size=(2, 2)), np.array([0.3, 0.7]), 0.6, 0.8
    x, w = S.gauss_hermite(60)
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    for z in rng.normal(size=(4, 2)):
        num, den = np.zeros(2), 0.0
        for mu, p in zip(mus, pi):
            Y1, Y2 = mu[0] + sigma * X1, mu[1] + sigma * X2
            W = p * np.outer(w, w) * np.exp(lam * (z[0] * Y1 + z[1] * Y2))
            num += [np.sum(W * Y1), np.sum(W * Y2)]
            den += np.sum(W)
        np.testing.assert_allclose(S.identity_limit_float64(z, mus, pi, sigma, lam), num / den, atol=1e-9)


def test_identity_attention_is_norm_weighted_mean_shift():
    # e^{lam <x, y>} = e^{-lam ||x - y||^2 / 2} e^{lam ||x||^2 / 2} e^{lam ||y||^2 / 2}: the
    # layer is mean shift with a Gaussian kernel and keys weighted by e^{lam ||x_k||^2 / 2}
    xs, ys = sp.symbols("x_1:4", real=True), sp.symbols("y_1:4", real=True)
    lam = sp.Symbol("lambda", positive=True)
    dot = lambda a, b: sum(ai * bi for ai, bi in zip(a, b))  # noqa: E731
    diff = [a - b for a, b in zip(xs, ys)]
    rhs = sp.exp(-lam * dot(diff, diff) / 2 + lam * dot(xs, xs) / 2 + lam * dot(ys, ys) / 2)
    assert sp.simplify(rhs - sp.exp(lam * dot(xs, ys))) == 0
    X, _ = A.sample(jax.random.PRNGKey(9), A.orthogonal_mixture(2, 5, 2.0, 0.5), 1, 50)
    Xp = np.asarray(X[0], float)
    w = np.exp(-0.8 * ((Xp[:, None] - Xp[None]) ** 2).sum(-1) / 2 + 0.8 * (Xp**2).sum(-1)[None] / 2)
    np.testing.assert_allclose((w @ Xp) / w.sum(1, keepdims=True), np.asarray(A.identity_attention(X, 0.8))[0],
                               rtol=1e-4, atol=1e-4)  # float32 softmax of logits up to ~20


@pytest.mark.slow
def test_identity_attention_origin_and_rotations():
    # Q(UX) = U Q(X) for an orthogonal U; Q(X + b) - b is the layer with the logits tilted
    # by lam <b, x_k>, and differs from Q(X)
    X, _ = A.sample(jax.random.PRNGKey(3), A.orthogonal_mixture(2, 4, 2.0, 0.5), 3, 40)
    lam = 0.7
    U, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(4, 4)))
    QX = np.asarray(A.identity_attention(X, lam))
    np.testing.assert_allclose(np.asarray(A.identity_attention(X @ U.T, lam)), QX @ U.T, atol=1e-4)
    b = jnp.array([1.0, 1.0, 0, 0]) / np.sqrt(2)
    shifted = np.asarray(A.identity_attention(X + b, lam)) - np.asarray(b)
    logits = lam * (jnp.einsum("nld,nkd->nlk", X, X) + (X @ b)[:, None, :])
    np.testing.assert_allclose(shifted, np.asarray(jnp.einsum("nlk,nkd->nld", jax.nn.softmax(logits, -1), X)), atol=1e-4)
    assert np.abs(shifted - QX).max() > 0.1


@pytest.mark.parametrize("lam_sigma2,equal_norms,expect", [(1.0, True, True), (0.5, True, False), (1.0, False, False)])
def test_weights_are_the_bayes_posterior_iff(lam_sigma2, equal_norms, expect):
    # alpha_c(z) = softmax_c(log pi_c + lam <z, mu_c>) equals the Bayes posterior p(c | z)
    # of the mixture for every z iff lam = 1 / sigma^2 and the centroids have equal norms
    sigma = 0.7
    mu = np.array([[2.0, 0.5, 0.0], [-0.5, 2.0, 0.0]])
    if not equal_norms:
        mu[1] *= 1.3
    pi = np.array([0.35, 0.65])
    z = np.random.default_rng(1).normal(size=(20, 3)) * 2
    alpha = special.softmax(np.log(pi) + lam_sigma2 / sigma**2 * z @ mu.T, axis=1)
    logp = np.log(pi) + np.stack([stats.multivariate_normal(m, sigma**2 * np.eye(3)).logpdf(z) for m in mu], 1)
    posterior = special.softmax(logp, axis=1)
    assert np.allclose(alpha, posterior, atol=1e-12) == expect


def test_identity_fixed_points_are_fixed_attracting_and_bifurcate():
    # the roots of the scalar equation delta = S tanh(lam r delta / 2) are fixed points of
    # Q_inf (float64), the split appears exactly above lam_c = 2 / (r^2 + 2 sigma^2), and
    # iterating Q_inf from mu_1 converges to the split point above lam_c and to the merged
    # point below (contraction: 300 steps leave < 1e-10, except next to lam_c)
    r, sigma = 2.0, 0.5
    mu = np.array([[r, 0.0], [0.0, r]])
    lam_c = 2 / (r**2 + 2 * sigma**2)
    for lam in (0.3, lam_c * 0.99, lam_c * 1.01, 0.6, 1.0, 3.0):
        fp = S.identity_fixed_points(lam, r, sigma)
        assert fp["lam_critical"] == pytest.approx(lam_c)
        q = S.identity_limit_float64(fp["split"], mu, [0.5, 0.5], sigma, lam)
        np.testing.assert_allclose(q, fp["split"], rtol=1e-10, atol=1e-10)
        assert (fp["delta"] > 0) == (lam > lam_c) == (fp["slope_merged"] > 1)
        if lam in (0.3, 0.6, 1.0, 3.0):
            p = mu[0]
            for _ in range(300):
                p = S.identity_limit_float64(p, mu, [0.5, 0.5], sigma, lam)
            np.testing.assert_allclose(p, fp["split"], atol=1e-8)
    with pytest.raises(ValueError, match="lam sigma"):
        S.identity_fixed_points(4.0, r, sigma)


def _default_tokens(n, seed, r=2.0, sigma=0.5, d=5):
    """(centroids, labels, tokens): n tokens of the default mixture mu_c = r e_c, equal
    weights, drawn with NumPy in float64."""
    rng = np.random.default_rng(seed)
    mu = np.zeros((2, d))
    mu[0, 0] = mu[1, 1] = r
    lab = rng.integers(0, 2, n)
    return mu, lab, mu[lab] + sigma * rng.standard_normal((n, d))


def test_omega_law_and_the_bound_step():
    # omega = <z, mu_c' - mu_c> ~ N(-r^2, 2 sigma^2 r^2) given the component, by sampling
    # (5 standard errors); then the proof's step E beta^2 <= E e^{u omega}
    # = exp(-u r^2 + u^2 sigma^2 r^2) for u in [0, 2 lam], the expectations by quadrature
    r, sigma, n = 2.0, 0.5, 200_000
    mu, lab, z = _default_tokens(n, 11, r, sigma)
    omega = np.sum(z * (mu[1 - lab] - mu[lab]), axis=1)
    v = 2 * sigma**2 * r**2
    assert abs(omega.mean() + r**2) < 5 * np.sqrt(v / n)
    assert abs(omega.var() / v - 1) < 5 * np.sqrt(2 / n)
    x, w = S.gauss_hermite(120)
    om = -(r**2) + np.sqrt(v) * x
    for lam in (0.2, 0.7, 2.0):
        Eb2 = w @ special.expit(lam * om) ** 2
        for u in np.linspace(0, 2 * lam, 5):
            M = np.exp(-u * r**2 + u**2 * sigma**2 * r**2)
            assert w @ np.exp(u * om) == pytest.approx(M, rel=1e-10)
            assert Eb2 <= M


@pytest.mark.parametrize("r,sigma,d", [(2.0, 0.5, 5), (1.5, 0.7, 2), (3.0, 0.4, 10)])
def test_bound_dominates_exact_distortion(r, sigma, d):
    for lam in (0.05, 0.3, 1.0, 2.5, 6.0):
        assert S.distortion_bound(lam, r, sigma, d) >= S.distortion_exact(lam, r, sigma, d)


@given(lam=hst.floats(0.01, 8.0), rho=hst.floats(0.5, 10.0), sigma=hst.floats(0.1, 3.0), d=hst.integers(1, 30))
def test_bound_and_scaling_properties(lam, rho, sigma, d):
    # B >= D_inf everywhere, and both depend on (lam, r, sigma) only through lam sigma^2
    # and r / sigma once divided by sigma^2 (prop-distortion-scaling)
    r = rho * sigma
    ex, b = S.distortion_exact(lam, r, sigma, d), S.distortion_bound(lam, r, sigma, d)
    assert b >= ex * (1 - 1e-12)
    assert ex / sigma**2 == pytest.approx(S.distortion_exact(lam * sigma**2, rho, 1.0, d), rel=1e-9)
    assert b / sigma**2 == pytest.approx(S.distortion_bound(lam * sigma**2, rho, 1.0, d), rel=1e-9)


def test_bound_misassignment_decay():
    # for lam sigma^2 <= 1/4 the misassignment term of sqrt(B) is sqrt 2 r
    # e^{-lam r^2 (1 - 2 lam sigma^2)} (not e^{-lam r^2}); beyond, the Chernoff value
    # sqrt 2 r e^{-r^2 / (8 sigma^2)}
    r, sigma, d = 2.0, 0.5, 5
    A_ = sigma**2 * np.sqrt(d * sigma**2 + r**2)
    for lam in (0.1, 0.5, 1.0):
        mis = np.sqrt(S.distortion_bound(lam, r, sigma, d)) - lam * A_
        assert mis == pytest.approx(np.sqrt(2) * r * np.exp(-lam * r**2 * (1 - 2 * lam * sigma**2)), rel=1e-12)
    for lam in (1.5, 3.0):
        mis = np.sqrt(S.distortion_bound(lam, r, sigma, d)) - lam * A_
        assert mis == pytest.approx(np.sqrt(2) * r * np.exp(-(r**2) / (8 * sigma**2)), rel=1e-12)


def test_exact_distortion_vs_monte_carlo_and_library():
    lam, r, sigma, d = 0.7, 2.0, 0.5, 5
    ex = S.distortion_exact(lam, r, sigma, d)
    # NumPy MC with our own Q: within 5 standard errors
    mc, se = S.distortion_mc(lam, r, sigma, d, n=100_000, seed=5)
    assert abs(ex - mc) < 5 * se
    # the library's identity_limit on the same draws (float32): same estimate to 1e-4
    mus, lab, z = _default_tokens(100_000, 5, r, sigma, d)
    q = np.asarray(A.identity_limit(jnp.asarray(z, jnp.float32), A.orthogonal_mixture(2, d, r, sigma), lam))
    mc_lib = float(np.mean(np.sum((q - mus[lab]) ** 2, axis=-1)))
    assert mc_lib == pytest.approx(mc, rel=1e-4)


def test_bayes_distortion():
    # the posterior mean E[mu_c | z] of the default mixture has distortion
    # 2 r^2 E[logistic(omega / sigma^2)^2] (the chapter's reference level): quadrature of
    # that formula against sampling (5 standard errors)
    r, sigma, d = 2.0, 0.5, 5
    x, w = S.gauss_hermite(120)
    formula = 2 * r**2 * w @ special.expit((-(r**2) + np.sqrt(2) * sigma * r * x) / sigma**2) ** 2
    n = 400_000
    mu, lab, z = _default_tokens(n, 12, r, sigma, d)
    post = special.softmax(-np.sum((z[:, None] - mu[None]) ** 2, -1) / (2 * sigma**2), axis=1)
    err = np.sum((post @ mu - mu[lab]) ** 2, -1)
    assert abs(err.mean() - formula) < 5 * err.std() / np.sqrt(n)
    assert formula < S.best_lambda_bound(r, sigma, d)["exact_min"]


@pytest.mark.slow
def test_bound_at_finite_L():
    # The bound is for the large-L map; at L = 1000 the finite-L distortion (identity
    # attention on the prompt itself) should sit near the exact limit and below the bound.
    lam, r, sigma, d = 0.7, 2.0, 0.5, 5
    mix = A.orthogonal_mixture(2, d, r, sigma)
    X, lab = A.sample(jax.random.PRNGKey(0), mix, 4, 1000)
    Q = np.asarray(A.identity_attention(X, lam))
    D_L = float(np.mean(np.sum((Q - np.asarray(mix.centroids)[np.asarray(lab)]) ** 2, axis=-1)))
    assert D_L <= S.distortion_bound(lam, r, sigma, d)
    # 4000 tokens: MC spread of the mean ~0.01 plus O(1/L) bias; 0.05 is generous
    assert D_L == pytest.approx(S.distortion_exact(lam, r, sigma, d), abs=0.05)


def test_best_lambda_and_scaling():
    r, sigma, d = 2.0, 0.5, 5
    b = S.best_lambda_bound(r, sigma, d)
    assert b["bound"] >= b["exact_at_lam_bound"] >= b["exact_min"]
    # the minimisers are minima: a grid of lam finds nothing lower
    grid = np.geomspace(0.01, 8, 400)
    assert b["exact_min"] <= min(S.distortion_exact(l, r, sigma, d) for l in grid) + 1e-12
    assert b["bound"] <= min(S.distortion_bound(l, r, sigma, d) for l in grid) + 1e-12
    # lam_asymptotic minimises the approximation lam A + sqrt 2 r e^{-lam r^2} of sqrt B,
    # and is self-consistent at the default setting (lam sigma^2 <= 1/4)
    A_ = sigma**2 * np.sqrt(d * sigma**2 + r**2)
    res = optimize.minimize_scalar(lambda l: l * A_ + np.sqrt(2) * r * np.exp(-l * r**2), bounds=(1e-4, 4),
                                   method="bounded", options={"xatol": 1e-12})
    assert b["lam_asymptotic"] == pytest.approx(res.x, rel=1e-6)
    assert 0 < b["lam_asymptotic"] * sigma**2 <= 0.25
    # dimensionless: lam sigma^2 and D / sigma^2 depend on r / sigma and d only
    rows1 = S.distortion_scaling([4.0], [5], sigma=0.5)[0]
    rows2 = S.distortion_scaling([4.0], [5], sigma=1.3)[0]
    for k in ("lam_bound_s2", "bound_s2", "exact_min_s2"):
        assert rows1[k] == pytest.approx(rows2[k], rel=1e-5)
    # the approximation's lam* approaches the numeric minimiser of the bound as r / sigma grows
    far = S.distortion_scaling([12.0], [5])[0]
    assert far["lam_asym_s2"] == pytest.approx(far["lam_bound_s2"], rel=0.1)


# --------------------------------------------------------------------------------------
# "Gaussian mixtures and clustering"
# --------------------------------------------------------------------------------------


def test_bayes_error_of_two_components():
    # the nearest-centroid rule's error for two equal-weight components at distance Delta:
    # Phi(-Delta / (2 sigma)), derived by SymPy, against sampling (5 standard errors)
    Delta, sigma, v = sp.symbols("Delta sigma v", positive=True)
    err = sp.integrate(sp.exp(-v**2 / (2 * sigma**2)) / sp.sqrt(2 * sp.pi * sigma**2), (v, Delta / 2, sp.oo))
    D_, s_ = 2 * np.sqrt(2) * 0.5, 0.5  # r / sigma = 2 in the default geometry
    p = float(err.subs({Delta: D_, sigma: s_}))
    assert p == pytest.approx(stats.norm.sf(D_ / (2 * s_)), rel=1e-12)
    rng = np.random.default_rng(13)
    n = 400_000
    mu = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    lab = rng.integers(0, 2, n)
    z = mu[lab] + s_ * rng.standard_normal((n, 3))
    wrong = np.argmin(((z[:, None] - mu[None]) ** 2).sum(-1), axis=1) != lab
    assert abs(wrong.mean() - p) < 5 * np.sqrt(p * (1 - p) / n)
