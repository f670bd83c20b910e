"""Figures of the chapter "In-context quantization experiments" (chapters/icq_experiments.md;
the theory they test is in chapters/quantization.md: def-identity-attention,
prop-identity-limit, thm-distortion-bound).

The numbers come from ``attnclust.book.experiments.icq`` (computed at build time, cached per
size: the paired benchmark, the regimes against d), from :func:`results` below (distortion
against lam, stacked layers, the trained layer; on the benchmark's own prompts) and from the
committed results file ``attnclust/book/results/icq-sweeps.json`` (``attnclust.book.experiments.icq_sweeps``).
In every figure the label-free methods are drawn in colour and the oracles in grey with hollow
markers (and on a shaded row in the benchmark's figure).
Setting: K = 2 equal-weight orthogonal centroids of norm r = 2 redrawn for every prompt,
d = 5, sigma = 0.5, L = 50, unless a figure says otherwise.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import attnclust as ac

from attnclust import baselines
from attnclust.book import benchmark as B
from attnclust import symbolic, temperature
from attnclust.book.experiments import icq as E
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.setting import DEFAULT
from attnclust.book import sizes

K, D, R, SIGMA, L, LAM = E.K, E.D, E.R, E.SIGMA, E.L, DEFAULT.lam
SIZES = {
    # lam grid, long prompts' L and count
    "small": dict(n_lam=12, L_long=300, n_long=8),
    "full": dict(n_lam=40, L_long=4000, n_long=256),
    # for the test suite only (tests/test_figures_experiments.py): every code path, tiny
    "test": dict(n_lam=3, L_long=60, n_long=2),
}

STYLE = {
    B.KMEANS: ("black", "o"),
    B.EM: ("0.35", "s"),
    B.MEANSHIFT: ("tab:brown", "v"),
    B.IDENTITY: ("tab:blue", "D"),
    B.IDENTITY_MASKED: ("tab:cyan", "d"),
    B.STACK: ("tab:green", "^"),
    B.STACK_MASKED: ("tab:olive", ">"),
    E.TRAINED: ("tab:red", "x"),
    B.ORACLE_BOUND: ("0.6", "P"),
    B.ORACLE_BEST: ("0.6", "*"),
    B.BAYES: ("0.6", "h"),
}
"""Colour and marker of each method in every figure (oracles grey)."""

SWEEP_METHODS = (B.KMEANS, B.EM, B.MEANSHIFT, B.IDENTITY, B.IDENTITY_MASKED, B.STACK, B.ORACLE_BOUND)
"""The methods drawn in the sweep figures (the others are in the results file)."""


def _size(size: str) -> dict:
    return sizes.pick(SIZES, size)


def _outputs_distortion(out, labels, centroids) -> float:
    return float(ac.distortion(out, ac.own_centroids(centroids, labels)))


@lru_cache(maxsize=None)
def results(size: str = "small") -> dict:
    """The numbers of the chapter's distortion curve, stacked layers and trained layer,
    computed once on the benchmark's prompts (``experiments.icq.default_prompts``): distortion
    against lam (large-L exact and bound, L = 50 and long prompts), the trained layer on
    in-context and fixed prompts, the oracle agreement, the stacked layers. Keys are
    documented inline; arrays are NumPy."""
    s = _size(size)
    p = E.default_prompts(size)
    X, lab, mus = jnp.asarray(p.X), jnp.asarray(p.labels), jnp.asarray(p.centroids)
    out: dict = {"size": size, "K": K, "d": D, "r": R, "sigma": SIGMA, "L": L, "lam": LAM, "n": p.n}
    key = jax.random.PRNGKey(7)
    k_long, k_fix, k_2d = jax.random.split(key, 3)
    k_base = jax.random.fold_in(key, 99)  # the label-free read-out of the stacks
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
    Q_b = ac.identity_attention(X, lam_b)
    out["D_identity_best"] = _outputs_distortion(Q_b, lab, mus)
    # oracle assignment of Q(X) versus nearest true centroid of X: agreement per token
    out["oracle_agreement"] = float(np.mean(np.asarray(ac.nearest_centroid(Q_b, mus)) == np.asarray(ac.nearest_centroid(X, mus))))
    # the trained two-head layer on its own fixed mixture
    theta = E.trained_theta(steps=E.TRAIN_STEPS[size])
    out["theta"] = theta
    mixture = ac.orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)
    Xf, labf = ac.sample(k_fix, mixture, p.n, L)
    out["D_trained_fixed"] = _outputs_distortion(ac.two_head_layer(theta, Xf, LAM), labf, mixture.centroids)
    out["ari_trained_fixed"] = ac.adjusted_rand(labf, ac.head_assignments(theta, Xf))
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
    out["traj"] = np.asarray(ac.identity_stack(X2, LAM, depth))[:, 0]   # as deep as the other panels
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


def _method_style(name: str):
    colour, marker = STYLE.get(name, ("tab:purple", "o"))
    return colour, marker


@register("icq-distortion", chapter="icq_experiments",
          description="Identity distortion against lam: large-L exact and bound, finite L, the clustering methods on the same prompts")
@styled
def distortion_vs_lam(size: str = "small"):
    """Distortion of identity attention against lam (in-context prompts) with the large-L
    exact value and bound, beside k-means, EM, mean shift and the trained two-head layer on
    the same prompts, and the label-free lam's distortion at its median lam."""
    res = results(size)
    bench = E.default_benchmark(size)
    fig, ax = plt.subplots(figsize=(WIDTH, 6.2))
    lams = res["lams"]
    ax.plot(lams, res["D_bound"], "k--", label="bound $B(\\lambda)$ (large $L$)")
    ax.plot(lams, res["D_exact"], "k-", label="exact $D_\\infty(\\lambda)$ (large $L$)")
    ax.plot(lams, res["D_L"], "o-", color="tab:blue", label=f"identity, $L={res['L']}$")
    ax.plot(lams, res["D_long"], "s-", color="tab:orange", ms=4, label=f"identity, $L={res['L_long']}$")
    free = bench.row(B.IDENTITY)
    ax.errorbar([free.lam_median], [free.distortion.estimate],
                yerr=[[free.distortion.estimate - free.distortion.low], [free.distortion.high - free.distortion.estimate]],
                fmt="D", color="tab:blue", mec="k", ms=8, capsize=3, label="identity, $\\lambda$ from the prompt (median)")
    ax.axhline(res["noise_floor"], ls=":", lw=1.3, color="0.35", label="raw tokens ($d\\sigma^2$)")
    for name, style in ((B.KMEANS, "-."), (B.EM, (0, (5, 2, 1, 2))), (B.MEANSHIFT, (0, (1, 1))),
                        (E.TRAINED, (0, (3, 1)))):
        ax.axhline(bench.row(name).distortion.estimate, ls=style, lw=1.3, color=_method_style(name)[0], label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("inverse temperature $\\lambda$")
    ax.set_ylabel("distortion $E\\|\\mathrm{output} - \\mu_{c}\\|^2$")
    fig.legend(loc="outside lower center", ncols=2)
    ax.set_title(f"K=2, d=5, r=2, $\\sigma$=0.5, {bench.n} prompts")
    return fig


@register("icq-sure", chapter="icq_experiments",
          description="SURE against the true distortion on single prompts; lam from the prompt against the oracle's lam")
@styled
def sure_curves(size: str = "small"):
    """Left: SURE(lam) with the estimated sigma beside the true distortion for three prompts.
    Right: per prompt, the label-free lam against the oracle's best lam on the same grid."""
    bench = E.default_benchmark(size)
    p = E.default_prompts(size)
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 7.6))
    idx = np.arange(min(3, p.n))
    ch = temperature.sure_lambda(p.X[idx], p.K)
    own = p.own_centroids()[idx]
    grid = ch.grid[:, None] / ch.sigma2[None, :]
    true = np.array([np.mean(np.sum((np.asarray(temperature.identity_layer(p.X[idx], g)) - own) ** 2, -1), -1)
                     for g in grid])
    for j, c in zip(range(len(idx)), ("tab:blue", "tab:orange", "tab:green")):
        a.plot(grid[:, j], ch.sure[:, j], "-", color=c, label=f"SURE, prompt {j}")
        a.plot(grid[:, j], true[:, j], "--", color=c, label=f"true, prompt {j}")
        a.axvline(ch.lam[j], color=c, lw=0.8, ls=":")
    a.set_xscale("log")
    a.set_yscale("symlog", linthresh=0.1)
    a.set_xlabel("$\\lambda$")
    a.set_ylabel("distortion")
    a.legend(ncols=2)
    a.set_title("Stein's estimate (label-free) and the truth")
    lam_free, lam_best = bench.scores[B.IDENTITY].lam, bench.scores[B.ORACLE_BEST].lam
    b.scatter(lam_best, lam_free, s=14, color="tab:blue", alpha=0.7, label="per prompt")
    lo, hi = min(lam_free.min(), lam_best.min()) * 0.8, max(lam_free.max(), lam_best.max()) * 1.25
    b.plot([lo, hi], [lo, hi], "k:", lw=1, label="equal")
    b.axhline(symbolic.best_lambda_bound(R, SIGMA, D)["lam_bound"], color="0.5", ls="--", lw=1, label="bound's best $\\lambda$ (oracle $\\sigma$, $r$)")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("oracle $\\lambda$ (smallest true distortion on the grid)")
    b.set_ylabel("$\\lambda$ chosen by SURE")
    b.legend()
    b.set_title(f"{p.n} prompts, d={p.d}")
    return fig


