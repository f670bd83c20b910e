"""Figures of the chapter "Beyond the paper": settings that break the paper's assumptions
(unequal weights, unequal or anisotropic variances, non-orthogonal and centred centroids).
The real-data section's figures (scikit-learn's digits) are in ``figures.digits``.

The settings' experiments are computed by ``attnclust.book.experiments.beyond`` (the training, 16
seeds per setting, from its committed results file).
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np

from attnclust.book.experiments import beyond as ex
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled



@lru_cache(maxsize=None)
def scores(size: str = "small") -> dict:
    """``attnclust.book.experiments.beyond.scores`` of the committed runs at ``size``, computed once
    (the chapter quotes the numbers that the figure ``beyond-settings`` draws)."""
    return ex.scores(ex.stored_training().runs, size)


@register("beyond-settings", chapter="beyond",
          description="Per setting: trained heads' |cos| (finite and large L) and ARI of heads, identity attention, k-means")
@styled
def settings_summary(size: str = "small"):
    """For every setting of the chapter: the worst head's ``|cos|`` with its matched centroid
    after training (finite L, median and 10-90% range over the seeds) and at the large-L
    local minimiser reached from there, and the mean ARI of the heads' assignments, identity
    attention (the stack at the true noise level, an oracle) and k-means."""
    stored = ex.stored_training()
    runs = stored.runs
    sc = scores("test" if size == "test" else "small")
    names = list(runs)
    y = np.arange(len(names))
    h = 0.16
    fig, ax = plt.subplots(figsize=(WIDTH, 7.0))
    series = [
        ("|cos|, trained (L=50)", [runs[n].worst() for n in names], "tab:red"),
        ("|cos|, large-L minimiser", [runs[n].worst(True) if runs[n].has_inf else np.full(1, np.nan) for n in names], "darkred"),
        ("ARI, heads", [sc[n].heads.mean(axis=1) for n in names], "tab:orange"),
        ("ARI, identity stack (oracle σ)", [np.array([sc[n].mean("identity_stack")]) for n in names], "tab:blue"),
        ("ARI, k-means", [np.array([sc[n].mean("kmeans")]) for n in names], "tab:gray"),
    ]
    for j, (label, vals, colour) in enumerate(series):
        med = np.array([np.median(x) for x in vals])
        lo = np.array([np.quantile(x, 0.1) for x in vals])
        hi = np.array([np.quantile(x, 0.9) for x in vals])
        spread = np.array([x.size > 1 for x in vals])
        ax.barh(y + (j - 2) * h, med, height=h, color=colour, label=label)
        if spread.any():
            ax.errorbar(med[spread], (y + (j - 2) * h)[spread], xerr=[(med - lo)[spread], (hi - med)[spread]],
                        fmt="none", ecolor="black", lw=0.8, capsize=2)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("worst head's |cos| / mean ARI\n(bars: median over seeds, 10-90%)")
    fig.legend(loc="outside lower center", ncols=2)
    ax.set_title(f"d=5, r=2, L=50, $\\lambda$=1; {stored.budget['seeds']} seeds")
    return fig


@register("beyond-variances", chapter="beyond",
          description="Unequal variances: identity distortion, general large-L formula, isotropic formula, finite L")
@styled
def variances(size: str = "small"):
    """Identity attention on the unequal-variance mixture (sigma = 0.3, 0.7): distortion
    against lam from the general large-L formula, from the isotropic formula with the
    pooled sigma, and measured at finite L."""
    var = ex.variances(size)
    fig, ax = plt.subplots(figsize=(WIDTH, 4.0))
    ax.loglog(var.lams, var.D_general, "k-", label="large $L$, per-component covariances")
    ax.loglog(var.lams, var.D_isotropic, "k--", label="large $L$, isotropic formula (pooled $\\sigma$)")
    ax.loglog(var.lams, var.D_long, "o-", color="tab:blue", label=f"measured, $L={var.L_long}$")
    ax.set_xlabel("$\\lambda$")
    ax.set_ylabel("distortion")
    ax.legend()
    ax.set_title("Unequal variances ($\\sigma_1=0.3$, $\\sigma_2=0.7$)")
    return fig
