"""Figures of the chapter "In-context quantization with identity attention", and the two
finite-L measurements they use (``finite_L_distortion``, ``identity_limit_error``).

- ``identity-limit-terms``: what the large-L limit Q_inf does to the tokens of a
  two-component mixture in the plane (:func:`identity_limit_terms_data`): each token is
  pulled towards its own cluster's (displaced) centre, and the weights alpha_c(z) along the
  line between the centroids show the misassignment near the boundary.
- ``identity-limit-rate``: how fast identity attention on a finite prompt approaches that
  limit (:func:`identity_limit_rate_data`, built on ``identity_limit_error``).

The large-L curves come from ``attnclust.symbolic`` (exact distortion by quadrature and
its bound); the finite-L points from ``identity_attention`` on sampled prompts.
"""

from __future__ import annotations

import inspect
from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection
from matplotlib.ticker import NullFormatter, ScalarFormatter
import numpy as np
from jaxtyping import PRNGKeyArray
from scipy import optimize

from attnclust import symbolic
from attnclust.attention import identity_attend, identity_attention
from attnclust.limits import identity_limit
from attnclust.mixture import GaussianMixture, orthogonal_mixture, sample
from attnclust.book.figures._registry import register
from attnclust.book.figures.attention import COLOURS
from attnclust.book.figures._style import WIDTH, styled
from attnclust.setting import DEFAULT
from attnclust.book import sizes

CHAPTER = "quantization"
FINITE_L = {"small": (50,), "full": (50, 200)}
"""Prompt lengths of the finite-L points of ``distortion-lambda``, by figure size."""
FIXED_POINT_STEPS = 300
"""Iterations of Q_inf from mu_1 behind the circles of ``identity-fixed-points``."""
SCALING_DIMENSIONS = {"small": (2, 5, 20), "full": (2, 5, 20, 50, 100)}
"""Dimensions of the curves of ``distortion-scaling``, by figure size."""
LIMIT_TERMS_TOKENS = {"small": 400, "full": 2000}
"""Tokens drawn for ``identity-limit-terms``, by figure size."""
LIMIT_TERMS_SEED = 431
"""The stream of the tokens of ``identity-limit-terms``."""
LIMIT_TERMS_SETTING = dict(r=DEFAULT.r, sigma=0.6, lam=0.6)
"""The mixture (d = 2, equal weights, mu_c = r e_c) and temperature of ``identity-limit-terms``:
noisier than the default, so that some tokens lie near the boundary between the clusters."""


def _check_size(size: str) -> None:
    sizes.check(size, ("small", "full"))