def _forest(ax, rows, attr, scale=1.0, ref_line=0.0):
    names = [r.name for r in rows]
    for i, r in enumerate(rows):
        val = getattr(r, attr)
        if val is None:
            continue
        iv = val.difference if hasattr(val, "difference") else val
        colour, marker = _method_style(r.name)
        ax.errorbar([iv.estimate / scale], [i], xerr=[[(iv.estimate - iv.low) / scale], [(iv.high - iv.estimate) / scale]],
                    fmt=marker, color=colour, mec="k" if not r.oracle else colour, capsize=3,
                    mfc="white" if r.oracle else colour)
    ax.axvline(ref_line, color="0.4", lw=0.8)
    ax.set_yticks(range(len(names)), [("oracle: " if r.oracle else "") + n for r, n in zip(rows, names)])
    ax.invert_yaxis()
    for i, r in enumerate(rows):
        if r.oracle:
            ax.axhspan(i - 0.5, i + 0.5, color="0.92", zorder=0)


@register("icq-benchmark", chapter="icq_experiments",
          description="Paired benchmark at the default setting: ARI and distortion differences to k-means, time per prompt")
@styled
def benchmark_forest(size: str = "small"):
    """The paired benchmark at the default setting: per method the mean ARI minus k-means'
    on the same prompts (bootstrap 95% interval), the mean distortion over the noise floor
    (t interval) and the time per prompt; oracles shaded."""
    bench = E.default_benchmark(size)
    rows = bench.rows
    fig, axes = plt.subplots(3, 1, figsize=(WIDTH, 9.6), sharey=True)
    _forest(axes[0], rows, "ari_vs_ref")
    axes[0].set_xlabel("ARI minus k-means' ARI (paired, 95% CI)")
    _forest(axes[1], rows, "distortion", scale=bench.noise_floor, ref_line=1.0)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("distortion / noise floor (95% CI)")
    for i, r in enumerate(rows):
        colour, marker = _method_style(r.name)
        axes[2].plot([1e3 * r.time_per_prompt], [i], marker, color=colour, mfc="white" if r.oracle else colour, mec="k")
    axes[2].set_xscale("log")
    axes[2].set_xlabel("ms per prompt (this machine)")
    for i, r in enumerate(rows):
        if r.oracle:
            axes[2].axhspan(i - 0.5, i + 0.5, color="0.92", zorder=0)
    fig.suptitle(f"{bench.n} in-context prompts, K={bench.K}, d={bench.d}, L={bench.L}, r/$\\sigma$=4")
    return fig


