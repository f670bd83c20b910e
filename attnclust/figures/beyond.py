"""Figures of the chapter "Beyond the paper": settings that break the paper's assumptions
(unequal weights, unequal or anisotropic variances, non-orthogonal and centred centroids).
The real-data section's figures (scikit-learn's digits) are in ``figures.digits``.

As in ``figures.icq``, every number comes from :func:`results`, computed once per size.
"""

from __future__ import annotations

import math
from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import attnclust as ac

from .. import baselines, general_mixture, stationary
from .. import _validate as v
from ..limits import general_identity_limit
from ..train import fit_mixtures
from ._registry import register

D, R, SIGMA, L, LAM = 5, 2.0, 0.5, 50, 1.0
LAM_ID = 0.7
"""Identity attention's temperature for the oracle assignment (about the bound's best lam
at the default setting, 0.691)."""
STACK_LS, STACK_DEPTH = 0.5, 8
"""Label-free read-out: STACK_DEPTH identity layers at lam = STACK_LS / sigma_eff^2, with
sigma_eff^2 = (noise floor) / d."""

SIZES = {
    "small": dict(steps=1000, batch=16, n=64, n_base=16, n_mc=4000, L_long=200, n_long=8, n_lam=8, near_steps=500),
    "full": dict(steps=20000, batch=64, n=2048, n_base=512, n_mc=200000, L_long=4000, n_long=256, n_lam=30, near_steps=10000),
    # for the test suite only (tests/test_figures_experiments.py): every code path, tiny
    "test": dict(steps=40, batch=4, n=8, n_base=3, n_mc=200, L_long=60, n_long=2, n_lam=3, near_steps=20),
}


def settings() -> dict:
    """The mixtures of the chapter, by display name (all d = 5, r = 2)."""
    m = ac.orthogonal_mixture(K=2, d=D, r=R, sigma=SIGMA)
    return {
        "default": m,
        "unequal weights (0.8, 0.2)": ac.orthogonal_mixture(K=2, d=D, r=R, sigma=SIGMA, weights=[0.8, 0.2]),
        "unequal variances (0.3, 0.7)": general_mixture.per_component_sigma_mixture([0.3, 0.7], r=R, d=D),
        "anisotropic (0.8 along, 0.3 across)": general_mixture.anisotropic_mixture(r=R, d=D, along=0.8, across=0.3),
        "centroids at 60 degrees": ac.angled_mixture(math.pi / 3, r=R, sigma=SIGMA, d=D),
        "centred K=2 (antipodal)": m.centred(),
        "centred K=4 (+-r e1, +-r e2)": ac.plusminus_mixture(r=R, sigma=SIGMA, d=D),
    }


def _size(size: str) -> dict:
    return SIZES[v.one_of("size", size, SIZES)]


def span_coverage(theta: np.ndarray, centroids: np.ndarray) -> float:
    """min_c ||P mu_c|| / ||mu_c||, P the orthogonal projection on span(theta_1..theta_H):
    1 when every centroid lies in the space the layer's outputs live in."""
    q, _ = np.linalg.qr(np.asarray(theta, float).T)
    mu = np.asarray(centroids, float)
    return float(np.min(np.linalg.norm(mu @ q, axis=-1) / np.linalg.norm(mu, axis=-1)))


def _as_general(m):
    return m if isinstance(m, general_mixture.GeneralMixture) else general_mixture.GeneralMixture.from_gaussian(m)


