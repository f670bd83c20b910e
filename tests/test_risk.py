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


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("n_nodes", [257, 500, 20_000])
def test_population_risk_refuses_more_nodes_than_the_rule_holds(n_nodes):
    """NumPy's Gauss-Hermite rule is NaN beyond about 370 nodes (the risk came out as an
    "overflow") and costs O(n^3) (20,000 nodes ran for minutes, or ran out of memory): a
    ValueError naming the limit, before any allocation."""
    m = ac.orthogonal_mixture()
    with pytest.raises(ValueError, match=r"n_nodes must be an integer in 2\.\.256"):
        ac.population_risk(m.centroids, m, 1.0, n_nodes=n_nodes)
    assert np.isfinite(float(ac.population_risk(m.centroids, m, 1.0, n_nodes=256)))


@pytest.mark.usefixtures("typecheck_off")
def test_empirical_risk_of_an_empty_batch_is_refused():
    """No prompt to average over: the mean of nothing was reported as a float32 overflow."""
    m = ac.orthogonal_mixture()
    X = np.zeros((0, 8, 5), np.float32)
    with pytest.raises(ValueError, match="X must hold at least one prompt"):
        ac.empirical_risk(m.centroids, X, 1.0)
    assert ac.two_head_layer(m.centroids, X, 1.0).shape == (0, 8, 5)  # a layer of no prompts is fine


# ---------------------------------------------------------------- bad and extreme input of the limits and risks
# Each call of these tables either raises a clear error or returns a correct finite result
# (tests/bad_input.py's ``check_case``).

from bad_input import (  # noqa: E402
    BAD_ARRAYS as bad_arrays,
    BAD_LAMS,
    check_case,
    close,
    collector,
    HUGE_LAMS,
    KEY,
    MIX,
    nan_at,
    P,
    TH,
    X,
    z,
)

_BAD: list = []
case = collector(_BAD)

hc = ac.head_coefficients
for lam in BAD_LAMS:
    case(f"head_coefficients lam={lam}", lambda lam=lam: hc(P, TH, MIX, lam), ["lam"], error=True)
case("head_coefficients lam=1e30", lambda: hc(P, TH, MIX, 1e30))
case("head_coefficients P nan", lambda: hc(nan_at(P), TH, MIX, 1.0), ["P"], error=True)
case("head_coefficients theta nan", lambda: hc(P, nan_at(TH), MIX, 1.0), ["theta"], error=True)
case("head_coefficients P wrong H", lambda: hc(P[:, :1], TH, MIX, 1.0), ["P"], error=True)
case("head_coefficients theta wrong d", lambda: hc(P, TH[:, :4], MIX, 1.0), ["theta"], error=True)
case("head_coefficients mixture=None", lambda: hc(P, TH, None, 1.0), ["mixture"], error=True)
case("head_coefficients lists", lambda: hc(P.tolist(), TH.tolist(), MIX, 1.0), check=close(hc(P, TH, MIX, 1.0)))

