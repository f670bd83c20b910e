"""Figures of the chapter "Training dynamics" (chapters/training_dynamics.md; the stationary
points training meets are in chapters/population_risk.md: prop-gradient, prop-aligned).

The figures only draw: the runs and numbers come from ``attnclust.book.experiments.training``
(trained at ``size`` "small", the book's CPU budget, or "full", paper scale for an
accelerator) and, for the longer budget and the finite-L landscape, from the committed
results files read by ``attnclust.book.experiments.training.stored_long`` and
``attnclust.book.experiments.landscape.stored``:

- ``training-inits``: worst head's ``|cos|`` against the step, mean and 10-90% band over
  seeds, for the four initialisation regimes;
- ``training-outcomes``: how often the runs end aligned, between the centroids, or
  elsewhere, per regime, with exact binomial intervals, at the book's budget and at the
  committed longer one;
- ``training-landscape``: the smallest Hessian eigenvalue of R_L against L at the split
  point (K = 2) and the symmetric point (K = 3), with R_inf as the limit;
- ``training-stall-rate``: the close start's stall rate against L with exact binomial
  intervals (committed runs, ``experiments.stall_rate``), beside the length where the split
  point turns from a local minimum of R_L into a saddle;
- ``training-separability``: the same curves and final ``|cos|`` for several r / sigma;
- ``training-dimension``: for several d (learning rate scaled as 1/sqrt(d));
- ``training-k-heads``: K = 3 centroids with 3 heads, against the two large-L points;
- ``training-tilt``: the measured final ``|cos|`` (committed runs, ``experiments.tilt_seeds``)
  against lam, its gap to the minimiser with intervals, and against r / sigma, beside the
  large-L tilted minimiser of ``attnclust.symbolic.tilted_minimiser``.
"""

from __future__ import annotations

import matplotlib.figure
import numpy as np

from attnclust.book import sweeps
from attnclust.book.experiments import landscape as ls
from attnclust.book.experiments import training as tr
from attnclust.train import INITS
from attnclust.setting import DEFAULT
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
CLASS_COLOURS = ("tab:green", "tab:red", "tab:grey")


def _band(ax, steps, values, colour, label):
    mean, lo, hi = sweeps.mean_band(values)
    ax.fill_between(steps, lo, hi, color=colour, alpha=0.2, linewidth=0)
    ax.plot(steps, mean, color=colour, label=label)


def _jitter(n: int, width: float = 0.15) -> np.ndarray:
    return np.linspace(-width, width, n) if n > 1 else np.zeros(1)


@register("training-inits", chapter="training_dynamics")
@styled
def training_inits(size: str = "small") -> matplotlib.figure.Figure:
    """Worst head's ``|cos|`` against the step for the four initialisations (mean, 10-90%
    band, thin lines: single seeds)."""
    runs = tr.init_regimes(size)
    ref = tr.tilted_cos(DEFAULT.lam, DEFAULT.r, DEFAULT.sigma)
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 5.6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True, sharey=True).ravel()
    for ax, init, colour in zip(axes, INITS, COLOURS):
        r = runs[init]
        for w in r.worst:
            ax.plot(r.steps, w, color=colour, lw=0.4, alpha=0.35)
        _band(ax, r.steps, r.worst, colour, "mean over seeds (band: 10-90%)")
        ax.axhline(ref, color="black", ls="--", lw=0.8, label=f"large-L minimiser {ref:.3f}")
        ax.axhline(1 / np.sqrt(2), color="grey", ls=":", lw=0.8, label=r"$1/\sqrt{2}$ (between)")
        ax.set_title(f"init = {init!r} ({r.seeds} seeds)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[2:]:
        ax.set_xlabel("Adam step")
    for ax in axes[::2]:
        ax.set_ylabel("worst head's |cos|")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


def _outcome_bars(ax, runs: dict, title: str) -> None:
    x = np.arange(len(INITS))
    width = 0.26
    for j, name in enumerate(tr.CLASS_NAMES):
        rates = [runs[i].rate(name) for i in INITS]
        fr = np.array([r.estimate for r in rates])
        ax.bar(x + (j - 1) * width, fr, width, color=CLASS_COLOURS[j], label=name)
        lo, hi = np.array([r.low for r in rates]), np.array([r.high for r in rates])
        ax.errorbar(x + (j - 1) * width, fr, yerr=[fr - lo, hi - fr], fmt="none", ecolor="black",
                    capsize=3, lw=0.8, label="exact 95% interval" if j == 0 else None)
    ax.set_xticks(x, [f"{i!r}" for i in INITS])
    ax.set_xlabel("initialisation")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")


def _budget_title(runs: dict) -> str:
    s = next(iter(runs.values())).setting
    return f"{s['steps']} steps, {s['seeds']} seeds"


@register("training-outcomes", chapter="training_dynamics")
@styled
def training_outcomes(size: str = "small") -> matplotlib.figure.Figure:
    """Fraction of seeds ending aligned / between the centroids / elsewhere, per regime,
    with exact 95% intervals: at ``size`` and at the committed longer budget."""
    panels = [tr.init_regimes(size)]
    try:
        panels.append(tr.stored_long().inits)
    except FileNotFoundError:
        pass
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    for ax, runs in zip(axes, panels):
        _outcome_bars(ax, runs, _budget_title(runs))
    axes[0].set_ylabel("fraction of seeds")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=4,
               columnspacing=1.0, handletextpad=0.4)
    return fig


