"""Symbolic-versus-numeric tests for the package attnclust.symbolic (the closed forms of the chapters
"Attention as soft pooling", "The two-head layer and its population risk" and "In-context
quantization with identity attention": chapters/attention.md, population_risk.md,
quantization.md).

Each test holds a SymPy-derived formula against an independent numeric evaluation
(scipy quad, sampling, or the library's JAX numerics) so that it fails if the formula,
its lambdification, or the library broke.  The library computes in float32, so
comparisons against it use float32-level tolerances (explained where used).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp
from scipy import integrate

import attnclust as A
from attnclust import symbolic as S


# --------------------------------------------------------------------------------------
# The symbolic objects other pages reuse
# --------------------------------------------------------------------------------------


def test_tilting_lemma_integrals_are_the_closed_forms():
    # the integrals sympy returns simplify to the closed forms; a wrong constant does not
    L = S.tilting_lemma()
    sy = L.symbols
    assert sp.simplify(L.mgf - L.mgf_closed) == 0
    assert sp.simplify(L.tilted_mean - L.tilted_mean_closed) == 0
    assert sp.simplify(L.weight_derived - L.weight_closed.rewrite(sp.exp)) == 0
    assert sp.simplify(L.mgf - sp.exp(sy["t"] * sy["m"] + sy["t"] ** 2 * sy["s"] ** 2)) != 0
    assert sp.simplify(L.tilted_mean - (sy["m"] + sy["t"] * sy["s"])) != 0


def test_head_coefficient_expr_is_the_head_limit_of_the_library():
    # the symbolic phi_h (used by the aligned and tilt integrands) against ac.head_output_limit
    th = sp.symbols("a_1:4", real=True)
    zz = sp.symbols("z_1:4", real=True)
    lam, sigma = sp.symbols("lambda sigma", positive=True)
    rng = np.random.default_rng(3)
    mus = rng.normal(size=(2, 3))
    w = np.array([0.3, 0.7])
    phi = S.head_coefficient_expr(th, zz, mus.tolist(), w.tolist(), lam, sigma)
    f = S.lambdify_expr((*th, *zz, lam, sigma), phi)
    theta = rng.normal(size=(2, 3)) * 0.8
    z = rng.normal(size=(4, 3))
    ours = sum(np.outer(f(*theta[h], *z.T, 0.9, 0.6), theta[h]) for h in range(2))
    lib = np.asarray(A.head_output_limit(jnp.asarray(theta), jnp.asarray(z), A.GaussianMixture(w, mus, 0.6), 0.9))
    np.testing.assert_allclose(ours, lib, rtol=1e-5, atol=1e-5)  # float32 library


def test_expressions_render_to_latex():
    # the chapters display these with sympy.latex
    for e in [S.tilting_lemma().weight_closed, S.aligned_reduction().f, S.aligned_reduction().dg_integrand]:
        assert isinstance(sp.latex(e), str) and sp.latex(e)
    assert "logistic" in sp.latex(S.aligned_reduction().f)
    assert r"\operatorname{logistic}\left(x\right)^{2}" in sp.latex(S.logistic(sp.Symbol("x")) ** 2)


# --------------------------------------------------------------------------------------
# Section 4: the lemma against quadrature and sampling
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Section 4/6: head output and identity limit against the library
# --------------------------------------------------------------------------------------

# The library computes in float32: relative rounding ~6e-8 per operation, a few dozen
# operations per output, so 1e-5 relative (and 1e-5 absolute near zero) is float32-level.
F32 = dict(rtol=1e-5, atol=1e-5)


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


def test_identity_limit_float64_vs_library():
    rng = np.random.default_rng(4)
    mus = rng.normal(size=(3, 5)) * 2
    w = np.array([0.5, 0.25, 0.25])
    z = rng.normal(size=(4, 5))
    mix = A.GaussianMixture(w, mus, 0.5)
    np.testing.assert_allclose(
        S.identity_limit_float64(z, mus, w, 0.5, 0.7),
        np.asarray(A.identity_limit(jnp.asarray(z), mix, 0.7)), **F32)


def test_identity_fixed_points_are_fixed_and_bifurcate():
    # the roots of the scalar equation are fixed points of Q_inf (float64), and the split
    # appears exactly above lam_c = 2 / (r^2 + 2 sigma^2)
    r, sigma = 2.0, 0.5
    mu = np.array([[r, 0.0], [0.0, r]])
    lam_c = 2 / (r**2 + 2 * sigma**2)
    for lam in (0.3, lam_c * 0.99, lam_c * 1.01, 0.6, 1.0, 3.0):
        fp = S.identity_fixed_points(lam, r, sigma)
        assert fp["lam_critical"] == pytest.approx(lam_c)
        q = S.identity_limit_float64(fp["split"], mu, [0.5, 0.5], sigma, lam)
        np.testing.assert_allclose(q, fp["split"], rtol=1e-10, atol=1e-10)
        assert (fp["delta"] > 0) == (lam > lam_c) == (fp["slope_merged"] > 1)
    with pytest.raises(ValueError, match="lam sigma"):
        S.identity_fixed_points(4.0, r, sigma)


# --------------------------------------------------------------------------------------
# Section 5: aligned manifold, fixed point and tilt against the library's risk
# --------------------------------------------------------------------------------------


def _aligned_theta(c, d, eps=0.0):
    th = np.zeros((2, d))
    th[0, 0] = th[1, 1] = c
    th[0, 1] = eps
    return jnp.asarray(th, jnp.float32)


def test_fixed_point_quadrature_converged():
    # Quadrature error: the integrand is analytic in a strip, so Gauss-Hermite converges
    # geometrically; 40 and 160 nodes agreeing to 1e-10 shows the default 80 is exact to
    # far below anything the tests compare.
    a = S.aligned_fixed_point(1.0, 2.0, 0.5, n=40)
    b = S.aligned_fixed_point(1.0, 2.0, 0.5, n=160)
    assert abs(a.c - b.c) < 1e-10 and abs(a.risk - b.risk) < 1e-10
    assert a.curvature > 0 and len(a.roots) >= 1
    assert S.aligned_risk_grad(a.c, 1.0, 2.0, 0.5) == pytest.approx(0.0, abs=1e-10)


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
    g = np.asarray(jax.grad(risk)(_aligned_theta(fp.c, d)), float)
    scale = max(1.0, abs(fp.curvature) * fp.c)
    # on-manifold component vanishes at c*: float32 gradient noise ~1e-6 * scale
    assert abs(g[0, 0]) < 1e-4 * scale and abs(g[1, 1]) < 1e-4 * scale
    # ... and equals the symbolic g'(c) elsewhere on the manifold
    g2 = np.asarray(jax.grad(risk)(_aligned_theta(1.3 * fp.c, d)), float)
    assert g2[0, 0] == pytest.approx(S.aligned_risk_grad(1.3 * fp.c, lam, r, sigma), rel=1e-4, abs=1e-4)
    # off-manifold component along the other centroid = the derived tilt gradient
    tilt = S.tilt_gradient(lam, r, sigma, c=fp.c)
    assert abs(tilt) > 0.1  # nonzero for the default (non-centred) mixture
    assert g[0, 1] == pytest.approx(tilt, rel=1e-4)
    assert g[1, 0] == pytest.approx(tilt, rel=1e-4)  # by the swap symmetry
    # directions orthogonal to both centroids: zero (odd integrand)
    assert np.all(np.abs(g[:, 2:]) < 1e-5)


@pytest.mark.slow
def test_tilted_minimiser_is_stationary_for_library():
    lam, r, sigma, d = 1.0, 2.0, 0.5, 5
    tm = S.tilted_minimiser(lam, r, sigma, d=d)
    assert tm.eps < 0 and 0.95 < tm.cos < 0.999  # tilted away from the other centroid
    assert tm.risk < tm.aligned_risk
    mix = A.orthogonal_mixture(2, d, r, sigma)
    th = jnp.asarray([[tm.c, tm.eps, 0, 0, 0], [tm.eps, tm.c, 0, 0, 0]], jnp.float32)
    assert float(A.population_risk(th, mix, lam)) == pytest.approx(tm.risk, rel=1e-5)
    g = np.asarray(jax.grad(lambda t: A.population_risk(t, mix, lam))(th))
    assert np.max(np.abs(g)) < 1e-4  # float32 gradient noise; the aligned point has 3.4


def test_tilt_decomposition_sums_to_the_gradient_and_splits_by_cluster():
    # the two mechanisms add up to the tilt gradient (an independent 2-D quadrature of the
    # full derivative); head 1's offset on cluster 2 is c <theta_1, mean> = c^2 r / 2 exactly
    # (the logistic of a centred Gaussian has mean 1/2); the coefficient term comes from
    # cluster 2 and the direction term from cluster 1
    out = S.tilt_decomposition(1.0, 2.0, 0.5)
    assert out["total"] == pytest.approx(S.tilt_gradient(1.0, 2.0, 0.5, c=out["c"]), rel=1e-10)
    assert out["offset"] == pytest.approx(out["offset_untilted"], rel=1e-12)
    assert out["coefficient"][1] > 0.9 * out["coefficient"].sum() > 0
    assert out["direction"][0] > out["direction"].sum() > 0


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
    g = np.asarray(jax.grad(lambda t: A.population_risk(t, mix, lam))(th))
    assert np.all(np.abs(g) < 1e-3), g
    # plusminus: K = 4 centroids +-r e_1, +-r e_2, heads on e_1 and e_2
    mus = np.zeros((4, d))
    mus[0, 0], mus[1, 0], mus[2, 1], mus[3, 1] = r, -r, r, -r
    mix = A.GaussianMixture(np.full(4, 0.25), mus, sigma)
    c = S.setting_fixed_point("plusminus", lam, r, sigma, 60)
    th = jnp.asarray([[c, 0, 0], [0, c, 0]], jnp.float32)
    g = np.asarray(jax.grad(lambda t: A.population_risk(t, mix, lam))(th))
    assert np.all(np.abs(g) < 1e-3), g


# --------------------------------------------------------------------------------------
# Section 6: distortion and its bound
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("r,sigma,d", [(2.0, 0.5, 5), (1.5, 0.7, 2), (3.0, 0.4, 10)])
def test_bound_dominates_exact_distortion(r, sigma, d):
    for lam in (0.05, 0.3, 1.0, 2.5, 6.0):
        assert S.distortion_bound(lam, r, sigma, d) >= S.distortion_exact(lam, r, sigma, d)


def test_exact_distortion_vs_monte_carlo_and_library():
    lam, r, sigma, d = 0.7, 2.0, 0.5, 5
    ex = S.distortion_exact(lam, r, sigma, d)
    # NumPy MC with our own Q: within 5 standard errors
    mc, se = S.distortion_mc(lam, r, sigma, d, n=100_000, seed=5)
    assert abs(ex - mc) < 5 * se
    # the library's identity_limit on the same draws (float32): same estimate to 1e-5
    rng = np.random.default_rng(5)
    mus = np.zeros((2, d))
    mus[0, 0] = mus[1, 1] = r
    lab = rng.integers(0, 2, size=100_000)
    z = mus[lab] + sigma * rng.standard_normal((100_000, d))
    q = np.asarray(A.identity_limit(jnp.asarray(z, jnp.float32), A.orthogonal_mixture(2, d, r, sigma), lam))
    mc_lib = float(np.mean(np.sum((q - mus[lab]) ** 2, axis=-1)))
    assert mc_lib == pytest.approx(mc, rel=1e-4)


@pytest.mark.slow
def test_bound_at_finite_L():
    # The bound is for the large-L map; at L = 1000 the finite-L distortion (identity
    # attention on the prompt itself) should sit near the exact limit and below the bound.
    if not hasattr(A, "identity_attention"):
        pytest.skip("identity_attention not available")
    lam, r, sigma, d = 0.7, 2.0, 0.5, 5
    mix = A.orthogonal_mixture(2, d, r, sigma)
    X, lab = A.sample(jax.random.PRNGKey(0), mix, 4, 1000)
    Q = np.asarray(A.identity_attention(X, lam))
    D_L = float(np.mean(np.sum((Q - np.asarray(mix.centroids)[np.asarray(lab)]) ** 2, axis=-1)))
    assert D_L <= S.distortion_bound(lam, r, sigma, d)
    # 4000 tokens: MC spread of the mean ~0.01 plus O(1/L) bias; 0.05 is generous
    assert D_L == pytest.approx(S.distortion_exact(lam, r, sigma, d), abs=0.05)


def test_best_lambda_and_scaling():
    b = S.best_lambda_bound(2.0, 0.5, 5)
    assert b["bound"] >= b["exact_at_lam_bound"] >= b["exact_min"]
    # the bound is minimised at an interior lam in the e^{-lam r^2} regime
    assert 0 < b["lam_bound"] * 0.5**2 <= 0.25
    # dimensionless: lam sigma^2 and D / sigma^2 depend on r / sigma and d only
    rows1 = S.distortion_scaling([4.0], [5], sigma=0.5)[0]
    rows2 = S.distortion_scaling([4.0], [5], sigma=1.3)[0]
    for k in ("lam_bound_s2", "bound_s2", "exact_min_s2"):
        assert rows1[k] == pytest.approx(rows2[k], rel=1e-5)
    # the asymptotic lam* approaches the numeric minimiser of the bound as r / sigma grows
    far = S.distortion_scaling([12.0], [5])[0]
    assert far["lam_asym_s2"] == pytest.approx(far["lam_bound_s2"], rel=0.1)