hol = ac.head_output_limit
for lam in BAD_LAMS:
    case(f"head_output_limit lam={lam}", lambda lam=lam: hol(TH, z, MIX, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"head_output_limit lam={lam:g}", lambda lam=lam: hol(TH, z, MIX, lam), ["lam", "theta", "z"])
for label, f in bad_arrays[:3]:
    case(f"head_output_limit theta {label}", lambda f=f: hol(f(TH), z, MIX, 1.0), ["theta"], error=True)
    case(f"head_output_limit z {label}", lambda f=f: hol(TH, f(z), MIX, 1.0), ["z"], error=True)
case("head_output_limit theta*1e10", lambda: hol(TH * 1e10, z, MIX, 1.0), ["theta"])
case("head_output_limit z wrong d", lambda: hol(TH, z[:, :4], MIX, 1.0), ["z"], error=True)
case("head_output_limit theta 1-D", lambda: hol(TH[0], z, MIX, 1.0), ["theta"], error=True)
case("head_output_limit mixture=None", lambda: hol(TH, z, None, 1.0), ["mixture"], error=True)
case("head_output_limit z scalar", lambda: hol(TH, 1.0, MIX, 1.0), ["z"], error=True)
case("head_output_limit lists", lambda: hol(TH.tolist(), z.tolist(), MIX, 1.0), check=close(hol(TH, z, MIX, 1.0)))

il = ac.identity_limit
for lam in BAD_LAMS:
    case(f"identity_limit lam={lam}", lambda lam=lam: il(z, MIX, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"identity_limit lam={lam:g}", lambda lam=lam: il(z, MIX, lam), ["lam", "z"])
for label, f in bad_arrays:
    case(f"identity_limit z {label}", lambda f=f: il(f(z), MIX, 1.0), ["z"], error=True)
case("identity_limit z=1.0", lambda: il(1.0, MIX, 1.0), ["z"], error=True)
case("identity_limit z wrong d", lambda: il(z[:, :4], MIX, 1.0), ["z"], error=True)
case("identity_limit mixture=None", lambda: il(z, None, 1.0), ["mixture"], error=True)
case("identity_limit z list", lambda: il(z.tolist(), MIX, 1.0), check=close(il(z, MIX, 1.0)))
case("identity_limit z float16", lambda: il(z.astype(jnp.float16), MIX, 1e4))

er = ac.empirical_risk
for lam in BAD_LAMS:
    case(f"empirical_risk lam={lam}", lambda lam=lam: er(TH, X, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"empirical_risk lam={lam:g}", lambda lam=lam: er(TH, X, lam))
for label, f in bad_arrays:
    case(f"empirical_risk X {label}", lambda f=f: er(TH, f(X), 1.0), ["X"], error=True)
    case(f"empirical_risk theta {label}", lambda f=f: er(f(TH), X, 1.0), ["theta"], error=True)
case("empirical_risk X list", lambda: er(TH, X.tolist(), 1.0), check=close(er(TH, X, 1.0)))
case("empirical_risk theta list", lambda: er(TH.tolist(), X, 1.0), check=close(er(TH, X, 1.0)))
case("empirical_risk X*1e20", lambda: er(TH, X * 1e20, 1.0), ["X"])
case("empirical_risk theta wrong d", lambda: er(TH[:, :4], X, 1.0), ["theta"], error=True)
case("empirical_risk X 1-D", lambda: er(TH, X[0, 0], 1.0), ["X"], error=True)

pr = ac.population_risk
for lam in BAD_LAMS:
    case(f"population_risk lam={lam}", lambda lam=lam: pr(TH, MIX, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"population_risk lam={lam:g}", lambda lam=lam: pr(TH, MIX, lam), ["lam", "theta"])
for label, f in bad_arrays:
    case(f"population_risk theta {label}", lambda f=f: pr(f(TH), MIX, 1.0), ["theta"], error=True)
case("population_risk theta*1e10", lambda: pr(TH * 1e10, MIX, 1.0), ["theta"])
case("population_risk theta*1e3", lambda: pr(TH * 1e3, MIX, 1.0), ["theta"])
for n in [1, 0, 2.5, "40"]:
    case(f"population_risk n_nodes={n!r}", lambda n=n: pr(TH, MIX, 1.0, n_nodes=n), ["n_nodes"], error=True)
case("population_risk theta wrong d", lambda: pr(TH[:, :4], MIX, 1.0), ["theta"], error=True)
case("population_risk mixture=None", lambda: pr(TH, None, 1.0), ["mixture"], error=True)
case("population_risk theta list", lambda: pr(TH.tolist(), MIX, 1.0), check=close(pr(TH, MIX, 1.0)))

prm = ac.population_risk_mc
for lam in BAD_LAMS:
    case(f"population_risk_mc lam={lam}", lambda lam=lam: prm(KEY, TH, MIX, lam, 64), ["lam"], error=True)
for label, f in bad_arrays[:3]:
    case(f"population_risk_mc theta {label}", lambda f=f: prm(KEY, f(TH), MIX, 1.0, 64), ["theta"], error=True)
case("population_risk_mc theta*1e10", lambda: prm(KEY, TH * 1e10, MIX, 1.0, 64), ["theta"])
for n in [0, -1, 2.5]:
    case(f"population_risk_mc n={n}", lambda n=n: prm(KEY, TH, MIX, 1.0, n), ["n", "n_samples"], error=True)  # renamed n -> n_samples
case("population_risk_mc theta wrong d", lambda: prm(KEY, TH[:, :4], MIX, 1.0, 64), ["theta"], error=True)
case("population_risk_mc mixture=None", lambda: prm(KEY, TH, None, 1.0, 64), ["mixture"], error=True)
case("population_risk_mc new key", lambda: prm(jax.random.key(0), TH, MIX, 1.0, 64))


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("c", _BAD)
def test_bad_input_to_the_limits_and_risks(c):
    """Limits and risks: a clear error or a correct result for every case."""
    check_case(c)
