"""Figures of the chapter "Beyond the paper": settings that break the paper's assumptions
(unequal weights, unequal or anisotropic variances, non-orthogonal and centred centroids)
and real data (scikit-learn's digits).

The settings' experiments are computed by ``attnclust.experiments.beyond`` (the training, 16
seeds per setting, from its committed results file); the digits experiment by
:func:`results`, once per size.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import attnclust as ac

from .. import baselines
from ..digits import load_digits_pca, sample_rows
from ..experiments import beyond as ex
from ..experiments.beyond import D, L, LAM, LAM_ID, STACK_DEPTH, STACK_LS, SIZES, settings, span_coverage  # noqa: F401
from ._registry import register

_size = ex._size


@lru_cache(maxsize=None)
def results(size: str = "small") -> dict:
    """The digits experiment: scikit-learn's digits 0 and 1 projected on five principal
    directions, the two-head layer trained on prompts of 50 images, and the ARI of every
    method on fresh prompts."""
    s = _size(size)
    key = jax.random.PRNGKey(11)
    k_fit, k_data, k_var, k_dig, k_dfit = jax.random.split(key, 5)
    k_base = jax.random.fold_in(key, 99)  # k-means restarts and the label-free read-out
    out = {"size": size}
    # digits: classes 0 and 1, d = 5 principal directions (uncentred projection)
    Xd, yd, means = load_digits_pca(classes=(0, 1), n_components=D)
    out["digits_X"], out["digits_y"], out["digits_means"] = Xd, yd, means
    out["digits_cos_means"] = float(np.dot(means[0], means[1]) / np.prod(np.linalg.norm(means, axis=1)))
    out["digits_spread"] = [float(np.mean(np.sum((Xd[yd == c] - means[c]) ** 2, -1)) / D) for c in range(2)]
    Xd_j = jnp.asarray(Xd)
    # prompts of L digit images drawn with replacement: sample_rows(key, data, batch, L) is a sampler
    fit = ac.fit_sampler(k_dfit[None], sample_rows, Xd_j, init=0.01 * jax.random.normal(k_dfit, (2, D)),
                         lam=LAM, steps=s["steps"], batch=s["batch"], L=L, record_every=s["steps"] // 20,
                         progress=False)
    out["digits_theta"] = theta_digits = fit.theta[0]
    P, lab = sample_rows(k_dig, Xd_j, s["n"], L, labels=jnp.asarray(yd))
    sig_eff2 = float(np.mean(out["digits_spread"]))
    stack = ac.identity_stack(P, STACK_LS / sig_eff2, STACK_DEPTH)
    nb = s["n_base"]
    km_lab, _ = baselines.kmeans_per_prompt(k_base, P[:nb], 2)
    em_lab, _ = baselines.em_per_prompt(k_base, P[:nb], 2)
    out["digits_ari"] = {
        "trained layer (heads)": float(np.mean(ac.adjusted_rand(lab, ac.head_assignments(theta_digits, P)))),
        "identity, oracle (class means)": float(np.mean(ac.adjusted_rand(
            lab, ac.nearest_centroid(ac.identity_attention(P, LAM_ID), jnp.asarray(means, jnp.float32))))),
        "identity stack, label-free": float(np.mean(ac.adjusted_rand(lab, baselines.output_clusters(k_base, stack[-1], 2)))),
        "k-means": float(np.mean(ac.adjusted_rand(lab[:nb], km_lab))),
        "EM": float(np.mean(ac.adjusted_rand(lab[:nb], em_lab))),
    }
    out["digits_cos"] = ac.alignment(theta_digits, means)
    return out


@lru_cache(maxsize=None)
def scores(size: str = "small") -> dict:
    """``attnclust.experiments.beyond.scores`` of the committed runs at ``size``, computed once
    (the chapter quotes the numbers that the figure ``beyond-settings`` draws)."""
    return ex.scores(ex.stored_training().runs, size)


@register("beyond-settings", chapter="beyond",
          description="Per setting: trained heads' |cos| (finite and large L) and ARI of heads, identity attention, k-means")
def settings_summary(size: str = "small"):
    """For every setting of the chapter: the worst head's ``|cos|`` with its matched centroid
    after training (finite L, median and 10-90% range over the seeds) and at the large-L
    local minimiser reached from there, and the mean ARI of the heads' assignments, identity
    attention (label-free) and k-means."""
    stored = ex.stored_training()
    runs = stored.runs
    sc = scores("test" if size == "test" else "small")
    names = list(runs)
    y = np.arange(len(names))
    h = 0.16
    fig, ax = plt.subplots(figsize=(8.5, 6.4))
    series = [
        ("|cos|, trained (L=50)", [runs[n].worst() for n in names], "tab:red"),
        ("|cos|, large-L minimiser", [runs[n].worst(True) if runs[n].has_inf else np.full(1, np.nan) for n in names], "darkred"),
        ("ARI, heads", [sc[n].heads.mean(axis=1) for n in names], "tab:orange"),
        ("ARI, identity stack (label-free)", [np.array([sc[n].mean("identity_stack")]) for n in names], "tab:blue"),
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
    ax.set_yticks(y, names, fontsize=8.5)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("|cos| of the worst head / mean ARI over prompts (bars: median over seeds, 10-90%)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.4, -0.1), ncol=3)
    ax.set_title(f"Beyond the paper's setting (d=5, r=2, L=50, $\\lambda$=1; {stored.budget['seeds']} seeds)")
    fig.tight_layout()
    return fig


@register("beyond-variances", chapter="beyond",
          description="Unequal variances: identity distortion, general large-L formula, isotropic formula, finite L")
def variances(size: str = "small"):
    """Identity attention on the unequal-variance mixture (sigma = 0.3, 0.7): distortion
    against lam from the general large-L formula, from the isotropic formula with the
    pooled sigma, and measured at finite L."""
    var = ex.variances(size)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.loglog(var.lams, var.D_general, "k-", label="large $L$, per-component covariances")
    ax.loglog(var.lams, var.D_isotropic, "k--", label="large $L$, isotropic formula (pooled $\\sigma$)")
    ax.loglog(var.lams, var.D_long, "o-", color="tab:blue", label=f"measured, $L={var.L_long}$")
    ax.set_xlabel("$\\lambda$")
    ax.set_ylabel("distortion")
    ax.legend(fontsize=8)
    ax.set_title("Unequal variances ($\\sigma_1=0.3$, $\\sigma_2=0.7$)")
    fig.tight_layout()
    return fig


@register("beyond-digits", chapter="beyond",
          description="Digits 0 and 1 in five principal directions: the data, the trained heads, ARI of every method")
def digits(size: str = "small"):
    """scikit-learn's digits 0 and 1 projected on five principal directions: the images in
    the first two, the class means and the trained heads; ARI of every method."""
    res = results(size)
    X, y, means, theta = res["digits_X"], res["digits_y"], res["digits_means"], res["digits_theta"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.2]})
    for c, colour in enumerate(("tab:blue", "tab:orange")):
        a.scatter(X[y == c, 0], X[y == c, 1], s=6, alpha=0.5, color=colour, label=f"digit {c}")
    a.scatter(means[:, 0], means[:, 1], marker="*", s=220, c="gold", edgecolors="k", label="class means")
    for h in range(theta.shape[0]):
        u = theta[h, :2] / np.linalg.norm(theta[h])
        a.plot([0, 3 * u[0]], [0, 3 * u[1]], "k-", lw=1.5)
    a.plot([], [], "k-", label="trained heads (first two coords)")
    a.set_xlabel("principal direction 1")
    a.set_ylabel("principal direction 2")
    a.legend(fontsize=7.5)
    names = list(res["digits_ari"])
    b.barh(range(len(names)), [res["digits_ari"][n] for n in names],
           color=["tab:red", "tab:blue", "tab:blue", "tab:gray", "tab:gray"])
    b.set_yticks(range(len(names)), names, fontsize=8.5)
    b.invert_yaxis()
    b.set_xlim(0, 1.05)
    b.set_xlabel("mean ARI over prompts of 50 images")
    fig.tight_layout()
    return fig
