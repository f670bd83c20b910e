"""Figures of the chapter "Performance": drawn from the benchmark's results file, never
measured here (the page must build in seconds).

Both sizes read ``benchmarks/results.json`` (the CPU run of ``make bench``); the GPU run
(``bash benchmarks/gpu.sh OUT``) writes its own ``gpu.json``, which the Performance page
shows when it is committed as ``benchmarks/gpu.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from attnclust.book import repository_root
from attnclust.book.perf import GOALS, validate
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled


def load_results(size: str = "small", path: str | Path | None = None) -> dict:
    """The validated results of the last benchmark run (see ``attnclust.book.perf``):
    ``benchmarks/results.json`` of the book's repository (``attnclust.book.repository_root``)
    unless ``path`` is given."""
    if path is None:
        path = repository_root("the benchmark results (benchmarks/results.json, written by make bench)") / "benchmarks" / "results.json"
    results = json.loads(Path(path).read_text())
    validate(results)
    return results


@register("perf-identity-scaling", chapter="performance")
@styled
def identity_scaling(size: str = "small", results: dict | None = None):
    """Identity attention at d = 32: time (top) and peak resident memory (bottom) against the
    prompt length L, blocked and unblocked, with scikit-learn's KMeans time on the same
    tokens and the goals at L = 100,000 (dotted)."""
    results = load_results(size) if results is None else results
    rows = [r for r in results.get("identity", []) if "blocked_s" in r]
    fig, (ax_t, ax_m) = plt.subplots(2, 1, figsize=(WIDTH, 6.8), layout="constrained")
    if not rows:
        for ax in (ax_t, ax_m):
            ax.text(0.5, 0.5, "no identity-attention measurements", ha="center", transform=ax.transAxes)
        return fig
    Ls = [r["L"] for r in rows]
    full = [r for r in rows if "full_s" in r]
    ax_t.loglog(Ls, [r["blocked_s"] for r in rows], "o-", label=f"blocked (B={rows[0]['block']})")
    if full:
        ax_t.loglog([r["L"] for r in full], [r["full_s"] for r in full], "s--", label="unblocked")
    from attnclust.baselines import KMEANS_N_INIT

    goal_L = max(Ls)  # the goals are at the longest prompt measured (identity_L100k_*)
    ax_t.loglog(Ls, [r["kmeans_s"] for r in rows], "^:", color="tab:green", label=f"KMeans ({KMEANS_N_INIT} restarts)")
    ax_t.axhline(GOALS["identity_L100k_time"]["target"], color="0.5", ls=":", lw=1)
    ax_t.axvline(goal_L, color="0.5", ls=":", lw=1)
    ax_t.set_xlabel("prompt length L")
    ax_t.set_ylabel("time (s)")
    ax_t.set_title("time of one evaluation")
    ax_t.grid(alpha=0.3, which="both")
    ax_t.legend()
    ax_m.loglog(Ls, [r["blocked_rss_mb"] for r in rows], "o-", label="blocked: peak RSS")
    if full:
        ax_m.loglog([r["L"] for r in full], [r["full_rss_mb"] for r in full], "s--", label="unblocked: peak RSS")
    ax_m.loglog(Ls, [r["base_rss_mb"] for r in rows], "x:", color="0.4", label="process before the evaluation")
    ax_m.axhline(GOALS["identity_L100k_rss"]["target"], color="0.5", ls=":", lw=1)
    ax_m.axvline(goal_L, color="0.5", ls=":", lw=1)
    ax_m.set_xlabel("prompt length L")
    ax_m.set_ylabel("peak resident memory (MB)")
    ax_m.set_title("memory of the process")
    ax_m.grid(alpha=0.3, which="both")
    ax_m.legend()
    return fig


@register("perf-roofline", chapter="performance")
@styled
def roofline_fractions(size: str = "small", results: dict | None = None):
    """Fraction of the exp roofline (the exps a kernel needs by design at the exp throughput
    measured in the same run) reached by the training step at each L (the library, its
    previous kernel, the C++ FFI kernels of ``benchmarks/kernel`` when the run timed them,
    PyTorch eager and torch.compile; bars at the median, whiskers from the
    slowest to the fastest repeat), and by identity attention at each L (bottom)."""
    import numpy as np

    results = load_results(size) if results is None else results
    steps = results.get("steps", [])
    peers = results.get("peers") or {}
    ids = [r for r in results.get("identity", []) if "blocked_frac_exp_roofline" in r]
    fig, (ax_s, ax_i) = plt.subplots(2, 1, figsize=(WIDTH, 7.4), layout="constrained",
                                     gridspec_kw={"height_ratios": [1.4, 1]})
    if not steps:
        ax_s.text(0.5, 0.5, "no training-step measurements", ha="center", transform=ax_s.transAxes)
    else:
        Ls = [r["L"] for r in steps]
        roof = {r["L"]: r["library"]["roofline_s"] for r in steps}

        def frac(t):  # (median, worst, best) of one timing
            return (roof[t["L"]] / t["median_s"], roof[t["L"]] / t["max_s"], roof[t["L"]] / t["min_s"])

        series = [("attnclust", [frac({"L": r["L"], **r["library"]}) for r in steps]),
                  ("previous kernel", [frac({"L": r["L"], **r["previous"]}) for r in steps])]
        if all("kernel" in r for r in steps):
            series.append(("C++ FFI kernels (benchmark only)", [frac({"L": r["L"], **r["kernel"]}) for r in steps]))
        for kind, label in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
            by_L = {r["L"]: r for r in peers.get(kind, [])}
            if all(L in by_L for L in Ls):
                series.append((label, [frac(by_L[L]) for L in Ls]))
        x = np.arange(len(Ls))
        w = 0.8 / len(series)
        for i, (label, vals) in enumerate(series):
            med = np.array([v[0] for v in vals])
            err = np.array([[v[0] - v[1] for v in vals], [v[2] - v[0] for v in vals]])
            ax_s.bar(x + (i - (len(series) - 1) / 2) * w, med, w, yerr=err, capsize=2, label=label)
        goal = [g for k, g in GOALS.items() if k.startswith("step_frac_roofline")]
        if goal:
            at = ", ".join(k.rsplit("_L", 1)[1] for k in GOALS if k.startswith("step_frac_roofline"))
            ax_s.axhline(goal[0]["target"], color="0.4", ls=":", lw=1, label=f"goal at L = {at}")
        ax_s.set_xticks(x, [f"L = {L}" for L in Ls])
        ax_s.set_ylabel("fraction of the exp roofline")
        ax_s.set_ylim(0, 1)
        ax_s.set_title("training step (32 prompts, 2 heads)")
        ax_s.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=2)
        ax_s.grid(alpha=0.3, axis="y")
    if not ids:
        ax_i.text(0.5, 0.5, "no identity-attention measurements", ha="center", transform=ax_i.transAxes)
    else:
        Ls = [r["L"] for r in ids]
        ax_i.semilogx(Ls, [r["blocked_frac_exp_roofline"] for r in ids], "o-", label="exp roofline")
        ax_i.semilogx(Ls, [r["blocked_frac_roofline"] for r in ids], "s--", label="exp + matmul roofline")
        ax_i.set_xlabel("prompt length L")
        ax_i.set_ylim(0, 1)
        ax_i.set_title("identity attention (d = 32)")
        ax_i.legend()
        ax_i.grid(alpha=0.3, which="both")
    return fig