@register("icq-regimes", chapter="icq_experiments",
          description="Identity attention against d at L=50: the weight of the own key, distortion at the bound's lam, label-free, self-masked")
@styled
def regimes(size: str = "small"):
    """Left: the mean weight a token gives its own key against d, measured at the bound's
    lam and at the label-free lam, with the estimate of prop-icq-self-weight. Right:
    distortion against d of one layer at the bound's lam, at the label-free lam, self-masked,
    beside the raw tokens, the prompt's mean and the true clusters' means."""
    rg = E.regimes(size)
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 9.0))
    a.semilogx(rg.ds, rg.self_weight_bound, "P-", color="0.5", label="measured, bound's $\\lambda$ (oracle $\\sigma$, $r$)")
    a.semilogx(rg.ds, rg.self_weight_predicted, "k--", label="estimate (the proposition)")
    a.semilogx(rg.ds, rg.self_weight_sure, "D-", color="tab:blue", label="measured, $\\lambda$ from the prompt")
    a.axhline(1 / L, color="0.6", ls=":", lw=1, label="$1/L$ (uniform)")
    a.set_xlabel("dimension $d$")
    a.set_ylabel("mean weight $w_{ll}$ of the own key")
    a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    a.set_title(f"L={L}, r/$\\sigma$=4, {rg.n} prompts")
    for y, style, label, colour in ((rg.floor, ":", "raw tokens ($d\\sigma^2$)", "0.35"),
                                    (rg.D_mean, "-.", "prompt mean (one point)", "0.35"),
                                    (rg.D_labels, "-", "true clusters' means (oracle)", "0.7"),
                                    (rg.D_bound, "P-", "1 layer, bound's $\\lambda$ (oracle)", "0.5"),
                                    (rg.D_sure, "D-", "1 layer, $\\lambda$ from the prompt", "tab:blue"),
                                    (rg.D_masked, "d-", "1 layer, self-masked", "tab:cyan")):
        b.loglog(rg.ds, y, style, color=colour, label=label, ms=5)
    for x, label in ((rg.d_star, "$d^*$"), (rg.d_star_masked, "$d^*_{mask}$")):
        b.axvline(x, color="tab:red", lw=0.8, ls="--")
        b.text(x * 1.05, b.get_ylim()[0] * 1.3 if b.get_ylim()[0] > 0 else 0.05, label, color="tab:red")
    b.set_xlabel("dimension $d$")
    b.set_ylabel("distortion")
    b.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    return fig


