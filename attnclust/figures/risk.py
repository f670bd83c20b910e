"""Figures of the chapter "The two-head layer and its population risk".

The data behind each figure comes from a cached ``*_data`` function, so the chapter can
quote the same numbers that the figure draws without computing them twice.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import matplotlib.pyplot as plt
import numpy as np

from .. import _validate as v
from .. import stationary, symbolic
from ..mixture import orthogonal_mixture
from ._registry import register

CHAPTER = "population_risk"
DEFAULT = dict(lam=1.0, r=2.0, sigma=0.5, d=5)


def _check_size(size: str) -> None:
    v.one_of("size", size, ("small", "full"))


@lru_cache(maxsize=None)
def risk_gap_data(size: str = "small") -> dict:
    """R_L - R_inf against L at the large-L minimiser of the default setting
    (``stationary.risk_gap``), with the fitted log-log slope over all L and over the
    three largest. "small": L = 8..256, 32,768 tokens per L; "full": L = 8..1024, 2^20."""
    _check_size(size)
    Ls = [8, 16, 32, 64, 128, 256] if size == "small" else [8, 16, 32, 64, 128, 256, 512, 1024]
    n_tokens = 32_768 if size == "small" else 1 << 20
    tm = symbolic.tilted_minimiser(DEFAULT["lam"], DEFAULT["r"], DEFAULT["sigma"], d=DEFAULT["d"])
    theta = np.zeros((2, DEFAULT["d"]))
    theta[0, :2] = tm.c, tm.eps
    theta[1, :2] = tm.eps, tm.c
    mix = orthogonal_mixture(K=2, d=DEFAULT["d"], r=DEFAULT["r"], sigma=DEFAULT["sigma"])
    out = stationary.risk_gap(jax.random.PRNGKey(7), theta, mix, DEFAULT["lam"], Ls, n_tokens=n_tokens)
    out["slope"], out["slope_se"] = stationary.loglog_slope(out["L"], out["gap"], out["se"])
    out["slope_tail"], out["slope_tail_se"] = stationary.loglog_slope(
        out["L"][-3:], out["gap"][-3:], out["se"][-3:])
    out["theta"] = theta
    return out


@register("risk-gap", chapter=CHAPTER)
def risk_gap(size: str = "small") -> plt.Figure:
    """|R_L - R_inf| against L (log-log, error bars of two standard errors) at the large-L
    minimiser of the default setting, with the fitted power law."""
    D = risk_gap_data(size)
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ax.errorbar(D["L"], D["gap"], yerr=2 * D["se"], fmt="o", capsize=3, label=r"$R_L - R_\infty$ (measured)")
    Lg = np.geomspace(D["L"].min(), D["L"].max(), 50)
    w = D["gap"] / D["se"]
    lx, ly = np.log(D["L"]), np.log(D["gap"])
    x0 = np.sum(w**2 * lx) / np.sum(w**2)
    y0 = np.sum(w**2 * ly) / np.sum(w**2)  # the weighted fit passes through (x0, y0)
    ax.plot(Lg, np.exp(y0) * (Lg / np.exp(x0)) ** D["slope"], "--",
            label=f"fit: slope {D['slope']:.2f} $\\pm$ {D['slope_se']:.2f}")
    i = np.argmax(D["L"])
    ax.plot(Lg, D["gap"][i] * (Lg / D["L"][i]) ** -1.0, ":", color="gray",
            label=r"slope $-1$ through the largest $L$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("prompt length $L$")
    ax.set_ylabel(r"$R_L - R_\infty$")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


@lru_cache(maxsize=None)
def aligned_branch_data(size: str = "small") -> dict:
    """c*(lam) on the aligned manifold (``symbolic.aligned_branch``) and the tilted
    large-L minimiser over lam (``symbolic.tilt_branch``) for r = 2, sigma = 0.5, d = 5."""
    _check_size(size)
    lams = np.geomspace(0.25, 4.0, 7 if size == "small" else 33)
    n = 20 if size == "small" else 40
    br = symbolic.aligned_branch(lams, DEFAULT["r"], DEFAULT["sigma"], d=DEFAULT["d"])
    tb = symbolic.tilt_branch(lams, DEFAULT["r"], DEFAULT["sigma"], d=DEFAULT["d"], n=n)
    return {"lam": lams, "c_aligned": br["c"], "risk_aligned": br["risk"],
            "c_tilted": tb["c"], "eps_tilted": tb["eps"], "cos_tilted": tb["cos"],
            "risk_tilted": tb["risk"], "tilt_gradient": tb["tilt_gradient"]}


@register("aligned-branch", chapter=CHAPTER)
def aligned_branch(size: str = "small") -> plt.Figure:
    """Left: the aligned fixed point c*(lam) beside the norm of the tilted minimiser's
    heads; middle: |cos| of the tilted minimiser to its centroid; right: both risks."""
    D = aligned_branch_data(size)
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(10.5, 3.3))
    ticks = [0.25, 0.5, 1, 2, 4]
    a.plot(D["lam"], D["c_aligned"], "o-", label=r"aligned $c^*(\lambda)$")
    a.plot(D["lam"], np.hypot(D["c_tilted"], D["eps_tilted"]), "s--",
           label=r"tilted minimiser $\|\theta_h\|$")
    a.set_ylabel("head norm")
    b.plot(D["lam"], D["cos_tilted"], "s-", color="C1")
    b.set_ylabel(r"tilted minimiser: $|\cos(\theta_h, \mu_h)|$")
    c.plot(D["lam"], D["risk_aligned"], "o-", label=r"aligned point $c^* e_h$")
    c.plot(D["lam"], D["risk_tilted"], "s--", label="tilted minimiser")
    c.set_ylabel(r"$R_\infty$")
    for ax in (a, b, c):
        ax.set_xscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(r"$\lambda$")
    a.legend(frameon=False, fontsize=8)
    c.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