@register("training-landscape", chapter="training_dynamics")
@styled
def training_landscape(size: str = "small") -> matplotlib.figure.Figure:
    """The smallest Hessian eigenvalue of R_L against L (mean and 95% interval over
    independent samples of prompts) at the split point (K = 2) and the symmetric point
    (K = 3), with the value for R_inf at 1/L = 0 (from the committed results file; the same
    at both sizes)."""
    data = ls.stored()
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, land, title in zip(axes, (data.split, data.symmetric),
                               ("split point, K = 2", "symmetric point, K = 3")):
        x = 1.0 / np.asarray(land.Ls, float)
        ivs = [land.interval(L) for L in land.Ls]
        est = np.array([iv.estimate for iv in ivs])
        ax.errorbar(x, est, yerr=[est - [iv.low for iv in ivs], [iv.high for iv in ivs] - est],
                    fmt="o-", color="tab:blue", capsize=3, ms=4,
                    label="$R_L$ (95% interval)")
        ax.plot([0], [land.limit[0]], "s", color="black", ms=6, label=r"$R_\infty$ (quadrature)")
        ax.plot([0, x.min()], [land.limit[0], est[-1]], ":", color="black", lw=0.8)
        ax.axhline(0, color="grey", lw=0.8)
        top = ax.secondary_xaxis("top", functions=(lambda t: 1 / np.maximum(t, 1e-9), lambda L: 1 / np.maximum(L, 1e-9)))
        top.set_xticks([L for L in land.Ls if L in (25, 50, 100, 400)])  # 200 would crowd 100 and 400
        top.set_xlabel("L")
        ax.set_xlabel("1 / L")
        ax.set_title(f"{title}\n{land.samples} samples per L")
        ax.set_xlim(-0.002, x.max() * 1.08)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("smallest Hessian eigenvalue")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


@register("training-stall-rate", chapter="training_dynamics")
@styled
def training_stall_rate(size: str = "small") -> matplotlib.figure.Figure:
    """How often the close start stalls (ends between the centroids) against the prompt
    length L at the small budget, with the exact binomial 95% interval of each rate (the
    committed runs of ``experiments.stall_rate``, the same at both sizes), and the runs that
    end elsewhere; beside them the long budget's stall rate at L = 50 and at the longer length
    of ``experiments.stall_length`` (committed), and the length where the split point's
    smallest Hessian eigenvalue of R_L crosses zero (``landscape``: the fit's crossing with
    its bootstrap interval)."""
    from attnclust.book.experiments import stall_length, stall_rate

    sr, _ = stall_rate.stored()
    cross = ls.stored().split.crossing_interval()
    at_L, _ = stall_length.stored()
    long = {sweeps.budget("long").L: tr.stored_long().inits["close"], at_L.L: at_L.runs["long"]}
    Ls = np.asarray(sr.Ls, float)
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 4.2), layout="constrained")
    ax = fig.subplots()
    top = 0.0

    def bars(x, ivs, **kw):
        est = np.array([iv.estimate for iv in ivs])
        lo, hi = np.array([iv.low for iv in ivs]), np.array([iv.high for iv in ivs])
        ax.errorbar(x, est, yerr=[est - lo, hi - est], ms=5, capsize=3, **kw)
        return float(hi.max())

    small = sr.setting["steps"]
    top = max(top, bars(Ls, [sr.rate(L) for L in sr.Ls], fmt="o-", color="tab:red", lw=1,
                        label=f"stalled, {small} steps, {sr.seeds} new seeds per L"))
    top = max(top, bars(Ls * 1.03, [sr.rate(L, "other") for L in sr.Ls], fmt="s:", color="tab:grey", lw=1,
                        label=f"neither aligned nor between, {small} steps"))
    runs_long = list(long.values())
    top = max(top, bars(np.array(list(long), float) * 0.97, [r.rate("between") for r in runs_long], fmt="D",
                        color="black", mfc="white", elinewidth=1,
                        label=f"stalled, {runs_long[0].setting['steps']} steps, "
                              f"{runs_long[0].seeds} seeds (the same starts at both L)"))
    ax.axvspan(cross.low, cross.high, color="tab:blue", alpha=0.15, lw=0)
    ax.axvline(cross.estimate, color="tab:blue", ls="--", lw=1,
               label=f"split point: minimum of $R_L$ (left), saddle (right)")
    ax.set_xscale("log")
    ax.set_xticks(Ls, [f"{L:g}" for L in Ls])
    ax.minorticks_off()
    ax.set_xlabel("prompt length L")
    ax.set_ylabel("fraction of close starts")
    ax.set_ylim(-0.015, 1.08 * top)  # a rate of 0 stays visible
    ax.set_title("close start: exact 95% intervals")
    ax.grid(alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1)
    return fig

