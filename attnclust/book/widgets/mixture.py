"""The mixture explorer (chapter "Gaussian mixtures and clustering").

Sliders for the number of components K, the separation r / sigma, the weight of the first
component, the dimension d and the seed; the picture shows one prompt drawn from
``orthogonal_mixture(K, d, r, sigma)`` projected on the first two centroid directions
(e_1, e_2), the true centroids, and the centres that k-means finds on that prompt
(``attnclust.baselines.kmeans_per_prompt``). The callback :func:`draw_mixture` is a plain
library function: the chapter calls it for the static figure at the default values.
"""

from __future__ import annotations

import jax
import matplotlib.axes
import matplotlib.figure
import numpy as np

from attnclust import _validate as v
from attnclust.baselines import kmeans_per_prompt
from attnclust.book.widgets._registry import register
from attnclust.book.widgets.static import set_alt
from attnclust.metrics import adjusted_rand
from attnclust.setting import DEFAULT

SIGMA = DEFAULT.sigma
"""The noise level of the explorer; r = (r / sigma) * SIGMA."""

L_TOKENS = 200
"""Tokens per prompt in the explorer."""

DEFAULTS = dict(K=DEFAULT.K, r_over_sigma=DEFAULT.r / DEFAULT.sigma, weight=0.5, d=DEFAULT.d, seed=0)
"""The explorer's default slider values (the book's default mixture, r = 2 and sigma = 0.5)."""

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def mixture_weights(K: int, weight: float) -> np.ndarray:
    """Weights with pi_1 = ``weight`` and the rest split equally among the other K - 1
    components (K = 1: the single weight 1)."""
    K = v.positive_int("K", K)
    if K == 1:
        return np.ones(1)
    if not (0.0 < float(weight) < 1.0):
        raise ValueError(f"weight must be in (0, 1), got weight={weight!r}")
    rest = (1.0 - float(weight)) / (K - 1)
    return np.array([float(weight)] + [rest] * (K - 1))