def _sweeps_data() -> dict:
    from attnclust.book import results as _results

    return _results.load("icq-sweeps").data


def _sweep_figure(unequal: bool):
    data = _sweeps_data()
    axes_names = list(data["sweeps"])
    # one row per sweep, the two metrics side by side (axes[i, j]: metric i, sweep j)
    fig, grid = plt.subplots(len(axes_names), 2, figsize=(WIDTH, 2.2 * len(axes_names) + 1.6), sharey="col")
    axes = grid.T
    for j, axis in enumerate(axes_names):
        for name in SWEEP_METHODS:
            colour, marker = _method_style(name)
            for i, metric in enumerate(("ari", "distortion")):
                x, est, lo, hi = E.sweep_series(data, axis, name, metric, unequal=unequal)
                oracle = name in (B.ORACLE_BOUND, B.ORACLE_BEST, B.BAYES)
                axes[i, j].plot(x, est, marker=marker, ls="--" if oracle else "-", color=colour, ms=4,
                                mfc="white" if oracle else colour, label=("oracle: " if oracle else "") + name)
                axes[i, j].fill_between(x, lo, hi, color=colour, alpha=0.15, lw=0)
        fixed = ", ".join(f"{k}={v}" for k, v in data["sweeps"][axis]["fixed"].items())
        for i in range(2):
            axes[i, j].set_xlabel(f"{axis}" + (f" ({fixed})" if fixed else ""))
        if axis in ("L", "d"):
            for i in range(2):
                axes[i, j].set_xscale("log")
    axes[1, 0].set_yscale("log")
    axes[0, 0].set_title("mean ARI (95% CI)")
    axes[1, 0].set_title("distortion / noise floor")
    for j in range(len(axes_names)):
        axes[1, j].axhline(1.0, color="0.5", lw=0.8, ls=":")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    fig.suptitle("unequal weights (ratio 4)" if unequal else "equal weights")
    return fig


@register("icq-sweeps", chapter="icq_experiments",
          description="Scaling sweeps over K, L, d and r/sigma, equal weights, from attnclust/book/results/icq-sweeps.json")
@styled
def sweeps_equal(size: str = "small"):
    """Mean ARI and distortion over the noise floor of the main methods along the four
    sweeps (equal weights), with 95% intervals; from the committed results file."""
    return _sweep_figure(False)


@register("icq-sweeps-unequal", chapter="icq_experiments",
          description="Scaling sweeps over K, L, d and r/sigma, unequal weights, from attnclust/book/results/icq-sweeps.json")
@styled
def sweeps_unequal(size: str = "small"):
    """As ``icq-sweeps`` with unequal weights (ratio 4 between the largest and the smallest)."""
    return _sweep_figure(True)


@register("icq-cost", chapter="icq_experiments",
          description="Time per prompt against L for every method, from attnclust/book/results/icq-sweeps.json")
