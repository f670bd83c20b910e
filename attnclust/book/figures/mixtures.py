"""Figures of the chapter "Gaussian mixtures and clustering" (chapters/mixtures.md: the
mixture, def-mixture; distortion and the clustering measures, def-distortion).

- ``mixture-prompts``: prompts from one fixed mixture beside in-context prompts, each
  projected on its own first two centroid directions;
- ``clustering-vs-separation``: k-means and EM run on each in-context prompt, scored by
  the adjusted Rand index and by their quantization distortion against the noise floor,
  as the separation r / sigma grows (:func:`baseline_scores`, :func:`plot_baseline_scores`).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import matplotlib.figure
import numpy as np

from attnclust.baselines import em_per_prompt, kmeans_per_prompt
from attnclust.metrics import adjusted_rand
from attnclust.mixture import orthogonal_mixture, sample, sample_in_context
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.setting import DEFAULT

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


PROMPTS_SETTING = dict(DEFAULT.mixture_args(), d=2)
"""The mixture of ``mixture-prompts``: the book's default one, in the plane."""

PROMPTS_L = {"small": 50, "full": 200}
"""Tokens per prompt of ``mixture-prompts``, by figure size."""


@register("mixture-prompts", chapter="mixtures")
@styled
def mixture_prompts(size: str = "small") -> matplotlib.figure.Figure:
    """Three prompts of a fixed mixture (top) and three in-context prompts (bottom), in the
    plane (``PROMPTS_SETTING``, ``PROMPTS_L`` tokens)."""
    L = PROMPTS_L["small" if size == "small" else "full"]
    key_fixed, key_ic = jax.random.split(jax.random.PRNGKey(0))
    mix = orthogonal_mixture(**PROMPTS_SETTING)
    Xf, lf = sample(key_fixed, mix, 3, L)
    Xi, li, mui = sample_in_context(key_ic, **PROMPTS_SETTING, n_prompts=3, L=L)
    muf = np.broadcast_to(np.asarray(mix.centroids), (3, 2, 2))
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 4.9), layout="constrained")
    axes = fig.subplots(2, 3, sharex=True, sharey=True)
    for row, (X, lab, mu, name) in enumerate(
        [(Xf, lf, muf, "fixed mixture"), (Xi, li, mui, "in-context")]
    ):
        X, lab, mu = np.asarray(X), np.asarray(lab), np.asarray(mu)
        for i in range(3):
            ax = axes[row, i]
            for c in range(2):
                sel = lab[i] == c
                ax.scatter(X[i, sel, 0], X[i, sel, 1], s=10, alpha=0.7, color=COLOURS[c],
                           label=f"component {c + 1}")
            ax.scatter(mu[i, :, 0], mu[i, :, 1], marker="x", s=80, linewidths=2.5,
                       color="black", label="centroids")
            ax.scatter([0], [0], marker="+", s=60, color="grey")
            if row == 0:
                ax.set_title(f"prompt {i + 1}")
            ax.set_aspect("equal", adjustable="box")
            ax.grid(alpha=0.3)
            if row == 1:
                ax.set_xlabel("$x_1$")
            if i == 0:
                ax.set_ylabel(f"{name}\n$x_2$")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=3)
    fig.suptitle(
        f"$K={PROMPTS_SETTING['K']}$, $d={PROMPTS_SETTING['d']}$, $r={PROMPTS_SETTING['r']:g}$, "
        f"$\\sigma={PROMPTS_SETTING['sigma']:g}$, $L={L}$")
    return fig


SEPARATIONS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
"""r / sigma values of :func:`baseline_scores` in the book."""


