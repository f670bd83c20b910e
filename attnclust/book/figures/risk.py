"""Figures of the chapter "The two-head layer and its population risk".

The data behind each figure comes from a cached ``*_data`` function, so the chapter can
quote the same numbers that the figure draws without computing them twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from attnclust import _validate as v
from attnclust import stationary, symbolic
from attnclust.attention import two_head_layer
from attnclust.limits import head_output_limit
from attnclust.mixture import GaussianMixture, orthogonal_mixture, sample
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.setting import DEFAULT
from attnclust.book import sizes

CHAPTER = "population_risk"


def _check_size(size: str) -> None:
    sizes.check(size, ("small", "full"))


def risk_gap_terms(
    key: PRNGKeyArray,
    theta: Float[ArrayLike, "H d"],
    mixture: GaussianMixture,
    lam: float,
    Ls: Sequence[int],
    n_tokens: int = 32_768,
) -> dict[str, np.ndarray]:
    """R_L - R_inf and its two terms at each prompt length L (sec. "How fast R_L approaches
    R_inf", chapters/population_risk.md).

    With T_L = T(X)_l the layer's output at token l of a prompt of length L and
    T_inf = T_inf(x_l) its large-L limit, R_L - R_inf = E||T_L - T_inf||^2 (the variance
    term) - 2 E<x_l - T_inf, T_L - T_inf> (the cross term), exactly. Both are estimated
    per token, which pairs them with the same draw of x_l and makes their variance small.
    One sample of ``n_tokens`` tokens (rounded to whole prompts of length max(Ls); every L
    must divide it) is cut into prompts of each length; standard errors are over prompts
    (the tokens of one prompt are dependent).

    Args:
        key: a JAX PRNG key.
        theta: (H, d) heads.
        mixture: the ``GaussianMixture``.
        lam: the inverse temperature, > 0.
        Ls: prompt lengths, each dividing max(Ls).
        n_tokens: tokens per length.

    Returns:
        Arrays ``L``, ``gap``, ``se`` (of the gap), ``variance``, ``variance_se``, ``cross``,
        ``cross_se`` and the integer ``n_tokens`` actually used.

    Raises:
        ValueError: a length that does not divide max(Ls), or a bad lam.
    """
    Ls = np.asarray(Ls, int)
    Lmax = int(Ls.max())
    if np.any(Lmax % Ls):
        raise ValueError(f"every L must divide max(Ls)={Lmax}, got Ls={Ls.tolist()}")
    lam = v.positive_finite("lam", lam)
    theta = jnp.asarray(theta, jnp.float32)
    n = max(2, int(n_tokens) // Lmax)
    X, _ = sample(key, mixture, n, Lmax)
    lim = head_output_limit(theta, X, mixture, lam)
    resid = np.asarray(X - lim, np.float64)
    out = {k: [] for k in ("gap", "se", "variance", "variance_se", "cross", "cross_se")}
    for L in Ls:
        T_L = two_head_layer(theta, X.reshape(-1, int(L), mixture.d), lam).reshape(X.shape)
        diff = np.asarray(T_L - lim, np.float64)
        var = np.sum(diff**2, -1).reshape(-1, int(L)).mean(-1)        # per prompt
        cross = -2 * np.sum(resid * diff, -1).reshape(-1, int(L)).mean(-1)
        for name, x in (("variance", var), ("cross", cross), ("gap", var + cross)):
            se_name = "se" if name == "gap" else f"{name}_se"
            out[name].append(x.mean())
            out[se_name].append(x.std(ddof=1) / np.sqrt(x.size))
    return {"L": Ls, **{k: np.array(x) for k, x in out.items()}, "n_tokens": n * Lmax}


@lru_cache(maxsize=None)
def risk_gap_data(size: str = "small") -> dict:
    """R_L - R_inf and its variance and cross terms against L at the large-L minimiser of
    the default setting (:func:`risk_gap_terms`), with the fitted log-log slope of the gap.
    "small": L = 8..256, 32,768 tokens per L; "full": L = 8..1024, 2^20."""
    _check_size(size)
    Ls = [8, 16, 32, 64, 128, 256] if size == "small" else [8, 16, 32, 64, 128, 256, 512, 1024]
    n_tokens = 32_768 if size == "small" else 1 << 20
    tm = symbolic.tilted_minimiser(DEFAULT.lam, DEFAULT.r, DEFAULT.sigma, d=DEFAULT.d)
    theta = np.zeros((2, DEFAULT.d))
    theta[0, :2] = tm.c, tm.eps
    theta[1, :2] = tm.eps, tm.c
    mix = orthogonal_mixture(**DEFAULT.mixture_args())
    out = risk_gap_terms(jax.random.PRNGKey(7), theta, mix, DEFAULT.lam, Ls, n_tokens=n_tokens)
    out["slope"], out["slope_se"] = stationary.loglog_slope(out["L"], out["gap"], out["se"])
    out["theta"] = theta
    return out


@register("risk-gap", chapter=CHAPTER)
@styled
def risk_gap(size: str = "small") -> plt.Figure:
    """Top: R_L - R_inf, its variance term and (minus) its cross term against L (log-log,
    two standard errors), with the fitted power law of the gap; bottom: the same times L."""
    D = risk_gap_data(size)
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 7.0), sharex=True)
    L = D["L"]
    series = ((D["gap"], D["se"], "o", r"$R_L - R_\infty$"),
              (D["variance"], D["variance_se"], "s", r"variance term $E\,\|T_L - T_\infty\|^2$"),
              (-D["cross"], D["cross_se"], "^", r"minus the cross term"))
    for y, se, marker, label in series:
        a.errorbar(L, np.abs(y), yerr=2 * se, fmt=marker, capsize=3, ms=4, label=label)
        b.errorbar(L, L * y, yerr=2 * L * se, fmt=marker + "-", capsize=3, ms=4, label=label)
    w = D["gap"] / D["se"]
    lx, ly = np.log(L), np.log(D["gap"])
    x0 = np.sum(w**2 * lx) / np.sum(w**2)
    y0 = np.sum(w**2 * ly) / np.sum(w**2)  # the weighted fit passes through (x0, y0)
    Lg = np.geomspace(L.min(), L.max(), 50)
    a.plot(Lg, np.exp(y0) * (Lg / np.exp(x0)) ** D["slope"], "--", color="C0",
           label=f"fit of the gap: slope {D['slope']:.2f} $\\pm$ {D['slope_se']:.2f}")
    a.plot(Lg, D["gap"][-1] * (Lg / L[-1]) ** -1.0, ":", color="gray", label=r"slope $-1$")
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_ylabel("size of the term")
    b.set_xscale("log")
    b.axhline(0, color="gray", lw=0.8)
    b.set_ylabel(r"$L$ times the term (signed)")
    b.set_xlabel("prompt length $L$")
    fig.legend(*a.get_legend_handles_labels(), frameon=False, loc="outside lower center", ncols=2)
    return fig


@lru_cache(maxsize=None)
def aligned_branch_data(size: str = "small") -> dict:
    """kappa*(lam) on the aligned manifold (``symbolic.aligned_branch``) and the tilted
    large-L minimiser over lam (``symbolic.tilt_branch``) for r = 2, sigma = 0.5, d = 5, lam
    from 0.02 (nearly affine layer) to 4; with the oracle-quantizer and floor risks.
    ``norm_tilted`` is the tilted minimiser's head norm sqrt(c^2 + eps^2), the plotted one."""
    _check_size(size)
    lams = np.geomspace(0.02, 4.0, 8 if size == "small" else 33)
    n = 20 if size == "small" else 40
    br = symbolic.aligned_branch(lams, DEFAULT.r, DEFAULT.sigma, d=DEFAULT.d)
    tb = symbolic.tilt_branch(lams, DEFAULT.r, DEFAULT.sigma, d=DEFAULT.d, n=n)
    return {"lam": lams, "c_aligned": br["c"], "risk_aligned": br["risk"],
            "oracle": DEFAULT.d * DEFAULT.sigma ** 2, "floor": (DEFAULT.d - 2) * DEFAULT.sigma ** 2,
            "c_tilted": tb["c"], "eps_tilted": tb["eps"], "norm_tilted": np.hypot(tb["c"], tb["eps"]),
            "cos_tilted": tb["cos"],
            "risk_tilted": tb["risk"], "tilt_gradient": tb["tilt_gradient"]}


@register("aligned-branch", chapter=CHAPTER)
@styled
def aligned_branch(size: str = "small") -> plt.Figure:
    """Top left: the aligned fixed point c*(lam) beside the norm of the tilted minimiser's
    heads; top right: ``|cos|`` of the tilted minimiser to its centroid; bottom: both risks."""
    D = aligned_branch_data(size)
    fig = plt.figure(figsize=(WIDTH, 6.4))
    panels = fig.subplot_mosaic([["a", "b"], ["c", "c"]])
    a, b, c = panels["a"], panels["b"], panels["c"]
    ticks = [0.02, 0.1, 0.5, 1, 4]
    a.plot(D["lam"], D["c_aligned"], "o-", label=r"aligned $\kappa^\star(\lambda)$")
    a.plot(D["lam"], D["norm_tilted"], "s--",
           label=r"tilted minimiser $\|\theta_h\|$")
    a.set_ylabel("head norm")
    b.plot(D["lam"], D["cos_tilted"], "s-", color="C1")
    b.set_ylabel(r"tilted minimiser: $|\cos(\theta_h, \mu_h)|$")
    c.plot(D["lam"], D["risk_aligned"], "o-", label=r"aligned point $\kappa^\star e_h$")
    c.plot(D["lam"], D["risk_tilted"], "s--", label="tilted minimiser")
    c.axhline(D["oracle"], color="gray", ls="--", lw=1, label=r"oracle quantizer $d\sigma^2$")
    c.axhline(D["floor"], color="gray", ls=":", lw=1, label=r"floor $(d-2)\sigma^2$")
    c.set_ylabel(r"$R_\infty$")
    for ax in (a, b, c):
        ax.set_xscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(r"$\lambda$")
    a.legend(frameon=False)
    c.legend(frameon=False, loc="upper right")
    return fig