def finite_L_distortion(
    key: PRNGKeyArray,
    mixture: GaussianMixture,
    lams: np.ndarray,
    L: int,
    n_tokens: int = 20_000,
) -> dict[str, np.ndarray]:
    """Distortion of ``identity_attention`` at prompt length L: for each lam, the mean over
    prompts of (1/L) sum_l ||Q(X)_l - mu_{c(x_l)}||^2, with its standard error over
    prompts. The same n_tokens // L prompts serve every lam. Returns ``lam``, ``D``, ``se``."""
    n = max(2, int(n_tokens) // int(L))
    X, labels = sample(key, mixture, n, int(L))
    target = mixture.centroids[labels]
    Ds, ses = [], []
    for lam in np.asarray(lams, float):
        err = jnp.mean(jnp.sum((identity_attention(X, float(lam)) - target) ** 2, -1), -1)
        err = np.asarray(err, np.float64)
        Ds.append(err.mean())
        ses.append(err.std(ddof=1) / np.sqrt(n))
    return {"lam": np.asarray(lams, float), "D": np.array(Ds), "se": np.array(ses)}


def identity_limit_error(
    key: PRNGKeyArray,
    mixture: GaussianMixture,
    lam: float,
    Ls: list[int] | np.ndarray,
    n_queries: int = 64,
) -> dict[str, np.ndarray]:
    """Mean ||identity_attend(z, X) - identity_limit(z)|| over ``n_queries`` fixed query
    tokens z, attending over one fresh prompt X of length L from the same mixture, for each
    L: the finite-L side of the large-L proposition. Returns ``L`` and ``error``."""
    kz, kx = jax.random.split(key)
    Z, _ = sample(kz, mixture, 1, int(n_queries))
    Z = Z[0]
    lim = identity_limit(Z, mixture, lam)
    errs = []
    for L, k in zip(np.asarray(Ls, int), jax.random.split(kx, len(Ls))):
        X, _ = sample(k, mixture, 1, int(L))
        errs.append(float(jnp.mean(jnp.linalg.norm(identity_attend(Z, X[0], lam) - lim, axis=-1))))
    return {"L": np.asarray(Ls, int), "error": np.array(errs)}


@lru_cache(maxsize=None)
def distortion_curve_data(size: str = "small") -> dict:
    """D(lam) exact (large L), its bound B(lam), the noise floor d sigma^2, the best lam of
    each (``symbolic.best_lambda_bound``) and the finite-L distortion of identity attention
    (at the prompt lengths ``FINITE_L[size]``) for r = 2, sigma = 0.5, d = 5."""
    _check_size(size)
    r, sigma, d = DEFAULT.r, DEFAULT.sigma, DEFAULT.d
    lams = np.geomspace(0.05, 4.0, 40 if size == "small" else 120)
    mix = orthogonal_mixture(K=2, d=d, r=r, sigma=sigma)
    lam_pts = np.geomspace(0.05, 4.0, 9 if size == "small" else 25)
    finite = {}
    for L in FINITE_L[size]:
        finite[L] = finite_L_distortion(jax.random.PRNGKey(L), mix, lam_pts, L,
                                        n_tokens=10_000 if size == "small" else 200_000)
    return {
        "lam": lams,
        "exact": np.array([symbolic.distortion_exact(l, r, sigma, d) for l in lams]),
        "bound": np.array([symbolic.distortion_bound(l, r, sigma, d) for l in lams]),
        "noise_floor": d * sigma**2,
        "best": symbolic.best_lambda_bound(r, sigma, d),
        "finite": finite,
    }


@register("distortion-lambda", chapter=CHAPTER)
@styled
def distortion_lambda(size: str = "small") -> plt.Figure:
    """D(lam) at large L, its bound B(lam), the noise floor d sigma^2 and the finite-L
    distortion of identity attention (error bars: two standard errors)."""
    D = distortion_curve_data(size)
    fig, ax = plt.subplots(figsize=(WIDTH, 4.0))
    ax.plot(D["lam"], D["exact"], "-", label=r"exact $D(\lambda)$, large $L$")
    ax.plot(D["lam"], D["bound"], "--", label=r"bound $B(\lambda)$")
    ax.axhline(D["noise_floor"], color="gray", ls=":", label=r"noise floor $d\sigma^2$")
    for i, (L, F) in enumerate(D["finite"].items()):
        ax.errorbar(F["lam"], F["D"], yerr=2 * F["se"], fmt="o", ms=4, capsize=2, color=f"C{2 + i}",
                    label=f"identity attention, $L={L}$")
    b = D["best"]
    ax.plot([b["lam_bound"]], [b["bound"]], "v", color="C1", ms=8)
    ax.plot([b["lam_exact"]], [b["exact_min"]], "^", color="C0", ms=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks([0.2, 0.5, 1, 2, 5])
    ax.set_xlabel(r"$\lambda$")
    ax.set_ylabel(r"distortion $E\,\|Q(z)-\mu_{c(z)}\|^2$")
    ax.legend(frameon=False, loc="upper center")
    return fig


@lru_cache(maxsize=None)
def distortion_scaling_data(size: str = "small") -> dict:
    """``symbolic.distortion_scaling`` over rho = r / sigma and d (sigma = 1): the best lam
    of the bound and of the exact D, in units of sigma, and the distortions there."""
    _check_size(size)
    rhos = np.linspace(2.0, 8.0, 13 if size == "small" else 49)
    ds = SCALING_DIMENSIONS[size]
    rows = symbolic.distortion_scaling(rhos, ds)
    out = {"rho": rhos, "d": np.array(ds)}
    for k in ("lam_bound_s2", "lam_exact_s2", "lam_asym_s2", "bound_s2", "exact_min_s2",
              "exact_at_lam_bound_s2"):
        out[k] = np.array([row[k] for row in rows]).reshape(len(ds), len(rhos))
    return out


@register("distortion-scaling", chapter=CHAPTER)
@styled
def distortion_scaling(size: str = "small") -> plt.Figure:
    """Best lam sigma^2 (bound, exact, asymptotic formula) and the distortion there
    (D / sigma^2, divided by d to compare with the noise floor) against r / sigma, for
    several dimensions d."""
    D = distortion_scaling_data(size)
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 6.6), sharex=True)
    for i, d in enumerate(D["d"]):
        col = f"C{i}"
        a.plot(D["rho"], D["lam_exact_s2"][i], "-", color=col, label=f"exact D, d={d}")
        a.plot(D["rho"], D["lam_bound_s2"][i], "--", color=col, label=f"bound, d={d}")
        b.plot(D["rho"], D["exact_min_s2"][i] / d, "-", color=col, label=f"exact D, d={d}")
        b.plot(D["rho"], D["bound_s2"][i] / d, "--", color=col, label=f"bound, d={d}")
    a.set_ylabel(r"best $\lambda\sigma^2$")
    b.axhline(1.0, color="gray", ls=":", label="noise floor")
    b.set_yscale("log")
    b.set_xlabel(r"separation $r/\sigma$")
    b.set_ylabel(r"distortion at best $\lambda$ / $(d\sigma^2)$")
    handles, labels = b.get_legend_handles_labels()
    n = len(D["d"])
    order = [*range(0, 2 * n, 2), *range(1, 2 * n, 2), 2 * n]  # exact, then bound, then the floor
    fig.legend([handles[i] for i in order], [labels[i] for i in order], frameon=False,
               loc="outside lower center", ncols=3)
    return fig


