"""Identity attention at large L (chapter "In-context quantization with identity attention",
chapters/quantization.md): the finite-L layer (def-identity-attention) and its limit Q_inf
(prop-identity-limit) in float64, the fixed points
of iterated Q_inf (sec-quant-fixed-points), the exact large-L distortion
(prop-distortion-exact), its bound (thm-distortion-bound), the best inverse temperatures and their
scaling (prop-distortion-scaling).

The chapter derives each formula in its own cells; this module keeps what figures, other
chapters and the tests reuse. The distortion results hold for K = 2 equal weights and
orthogonal centroids of equal norm r (mu_c = r e_c), at L = infinity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxtyping import ArrayLike, Float, Int
from scipy import optimize
from scipy.special import expit

from .. import _validate as v
from ._common import gauss_hermite


def identity_limit_float64(
    z: Float[ArrayLike, "*b d"], centroids: Float[ArrayLike, "K d"], weights: Float[ArrayLike, "K"] | Sequence[float],
    sigma: float, lam: float,
) -> Float[np.ndarray, "*b d"]:
    """Q_inf(z) = lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c in NumPy
    float64 (prop-identity-limit, chapters/quantization.md), any K and d: the reference
    for checks of the float32 library (``attnclust.identity_limit``, which takes a
    ``GaussianMixture``).

    Args:
        z: (..., d) queries.
        centroids: (K, d).
        weights: (K,) mixing weights.
        sigma: the noise standard deviation.
        lam: the inverse temperature.

    Returns:
        (..., d) outputs.
    """
    z = np.asarray(z, float)
    mu = np.asarray(centroids, float)
    logits = np.log(np.asarray(weights, float)) + lam * z @ mu.T
    logits = logits - logits.max(axis=-1, keepdims=True)
    a = np.exp(logits)
    a /= a.sum(axis=-1, keepdims=True)
    return lam * sigma**2 * z + a @ mu


def identity_attention_float64(X: Float[ArrayLike, "*b L d"], lam: float) -> Float[np.ndarray, "*b L d"]:
    """Q(X)_l = sum_k softmax_k(lam <x_l, x_k>) x_k in NumPy float64 (def-identity-attention,
    chapters/quantization.md): the reference from which the chapter sets the float tolerance
    of the float32 library layer (``attnclust.identity_attention``).

    Args:
        X: (..., L, d) prompts; converted to float64 (float32 inputs keep their values).
        lam: the inverse temperature.

    Returns:
        (..., L, d) float64 outputs, the softmax computed with each row's maximum subtracted.
    """
    X = np.asarray(X, np.float64)
    scores = float(lam) * np.einsum("...ld,...kd->...lk", X, X)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("...lk,...kd->...ld", w, X)


def identity_fixed_points(lam: float, r: float, sigma: float) -> dict[str, float | np.ndarray]:
    """The fixed points of iterated Q_inf for K = 2 equal weights, mu_c = r e_c
    (sec-quant-fixed-points, chapters/quantization.md).

    A fixed point p satisfies (1 - lam sigma^2) p = r (alpha_1(p), alpha_2(p)) and lies in
    the plane of the centroids. Its coordinates sum to S = r / (1 - lam sigma^2), and their
    difference delta solves delta = S tanh(lam r delta / 2). The merged point
    delta = 0, p = (S/2, S/2), always exists; two split points +-delta* > 0 exist iff
    lam r S / 2 > 1, that is lam > lam_c = 2 / (r^2 + 2 sigma^2) (a pitchfork), and then the
    merged point is unstable. For lam sigma^2 >= 1 the noise directions are not contracted
    and iterates diverge: no finite attracting fixed point.

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0, with lam sigma^2 < 1.

    Returns:
        ``lam_critical``; ``delta`` (delta*, 0 below lam_c); ``split`` (2,), the fixed
        point of cluster 1 (the merged point below lam_c); ``merged`` (2,); ``slope_merged``
        = lam r S / 2, the derivative of the delta-map at 0 (> 1: merged point unstable).

    Raises:
        ValueError: lam, r or sigma not positive, or lam sigma^2 >= 1.
    """
    lam, r, sigma = v.positive_reals(lam=lam, r=r, sigma=sigma)
    if lam * sigma**2 >= 1:
        raise ValueError(f"need lam sigma^2 < 1 for a finite fixed point, got lam={lam}, sigma={sigma}")
    S = r / (1 - lam * sigma**2)
    slope = lam * r * S / 2
    delta = 0.0
    if slope > 1:
        delta = optimize.brentq(lambda x: x - S * np.tanh(lam * r * x / 2), 1e-12 * S, S + 1e-9,
                                xtol=1e-14, rtol=1e-14)
    return {"lam_critical": 2 / (r**2 + 2 * sigma**2), "delta": float(delta),
            "split": np.array([(S + delta) / 2, (S - delta) / 2]),
            "merged": np.array([S / 2, S / 2]), "slope_merged": float(slope)}


def distortion_exact(lam: float, r: float, sigma: float, d: int, n: int = 120) -> float:
    """The exact large-L distortion D_inf(lam) = E||Q_inf(z) - mu_{c(z)}||^2
    (prop-distortion-exact, chapters/quantization.md; K = 2, equal weights, mu_c = r e_c).

    D_inf = (lam sigma^2)^2 (d sigma^2 + r^2) + E[2 lam sigma^2 beta omega + 2 r^2 beta^2],
    beta = logistic(lam omega), with omega = <z, mu_c' - mu_c> ~ N(-r^2, 2 sigma^2 r^2) given
    the component c of z; the expectation by Gauss-Hermite with n nodes.

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        d: the dimension.
        n: quadrature nodes.

    Returns:
        D_inf(lam).
    """
    lam, r, sigma = v.positive_reals(lam=lam, r=r, sigma=sigma)
    x, wts = gauss_hermite(n)
    omega = -(r**2) + np.sqrt(2.0) * sigma * r * x
    beta = expit(lam * omega)
    rest = np.sum(wts * (2 * lam * sigma**2 * beta * omega + 2 * r**2 * beta**2))
    return float((lam * sigma**2) ** 2 * (d * sigma**2 + r**2) + rest)


def distortion_mc(
    lam: float, r: float, sigma: float, d: int, n: int = 100_000, seed: int = 0
) -> tuple[float, float]:
    """Monte Carlo estimate of D_inf(lam) with :func:`identity_limit_float64`
    (K = 2, equal weights, mu_c = r e_c).

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        d: the dimension.
        n: draws.
        seed: NumPy seed.

    Returns:
        (mean, standard error).
    """
    rng = np.random.default_rng(seed)
    mu = np.zeros((2, d))
    mu[0, 0] = mu[1, 1] = r
    lab = rng.integers(0, 2, size=n)
    z = mu[lab] + sigma * rng.standard_normal((n, d))
    err = np.sum((identity_limit_float64(z, mu, np.array([0.5, 0.5]), sigma, lam) - mu[lab]) ** 2, axis=-1)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(n))


def distortion_bound(lam: float, r: float, sigma: float, d: int) -> float:
    """The bound B(lam) >= D_inf(lam) of thm-distortion-bound (chapters/quantization.md;
    K = 2, equal weights, mu_c = r e_c, L = infinity).

    B = (lam sigma^2 sqrt(d sigma^2 + r^2) + sqrt(2) r sqrt(M))^2 with
    M = exp(-gamma r^2 + gamma^2 sigma^2 r^2), gamma = min(2 lam, 1 / (2 sigma^2)).

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        d: the dimension.

    Returns:
        B(lam).
    """
    lam, r, sigma = v.positive_reals(lam=lam, r=r, sigma=sigma)
    gamma = min(2 * lam, 1 / (2 * sigma**2))
    M = np.exp(-gamma * r**2 + gamma**2 * sigma**2 * r**2)
    return float((lam * sigma**2 * np.sqrt(d * sigma**2 + r**2) + np.sqrt(2) * r * np.sqrt(M)) ** 2)


def best_lambda_bound(r: float, sigma: float, d: int) -> dict[str, float]:
    """The best inverse temperatures of the bound and of the exact distortion
    (thm-distortion-bound, chapters/quantization.md; K = 2, equal weights, mu_c = r e_c).

    Bounded scalar searches on (0, 2 / sigma^2].

    Args:
        r, sigma: centroid norm and noise, > 0.
        d: the dimension.

    Returns:
        ``lam_bound`` (the lam minimising B), ``bound`` (B there), ``exact_at_lam_bound``
        (D_inf there), ``lam_exact`` and ``exact_min`` (the minimiser and minimum of D_inf),
        ``lam_asymptotic``: log(sqrt(2) r^3 / A) / r^2, A = sigma^2 sqrt(d sigma^2 + r^2), the
        minimiser of the approximation of sqrt(B) without its quadratic term (an
        approximation, self-consistent when lam sigma^2 <= 1/4).
    """
    r, sigma = v.positive_reals(r=r, sigma=sigma)
    hi = 2.0 / sigma**2
    rb = optimize.minimize_scalar(lambda l: distortion_bound(l, r, sigma, d), bounds=(1e-6, hi),
                                  method="bounded", options={"xatol": 1e-10})
    re = optimize.minimize_scalar(lambda l: distortion_exact(l, r, sigma, d), bounds=(1e-6, hi),
                                  method="bounded", options={"xatol": 1e-10})
    A = sigma**2 * np.sqrt(d * sigma**2 + r**2)
    return {
        "lam_bound": float(rb.x),
        "bound": float(rb.fun),
        "exact_at_lam_bound": distortion_exact(float(rb.x), r, sigma, d),
        "lam_exact": float(re.x),
        "exact_min": float(re.fun),
        "lam_asymptotic": float(np.log(np.sqrt(2) * r**3 / A) / r**2),
    }


def distortion_scaling(
    rhos: Sequence[float] | Float[np.ndarray, "n_rho"], ds: Sequence[int] | Int[np.ndarray, "n_d"], sigma: float = 1.0
) -> list[dict[str, float]]:
    """Best temperatures and distortions over separations rho = r / sigma and dimensions d
    (prop-distortion-scaling, chapters/quantization.md), in units of sigma.

    Args:
        rhos: separations r / sigma.
        ds: dimensions.
        sigma: the noise used for the computation (the results do not depend on it).

    Returns:
        One row per (d, rho): ``rho``, ``d``, ``lam_bound_s2``, ``lam_asym_s2``,
        ``lam_exact_s2`` (temperatures times sigma^2), ``bound_s2``,
        ``exact_at_lam_bound_s2``, ``exact_min_s2`` (distortions over sigma^2).
    """
    rows = []
    for d in ds:
        for rho in rhos:
            b = best_lambda_bound(rho * sigma, sigma, int(d))
            rows.append({"rho": float(rho), "d": int(d),
                         "lam_bound_s2": b["lam_bound"] * sigma**2,
                         "lam_asym_s2": b["lam_asymptotic"] * sigma**2,
                         "bound_s2": b["bound"] / sigma**2,
                         "exact_at_lam_bound_s2": b["exact_at_lam_bound"] / sigma**2,
                         "lam_exact_s2": b["lam_exact"] * sigma**2,
                         "exact_min_s2": b["exact_min"] / sigma**2})
    return rows