def _sweep_figure(runs: dict, label: str, refs: dict) -> matplotlib.figure.Figure:
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.6), layout="constrained")
    ax_t, ax_f = fig.subplots(1, 2, width_ratios=(1.3, 1))
    keys = list(runs)
    for k, (value, colour) in enumerate(zip(keys, COLOURS)):
        r = runs[value]
        _band(ax_t, r.steps, r.worst, colour, f"{label} = {value:g}")
        final = r.final_worst()
        ax_f.scatter(k + _jitter(final.size), final, s=12, color=colour, alpha=0.8)
        ax_f.plot([k - 0.3, k + 0.3], [refs[value]] * 2, color="black", lw=1.2,
                  label="large-L minimiser" if k == 0 else None)
    ax_t.set_xlabel("Adam step")
    ax_t.set_ylabel("worst head's |cos|")
    ax_t.set_ylim(0, 1.02)
    ax_t.grid(alpha=0.3)
    ax_t.legend(loc="lower right")
    ax_f.set_xticks(range(len(keys)), [f"{v:g}" for v in keys])
    ax_f.set_xlabel(label)
    ax_f.set_ylabel("final worst |cos| per seed")
    ax_f.set_ylim(0, 1.02)
    ax_f.grid(alpha=0.3)
    ax_f.legend(loc="lower right")
    return fig


@register("training-separability", chapter="training_dynamics")
@styled
def training_separability(size: str = "small") -> matplotlib.figure.Figure:
    """Training curves and final ``|cos|`` for several r / sigma (r = 2, lam = 1, small init)."""
    runs = tr.separability(size)
    return _sweep_figure(runs, "r / σ", {s: tr.tilted_cos(DEFAULT.lam, DEFAULT.r, DEFAULT.r / s) for s in runs})


@register("training-dimension", chapter="training_dynamics")
@styled
def training_dimension(size: str = "small") -> matplotlib.figure.Figure:
    """Training curves and final ``|cos|`` for several d (learning rate lr * sqrt(5 / d))."""
    runs = tr.dimension(size)
    ref = tr.tilted_cos(DEFAULT.lam, DEFAULT.r, DEFAULT.sigma)
    return _sweep_figure(runs, "d", {d: ref for d in runs})