@lru_cache(maxsize=None)
def fixed_points_data(size: str = "small") -> dict:
    """Fixed points of iterated Q_inf against lam (``symbolic.identity_fixed_points``;
    sec-quant-fixed-points, chapters/quantization.md) for r = 2, sigma = 0.5, beside where
    Q_inf iterated from the centroid mu_1 (``symbolic.identity_limit_float64``) ends up
    after ``FIXED_POINT_STEPS`` steps.

    Returns arrays ``lam``, ``split`` (n, 2) the fixed point reached from cluster 1's side,
    ``merged`` (n, 2), ``iterated`` (m, 2) at the grid ``lam_iterated``, ``lam_critical``,
    ``steps`` (the iterations) and ``lam_reach_r``, where the first coordinate of cluster 1's fixed point equals r
    (a root of the scalar equation by ``scipy.optimize.brentq``).
    """
    _check_size(size)
    r, sigma = DEFAULT.r, DEFAULT.sigma
    lam_c = 2 / (r**2 + 2 * sigma**2)
    # a geometric grid just above lam_c resolves the square-root branch (it looks like a jump
    # on an even grid)
    near = lam_c * (1 + np.geomspace(1e-6, 0.5, 40 if size == "small" else 200))
    lams = np.union1d(np.linspace(0.05, 2.5, 70 if size == "small" else 350), np.append(near, lam_c))
    rows = [symbolic.identity_fixed_points(l, r, sigma) for l in lams]
    lam_it = np.linspace(0.1, 2.4, 12 if size == "small" else 48)
    mu = np.array([[r, 0.0], [0.0, r]])

    def iterate(lam):
        z = mu[0]
        for _ in range(FIXED_POINT_STEPS):
            z = symbolic.identity_limit_float64(z, mu, [0.5, 0.5], sigma, float(lam))
        return z

    lam_r = optimize.brentq(lambda l: symbolic.identity_fixed_points(l, r, sigma)["split"][0] - r,
                            lam_c * (1 + 1e-9), 0.999 / sigma**2, xtol=1e-13)
    return {"lam": lams, "split": np.array([row["split"] for row in rows]),
            "merged": np.array([row["merged"] for row in rows]),
            "lam_iterated": lam_it, "iterated": np.array([iterate(l) for l in lam_it]),
            "lam_critical": lam_c, "lam_reach_r": float(lam_r), "r": r, "sigma": sigma, "steps": FIXED_POINT_STEPS}


