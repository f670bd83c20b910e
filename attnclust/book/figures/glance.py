"""The figure of the page "The two results at a glance" (chapters/at_a_glance.md): the book's
two results on two-dimensional prompts, side by side.

- ``glance-results``: left, a prompt of the default mixture in the plane through the two-head
  layer with the heads that minimise its large-L risk (``attention.layer_outputs_demo``): each
  output stays close to its own token, and the heads lie close to the centroids; right, a
  prompt with centroids of its own through identity attention at the inverse temperature chosen from
  the prompt alone (:func:`in_context_demo`): each output moves towards its own cluster's
  centroid, and k-means' centres lie closer to the centroids still.
"""

from __future__ import annotations

import jax
import matplotlib.figure
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from attnclust.baselines import kmeans_per_prompt
from attnclust.metrics import distortion
from attnclust.mixture import sample_in_context
from attnclust.setting import DEFAULT
from attnclust.temperature import sure_lambda
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.book.figures.attention import COLOURS, layer_outputs_demo

__all__ = ["glance_results", "in_context_demo", "plot_glance", "two_head_demo"]


def two_head_demo(size: str = "small") -> dict:
    """The left panel: ``attention.layer_outputs_demo(size)`` (one prompt of the default
    mixture in the plane, K = 2, d = 2, its tokens ``X``, labels, ``centroids``, the heads
    ``theta`` that minimise the large-L risk, their outputs ``T``, the heads' ``cos``), with
    ``risk``, the prompt's reconstruction error mean ||x_l - T(X)_l||^2 (the risk of
    chapters/population_risk.md on this prompt), and ``oracle``, that of the oracle quantizer
    mean ||x_l - mu_{c(l)}||^2, which sends every token to its own centroid."""
    demo = layer_outputs_demo(size)
    own = demo["centroids"][demo["labels"]]
    return dict(demo, risk=float(distortion(demo["T"], demo["X"])),
                oracle=float(distortion(own, demo["X"])))


def in_context_demo(L: int = 100, seed: int = 29) -> dict:
    """The right panel: one prompt of ``L`` tokens in the plane whose two orthogonal centroids
    of norm ``DEFAULT.r`` are drawn for it alone (``sample_in_context``, sigma =
    ``DEFAULT.sigma``), through one identity layer at the inverse temperature the prompt itself gives
    (``temperature.sure_lambda``, as the benchmark of chapters/icq_experiments.md chooses it),
    and k-means (``baselines.kmeans_per_prompt``) on the same tokens.

    Returns:
        A dict with ``X`` (L, 2) tokens, ``labels`` (L,), ``centroids`` (2, 2) the prompt's
        own centroids, ``Q`` (L, 2) the layer's outputs, ``lam`` the inverse temperature chosen,
        ``kmeans`` (2, 2) k-means' centres, and the distortions (mean squared distance to
        each token's own centroid, def-distortion) of the tokens (``D_tokens``), of the
        layer's outputs (``D_layer``) and of k-means (each token replaced by the centre of
        its k-means cluster, ``D_kmeans``).
    """
    k_sample, k_means = jax.random.split(jax.random.PRNGKey(seed))
    X, labels, centroids = sample_in_context(k_sample, 2, 2, DEFAULT.r, DEFAULT.sigma, 1, L)
    choice = sure_lambda(X, 2)
    km_labels, km_centres = kmeans_per_prompt(k_means, X, 2)
    X, labels, mu = np.asarray(X[0]), np.asarray(labels[0]), np.asarray(centroids[0])
    Q, centres = np.asarray(choice.outputs[0]), np.asarray(km_centres[0])
    own = mu[labels]
    return dict(
        X=X, labels=labels, centroids=mu, Q=Q, lam=float(choice.lam[0]), kmeans=centres,
        D_tokens=float(distortion(X, own)), D_layer=float(distortion(Q, own)),
        D_kmeans=float(distortion(centres[np.asarray(km_labels[0])], own)),
    )


def _moves(ax, X: np.ndarray, P: np.ndarray, labels: np.ndarray) -> None:
    """Tokens (hollow), a grey segment from each token to its output, outputs (filled)."""
    ax.add_collection(LineCollection(np.stack([X, P], axis=1), colors="0.6", linewidths=0.6,
                                     zorder=1))
    for c in range(2):
        sel = labels == c
        ax.scatter(X[sel, 0], X[sel, 1], s=12, facecolors="none", edgecolors=COLOURS[c],
                   linewidths=0.7, alpha=0.7, zorder=2)
        ax.scatter(P[sel, 0], P[sel, 1], s=12, color=COLOURS[c], zorder=3)


@styled
def plot_glance(fixed: dict, in_context: dict) -> matplotlib.figure.Figure:
    """Two panels: :func:`two_head_demo` (left) and :func:`in_context_demo` (right)."""
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    _moves(left, fixed["X"], fixed["T"], fixed["labels"])
    t = np.linspace(-4, 4, 2)
    for h, theta in enumerate(fixed["theta"]):
        u = theta / np.linalg.norm(theta)
        left.plot(t * u[0], t * u[1], color="black", lw=0.8, ls="--", zorder=0)
        left.annotate("", xy=theta, xytext=(0, 0), zorder=6,
                      arrowprops=dict(arrowstyle="-|>", color="black", lw=1.5))
    _moves(right, in_context["X"], in_context["Q"], in_context["labels"])
    right.scatter(*in_context["kmeans"].T, marker="D", s=110, facecolors="none",
                  edgecolors="black", linewidths=1.5, zorder=6)
    # a square window of one size around each prompt, so that both panels share one scale
    half = 0.2 + max(np.max(d["X"].max(0) - d["X"].min(0)) / 2 for d in (fixed, in_context))
    for ax, demo, title in ((left, fixed, "two-head layer, heads that\nminimise the risk"),
                            (right, in_context, "identity attention on a prompt\n"
                                                "with its own centroids")):
        mu = demo["centroids"]
        ax.scatter(mu[:, 0], mu[:, 1], marker="x", s=80, linewidths=2.5, color="black", zorder=5)
        ax.set_title(title)
        middle = (demo["X"].max(0) + demo["X"].min(0)) / 2
        ax.set_xlim(middle[0] - half, middle[0] + half)
        ax.set_ylim(middle[1] - half, middle[1] + half)
        ax.set_aspect("equal", adjustable="box")
        ax.grid(alpha=0.3)
        ax.set_xlabel("$x_1$")
    left.set_ylabel("$x_2$")
    handles = [
        Line2D([], [], ls="", marker="o", mfc="none", mec="0.3", label="tokens"),
        Line2D([], [], ls="", marker="o", color="0.3", label="outputs"),
        Line2D([], [], ls="", marker="x", mew=2.5, color="black", label="centroids"),
        Line2D([], [], color="black", lw=0.8, ls="--", label="heads' lines"),
        Line2D([], [], ls="", marker="D", ms=9, mfc="none", mec="black", mew=1.5,
               label="k-means' centres"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, handletextpad=0.3,
               columnspacing=1.0)
    return fig


@register("glance-results", chapter="at_a_glance")
def glance_results(size: str = "small") -> matplotlib.figure.Figure:
    """Both results in the plane: the two-head layer's heads and outputs, identity attention's
    outputs on a prompt with its own centroids, and k-means' centres."""
    return plot_glance(two_head_demo(size), in_context_demo())