def baseline_scores(
    separations: Sequence[float] = SEPARATIONS,
    K: int = DEFAULT.K,
    d: int = DEFAULT.d,
    sigma: float = DEFAULT.sigma,
    n_prompts: int = 16,
    L: int = DEFAULT.L,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """k-means and EM on in-context prompts, as the separation grows.

    For each r / sigma in ``separations``, ``n_prompts`` in-context prompts (orthogonal
    centroids of norm r = (r / sigma) * sigma, equal weights) are clustered by
    :func:`~attnclust.baselines.kmeans_per_prompt` and
    :func:`~attnclust.baselines.em_per_prompt`. Scores per prompt, averaged:

    - ``ari_kmeans``, ``ari_em``: adjusted Rand index against the true labels;
    - ``dist_kmeans``, ``dist_em``: quantization distortion, the mean over tokens of
      ||centre of the token's cluster - the token's true centroid||^2;
    - ``noise_floor``: d sigma^2, the distortion of the tokens themselves.

    Returns a dict of arrays of shape (len(separations),) (``separations`` included);
    under ``*_sem``, the standard errors of the means over prompts; and under
    ``*_per_prompt``, the scores of every prompt, of shape (len(separations), n_prompts),
    from which a chapter computes intervals (``attnclust.stats``).
    """
    seps = np.asarray(separations, float)
    out = {k: [] for k in ("ari_kmeans", "ari_em", "dist_kmeans", "dist_em")}
    sem = {k + "_sem": [] for k in out}
    per_prompt = {k + "_per_prompt": [] for k in out}
    keys = jax.random.split(jax.random.PRNGKey(seed), len(seps))
    for key, sep in zip(keys, seps):
        k_data, k_fit = jax.random.split(key)
        X, lab, mu = sample_in_context(k_data, K, d, float(sep) * sigma, sigma, n_prompts, L)
        X, lab, mu = np.asarray(X), np.asarray(lab), np.asarray(mu)
        true_c = np.take_along_axis(mu, lab[..., None], axis=1)  # (n, L, d)
        for name, func in (("kmeans", kmeans_per_prompt), ("em", em_per_prompt)):
            pred, centres = func(k_fit, X, K)
            ari = np.asarray(adjusted_rand(lab, pred), float)
            est = np.take_along_axis(centres, pred[..., None], axis=1)
            dist = np.mean(np.sum((est - true_c) ** 2, axis=-1), axis=-1)
            for k, vals in ((f"ari_{name}", ari), (f"dist_{name}", dist)):
                out[k].append(vals.mean())
                sem[k + "_sem"].append(vals.std(ddof=1) / np.sqrt(len(vals)))
                per_prompt[k + "_per_prompt"].append(vals)
    res = {k: np.asarray(val) for k, val in {**out, **sem, **per_prompt}.items()}
    res["separations"] = seps
    res["noise_floor"] = np.full(len(seps), d * sigma**2)
    return res


@styled
def plot_baseline_scores(scores: dict[str, np.ndarray]) -> matplotlib.figure.Figure:
    """Two panels from :func:`baseline_scores`: ARI, and distortion / noise floor (log)."""
    s = scores["separations"]
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    for name, label, marker in (("kmeans", "k-means (Lloyd)", "o"), ("em", "EM, spherical", "s")):
        ax1.errorbar(s, scores[f"ari_{name}"], yerr=scores[f"ari_{name}_sem"], marker=marker,
                     capsize=3, label=label)
        ax2.errorbar(s, scores[f"dist_{name}"] / scores["noise_floor"],
                     yerr=scores[f"dist_{name}_sem"] / scores["noise_floor"], marker=marker,
                     capsize=3, label=label)
    ax1.set_xlabel(r"separation $r/\sigma$")
    ax1.set_ylabel("adjusted Rand index")
    ax1.set_ylim(-0.05, 1.05)
    ax2.axhline(1.0, color="grey", ls="--", label=r"noise floor $d\sigma^2$")
    ax2.set_yscale("log")
    ax2.set_xlabel(r"separation $r/\sigma$")
    ax2.set_ylabel(r"distortion / $d\sigma^2$")
    for ax, where in ((ax1, "lower right"), (ax2, "lower left")):
        ax.grid(alpha=0.3)
        ax.legend(loc=where)  # clear of the curves and of the noise floor at the top
    return fig


@register("clustering-vs-separation", chapter="mixtures")
def clustering_vs_separation(size: str = "small") -> matplotlib.figure.Figure:
    """k-means and EM per in-context prompt: ARI and distortion against r / sigma."""
    n = 16 if size == "small" else 400
    return plot_baseline_scores(baseline_scores(n_prompts=n))
