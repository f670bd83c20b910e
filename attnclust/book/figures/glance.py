"""The figures of the page "The two results at a glance" (chapters/at_a_glance.md): the book's
two results on two-dimensional prompts, side by side, and the second one along the tilt.

- ``glance-results``: left, a prompt of the default mixture in the plane through the two-head
  layer with the heads that minimise its large-L risk (``attention.layer_outputs_demo``): each
  output stays close to its own token, and the heads lie close to the centroids; right, a
  prompt with centroids of its own through identity attention at the inverse temperature
  chosen from the prompt alone (:func:`in_context_demo`): each output moves towards its own cluster's
  centroid, and k-means' centres lie closer to the centroids still.
- ``glance-tilt``: the second result in one curve (:func:`tilt_profile_data`): the large-L
  risk of the default mixture against the angle by which each head of the symmetric family
  theta_1 = rho (cos a e_1 + sin a e_2), theta_2 = rho (sin a e_1 + cos a e_2) turns from its
  own centroid, minimised over the length rho at each angle: lowest at a negative angle (each
  head turned away from the other centroid), above the oracle quantizer's level at a = 0.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import matplotlib.figure
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D
from scipy import optimize

from attnclust import symbolic
from attnclust.baselines import kmeans_per_prompt
from attnclust.book import sizes
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.book.figures.attention import COLOURS, layer_outputs_demo
from attnclust.metrics import distortion
from attnclust.mixture import orthogonal_mixture, sample_in_context
from attnclust.risk import population_risk
from attnclust.setting import DEFAULT
from attnclust.temperature import sure_lambda

__all__ = ["glance_results", "glance_tilt", "in_context_demo", "plot_glance", "plot_tilt_profile",
           "tilt_profile_data", "two_head_demo"]


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
    ``DEFAULT.sigma``), through one identity layer at the inverse temperature the prompt
    itself gives (``temperature.sure_lambda``, as the benchmark of chapters/icq_experiments.md chooses it),
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


_ANGLES = {"small": (-22.0, 8.0, 31), "full": (-22.0, 8.0, 121)}
"""The window of angles (degrees) of :func:`tilt_profile_data` and its points at each size."""


@cache
def tilt_profile_data(size: str = "small", d: int = DEFAULT.d, lam: float = DEFAULT.lam) -> dict:
    """The large-L risk along the tilt (chapters/at_a_glance.md; sec-risk-tilt of
    chapters/population_risk.md), default mixture (K = 2, r = ``DEFAULT.r``, sigma =
    ``DEFAULT.sigma``) in dimension ``d`` at inverse temperature ``lam``.

    For each angle a of a grid (degrees; a < 0: each head turned away from the other
    centroid) the heads theta_1 = rho (cos a, sin a, 0, ...) and theta_2 = rho (sin a, cos a,
    0, ...) (the mirror image of theta_1) have the risk ``population_risk`` (quadrature),
    minimised over the length rho by a bounded scalar search: the profile of R_inf along the
    tilt. "small": 31 angles from -22 to 8 degrees; "full": 121.

    Returns:
        A dict with ``angle`` (n,) in degrees, ``rho`` (n,) the best length and ``risk`` (n,)
        the profile; the aligned fixed point (``symbolic.aligned_fixed_point``, prop-aligned),
        ``kappa_aligned`` and ``risk_aligned``; the tilted minimiser
        (``symbolic.tilted_minimiser``), ``angle_min`` (degrees, negative), ``rho_min``,
        ``cos_min`` and ``risk_min``; the levels ``oracle`` (d sigma^2) and ``floor``
        ((d - 2) sigma^2); ``d`` and ``lam``.

    Raises:
        ValueError: an unknown size, d < 2 or lam <= 0.
    """
    first, last, n = _ANGLES[sizes.check(size, tuple(_ANGLES))]
    if d < 2:
        raise ValueError(f"d must be at least 2 (the plane of the centroids), got {d}")
    if not lam > 0:
        raise ValueError(f"lam must be positive, got {lam}")
    r, sigma = DEFAULT.r, DEFAULT.sigma
    mix = orthogonal_mixture(K=2, d=d, r=r, sigma=sigma)

    @jax.jit
    def risk_at(rho, a):
        c, s = rho * jnp.cos(a), rho * jnp.sin(a)
        theta = jnp.zeros((2, d)).at[0, 0].set(c).at[0, 1].set(s).at[1, 0].set(s).at[1, 1].set(c)
        return population_risk(theta, mix, lam)

    angle = np.linspace(first, last, n)
    rho, risk = np.empty(n), np.empty(n)
    for i, a in enumerate(np.radians(angle)):
        res = optimize.minimize_scalar(lambda x, a=a: float(risk_at(x, a)), bounds=(0.3, 2.0),
                                       method="bounded", options={"xatol": 1e-5})
        rho[i], risk[i] = res.x, res.fun
    fp = symbolic.aligned_fixed_point(lam, r, sigma, d=d)
    tm = symbolic.tilted_minimiser(lam, r, sigma, d=d)
    return {"angle": angle, "rho": rho, "risk": risk,
            "kappa_aligned": fp.c, "risk_aligned": fp.risk,
            "angle_min": float(np.degrees(np.arctan2(tm.eps, tm.c))),
            "rho_min": float(np.hypot(tm.c, tm.eps)), "cos_min": tm.cos, "risk_min": tm.risk,
            "oracle": d * sigma**2, "floor": (d - 2) * sigma**2, "d": d, "lam": lam}


@styled
def plot_tilt_profile(data: dict) -> matplotlib.figure.Figure:
    """One panel from :func:`tilt_profile_data`: the profile of R_inf against the angle, the
    aligned fixed point (circle, angle 0), the tilted minimiser (star), and the levels of
    the oracle quantizer (dashed) and of the floor of every two-head layer (dotted)."""
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 4.0), layout="constrained")
    ax = fig.subplots()
    ax.plot(data["angle"], data["risk"], color="tab:blue", lw=2,
            label=r"$R_\infty$, best length at each angle")
    ax.axhline(data["oracle"], color="black", ls="--", lw=1.2,
               label=rf"oracle quantizer, $d\sigma^2$ = {data['oracle']:.2f}")
    ax.axhline(data["floor"], color="0.4", ls=":", lw=1.2,
               label=rf"floor, $(d-2)\sigma^2$ = {data['floor']:.2f}")
    ax.axvline(0, color="0.6", lw=0.8)
    ax.plot([0], [data["risk_aligned"]], "o", ms=9, mfc="white", mec="black", mew=1.5, zorder=5,
            label=f"heads on the centroids, {data['risk_aligned']:.2f}")
    ax.plot([data["angle_min"]], [data["risk_min"]], "*", ms=15, mfc="gold", mec="black", zorder=6,
            label=rf"minimiser at {data['angle_min']:.1f}$\degree$, {data['risk_min']:.2f}")
    ax.set_xlabel("angle of each head from its own centroid (degrees)\n"
                  "negative: turned away from the other centroid")
    ax.set_ylabel(r"large-$L$ risk $R_\infty$")
    ax.set_xlim(data["angle"][0], data["angle"][-1])
    ax.set_ylim(data["floor"] - 0.1, min(float(data["risk"].max()), 2.2 * data["oracle"]) + 0.05)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize=9, handletextpad=0.4, columnspacing=1.0)
    return fig


@register("glance-tilt", chapter="at_a_glance")
def glance_tilt(size: str = "small") -> matplotlib.figure.Figure:
    """The risk along the tilt: R_inf of the default mixture against the angle of each head
    from its own centroid, minimised over the heads' length; lowest away from the centroids."""
    return plot_tilt_profile(tilt_profile_data(size))
