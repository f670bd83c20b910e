"""Figures of the chapter "In-context quantization experiments" (chapters/icq_experiments.md;
the theory they test is in chapters/quantization.md: def-identity-attention,
prop-identity-limit, thm-distortion-bound).

Every figure draws from :func:`results`, computed once per ``size`` and cached, so that the
chapter's numbers (read with ``results()``) and its figures come from the same arrays.
Setting: K = 2 equal-weight orthogonal centroids of norm r = 2 redrawn for every prompt
(``ac.sample_in_context``), d = 5, sigma = 0.5, L = 50, unless a figure says otherwise.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import attnclust as ac

from .. import _validate as v
from .. import baselines, symbolic
from ._registry import register

K, D, R, SIGMA, L, LAM = 2, 5, 2.0, 0.5, 50, 1.0
STACK_LS, STACK_DEPTH = 0.5, 8
"""The label-free read-out of identity attention: STACK_DEPTH layers at lam = STACK_LS / sigma^2."""
SIZES = {
    # prompts for identity attention, prompts for the scikit-learn baselines, lam grid,
    # long prompts' L, separations, prompts per separation
    "small": dict(n=64, n_base=16, n_lam=12, L_long=300, n_long=8, rhos=(1.5, 2.0, 2.5, 3.0, 4.0, 6.0), n_rho=64, steps=2000),
    "full": dict(n=4096, n_base=512, n_lam=40, L_long=4000, n_long=256, rhos=tuple(np.linspace(1.0, 8.0, 15)), n_rho=2048, steps=2000),
    # for the test suite only (tests/test_figures_experiments.py): every code path, tiny
    "test": dict(n=8, n_base=3, n_lam=3, L_long=60, n_long=2, rhos=(2.0, 4.0), n_rho=8, steps=100),
}


def _size(size: str) -> dict:
    return SIZES[v.one_of("size", size, SIZES)]


@lru_cache(maxsize=None)
def trained_theta(seed: int = 0, steps: int = 2000) -> np.ndarray:
    """The two-head layer trained by ``ac.fit`` on the book's default fixed mixture
    (r e_1, r e_2; lam = 1, ``steps`` steps, batch 32, L = 50): (2, d)."""
    mixture = ac.orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)
    return np.asarray(ac.fit(jax.random.PRNGKey(seed), mixture, lam=LAM, steps=steps, progress=False).theta)


def _outputs_distortion(out, labels, centroids) -> float:
    return float(ac.distortion(out, ac.own_centroids(centroids, labels)))


def _centre_distortion(labels_pred, centres, labels, centroids) -> float:
    """Distortion of a clusterer that quantizes each token to its estimated centre."""
    q = ac.own_centroids(jnp.asarray(centres, jnp.float32), jnp.asarray(labels_pred))
    return _outputs_distortion(q, labels, centroids)


@lru_cache(maxsize=None)
def results(size: str = "small") -> dict:
    """Every number of the chapter, computed once: distortion against lam (large-L exact
    and bound, finite L = 50 and long prompts), the baselines and the trained layer on
    in-context and fixed prompts, ARI of every assignment rule, the separation sweep and
    the stacked layers. Keys are documented inline; arrays are NumPy."""
    s = _size(size)
    out: dict = {"size": size, "K": K, "d": D, "r": R, "sigma": SIGMA, "L": L, "lam": LAM}
    key = jax.random.PRNGKey(7)
    k_ic, k_long, k_fix, k_rho, k_2d = jax.random.split(key, 5)
    k_base = jax.random.fold_in(key, 99)  # k-means / EM restarts and the label-free read-out
    X, lab, mus = ac.sample_in_context(k_ic, K, D, R, SIGMA, s["n"], L)
    lams = np.geomspace(0.05, 4.0, s["n_lam"])
    out["lams"] = lams
    out["D_exact"] = np.array([symbolic.distortion_exact(l, R, SIGMA, D) for l in lams])
    out["D_bound"] = np.array([symbolic.distortion_bound(l, R, SIGMA, D) for l in lams])
    out["D_L"] = np.array([_outputs_distortion(ac.identity_attention(X, float(l)), lab, mus) for l in lams])
    Xl, labl, musl = ac.sample_in_context(k_long, K, D, R, SIGMA, s["n_long"], s["L_long"])
    out["L_long"] = s["L_long"]
    out["D_long"] = np.array([
        _outputs_distortion(ac.identity_attention(Xl, float(l), block=100), labl, musl) for l in lams
    ])
    out["best"] = symbolic.best_lambda_bound(R, SIGMA, D)
    out["noise_floor"] = D * SIGMA**2
    lam_b = out["best"]["lam_bound"]
    # the label-free read-out stacks layers at lam sigma^2 = STACK_LS (depth STACK_DEPTH)
    lam_stack = STACK_LS / SIGMA**2
    out["lam_stack"] = lam_stack
    # identity attention at the bound's best lam, L = 50
    Q_b = ac.identity_attention(X, lam_b)
    out["D_identity_best"] = _outputs_distortion(Q_b, lab, mus)
    # baselines (scikit-learn, prompt by prompt) on the first n_base prompts
    nb = s["n_base"]
    Xb, labb, musb = X[:nb], lab[:nb], mus[:nb]
    km_lab, km_c = baselines.kmeans_per_prompt(k_base, Xb, K)
    em_lab, em_c = baselines.em_per_prompt(k_base, Xb, K)
    out["D_kmeans"] = _centre_distortion(km_lab, km_c, labb, musb)
    out["D_em"] = _centre_distortion(em_lab, em_c, labb, musb)
    # the trained two-head layer: on its own fixed mixture and on in-context prompts
    theta = trained_theta(steps=s["steps"])
    out["theta"] = theta
    mixture = ac.orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)
    Xf, labf = ac.sample(k_fix, mixture, s["n"], L)
    out["D_trained_fixed"] = _outputs_distortion(ac.two_head_layer(theta, Xf, LAM), labf, mixture.centroids)
    out["D_trained_ic"] = _outputs_distortion(ac.two_head_layer(theta, X, LAM), lab, mus)
    # ARI (mean over prompts) of every assignment rule at the default setting
    stack = ac.identity_stack(X, lam_stack, STACK_DEPTH)
    ari = {
        "trained layer, fixed mixture": ac.adjusted_rand(labf, ac.head_assignments(theta, Xf)),
        "trained layer, in-context": ac.adjusted_rand(lab, ac.head_assignments(theta, X)),
        "identity, oracle": ac.adjusted_rand(lab, ac.nearest_centroid(Q_b, mus)),
        "identity stack, label-free": ac.adjusted_rand(lab, baselines.output_clusters(k_base, stack[-1], K)),
        "k-means": ac.adjusted_rand(labb, km_lab),
        "EM": ac.adjusted_rand(labb, em_lab),
        "nearest true centroid": ac.adjusted_rand(lab, ac.nearest_centroid(X, mus)),
    }
    out["ari"] = {k: float(np.mean(v)) for k, v in ari.items()}
    out["ari_sd"] = {k: float(np.std(v)) for k, v in ari.items()}
    # the JAX twins of the baselines against the reference ones, same prompts
    out["ari_kmeans_jax"] = float(np.mean(ac.adjusted_rand(labb, baselines.kmeans_per_prompt_jax(k_base, Xb, K)[0])))
    out["ari_em_jax"] = float(np.mean(ac.adjusted_rand(labb, baselines.em_per_prompt_jax(k_base, Xb, K)[0])))
    # oracle assignment of Q(X) versus nearest true centroid of X: agreement per token
    out["oracle_agreement"] = float(np.mean(np.asarray(ac.nearest_centroid(Q_b, mus)) == np.asarray(ac.nearest_centroid(X, mus))))
    # separation sweep: r = 2 fixed, sigma = r / rho, lam = the bound's best lam there
    sweep = {k: [] for k in ("k-means", "EM", "identity, oracle", "identity stack, label-free", "nearest true centroid", "lam")}
    for i, rho in enumerate(s["rhos"]):
        sig = R / rho
        lam_r = symbolic.best_lambda_bound(R, sig, D)["lam_bound"]
        Xr, labr, musr = ac.sample_in_context(jax.random.fold_in(k_rho, i), K, D, R, sig, s["n_rho"], L)
        Qr = ac.identity_stack(Xr, STACK_LS / sig**2, STACK_DEPTH)
        Q1 = ac.identity_attention(Xr, lam_r)
        sweep["lam"].append(lam_r)
        sweep["k-means"].append(np.mean(ac.adjusted_rand(labr, baselines.kmeans_per_prompt_jax(k_base, Xr, K)[0])))
        sweep["EM"].append(np.mean(ac.adjusted_rand(labr, baselines.em_per_prompt_jax(k_base, Xr, K)[0])))
        sweep["identity, oracle"].append(np.mean(ac.adjusted_rand(labr, ac.nearest_centroid(Q1, musr))))
        sweep["identity stack, label-free"].append(np.mean(ac.adjusted_rand(labr, baselines.output_clusters(k_base, Qr[-1], K))))
        sweep["nearest true centroid"].append(np.mean(ac.adjusted_rand(labr, ac.nearest_centroid(Xr, musr))))
    out["rhos"] = np.asarray(s["rhos"])
    out["sweep"] = {k: np.asarray(v) for k, v in sweep.items()}
    # stacked identity layers: spread within clusters, distance between cluster means, ARI
    depth = 12
    stack_lams = (0.3, 0.6, 1.0, 2.0)
    out["stack_lams"] = stack_lams
    out["depth"] = depth
    spreads, gaps, aris = [], [], []
    for lam in stack_lams:
        st = np.asarray(ac.identity_stack(X, lam, depth))
        spreads.append(ac.within_spread(st, lab, K))
        one = np.asarray(lab)[..., None] == np.arange(K)
        m = np.einsum("nlk,tnld->tnkd", one, st) / one.sum(axis=1)[None, :, :, None]
        gaps.append(np.mean(np.linalg.norm(m[:, :, 0] - m[:, :, 1], axis=-1), axis=-1))
        aris.append(float(np.mean(ac.adjusted_rand(lab, baselines.output_clusters(k_base, jnp.asarray(st[-1]), K)))))
    out["spread"] = np.asarray(spreads)
    out["gap"] = np.asarray(gaps)
    out["stack_ari"] = np.asarray(aris)
    # a 2-D prompt (d = 2) for the trajectories
    X2, lab2, mus2 = ac.sample_in_context(k_2d, K, 2, R, SIGMA, 1, 60)
    out["traj"] = np.asarray(ac.identity_stack(X2, LAM, 8))[:, 0]
    out["traj_labels"] = np.asarray(lab2[0])
    out["traj_centroids"] = np.asarray(mus2[0])
    # the 2-D illustration of the trained layer: fixed mixture, and one in-context prompt
    out["flat_X"] = np.asarray(Xf[:4])
    out["flat_labels"] = np.asarray(labf[:4])
    out["flat_T"] = np.asarray(ac.two_head_layer(theta, Xf[:4], LAM))
    out["ic_X"] = np.asarray(X[:4])
    out["ic_labels"] = np.asarray(lab[:4])
    out["ic_centroids"] = np.asarray(mus[:4])
    out["ic_T"] = np.asarray(ac.two_head_layer(theta, X[:4], LAM))
    out["ic_Q"] = np.asarray(Q_b[:4])
    return out


_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


@register("icq-distortion", chapter="icq_experiments",
          description="Identity distortion against lam: large-L exact and bound, finite L, baselines, trained layer")
def distortion_vs_lam(size: str = "small"):
    """Distortion of identity attention against lam (in-context prompts) with the large-L
    exact value and bound, beside k-means, EM and the trained two-head layer."""
    res = results(size)
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    lams = res["lams"]
    ax.plot(lams, res["D_bound"], "k--", label="bound $B(\\lambda)$ (large $L$)")
    ax.plot(lams, res["D_exact"], "k-", label="exact $D(\\lambda)$ (large $L$)")
    ax.plot(lams, res["D_L"], "o-", color=_COLOURS[0], label=f"identity, $L={res['L']}$")
    ax.plot(lams, res["D_long"], "s-", color=_COLOURS[1], ms=4, label=f"identity, $L={res['L_long']}$")
    for value, name, style in (
        (res["noise_floor"], "raw tokens ($d\\sigma^2$)", ":"),
        (res["D_kmeans"], "k-means centres", "-."),
        (res["D_em"], "EM means", (0, (5, 2, 1, 2))),
        (res["D_trained_ic"], "trained layer, in-context", (0, (1, 1))),
        (res["D_trained_fixed"], "trained layer, its own mixture", (0, (3, 1))),
    ):
        ax.axhline(value, ls=style, lw=1.3, color="0.35" if "layer" not in name else "tab:red", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("temperature $\\lambda$")
    ax.set_ylabel("distortion $E\\|\\mathrm{output} - \\mu_{c}\\|^2$")
    ax.legend(fontsize=7.5, ncol=2, loc="upper left")
    ax.set_title("In-context quantization: K=2, d=5, r=2, $\\sigma$=0.5")
    fig.tight_layout()
    return fig


@register("icq-ari", chapter="icq_experiments",
          description="ARI of identity attention, k-means, EM and the trained layer; sweep over separation")
def ari_comparison(size: str = "small"):
    """ARI against the separation r/sigma for the per-prompt clusterers and identity
    attention, and at the default setting for every rule including the trained layer."""
    res = results(size)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
    for i, (name, vals) in enumerate((k, s) for k, s in res["sweep"].items() if k != "lam"):
        a.plot(res["rhos"], vals, "o-", color=_COLOURS[i], label=name, ms=4)
    a.set_xlabel("separation $r/\\sigma$")
    a.set_ylabel("mean ARI over prompts")
    a.set_title("In-context prompts")
    a.legend(fontsize=8)
    names = list(res["ari"])
    vals = [res["ari"][n] for n in names]
    sds = [res["ari_sd"][n] for n in names]
    colours = ["tab:red" if "trained" in n else "tab:gray" if "true" in n else "tab:blue" for n in names]
    b.barh(range(len(names)), vals, xerr=sds, color=colours)
    b.set_yticks(range(len(names)), names, fontsize=8)
    b.invert_yaxis()
    b.set_xlim(-0.1, 1.05)
    b.set_xlabel("ARI (mean $\\pm$ sd over prompts)")
    b.set_title("Default setting, $r/\\sigma = 4$")
    fig.tight_layout()
    return fig


@register("icq-stack", chapter="icq_experiments",
          description="Stacked identity layers: token trajectories in 2-D, spread within clusters against depth")
def stacked_layers(size: str = "small"):
    """Token trajectories under iterated identity attention (d = 2, lam = 1), and the spread
    within clusters and the distance between cluster means against depth for several lam."""
    res = results(size)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.9))
    tr, lab, mu = res["traj"], res["traj_labels"], res["traj_centroids"]
    ax = axes[0]
    for l in range(tr.shape[1]):
        ax.plot(tr[:, l, 0], tr[:, l, 1], "-", color=_COLOURS[lab[l]], lw=0.6, alpha=0.6)
    ax.scatter(tr[0, :, 0], tr[0, :, 1], c=[_COLOURS[c] for c in lab], s=10, label="tokens")
    ax.scatter(tr[-1, :, 0], tr[-1, :, 1], c="k", marker="x", s=30, label="after 8 layers")
    ax.scatter(mu[:, 0], mu[:, 1], marker="*", s=200, c="gold", edgecolors="k", label="centroids")
    ax.set_aspect("equal")
    ax.set_title("Trajectories, $\\lambda=1$, $d=2$")
    ax.legend(fontsize=7, loc="best")
    depth = np.arange(res["depth"] + 1)
    for i, lam in enumerate(res["stack_lams"]):
        axes[1].semilogy(depth, np.maximum(res["spread"][i], 1e-8), "o-", ms=3, color=_COLOURS[i], label=f"$\\lambda$={lam}")
        axes[2].plot(depth, res["gap"][i], "o-", ms=3, color=_COLOURS[i], label=f"$\\lambda$={lam} (ARI {res['stack_ari'][i]:.2f})")
    axes[1].set_xlabel("depth (identity layers)")
    axes[1].set_ylabel("spread within clusters")
    axes[1].legend(fontsize=8)
    axes[2].axhline(R * np.sqrt(2), color="0.5", ls=":", label="$\\|\\mu_1-\\mu_2\\|$")
    axes[2].set_xlabel("depth (identity layers)")
    axes[2].set_ylabel("distance between cluster means")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _plane(centroids: np.ndarray) -> np.ndarray:
    """Orthonormal basis (2, d) of span(mu_1, mu_2), first vector along mu_1."""
    q, _ = np.linalg.qr(np.asarray(centroids, float)[:2].T)
    q = q.T * np.sign(np.diag(_))[:, None]
    return q


@register("icq-flatten", chapter="icq_experiments",
          description="Input clouds and the trained two-head layer's flattened outputs, fixed and in-context")
def flattened_clouds(size: str = "small"):
    """Input clouds and outputs of the trained two-head layer in the centroids' plane, on
    its own fixed mixture and on an in-context prompt (new centroids), with identity
    attention's outputs on the same prompt."""
    res = results(size)
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    mixture = ac.orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)
    P = _plane(np.asarray(mixture.centroids))
    X, lab, T = res["flat_X"].reshape(-1, D), res["flat_labels"].reshape(-1), res["flat_T"].reshape(-1, D)
    cols = [_COLOURS[c] for c in lab]
    axes[0].scatter(*(X @ P.T).T, c=cols, s=8, alpha=0.7)
    axes[0].set_title("Tokens (fixed mixture)")
    axes[1].scatter(*(T @ P.T).T, c=cols, s=8, alpha=0.7)
    axes[1].set_title("Trained layer's outputs: flattened")
    th = res["theta"] @ P.T
    for ax in axes[:2]:
        ax.scatter(*(np.asarray(mixture.centroids) @ P.T).T, marker="*", s=200, c="gold", edgecolors="k")
        for h in range(th.shape[0]):
            u = th[h] / np.linalg.norm(th[h])
            ax.plot([-1.5 * u[0], 3.5 * u[0]], [-1.5 * u[1], 3.5 * u[1]], "k:", lw=0.8)
    i = 0
    Pi = _plane(res["ic_centroids"][i])
    Xi, labi = res["ic_X"][i], res["ic_labels"][i]
    ci = [_COLOURS[c] for c in labi]
    ax = axes[2]
    ax.scatter(*(Xi @ Pi.T).T, c=ci, s=8, alpha=0.35, label="tokens")
    ax.scatter(*(res["ic_Q"][i] @ Pi.T).T, c=ci, s=14, marker="D", label="identity attention")
    ax.scatter(*(res["ic_T"][i] @ Pi.T).T, c=ci, s=14, marker="^", edgecolors="k", linewidths=0.3, label="trained layer")
    ax.scatter(*(res["ic_centroids"][i] @ Pi.T).T, marker="*", s=200, c="gold", edgecolors="k")
    ax.set_title("In-context prompt (new centroids)")
    ax.legend(fontsize=7)
    for ax in axes:
        ax.set_aspect("equal")
        ax.set_xlabel("along $\\mu_1$")
    axes[0].set_ylabel("orthogonal, in the centroids' plane")
    fig.tight_layout()
    return fig