@styled
def cost(size: str = "small"):
    """Wall-clock time per prompt against the prompt length L (L sweep, equal weights) for
    every method, measured in the sweeps' run."""
    data = _sweeps_data()
    rows = sorted((p for p in data["points"] if "L" in p["axes"] and not p["unequal"]), key=lambda p: p["L"])
    fig, ax = plt.subplots(figsize=(WIDTH, 5.4))
    names = list(rows[0]["methods"])
    for name in names:
        colour, marker = _method_style(name)
        oracle = rows[0]["methods"][name]["oracle"]
        ax.loglog([p["L"] for p in rows], [1e3 * p["methods"][name]["time_per_prompt"] for p in rows],
                  marker=marker, ls="--" if oracle else "-", color=colour, mfc="white" if oracle else colour,
                  label=("oracle: " if oracle else "") + name, ms=4)
    ax.set_xlabel("prompt length $L$")
    ax.set_ylabel("ms per prompt")
    fig.legend(loc="outside lower center", ncols=2)
    ax.set_title("Batched JAX vs scikit-learn prompt by prompt")
    return fig


@register("icq-stack", chapter="icq_experiments",
          description="Stacked identity layers: token trajectories in 2-D, spread within clusters against depth")
@styled
def stacked_layers(size: str = "small"):
    """Token trajectories under iterated identity attention (d = 2, lam = 1), and the spread
    within clusters and the distance between cluster means against depth for several lam."""
    res = results(size)
    colours = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    fig = plt.figure(figsize=(WIDTH, 7.8))
    mosaic = fig.subplot_mosaic([["traj", "traj"], ["spread", "gap"]], height_ratios=[1.15, 1])
    axes = [mosaic["traj"], mosaic["spread"], mosaic["gap"]]
    tr, lab, mu = res["traj"], res["traj_labels"], res["traj_centroids"]
    ax = axes[0]
    for l in range(tr.shape[1]):
        ax.plot(tr[:, l, 0], tr[:, l, 1], "-", color=colours[lab[l]], lw=0.6, alpha=0.6)
    ax.scatter(tr[0, :, 0], tr[0, :, 1], c=[colours[c] for c in lab], s=10, label="tokens")
    ax.scatter(tr[-1, :, 0], tr[-1, :, 1], c="k", marker="x", s=30, label=f"after {tr.shape[0] - 1} layers")
    ax.scatter(mu[:, 0], mu[:, 1], marker="*", s=200, c="gold", edgecolors="k", label="centroids")
    ax.set_aspect("equal")
    ax.set_title("Trajectories, $\\lambda=1$, $d=2$")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=3)
    depth = np.arange(res["depth"] + 1)
    for i, lam in enumerate(res["stack_lams"]):
        axes[1].semilogy(depth, np.maximum(res["spread"][i], 1e-8), "o-", ms=3, color=colours[i], label=f"$\\lambda$={lam}")
        axes[2].plot(depth, res["gap"][i], "o-", ms=3, color=colours[i], label=f"$\\lambda$={lam} (ARI {res['stack_ari'][i]:.2f})")
    axes[1].set_xlabel("depth (layers)")
    axes[1].set_ylabel("spread within clusters")
    axes[2].axhline(R * np.sqrt(2), color="0.5", ls=":", label="$\\|\\mu_1-\\mu_2\\|$")
    axes[2].set_xlabel("depth (layers)")
    axes[2].set_ylabel("distance between means")
    fig.legend(*axes[2].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


def _plane(centroids: np.ndarray) -> np.ndarray:
    """Orthonormal basis (2, d) of span(mu_1, mu_2), first vector along mu_1."""
    q, _ = np.linalg.qr(np.asarray(centroids, float)[:2].T)
    q = q.T * np.sign(np.diag(_))[:, None]
    return q


@register("icq-flatten", chapter="icq_experiments",
          description="Input clouds and the trained two-head layer's flattened outputs, fixed and in-context")
@styled
def flattened_clouds(size: str = "small"):
    """Input clouds and outputs of the trained two-head layer in the centroids' plane, on
    its own fixed mixture and on an in-context prompt (new centroids), with identity
    attention's outputs on the same prompt."""
    res = results(size)
    colours = ("tab:blue", "tab:orange")
    fig, grid = plt.subplots(2, 2, figsize=(WIDTH, 5.8))
    axes = [grid[0, 0], grid[0, 1], grid[1, 0]]
    mixture = ac.orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)
    P = _plane(np.asarray(mixture.centroids))
    X, lab, T = res["flat_X"].reshape(-1, D), res["flat_labels"].reshape(-1), res["flat_T"].reshape(-1, D)
    cols = [colours[c] for c in lab]
    axes[0].scatter(*(X @ P.T).T, c=cols, s=8, alpha=0.7)
    axes[0].set_title("Tokens (fixed mixture)")
    axes[1].scatter(*(T @ P.T).T, c=cols, s=8, alpha=0.7)
    axes[1].set_title("Trained layer: flattened")
    th = res["theta"] @ P.T
    for ax in axes[:2]:
        ax.scatter(*(np.asarray(mixture.centroids) @ P.T).T, marker="*", s=200, c="gold", edgecolors="k")
        for h in range(th.shape[0]):
            u = th[h] / np.linalg.norm(th[h])
            ax.plot([-1.5 * u[0], 3.5 * u[0]], [-1.5 * u[1], 3.5 * u[1]], "k:", lw=0.8)
    i = 0
    Pi = _plane(res["ic_centroids"][i])
    Xi, labi = res["ic_X"][i], res["ic_labels"][i]
    ci = [colours[c] for c in labi]
    ax = axes[2]
    ax.scatter(*(Xi @ Pi.T).T, c=ci, s=8, alpha=0.35, label="tokens")
    ax.scatter(*(res["ic_Q"][i] @ Pi.T).T, c=ci, s=14, marker="D", label="identity attention")
    ax.scatter(*(res["ic_T"][i] @ Pi.T).T, c=ci, s=14, marker="^", edgecolors="k", linewidths=0.3, label="trained layer")
    ax.scatter(*(res["ic_centroids"][i] @ Pi.T).T, marker="*", s=200, c="gold", edgecolors="k")
    ax.set_title("In-context prompt")
    grid[1, 1].axis("off")
    grid[1, 1].legend(*ax.get_legend_handles_labels(), loc="center")
    for ax in axes:
        ax.set_aspect("equal")
        ax.set_xlabel("along $\\mu_1$")
    axes[0].set_ylabel("orthogonal, in the plane")
    axes[2].set_ylabel("orthogonal, in the plane")
    return fig


