"""Figures of the real-data section of the chapter "Beyond the paper" (chapters/beyond.md,
"Real data: handwritten digits"): the paired benchmark on scikit-learn's digits, from the
committed results file ``attnclust/book/results/digits-benchmark.json`` (``attnclust.book.experiments.digits``).
Label-free methods in colour, oracles in grey (hollow markers), as in ``figures.icq``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnclust.book import benchmark as B
from attnclust.book.experiments import digits as E
from attnclust.book.experiments.icq import pair_cluster_difference
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.book.figures.icq import STYLE

METHODS = (B.KMEANS, B.EM, B.MEANSHIFT, B.IDENTITY, B.IDENTITY_MASKED, B.STACK, B.STACK_MASKED, E.TRAINED,
           B.ORACLE_BEST, B.BAYES)
"""The methods of the digits benchmark, in table order."""


def data() -> dict:
    """The data of ``attnclust/book/results/digits-benchmark.json``."""
    from attnclust.book import results

    return results.load("digits-benchmark").data


def _style(name):
    return STYLE.get(name, ("tab:purple", "o"))


def _interval(m, metric):
    iv = m[metric]
    return iv["estimate"], iv["estimate"] - iv["low"], iv["high"] - iv["estimate"]


def pair_matrix(d: str, method: str, metric: str = "ari_vs_ref") -> np.ndarray:
    """(10, 10) per-pair estimate of ``metric`` for ``method`` at projection dimension ``d``
    (a key of the data's "pairs"), symmetric, NaN on the diagonal."""
    out = np.full((10, 10), np.nan)
    for row in data()["pairs"][d]["per"]:
        a, b = row["classes"]
        val = row["methods"][method][metric]
        out[a, b] = out[b, a] = val["estimate"]
    return out


@register("beyond-digits", chapter="beyond",
          description="Digits, all 45 pairs: pooled ARI differences to k-means per method, and per pair for identity attention")
@styled
def pairs(size: str = "small"):
    """All 45 pairs of digits: per method, the pooled mean ARI minus k-means' on the same
    prompts (cluster bootstrap 95% interval over the pairs, ``pair_cluster_difference``) at
    each projection dimension; and per pair, the paired
    ARI difference of one identity layer (label-free lam) to k-means at the first dimension."""
    dat = data()
    dims = list(dat["pairs"])
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 8.8), gridspec_kw={"height_ratios": [1, 1.15]})
    names = [n for n in METHODS if n in dat["pairs"][dims[0]]["pooled"]["methods"] and n != B.KMEANS]
    offsets = np.linspace(-0.2, 0.2, len(dims))
    for j, d in enumerate(dims):
        ms = dat["pairs"][d]["pooled"]["methods"]
        for i, name in enumerate(names):
            iv = pair_cluster_difference(dat["pairs"][d], name)
            est, lo, hi = iv.estimate, iv.estimate - iv.low, iv.high - iv.estimate
            colour, marker = _style(name)
            oracle = ms[name]["oracle"]
            a.errorbar([est], [i + offsets[j]], xerr=[[lo], [hi]], fmt=marker, color=colour, capsize=2,
                       mfc="white" if (oracle or j == 1) else colour, mec=colour, ms=5,
                       label=f"d = {d}" if i == 0 else None)
    a.axvline(0, color="0.4", lw=0.8)
    a.set_yticks(range(len(names)), [("oracle: " if dat["pairs"][dims[0]]["pooled"]["methods"][n]["oracle"] else "") + n
                                     for n in names])
    a.invert_yaxis()
    a.set_xlabel(f"ARI minus k-means', pooled over {len(dat['pairs'][dims[0]]['per'])} pairs\n"
                 "(paired; 95% CI, bootstrap over pairs)")
    a.legend(title="projection")
    M = pair_matrix(dims[0], B.IDENTITY)
    lim = np.nanmax(np.abs(M))
    im = b.imshow(M, cmap="RdBu", vmin=-lim, vmax=lim)
    b.set_xticks(range(10))
    b.set_yticks(range(10))
    b.set_xlabel("digit")
    b.set_ylabel("digit")
    b.set_title(f"ARI of identity (1 layer) minus k-means', per pair (d = {dims[0]})")
    fig.colorbar(im, ax=b, fraction=0.046)
    return fig


@register("beyond-digits-ten", chapter="beyond",
          description="Digits, the ten classes at once: mean ARI of every method against the projection dimension")
@styled
def ten(size: str = "small"):
    """The ten digits at once (K = 10): mean ARI with its 95% interval against the projection
    dimension, for every method (oracles dashed, hollow)."""
    dat = data()
    dims = sorted(dat["ten"], key=int)
    x = np.array([int(d) for d in dims])
    fig, ax = plt.subplots(figsize=(WIDTH, 5.6))
    for name in METHODS:
        if name not in dat["ten"][dims[0]]["pooled"]["methods"]:
            continue
        vals = np.array([_interval(dat["ten"][d]["pooled"]["methods"][name], "ari") for d in dims])
        colour, marker = _style(name)
        oracle = dat["ten"][dims[0]]["pooled"]["methods"][name]["oracle"]
        ax.errorbar(x, vals[:, 0], yerr=vals[:, 1:].T, fmt=marker, ls="--" if oracle else "-", color=colour,
                    mfc="white" if oracle else colour, capsize=2, ms=4, label=("oracle: " if oracle else "") + name)
    ax.set_xscale("log")
    ax.set_xticks(x, [str(d) for d in x])
    ax.minorticks_off()  # the log axis' minor labels (3 x 10^0, ...) would crowd the dimensions
    ax.set_xlabel("projection dimension $d$ (64: every pixel)")
    ax.set_ylabel("mean ARI (95% CI)")
    fig.legend(loc="outside lower center", ncols=2)
    ax.set_title(f"Ten digits, prompts of L = {dat['ten_L']} test images")
    return fig
