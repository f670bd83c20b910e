"""The second figure of the preface (chapters/preface.md): the book's two words, risk and
distortion, drawn on the preface's prompt.

- ``preface-two-words``: the prompt of ``attention.layer_outputs_demo`` (K = 2, d = 2) through
  the two-head layer with the heads that minimise its large-L risk (left) and through identity
  attention (right). Each token is joined to its output by a grey segment, whose squared
  length averaged over the tokens is the *risk* (a reconstruction error, def-risks), and each
  output to its own centroid by a red one, whose squared length averaged is the *distortion*
  (an oracle error against the centroids, def-distortion) (:func:`two_words_data`): the
  two-head layer has the lower risk, identity attention the lower distortion.
"""

from __future__ import annotations

import matplotlib.figure
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.book.figures.attention import COLOURS, layer_outputs_demo

__all__ = ["plot_two_words", "preface_two_words", "two_words_data"]

SHOWN = 14
"""Tokens drawn per cluster (the first ones of the prompt): the segments of all the tokens would
hide one another; the numbers average over every token."""

RISK_COLOUR, DISTORTION_COLOUR = "0.45", "tab:red"


def two_words_data(demo: dict) -> dict:
    """The risk and the distortion of both layers on the prompt of ``demo`` (the dict of
    ``attention.layer_outputs_demo``).

    Returns:
        A dict with, for ``layer`` in ``("T", "Q")`` (the two-head layer, identity
        attention), ``risk_<layer>`` = mean_l ||x_l - y_l||^2 and ``distortion_<layer>`` =
        mean_l ||y_l - mu_{c(l)}||^2 over the prompt's tokens x_l and outputs y_l; the
        distortion of the raw tokens ``distortion_tokens`` (the risk of the oracle quantizer
        y_l = mu_{c(l)}, the same number); ``L``.

    Raises:
        ValueError: ``demo`` lacks the tokens, labels, centroids or outputs.
    """
    missing = {"X", "labels", "centroids", "T", "Q"} - set(demo)
    if missing:
        raise ValueError(f"demo must hold the prompt and both layers' outputs; missing {sorted(missing)}")
    X = np.asarray(demo["X"], np.float64)
    own = np.asarray(demo["centroids"], np.float64)[np.asarray(demo["labels"])]

    def mean_sq(A, B):
        return float(np.mean(np.sum((np.asarray(A, np.float64) - B) ** 2, axis=-1)))

    out = {"L": int(X.shape[0]), "distortion_tokens": mean_sq(X, own)}
    for layer in ("T", "Q"):
        out[f"risk_{layer}"] = mean_sq(demo[layer], X)
        out[f"distortion_{layer}"] = mean_sq(demo[layer], own)
    return out


@styled
def plot_two_words(demo: dict) -> matplotlib.figure.Figure:
    """Two panels on the prompt of ``demo``: the two-head layer (left) and identity attention
    (right); grey segments from tokens to outputs (the risk), red segments from outputs to
    their centroid (the distortion), for the first ``SHOWN`` tokens of each cluster."""
    nums = two_words_data(demo)
    X, labels, mu = np.asarray(demo["X"]), np.asarray(demo["labels"]), np.asarray(demo["centroids"])
    shown = np.concatenate([np.flatnonzero(labels == c)[:SHOWN] for c in range(len(mu))])
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 4.0), layout="constrained")
    axes = fig.subplots(1, 2, sharex=True, sharey=True)
    for ax, layer, title in ((axes[0], "T", "two-head layer"), (axes[1], "Q", "identity attention")):
        Y = np.asarray(demo[layer])
        x, y, lab = X[shown], Y[shown], labels[shown]
        ax.add_collection(LineCollection(np.stack([x, y], 1), colors=RISK_COLOUR, linewidths=1.0, zorder=1))
        ax.add_collection(LineCollection(np.stack([y, mu[lab]], 1), colors=DISTORTION_COLOUR,
                                         linewidths=1.0, alpha=0.85, zorder=1))
        for c in range(len(mu)):
            sel = lab == c
            ax.scatter(x[sel, 0], x[sel, 1], s=14, facecolors="none", edgecolors=COLOURS[c],
                       linewidths=0.8, zorder=2)
            ax.scatter(y[sel, 0], y[sel, 1], s=14, color=COLOURS[c], zorder=3)
        ax.scatter(mu[:, 0], mu[:, 1], marker="x", s=80, linewidths=2.5, color="black", zorder=5)
        ax.set_title(f"{title}\nrisk {nums[f'risk_{layer}']:.2f}, distortion "
                     f"{nums[f'distortion_{layer}']:.2f}")
        ax.set_aspect("equal", adjustable="box")
        ax.grid(alpha=0.3)
        ax.set_xlabel("$x_1$")
    axes[0].set_ylabel("$x_2$")
    handles = [
        Line2D([], [], ls="", marker="o", mfc="none", mec="0.3", label="tokens"),
        Line2D([], [], ls="", marker="o", color="0.3", label="outputs"),
        Line2D([], [], ls="", marker="x", mew=2.5, color="black", label="centroids"),
        Line2D([], [], color=RISK_COLOUR, lw=1.0, label="token to output: risk"),
        Line2D([], [], color=DISTORTION_COLOUR, lw=1.0, label="output to centroid: distortion"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, handletextpad=0.3,
               columnspacing=1.0)
    return fig


@register("preface-two-words", chapter="preface")
def preface_two_words(size: str = "small") -> matplotlib.figure.Figure:
    """Risk and distortion on the preface's prompt: the two-head layer (the heads of
    ``attention.preface_heads``) has the lower risk, identity attention the lower distortion."""
    return plot_two_words(layer_outputs_demo(size))