@register("training-k-heads", chapter="training_dynamics")
@styled
def training_k_heads(size: str = "small") -> matplotlib.figure.Figure:
    """K = 3 orthogonal centroids, 3 heads: the worst head's ``|cos|`` per seed and the mean at
    ``size``; the final ``|cos|`` per seed, at ``size`` and at the committed longer budget,
    beside the symmetric point and the rotated minimiser of R_inf."""
    r = tr.k_heads(size)
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.8), layout="constrained")
    ax_t, ax_f = fig.subplots(1, 2, width_ratios=(1.2, 1))
    for w in r.worst:
        ax_t.plot(r.steps, w, color="tab:purple", lw=0.4, alpha=0.4)
    _band(ax_t, r.steps, r.worst, "tab:purple", "mean (band: 10-90%)")
    ax_t.set_xlabel("Adam step")
    ax_t.set_ylabel("worst head's |cos|")
    ax_t.set_ylim(0, 1.02)
    ax_t.grid(alpha=0.3)
    ax_t.legend(loc="lower right")
    groups = [(f"{r.setting['steps']} steps", r)]
    try:
        long = tr.stored_long().k3
        groups.append((f"{long.setting['steps']} steps", long))
    except FileNotFoundError:
        pass
    for k, (label, g) in enumerate(groups):
        w = g.final_worst()
        ax_f.scatter(k + _jitter(w.size, 0.25), w, s=10, color=COLOURS[k], alpha=0.7)
    try:
        k3 = ls.stored().k3
        for key, ls_, name in (("cos_symmetric", "--", "symmetric"), ("cos_rotated", ":", "rotated")):
            ax_f.axhline(min(k3[key]), color="black", ls=ls_, lw=1, label=f"R_inf {name}")
        ax_f.legend(loc="lower right")
    except FileNotFoundError:
        pass
    ax_f.set_xticks(range(len(groups)), [g[0] for g in groups])
    ax_f.set_ylabel("final worst |cos| per seed")
    lows = np.concatenate([g.final_worst() for _, g in groups])
    # every seed visible: the axis starts below the lowest one (at 0.9 or below)
    ax_f.set_ylim(max(0.0, min(0.9, float(np.nanmin(lows))) - 0.02), 1.005)
    ax_f.grid(alpha=0.3)
    return fig


@register("training-tilt", chapter="training_dynamics")
@styled
def training_tilt(size: str = "small") -> matplotlib.figure.Figure:
    """The measured tilt beside the large-L tilted minimiser: top, the final ``|cos|`` (mean
    of the two heads) of every run of the committed tilt experiment
    (``experiments.tilt_seeds``, the same seeds at every lam, runs started near the centroids)
    against lam; middle, its mean over seeds less the minimiser's, with the 95% t interval;
    bottom, small-start runs ending aligned against r / sigma (``size``'s budget)."""
    from attnclust.book.experiments import tilt_seeds

    t, _ = tilt_seeds.stored()
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 9.6), layout="constrained")
    ax_l, ax_g, ax_s = fig.subplots(3, 1)
    lams = np.asarray(t.lams)
    ax_l.plot(lams, t.theory, "k-o", ms=4, lw=1, label="large-L tilted minimiser")
    ax_l.scatter(np.repeat(lams, t.seeds), t.per_seed().ravel(), s=10, color="tab:blue", alpha=0.5,
                 label=f"trained, L = {t.setting['L']} ({t.seeds} seeds per λ)")
    ax_l.set_ylabel("|cos| (mean of the heads)")
    ax_l.set_title("r / σ = 4, init near the centroids")
    ax_l.legend(loc="lower right")
    gaps = [t.gap(i) for i in range(len(lams))]
    est = np.array([g.estimate for g in gaps])
    ax_g.errorbar(lams, est, yerr=[est - [g.low for g in gaps], [g.high for g in gaps] - est],
                  fmt="o", color="tab:blue", ms=4, capsize=3, label="mean over seeds, 95% t interval")
    ax_g.axhline(0.0, color="k", lw=1, label="large-L tilted minimiser")
    ax_g.set_ylabel("trained |cos| − minimiser's")
    ax_g.set_title(f"L = {t.setting['L']} against L → ∞")
    ax_g.legend()
    for ax in (ax_l, ax_g):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("λ")
        ax.grid(alpha=0.3)
    runs = tr.separability(size)
    seps = list(runs)
    for k, s in enumerate(seps):
        r = runs[s]
        c = r.cos[r.codes == sweeps.ALIGNED].ravel()
        ax_s.scatter(np.full(c.size, s), c, s=12, color="tab:blue", alpha=0.6,
                     label="trained, small init, aligned runs" if k == 0 else None)
    ax_s.plot(seps, [tr.tilted_cos(DEFAULT.lam, DEFAULT.r, DEFAULT.r / s) for s in seps], "k-o", ms=4, lw=1,
              label="large-L tilted minimiser")
    ax_s.set_xlabel("r / σ  (r = 2)")
    ax_s.set_ylabel("|cos|")
    ax_s.set_title("λ = 1")
    ax_s.grid(alpha=0.3)
    ax_s.legend(loc="lower right")
    return fig