@register("icq-trained-in-context", chapter="icq_experiments",
          description="An attention layer trained in context minus identity attention, k-means and EM, paired, "
                      "from attnclust/book/results/icq-trained-in-context.json")
@styled
def trained_in_context(size: str = "small"):
    """The layer trained in context (label-trained; with and without its residual, per-prompt
    scores averaged over the training seeds) minus each compared method on the same held-out
    prompts: ARI (top) and distortion over the noise floor (bottom), paired bootstrap 95%
    intervals; from the committed results file."""
    from matplotlib.ticker import MaxNLocator

    from attnclust.book.experiments import icq_trained as Tr

    data = Tr.stored().data
    others = {B.IDENTITY: "identity, SURE's $\\lambda$", B.ORACLE_BEST: "oracle: identity,\nbest $\\lambda$",
              B.KMEANS: "k-means", B.EM: "EM"}
    variants = (("residual", "tab:red", "X", -0.12, "with residual"),
                ("no_residual", "tab:orange", "o", 0.12, "without residual"))
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 5.6), sharey=True)
    for ax, metric, scale, label in ((axes[0], "ari", 1.0, "ARI difference (paired, 95% CI)"),
                                     (axes[1], "distortion", data["noise_floor"],
                                      "distortion difference / noise floor (paired, 95% CI)")):
        for variant, colour, marker, dy, name in variants:
            for i, other in enumerate(others):
                iv = Tr.paired(data, variant, other, metric).difference
                ax.errorbar([iv.estimate / scale], [i + dy], xerr=[[(iv.estimate - iv.low) / scale],
                                                                   [(iv.high - iv.estimate) / scale]],
                            fmt=marker, color=colour, mec="k", capsize=3,
                            label=f"trained in context, {name}" if i == 0 else None)
        ax.axvline(0.0, color="0.4", lw=0.8)
        ax.set_yticks(range(len(others)), list(others.values()))
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.set_xlabel(label)
    for i, other in enumerate(others):
        if data["summary"]["methods"][other]["oracle"]:
            for ax in axes:
                ax.axhspan(i - 0.5, i + 0.5, color="0.92", zorder=0)
    axes[0].invert_yaxis()
    axes[0].set_title("trained layer minus the method, same prompts")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=1)
    s = data["setting"]
    fig.suptitle(f"{data['n']} held-out prompts, K={s['K']}, d={s['d']}, L={s['L']}; "
                 f"{data['train']['seeds']} training seeds")
    return fig
