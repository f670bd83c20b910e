"""Figures of the chapter "Training dynamics" (chapters/training_dynamics.md; the stationary
points training meets are in chapters/population_risk.md: prop-gradient, prop-aligned).

Every figure trains through :mod:`attnclust.sweeps` (one ``fit_many`` call per setting, all
seeds at once, cached per process) at ``size`` "small" (CPU, the book) or "full" (paper
scale, for an accelerator):

- ``training-inits``: worst head's |cos| against the step, mean and 10-90% band over seeds,
  for the four initialisation regimes;
- ``training-outcomes``: how often the runs end aligned, between the centroids, or
  elsewhere, per regime, with exact binomial intervals;
- ``training-separability``: the same curves and final |cos| for several r / sigma;
- ``training-dimension``: for several d (learning rate scaled as 1/sqrt(d));
- ``training-k-heads``: K = 3 centroids with 3 heads;
- ``training-tilt``: the measured final |cos| against lam and r / sigma beside the
  large-L tilted minimiser of :func:`attnclust.symbolic.tilted_minimiser`;
- ``training-explorer``: the training explorer at its default slider values.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.figure
import numpy as np

from .. import sweeps
from ..metrics import alignment
from ..mixture import orthogonal_mixture
from ..train import INITS, FitResult
from ..widgets.training import DEFAULTS, draw_training
from ._registry import register

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
CLASS_COLOURS = ("tab:green", "tab:red", "tab:grey")


@lru_cache(maxsize=64)
def tilted_cos(lam: float, r: float, sigma: float) -> float:
    """|cos| of the large-L tilted minimiser (``symbolic.tilted_minimiser``), cached."""
    from .. import symbolic

    return float(symbolic.tilted_minimiser(float(lam), float(r), float(sigma)).cos)


def worst_alignment(result: FitResult, centroids) -> np.ndarray:
    """(S, n_records): the smallest matched |cos| over the heads, per seed and record."""
    return alignment(result.thetas, centroids).min(axis=-1)


def _band(ax, steps, values, colour, label):
    mean, lo, hi = sweeps.mean_band(values)
    ax.fill_between(steps, lo, hi, color=colour, alpha=0.2, linewidth=0)
    ax.plot(steps, mean, color=colour, label=label)


def _jitter(n: int, width: float = 0.15) -> np.ndarray:
    return np.linspace(-width, width, n) if n > 1 else np.zeros(1)


@register("training-inits", chapter="training_dynamics")
def training_inits(size: str = "small") -> matplotlib.figure.Figure:
    """Worst head's |cos| against the step for the four initialisations (mean, 10-90% band,
    thin lines: single seeds)."""
    runs = sweeps.init_regimes(size)
    mu = orthogonal_mixture().centroids
    ref = tilted_cos(1.0, 2.0, 0.5)
    fig = matplotlib.figure.Figure(figsize=(10, 6.2), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True, sharey=True).ravel()
    for ax, init, colour in zip(axes, INITS, COLOURS):
        res = runs[init]
        worst = worst_alignment(res, mu)
        for w in worst:
            ax.plot(res.steps, w, color=colour, lw=0.4, alpha=0.35)
        _band(ax, res.steps, worst, colour, "mean over seeds (band: 10-90%)")
        ax.axhline(ref, color="black", ls="--", lw=0.8, label=f"large-L minimiser {ref:.3f}")
        ax.axhline(1 / np.sqrt(2), color="grey", ls=":", lw=0.8, label=r"$1/\sqrt{2}$ (between)")
        ax.set_title(f"init = {init!r} ({worst.shape[0]} seeds)", fontsize=10)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[2:]:
        ax.set_xlabel("Adam step")
    for ax in axes[::2]:
        ax.set_ylabel("worst head's |cos|")
    axes[0].legend(fontsize=7, loc="lower right")
    return fig


@register("training-outcomes", chapter="training_dynamics")
def training_outcomes(size: str = "small") -> matplotlib.figure.Figure:
    """Fraction of seeds ending aligned / between the centroids / elsewhere, per regime,
    with the exact 95% interval of the 'between' frequency."""
    runs = sweeps.init_regimes(size)
    mu = orthogonal_mixture().centroids
    fig = matplotlib.figure.Figure(figsize=(7.5, 3.8), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(INITS))
    width = 0.26
    for j, name in enumerate(sweeps.CLASS_NAMES):
        fr = []
        for init in INITS:
            o = sweeps.outcomes(runs[init], mu)
            fr.append(getattr(o, name) / o.n)
        ax.bar(x + (j - 1) * width, fr, width, color=CLASS_COLOURS[j], label=name)
        if name == "between":
            cis = np.array([sweeps.outcomes(runs[i], mu).between_ci for i in INITS])
            ax.errorbar(x, fr, yerr=[np.array(fr) - cis[:, 0], cis[:, 1] - np.array(fr)],
                        fmt="none", ecolor="black", capsize=4, lw=1,
                        label="exact 95% interval (between)")
    ax.set_xticks(x, [f"init = {i!r}" for i in INITS])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of seeds")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7, loc="upper center", ncols=2)
    return fig


def _sweep_figure(runs: dict, label: str, mixtures: dict, refs: dict | None) -> matplotlib.figure.Figure:
    fig = matplotlib.figure.Figure(figsize=(10, 3.8), layout="constrained")
    ax_t, ax_f = fig.subplots(1, 2, width_ratios=(1.4, 1))
    keys = list(runs)
    for k, (value, colour) in enumerate(zip(keys, COLOURS)):
        res = runs[value]
        mu = mixtures[value].centroids
        _band(ax_t, res.steps, worst_alignment(res, mu), colour, f"{label} = {value:g}")
        final = alignment(sweeps.tail_average(res), mu).min(axis=-1)
        ax_f.scatter(k + _jitter(final.size), final, s=12, color=colour, alpha=0.8)
        if refs is not None:
            ax_f.plot([k - 0.3, k + 0.3], [refs[value]] * 2, color="black", lw=1.2,
                      label="large-L minimiser" if k == 0 else None)
    ax_t.set_xlabel("Adam step")
    ax_t.set_ylabel("worst head's |cos| (mean, 10-90% band)")
    ax_t.set_ylim(0, 1.02)
    ax_t.grid(alpha=0.3)
    ax_t.legend(fontsize=7, loc="lower right")
    ax_f.set_xticks(range(len(keys)), [f"{v:g}" for v in keys])
    ax_f.set_xlabel(label)
    ax_f.set_ylabel("final worst |cos| per seed (tail-averaged)")
    ax_f.set_ylim(0, 1.02)
    ax_f.grid(alpha=0.3)
    if refs is not None:
        ax_f.legend(fontsize=7, loc="lower right")
    return fig


@register("training-separability", chapter="training_dynamics")
def training_separability(size: str = "small") -> matplotlib.figure.Figure:
    """Training curves and final |cos| for several r / sigma (r = 2, lam = 1, small init)."""
    runs = sweeps.separability_sweep(size)
    mixtures = {s: orthogonal_mixture(sigma=2.0 / s) for s in runs}
    refs = {s: tilted_cos(1.0, 2.0, 2.0 / s) for s in runs}
    return _sweep_figure(runs, "r / σ", mixtures, refs)


@register("training-dimension", chapter="training_dynamics")
def training_dimension(size: str = "small") -> matplotlib.figure.Figure:
    """Training curves and final |cos| for several d (learning rate lr * sqrt(5 / d))."""
    runs = sweeps.dimension_sweep(size)
    mixtures = {d: orthogonal_mixture(d=d) for d in runs}
    ref = tilted_cos(1.0, 2.0, 0.5)
    return _sweep_figure(runs, "d", mixtures, {d: ref for d in runs})


@register("training-k-heads", chapter="training_dynamics")
def training_k_heads(size: str = "small", K: int = 3) -> matplotlib.figure.Figure:
    """K = 3 orthogonal centroids, 3 heads: worst head's |cos| per seed and the mean."""
    res = sweeps.k_heads(size, K)
    mu = orthogonal_mixture(K=K).centroids
    worst = worst_alignment(res, mu)
    fig = matplotlib.figure.Figure(figsize=(10, 3.8), layout="constrained")
    ax_t, ax_f = fig.subplots(1, 2, width_ratios=(1.4, 1))
    for w in worst:
        ax_t.plot(res.steps, w, color="tab:purple", lw=0.4, alpha=0.4)
    _band(ax_t, res.steps, worst, "tab:purple", f"K = {K}: mean (band: 10-90%)")
    ax_t.set_xlabel("Adam step")
    ax_t.set_ylabel("worst head's |cos|")
    ax_t.set_ylim(0, 1.02)
    ax_t.grid(alpha=0.3)
    ax_t.legend(fontsize=7, loc="lower right")
    final = np.sort(alignment(sweeps.tail_average(res), mu), axis=-1)
    for h in range(K):
        ax_f.scatter(h + _jitter(final.shape[0]), final[:, h], s=12, color=COLOURS[h], alpha=0.8)
    ax_f.set_xticks(range(K), [f"{['worst', 'middle', 'best'][h] if K == 3 else h + 1}" for h in range(K)])
    ax_f.set_xlabel("head (sorted by final |cos|)")
    ax_f.set_ylabel("final |cos| per seed (tail-averaged)")
    ax_f.set_ylim(0, 1.02)
    ax_f.grid(alpha=0.3)
    return fig