@register("identity-fixed-points", chapter=CHAPTER)
@styled
def fixed_points(size: str = "small") -> plt.Figure:
    """The pitchfork of the fixed points of Q_inf: both coordinates of the fixed point of
    cluster 1 against lam, the merged fixed point (dashed where unstable), the centroid's
    coordinates r and 0, the end points of iterated Q_inf from mu_1, and the lam_r where the
    first coordinate reaches r."""
    D = fixed_points_data(size)
    fig, ax = plt.subplots(figsize=(WIDTH, 5.0))
    lam, lc = D["lam"], D["lam_critical"]
    stable = lam <= lc
    ax.plot(lam, D["split"][:, 0], "-", color="C0", label="fixed point of cluster 1: first coordinate")
    ax.plot(lam, D["split"][:, 1], "-", color="C1", label="second coordinate")
    ax.plot(lam[~stable], D["merged"][~stable, 0], "--", color="gray", label="merged fixed point (unstable)")
    ax.plot(D["lam_iterated"], D["iterated"][:, 0], "o", color="C0", ms=4, mfc="none",
            label=rf"{D['steps']} steps of $Q_\infty$ from $\mu_1$")
    ax.plot(D["lam_iterated"], D["iterated"][:, 1], "o", color="C1", ms=4, mfc="none")
    ax.axhline(D["r"], color="black", lw=0.8, ls=":", label=r"centroid $\mu_1 = (r, 0)$")
    ax.axhline(0, color="black", lw=0.8, ls=":")
    ax.axvline(lc, color="gray", lw=0.8)
    ax.annotate(r"$\lambda_c$", (lc, ax.get_ylim()[1]), textcoords="offset points", xytext=(3, -12))
    ax.axvline(D["lam_reach_r"], color="C0", lw=0.8, ls="--", label=r"$\lambda_r$: the first coordinate reaches $r$")
    ax.annotate(r"$\lambda_r$", (D["lam_reach_r"], ax.get_ylim()[1]), textcoords="offset points", xytext=(3, -24))
    ax.set_xlabel(r"$\lambda$")
    ax.set_ylabel("coordinate of the fixed point")
    fig.legend(frameon=False, loc="outside lower center", ncols=2)
    return fig


