"""Figures of the chapter "Beyond the paper": settings that break the paper's assumptions
(unequal weights, unequal or anisotropic variances, non-orthogonal and centred centroids).
The real-data section's figures (scikit-learn's digits) are in ``figures.digits``.

The settings' experiments are computed by ``attnclust.book.experiments.beyond`` (the training, 16
seeds per setting, from its committed results file); the section "More heads than clusters"
draws the committed runs of ``attnclust.book.experiments.more_heads``.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize
from matplotlib.lines import Line2D

from attnclust.book.experiments import beyond as ex
from attnclust.book.experiments import more_heads as mh
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


@register("beyond-heads", chapter="beyond",
          description="More heads than clusters: each head's |cos| with its nearest centroid and its norm, per seed")
@styled
def more_heads(size: str = "small"):
    """H = 3 and H = 4 heads trained on the K = 2 mixture (rows) at the small and the long
    budget (columns), from the committed runs: for every seed (x), each head's ``|cos|``
    with its nearest centroid (y), coloured by the head's norm, circles for the heads matched
    to a centroid and triangles for the extra heads; the book's threshold of alignment and the
    median of the H = 2 runs as lines. ``size`` is not used (the runs are committed)."""
    runs = mh.stored().runs
    budgets = [b for b in ("small", "long") if b in runs]
    Hs = [H for H in sorted(runs[budgets[0]]) if H > 2]
    norms = np.concatenate([runs[b][H].norms().ravel() for b in budgets for H in Hs])
    scale = Normalize(float(norms.min()), float(norms.max()))
    ref = float(np.median(runs[budgets[0]][2].nearest()))
    fig, axes = plt.subplots(len(Hs), len(budgets), figsize=(WIDTH, 5.6), sharex=True, sharey=True, squeeze=False)
    for i, H in enumerate(Hs):
        for j, b in enumerate(budgets):
            r, ax = runs[b][H], axes[i, j]
            near, extra, n = r.nearest(), r.extra(), r.norms()
            seed = np.broadcast_to(np.arange(r.seeds)[:, None], near.shape)
            for mask, marker in ((~extra, "o"), (extra, "^")):
                dots = ax.scatter(seed[mask], near[mask], c=n[mask], cmap="viridis", norm=scale, marker=marker,
                                  s=22, edgecolors="black", linewidths=0.3)
            ax.axhline(mh.ALIGNED_COS, ls="--", color="tab:red", lw=1.0)
            ax.axhline(ref, ls=":", color="dimgray", lw=1.0)
            ax.set_title(f"H = {H}, {r.steps} steps")
            ax.set_ylim(0, 1.03)
        axes[i, 0].set_ylabel("|cos| with the\nnearest centroid")
    for ax in axes[-1]:
        ax.set_xlabel("seed")
    fig.colorbar(dots, ax=axes, label="norm of the head", shrink=0.8)
    handles = [Line2D([], [], ls="", marker="o", mfc="lightgray", mec="black", label="head matched to a centroid"),
               Line2D([], [], ls="", marker="^", mfc="lightgray", mec="black", label="extra head"),
               Line2D([], [], ls="--", color="tab:red", label=f"|cos| = {mh.ALIGNED_COS:g} (aligned)"),
               Line2D([], [], ls=":", color="dimgray", label="H = 2, median")]
    fig.legend(handles=handles, loc="outside lower center", ncols=2)
    return fig