@register("training-tilt", chapter="training_dynamics")
def training_tilt(size: str = "small") -> matplotlib.figure.Figure:
    """Measured final |cos| (runs started near the centroids) against lam, and (small-init
    runs ending aligned) against r / sigma, beside the large-L tilted minimiser."""
    lams, cos = sweeps.tilt_vs_lam(size)
    fig = matplotlib.figure.Figure(figsize=(10, 3.8), layout="constrained")
    ax_l, ax_s = fig.subplots(1, 2)
    grid = np.asarray(sweeps.LAMS_TILT)
    theory = np.array([tilted_cos(lam, 2.0, 0.5) for lam in grid])
    ax_l.plot(grid, theory, "k-o", ms=4, lw=1, label="large-L tilted minimiser")
    ax_l.scatter(np.repeat(lams, cos.shape[1]), cos.ravel(), s=12, color="tab:blue", alpha=0.6,
                 label=f"trained, L = {sweeps.budget(size).L} (each head, each seed)")
    ax_l.set_xscale("log", base=2)
    ax_l.set_xlabel("λ")
    ax_l.set_ylabel("|cos| with matched centroid")
    ax_l.set_title("r / σ = 4, init near the centroids", fontsize=9)
    ax_l.grid(alpha=0.3)
    ax_l.legend(fontsize=7, loc="lower right")
    runs = sweeps.separability_sweep(size)
    seps = list(runs)
    for k, s in enumerate(seps):
        mu = orthogonal_mixture(sigma=2.0 / s).centroids
        tail = sweeps.tail_average(runs[s])
        ok = sweeps.classify(tail, mu) == sweeps.ALIGNED
        c = alignment(tail[ok], mu).ravel()
        ax_s.scatter(np.full(c.size, s), c, s=12, color="tab:blue", alpha=0.6,
                     label="trained, small init, aligned runs" if k == 0 else None)
    ax_s.plot(seps, [tilted_cos(1.0, 2.0, 2.0 / s) for s in seps], "k-o", ms=4, lw=1,
              label="large-L tilted minimiser")
    ax_s.set_xlabel("r / σ  (r = 2)")
    ax_s.set_title("λ = 1", fontsize=9)
    ax_s.grid(alpha=0.3)
    ax_s.legend(fontsize=7, loc="lower right")
    return fig


@register("training-explorer", chapter="training_dynamics")
def training_explorer_figure(size: str = "small") -> matplotlib.figure.Figure:
    """The training explorer at its default slider values (same at both sizes)."""
    return draw_training(**DEFAULTS)