@lru_cache(maxsize=None)
def identity_limit_terms_data(size: str = "small") -> dict:
    """Tokens of a two-component mixture in the plane (d = 2, equal weights, mu_c = r e_c,
    r and sigma of ``LIMIT_TERMS_SETTING``) and their images under the large-L limit
    Q_inf(z) = lam sigma^2 z + sum_c alpha_c(z) mu_c (``identity_limit``; prop-identity-limit,
    chapters/quantization.md) at the lam of ``LIMIT_TERMS_SETTING``, with the weights alpha_c
    along the line z(t) = mu_2 + t (mu_1 - mu_2) through the centroids.

    Returns:
        A dict with ``X`` (n, 2) the tokens, ``labels`` (n,), ``centroids`` (2, 2), ``Q``
        (n, 2) their images, ``alpha`` (n, 2) their weights, ``beta`` (n,) each token's weight
        on the other centroid (1 - alpha of its own), ``t`` (n,) each token's position along
        the line (its projection: 0 at mu_2, 1 at mu_1), ``line_t`` (m,) and ``line_alpha``
        (m, 2) the weights on the line, ``misassigned`` (n,) whether a token's image is closer to
        the other centroid than to its own, ``boundary_distance`` (n,) each token's distance to
        the boundary alpha_1 = alpha_2 (the bisector of the centroids: equal weights and equal
        norms), ``lam``, ``r``, ``sigma``, ``shrink`` = lam sigma^2,
        ``beta_centroid`` the weight a centroid gives the other one, and the mean squared
        distances to the token's own centroid of the tokens (``D_tokens``) and of their
        images (``D_images``).
    """
    _check_size(size)
    r, sigma, lam = (LIMIT_TERMS_SETTING[k] for k in ("r", "sigma", "lam"))
    mix = orthogonal_mixture(K=2, d=2, r=r, sigma=sigma)
    X, labels = sample(jax.random.PRNGKey(LIMIT_TERMS_SEED), mix, 1, LIMIT_TERMS_TOKENS[size])
    X, labels = np.asarray(X[0], np.float64), np.asarray(labels[0])
    mu = np.asarray(mix.centroids, np.float64)
    logw = np.log(np.asarray(mix.weights, np.float64))

    def weights(Z):
        s = logw + lam * Z @ mu.T
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    Q = np.asarray(identity_limit(X, mix, lam), np.float64)
    alpha = weights(X)
    gap = mu[0] - mu[1]
    line_t = np.linspace(-0.35, 1.35, 201)
    line = mu[1] + line_t[:, None] * gap
    own, other = mu[labels], mu[1 - labels]
    return {
        "X": X, "labels": labels, "centroids": mu, "Q": Q, "alpha": alpha,
        "beta": 1 - alpha[np.arange(len(labels)), labels],
        "misassigned": np.linalg.norm(Q - other, axis=-1) < np.linalg.norm(Q - own, axis=-1),
        "boundary_distance": np.abs(X @ gap) / np.linalg.norm(gap),
        "t": (X - mu[1]) @ gap / (gap @ gap), "line_t": line_t, "line_alpha": weights(line),
        "lam": float(lam), "r": float(r), "sigma": float(sigma), "shrink": float(lam * sigma**2),
        "beta_centroid": float(weights(mu[:1])[0, 1]),
        "D_tokens": float(np.mean(np.sum((X - own) ** 2, -1))),
        "D_images": float(np.mean(np.sum((Q - own) ** 2, -1))),
    }


@register("identity-limit-terms", chapter=CHAPTER)
@styled
def identity_limit_terms(size: str = "small") -> plt.Figure:
    """Left: tokens of a two-component mixture in the plane (hollow), each joined to its
    image under Q_inf (filled; in black the tokens whose image is closer to the other
    centroid), the centroids (crosses) and the displaced centres (1 + lam sigma^2) mu_c (plus
    signs), the boundary where alpha_1 = alpha_2 (dashed). Right:
    the weights alpha_1, alpha_2 along the line from mu_2 to mu_1, with the tokens' positions
    on that line (ticks, by component)."""
    D = identity_limit_terms_data(size)
    X, Q, lab, mu = D["X"], D["Q"], D["labels"], D["centroids"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(WIDTH, 3.2), width_ratios=(1, 1.25))
    wrong = D["misassigned"]
    a.add_collection(LineCollection(np.stack([X, Q], 1)[~wrong], colors="0.65", linewidths=0.6, zorder=1))
    a.add_collection(LineCollection(np.stack([X, Q], 1)[wrong], colors="black", linewidths=1.2, zorder=4))
    for c in range(2):
        sel = lab == c
        a.scatter(X[sel, 0], X[sel, 1], s=10, facecolors="none", edgecolors=COLOURS[c], linewidths=0.6,
                  alpha=0.7, zorder=2)
        a.scatter(Q[sel, 0], Q[sel, 1], s=6, color=COLOURS[c], zorder=3)
    a.scatter(*mu.T, marker="x", s=60, color="black", linewidths=1.5, zorder=5, label=r"centroid $\mu_c$")
    a.scatter(*((1 + D["shrink"]) * mu).T, marker="+", s=90, color="black", linewidths=1.5, zorder=5,
              label=r"$(1+\lambda\sigma^2)\mu_c$")
    lo, hi = min(X.min(), Q.min()) - 0.3, max(X.max(), Q.max()) + 0.3
    a.plot([lo, hi], [lo, hi], color="0.4", lw=0.8, ls="--", zorder=0)
    a.set_xlim(lo, hi)
    a.set_ylim(lo, hi)
    a.set_aspect("equal")
    a.set_xlabel("first coordinate")
    a.set_ylabel("second coordinate")
    a.legend(frameon=False, loc="lower left", handletextpad=0.1, borderaxespad=0.1)
    t = D["line_t"]
    for c, name in ((0, r"$\alpha_1$"), (1, r"$\alpha_2$")):
        b.plot(t, D["line_alpha"][:, c], "-", color=COLOURS[c], label=name)
        sel = lab == c
        b.plot(D["t"][sel], np.full(sel.sum(), -0.06 - 0.06 * c), "|", color=COLOURS[c], ms=6, alpha=0.6)
    b.axvline(0.5, color="0.4", lw=0.8, ls="--")
    b.set_xticks([0, 0.5, 1], [r"$\mu_2$", "midpoint", r"$\mu_1$"])
    b.set_ylim(-0.16, 1.04)
    b.set_yticks([0, 0.5, 1])
    b.set_xlabel("position between the centroids")
    b.set_ylabel(r"weight $\alpha_c(z)$")
    b.legend(frameon=False, loc="center right")
    return fig