def sample_prompt(
    K: int, r_over_sigma: float, weight: float, d: int, seed: int, L: int = L_TOKENS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One prompt of the explorer: tokens (L, d), labels (L,), centroids (K, d).

    Tokens come from ``orthogonal_mixture(K, d, r = r_over_sigma * SIGMA, SIGMA)`` with
    weights :func:`mixture_weights`. NumPy's generator (seeded by ``seed``) keeps the call
    fast and free of JAX compilation.
    """
    K, d = v.orthogonal_sizes(K, d)
    v.positive_finite("r_over_sigma", r_over_sigma)
    w = mixture_weights(K, weight)
    rng = np.random.default_rng(int(seed))
    labels = rng.choice(K, size=L, p=w)
    centroids = float(r_over_sigma) * SIGMA * np.eye(K, d)
    X = centroids[labels] + SIGMA * rng.standard_normal((L, d))
    return X, labels, centroids


def draw_mixture(
    K: int = DEFAULTS["K"],
    r_over_sigma: float = DEFAULTS["r_over_sigma"],
    weight: float = DEFAULTS["weight"],
    d: int = DEFAULTS["d"],
    seed: int = DEFAULTS["seed"],
    ax: matplotlib.axes.Axes | None = None,
) -> matplotlib.figure.Figure:
    """Draw one prompt of the mixture and its k-means centres; return the figure.

    The prompt (``L_TOKENS`` tokens, :func:`sample_prompt`) is projected on the first two
    centroid directions e_1, e_2 and coloured by true component; crosses mark the true
    centroids, black circles the k-means centres (K clusters, run on all d coordinates).
    The title gives the k-means adjusted Rand index and its quantization distortion
    (mean squared distance of each token's k-means centre to its true centroid) beside
    the noise floor d sigma^2.

    Args:
        K: components, 1 <= K <= d.
        r_over_sigma: separation r / sigma (> 0), with sigma = ``SIGMA``.
        weight: weight of the first component in (0, 1) (ignored when K = 1).
        d: dimension.
        seed: seed of the prompt and of k-means.
        ax: axes to draw into (cleared first); a new figure when None.

    Returns:
        The matplotlib figure (not registered with pyplot, so it is shown once).
    """
    X, labels, centroids = sample_prompt(K, r_over_sigma, weight, d, seed)
    km_labels, centres = kmeans_per_prompt(jax.random.PRNGKey(int(seed)), X[None], K)
    km_labels, centres = km_labels[0], centres[0]
    if ax is None:
        fig = matplotlib.figure.Figure(figsize=(5.2, 4.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
        ax.clear()
    P = X[:, :2] if d >= 2 else np.column_stack([X[:, 0], np.zeros(len(X))])
    for c in range(K):
        sel = labels == c
        ax.scatter(P[sel, 0], P[sel, 1], s=9, alpha=0.6, color=COLOURS[c % len(COLOURS)],
                   label=f"component {c + 1}", gid=f"tokens-{c}")
    mu2 = np.zeros((K, 2))
    mu2[:, : min(2, d)] = centroids[:, : min(2, d)]
    ax.scatter(mu2[:, 0], mu2[:, 1], marker="x", s=90, linewidths=2.5, color="black",
               label="true centroids", gid="centroids")
    c2 = np.zeros((K, 2))
    c2[:, : min(2, d)] = centres[:, : min(2, d)]
    ax.scatter(c2[:, 0], c2[:, 1], marker="o", s=110, facecolors="none", edgecolors="black",
               linewidths=1.8, label="k-means centres", gid="kmeans")
    ari = float(adjusted_rand(labels, km_labels)) if K > 1 else 1.0
    dist = float(np.mean(np.sum((centres[km_labels] - centroids[labels]) ** 2, axis=-1)))
    floor = d * SIGMA**2
    ax.set_title(
        f"$K={K}$, $r/\\sigma={r_over_sigma:g}$, $\\pi_1={mixture_weights(K, weight)[0]:.2f}$, $d={d}$\n"
        f"k-means: ARI {ari:.2f}, distortion {dist:.3f} (noise floor $d\\sigma^2={floor:.2f}$)",
        fontsize=9,
    )
    ax.set_xlabel(r"coordinate on $e_1$ (first centroid direction)")
    ax.set_ylabel(r"coordinate on $e_2$")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=8, loc="upper right", framealpha=0.8)
    ax.grid(alpha=0.3)
    return set_alt(fig, mixture_alt(K, r_over_sigma, weight, d, seed, ari, dist, floor))


def mixture_alt(K, r_over_sigma, weight, d, seed, ari, dist, floor) -> str:
    """The alt text of the figure :func:`draw_mixture` draws: its slider values and what
    k-means found."""
    return (f"K = {K}, r/σ = {r_over_sigma:g}, π₁ = {mixture_weights(K, weight)[0]:.2f}, d = {d}, "
            f"seed {seed}: one prompt of {L_TOKENS} tokens projected on the first two centroid "
            f"directions, coloured by true component, with the true centroids as crosses and "
            f"the k-means centres as circles; k-means ARI {ari:.2f}, distortion {dist:.3f} "
            f"against the noise floor {floor:.2f}.")


STATIC_GRID = dict(K=(DEFAULTS["K"],), r_over_sigma=(1.0, 2.0, 3.0, 4.0, 6.0),
                   weight=(0.1, 0.3, 0.5, 0.7, 0.9), d=(DEFAULTS["d"],), seed=(DEFAULTS["seed"],))
"""The slider values of the explorer in the static HTML book (every combination is drawn
when the book is built: :mod:`attnclust.book.widgets.static`): five separations and five
weights of the first component (25 frames), K, d and the seed at their defaults (the
note under the explorer names them)."""

STATIC_ALT = ("One prompt of the mixture projected on the first two centroid directions, "
              "tokens coloured by their true component, true centroids as crosses and the "
              "k-means centres as black circles; the title gives the k-means adjusted Rand "
              "index and distortion against the noise floor.")
"""The alt text of a frame without its own (each frame has its own: :func:`mixture_alt`)."""


@register("mixture", chapter="mixtures", draw=draw_mixture,
          moves=(("K", (3, 4)), ("r_over_sigma", (2.0, 6.0)), ("weight", (0.3, 0.7)),
                 ("d", (6, 10)), ("seed", (1, 2, 3))))
def mixture_explorer(static: bool = False):
    """The explorer: sliders K, r/sigma, weight of component 1, d, seed, and the figure.

    Returns an ``ipywidgets.VBox``; its ``figure`` attribute is the matplotlib figure that
    every slider move redraws through :func:`draw_mixture`. With ``static``, the box
    together with its precomputed twin over :data:`STATIC_GRID`
    (:func:`attnclust.book.widgets.static.twin`): the live widget in Jupyter, the
    precomputed sliders in the HTML book (the chapter's cell).
    """
    box = _live_explorer()
    if not static:
        return box
    from attnclust.book.widgets.static import twin

    return twin(mixture_explorer, box, STATIC_GRID, DEFAULTS, STATIC_ALT)


def _live_explorer():
    import ipywidgets as w
    from IPython.display import display

    K = w.IntSlider(value=DEFAULTS["K"], min=1, max=5, description="K")
    sep = w.FloatSlider(value=DEFAULTS["r_over_sigma"], min=0.5, max=8.0, step=0.25,
                        description="r / σ")
    weight = w.FloatSlider(value=DEFAULTS["weight"], min=0.05, max=0.95, step=0.05,
                           description="π₁")
    d = w.IntSlider(value=DEFAULTS["d"], min=2, max=20, description="d")
    seed = w.IntSlider(value=DEFAULTS["seed"], min=0, max=20, description="seed")
    out = w.Output()
    fig = matplotlib.figure.Figure(figsize=(5.2, 4.6), layout="constrained")
    ax = fig.add_subplot()

    def on_k(change):  # orthogonal centroids need K <= d
        d.min = max(2, change["new"])

    K.observe(on_k, names="value")

    def update(K, r_over_sigma, weight, d, seed):
        draw_mixture(K, r_over_sigma, weight, d, seed, ax=ax)
        with out:
            out.clear_output(wait=True)
            display(fig)

    controls = w.interactive_output(
        update, dict(K=K, r_over_sigma=sep, weight=weight, d=d, seed=seed)
    )
    box = w.VBox([w.HBox([w.VBox([K, sep, weight]), w.VBox([d, seed])]), out, controls])
    box.figure = fig
    box.sliders = dict(K=K, r_over_sigma=sep, weight=weight, d=d, seed=seed)
    return box


__all__ = ["STATIC_GRID", "STATIC_ALT", "DEFAULTS", "SIGMA", "L_TOKENS", "mixture_weights", "sample_prompt", "draw_mixture",
           "mixture_alt",
           "mixture_explorer"]