@lru_cache(maxsize=None)
def results(size: str = "small") -> dict:
    """Every number of the chapter: per setting the trained layer's alignment (finite L,
    and large L for isotropic mixtures), span coverage and ARI of every assignment rule;
    the unequal-variance identity limit."""
    s = _size(size)
    key = jax.random.PRNGKey(11)
    k_fit, k_data, k_var, k_dig, k_dfit = jax.random.split(key, 5)
    k_base = jax.random.fold_in(key, 99)  # k-means restarts and the label-free read-out
    sets = settings()
    trained = fit_mixtures(k_fit, list(sets.values()), H=2, lam=LAM, steps=s["steps"], batch=s["batch"], L=L,
                           record_every=s["steps"] // 20, progress=False)
    thetas, risks = trained.theta, trained.risk
    rows = {}
    for i, (name, m) in enumerate(sets.items()):
        g = _as_general(m)
        mu = g.centroids
        X, lab = general_mixture.sample_general(jax.random.fold_in(k_data, i), g, s["n"], L)
        theta = thetas[i]
        sig_eff2 = g.noise_floor() / g.d
        stack = ac.identity_stack(X, STACK_LS / sig_eff2, STACK_DEPTH)
        row = {
            "cos": ac.alignment(theta, mu),
            "coverage": span_coverage(theta, mu),
            "ari_heads": float(np.mean(ac.adjusted_rand(lab, ac.head_assignments(theta, X)))),
            "ari_identity_oracle": float(np.mean(ac.adjusted_rand(lab, ac.nearest_centroid(ac.identity_attention(X, LAM_ID), mu)))),
            "ari_identity_free": float(np.mean(ac.adjusted_rand(lab, baselines.output_clusters(k_base, stack[-1], g.K)))),
            "ari_kmeans": float(np.mean(ac.adjusted_rand(lab, baselines.kmeans_per_prompt_jax(k_base, X, g.K)[0]))),
            "risk_final": float(risks[i, -1]),
        }
        if isinstance(m, ac.GaussianMixture):
            th_inf, r_inf = stationary.large_L_minimiser(theta, m, LAM)
            row.update(cos_inf=ac.alignment(th_inf, mu), coverage_inf=span_coverage(th_inf, mu),
                       risk_inf=r_inf, theta_inf=th_inf)
        row["theta"] = theta
        rows[name] = row
    out = {"rows": rows, "size": size}
    # the tilt at finite L: train from a start near the aligned point 0.9 (e_1, e_2)
    near_names = ("default", "centred K=4 (+-r e1, +-r e2)")
    start = np.zeros((2, 2, D))
    start[:, 0, 0] = start[:, 1, 1] = 0.9
    start = start + 0.05 * np.asarray(jax.random.normal(jax.random.fold_in(k_fit, 99), start.shape))
    near = fit_mixtures(jax.random.fold_in(k_fit, 7), [sets[n] for n in near_names], H=2, lam=LAM,
                        steps=s["near_steps"], batch=s["batch"], L=L, init=start,
                        record_every=s["near_steps"] // 20, progress=False).theta
    for n, th_n in zip(near_names, near):
        out[f"near {n}"] = ac.alignment(th_n, np.eye(2, D))
        th_inf, r_inf = stationary.large_L_minimiser(np.eye(2, D) * 0.9, sets[n], LAM)
        out[f"near_inf {n}"] = ac.alignment(th_inf, np.eye(2, D))
        out[f"near_inf_risk {n}"] = r_inf
    # symmetry check: off-manifold gradient of R_inf at an aligned point, default vs +-
    th = np.zeros((2, D))
    th[0, 0] = th[1, 1] = 0.9
    for name in ("default", "centred K=4 (+-r e1, +-r e2)"):
        _, grad = stationary.risk_and_grad(th, sets[name], LAM)
        out[f"offgrad {name}"] = float(np.asarray(grad)[0, 1])
    # unequal variances: identity attention's large-L map, finite L, capture by the wide cloud
    gv = sets["unequal variances (0.3, 0.7)"]
    lams = np.geomspace(0.1, 4.0, s["n_lam"])
    Z, labz = general_mixture.sample_general(k_var, gv, 1, s["n_mc"])
    Z, labz = Z[0], np.asarray(labz[0])
    own = gv.centroids[labz]
    Xl, labl = general_mixture.sample_general(jax.random.fold_in(k_var, 1), gv, s["n_long"], s["L_long"])
    own_l = ac.own_centroids(gv.centroids, labl)
    narrow_l = np.asarray(labl) == 0
    iso = ac.GaussianMixture(jnp.asarray(gv.weights), jnp.asarray(gv.centroids), math.sqrt(gv.noise_floor() / D))
    var = {k: [] for k in ("D_general", "D_isotropic", "D_long", "capture_general", "capture_long")}
    for lam in lams:
        q = np.asarray(general_identity_limit(Z, gv, float(lam)))
        var["D_general"].append(float(np.mean(np.sum((q - own) ** 2, -1))))
        qi = np.asarray(ac.identity_limit(Z, iso, float(lam)))
        var["D_isotropic"].append(float(np.mean(np.sum((qi - own) ** 2, -1))))
        ql = ac.identity_attention(Xl, float(lam), block=100)
        var["D_long"].append(float(ac.distortion(ql, own_l)))
        # narrow cloud's tokens (component 0) whose output is nearest the wide centroid
        var["capture_general"].append(float(np.mean(np.asarray(ac.nearest_centroid(q, gv.centroids))[labz == 0] == 1)))
        var["capture_long"].append(float(np.mean(np.asarray(ac.nearest_centroid(ql, gv.centroids))[narrow_l] == 1)))
    out["var_lams"] = lams
    out["var"] = {k: np.asarray(v) for k, v in var.items()}
    out["var_L_long"] = s["L_long"]
    return out


@register("beyond-settings", chapter="beyond",
          description="Per setting: trained heads' |cos| (finite and large L) and ARI of heads, identity attention, k-means")
def settings_summary(size: str = "small"):
    """For every setting of the chapter: the worst head's |cos| with its matched centroid
    after training (finite L) and at the nearest large-L stationary point, and the ARI of
    the heads' assignments, identity attention (label-free) and k-means."""
    res = results(size)
    names = list(res["rows"])
    rows = [res["rows"][n] for n in names]
    series = [
        ("|cos|, trained (L=50)", [np.min(r["cos"]) for r in rows], "tab:red"),
        ("|cos|, large-L stationary point", [np.min(r["cos_inf"]) if "cos_inf" in r else np.nan for r in rows], "darkred"),
        ("ARI, heads", [r["ari_heads"] for r in rows], "tab:orange"),
        ("ARI, identity stack (label-free)", [r["ari_identity_free"] for r in rows], "tab:blue"),
        ("ARI, k-means", [r["ari_kmeans"] for r in rows], "tab:gray"),
    ]
    fig, ax = plt.subplots(figsize=(8.5, 6.2))
    y = np.arange(len(names))
    h = 0.16
    for j, (label, vals, colour) in enumerate(series):
        ax.barh(y + (j - 2) * h, vals, height=h, color=colour, label=label)
    ax.set_yticks(y, names, fontsize=8.5)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("|cos| of the worst head / mean ARI over prompts")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.4, -0.1), ncol=3)
    ax.set_title("Beyond the paper's setting (d=5, r=2, L=50, $\\lambda$=1)")
    fig.tight_layout()
    return fig


@register("beyond-variances", chapter="beyond",
          description="Unequal variances: identity distortion, general large-L formula, isotropic formula, finite L")
def variances(size: str = "small"):
    """Identity attention on the unequal-variance mixture (sigma = 0.3, 0.7): distortion
    against lam from the general large-L formula, from the isotropic formula with the
    pooled sigma, and measured at finite L."""
    res = results(size)
    lams, var = res["var_lams"], res["var"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.loglog(lams, var["D_general"], "k-", label="large $L$, per-component covariances")
    ax.loglog(lams, var["D_isotropic"], "k--", label="large $L$, isotropic formula (pooled $\\sigma$)")
    ax.loglog(lams, var["D_long"], "o-", color="tab:blue", label=f"measured, $L={res['var_L_long']}$")
    ax.set_xlabel("$\\lambda$")
    ax.set_ylabel("distortion")
    ax.legend(fontsize=8)
    ax.set_title("Unequal variances ($\\sigma_1=0.3$, $\\sigma_2=0.7$)")
    fig.tight_layout()
    return fig