LIMIT_RATE = {"small": dict(L=(100, 1_000, 10_000), seeds=tuple(range(100, 116))),
              "full": dict(L=(100, 1_000, 10_000, 100_000), seeds=tuple(range(100, 116)))}
"""Prompt lengths and seeds (one stream each) of ``identity-limit-rate``, by figure size."""


@lru_cache(maxsize=None)
def identity_limit_rate_data(size: str = "small") -> dict:
    """How fast identity attention approaches its large-L limit (prop-identity-limit,
    chapters/quantization.md): :func:`identity_limit_error` for the default mixture at
    lam = ``DEFAULT.lam``, one run per seed of ``LIMIT_RATE[size]`` (fresh queries and
    prompts for each), and each run's log-log slope against L.

    Returns:
        A dict with ``L`` (m,), ``seeds`` (n,), ``lam``, ``queries`` (per run), ``error``
        (n, m) the mean distance of each run at each L, and ``slope`` (n,) each run's fitted
        log-log slope.
    """
    _check_size(size)
    spec = LIMIT_RATE[size]
    mix = orthogonal_mixture(**DEFAULT.mixture_args())
    lam = DEFAULT.lam
    err = np.array([identity_limit_error(jax.random.PRNGKey(s), mix, lam, list(spec["L"]))["error"]
                    for s in spec["seeds"]])
    logL = np.log(np.asarray(spec["L"], float))
    slope = np.array([np.polyfit(logL, np.log(e), 1)[0] for e in err])
    queries = inspect.signature(identity_limit_error).parameters["n_queries"].default
    return {"L": np.asarray(spec["L"], int), "seeds": np.asarray(spec["seeds"]), "lam": float(lam),
            "queries": int(queries), "error": err, "slope": slope}


@register("identity-limit-rate", chapter=CHAPTER)
@styled
def identity_limit_rate(size: str = "small") -> plt.Figure:
    """The mean distance between identity attention at prompt length L and its large-L limit,
    against L on log-log axes: one thin line per seed, their mean (points), and a line of
    slope -1/2 through the mean's first point (the rate of the central limit theorem)."""
    D = identity_limit_rate_data(size)
    L, err = D["L"], D["error"]
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
    for i, e in enumerate(err):
        ax.plot(L, e, "-", color="0.75", lw=0.8, label="one seed" if i == 0 else None)
    mean = err.mean(0)
    ax.plot(L, mean, "o-", color="C0", label=f"mean over {len(err)} seeds")
    ax.plot(L, mean[0] * (L / L[0]) ** -0.5, "--", color="black", lw=1.0, label=r"slope $-1/2$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks([0.03, 0.1, 0.3])
    ax.set_xlabel(r"prompt length $L$")
    ax.set_ylabel(r"mean $\|Q(z; X) - Q_\infty(z)\|$")
    ax.legend(frameon=False)
    return fig
