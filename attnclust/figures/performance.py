"""Figures of the chapter "Performance": drawn from the benchmark's results file, never
measured here (the page must build in seconds).

``size="small"`` reads ``benchmarks/results.json`` (the CPU run of ``make bench``);
``size="full"`` reads ``benchmarks/results_gpu.json`` (``benchmarks/gpu.sh``) when it
exists, else the CPU file.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from ..perf import validate
from ._registry import register

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load_results(size: str = "small", path: str | Path | None = None) -> dict:
    """The validated results of the last benchmark run (see ``attnclust.perf``)."""
    if path is None:
        gpu = _BENCH / "results_gpu.json"
        path = gpu if size == "full" and gpu.is_file() else _BENCH / "results.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"the benchmark results {path} are not here: the performance figures read "
                "benchmarks/results.json of a repository checkout (written by `make bench`); "
                "run from a checkout or pass path=")
    results = json.loads(Path(path).read_text())
    validate(results)
    return results


@register("perf-identity-scaling", chapter="performance")
def identity_scaling(size: str = "small", results: dict | None = None):
    """Identity attention at d = 32: time (left) and peak resident memory (right) against the
    prompt length L, blocked and unblocked, with scikit-learn's KMeans time on the same
    tokens and the issue's goals at L = 100,000 (dotted)."""
    results = load_results(size) if results is None else results
    rows = [r for r in results.get("identity", []) if "blocked_s" in r]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    if not rows:
        for ax in (ax_t, ax_m):
            ax.text(0.5, 0.5, "no identity-attention measurements", ha="center", transform=ax.transAxes)
        return fig
    Ls = [r["L"] for r in rows]
    full = [r for r in rows if "full_s" in r]
    ax_t.loglog(Ls, [r["blocked_s"] for r in rows], "o-", label=f"blocked (B={rows[0]['block']})")
    if full:
        ax_t.loglog([r["L"] for r in full], [r["full_s"] for r in full], "s--", label="unblocked")
    ax_t.loglog(Ls, [r["kmeans_s"] for r in rows], "^:", color="tab:green", label="KMeans (10 restarts)")
    ax_t.axhline(60.0, color="0.5", ls=":", lw=1)
    ax_t.axvline(100000, color="0.5", ls=":", lw=1)
    ax_t.set_xlabel("prompt length L")
    ax_t.set_ylabel("time (s)")
    ax_t.set_title("time of one evaluation", fontsize=10)
    ax_t.grid(alpha=0.3, which="both")
    ax_t.legend(fontsize=8)
    ax_m.loglog(Ls, [r["blocked_rss_mb"] for r in rows], "o-", label="blocked: peak RSS")
    if full:
        ax_m.loglog([r["L"] for r in full], [r["full_rss_mb"] for r in full], "s--", label="unblocked: peak RSS")
    ax_m.loglog(Ls, [r["base_rss_mb"] for r in rows], "x:", color="0.4", label="process before the evaluation")
    ax_m.axhline(2048.0, color="0.5", ls=":", lw=1)
    ax_m.axvline(100000, color="0.5", ls=":", lw=1)
    ax_m.set_xlabel("prompt length L")
    ax_m.set_ylabel("peak resident memory (MB)")
    ax_m.set_title("memory of the process", fontsize=10)
    ax_m.grid(alpha=0.3, which="both")
    ax_m.legend(fontsize=8)
    return fig
