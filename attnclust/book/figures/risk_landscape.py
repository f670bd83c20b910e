"""Two more figures of the chapter "The two-head layer and its population risk"
(chapters/population_risk.md): where its large-L minimiser lies, and why it is tilted.

- ``risk-landscape``: the large-L risk R_inf (``attnclust.population_risk``, the library's
  quadrature) over the symmetric family theta_1 = kappa e_1 + eps e_2, theta_2 = eps e_1 +
  kappa e_2 of the default mixture, as a contour plot, with the aligned fixed point
  (kappa*, 0) (``symbolic.aligned_fixed_point``, prop-aligned), the tilted minimiser
  (``symbolic.tilted_minimiser``) and the direction of steepest descent at the aligned point
  (``jax.grad`` of the same risk): the descent leaves the line eps = 0, and the minimiser lies
  below it.
- ``aligned-reduction``: what an aligned head does and what the aligned manifold costs
  (prop-aligned): the scalar head map f(u; kappa*) of ``symbolic.aligned_reduction`` against
  the identity, over the laws of the coordinate u on the two clusters (the active one,
  N(r, sigma^2), and the inactive one, N(0, sigma^2), where f(0) = kappa*^2 r / 2 is the
  offset); and R_inf(kappa e_1, kappa e_2) = 2 g(kappa) + (d - 2) sigma^2 against kappa
  (``symbolic.aligned_risk``), lowest at kappa* yet above the oracle quantizer's level, with
  the tilted minimiser's risk below it.
- ``tilt-mechanisms``: the two mechanisms of the tilt (sec-risk-tilt) drawn in the plane of
  the centroids, from ``symbolic.tilt_decomposition`` and the aligned head map ``f`` of
  ``symbolic.aligned_reduction``: on the tokens of cluster 2, head 1's offset along e_1 (the
  coefficient term); on the tokens of cluster 1, head 2's offset along e_2, which a head 1
  turned towards -e_2 cancels (the direction term); and each term's contribution, cluster by
  cluster, to the derivative of R_inf off the manifold.

Both figures are cheap (a few seconds at the book's size); their ``*_data`` functions are
cached so that the chapter glues the very numbers the figures draw.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from jaxtyping import ArrayLike, Float
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch

from attnclust import symbolic
from attnclust.book import sizes
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.mixture import orthogonal_mixture
from attnclust.risk import population_risk
from attnclust.setting import DEFAULT

__all__ = ["aligned_reduction", "aligned_reduction_data", "family_heads", "landscape_data",
           "risk_landscape", "tilt_mechanisms", "tilt_mechanisms_data"]

CHAPTER = "population_risk"

TERM_COLOURS = {"coefficient": "tab:green", "direction": "tab:orange"}
"""The colours of the tilt gradient's two terms (the panels' titles and the bars)."""

_GRID = {"small": dict(kappa=(0.45, 1.35, 46), eps=(-0.5, 0.3, 41), nodes=20),
         "full": dict(kappa=(0.45, 1.35, 181), eps=(-0.5, 0.3, 161), nodes=40)}
"""The (kappa, eps) window of the landscape, its points, and the quadrature nodes per
dimension at each size (over this window 20 nodes agree with 40 to a relative 1e-4, far
below the spacing of the contours)."""


def family_heads(kappa: Float[ArrayLike, "*b"], eps: Float[ArrayLike, "*b"], d: int = DEFAULT.d
                 ) -> Float[np.ndarray, "*b 2 d"]:
    """The heads theta_1 = kappa e_1 + eps e_2 and theta_2 = eps e_1 + kappa e_2 (the mirror
    image of theta_1 under swapping e_1 and e_2) of the chapter's symmetric family; eps = 0 is
    the aligned manifold theta_h = kappa e_h (prop-aligned).

    Args:
        kappa, eps: arrays of one shape (or scalars).
        d: the dimension, >= 2.

    Returns:
        A float32 array of shape ``(*kappa.shape, 2, d)``.

    Raises:
        ValueError: d < 2, or kappa and eps of different shapes.
    """
    kappa, eps = np.asarray(kappa, np.float32), np.asarray(eps, np.float32)
    if d < 2:
        raise ValueError(f"d must be at least 2 (the plane of the centroids), got {d}")
    if kappa.shape != eps.shape:
        raise ValueError(f"kappa and eps must have one shape, got {kappa.shape} and {eps.shape}")
    theta = np.zeros(kappa.shape + (2, d), np.float32)
    theta[..., 0, 0], theta[..., 0, 1] = kappa, eps
    theta[..., 1, 0], theta[..., 1, 1] = eps, kappa
    return theta


@lru_cache(maxsize=None)
def landscape_data(size: str = "small") -> dict:
    """R_inf over a (kappa, eps) grid of the symmetric family (:func:`family_heads`), default
    mixture and temperature, by the library's quadrature (``population_risk``), with the
    points the chapter names.

    Returns:
        A dict with ``kappa`` (n,), ``eps`` (m,), ``risk`` (n, m); the aligned fixed point
        ``kappa_aligned`` and its risk ``risk_aligned``; the tilted minimiser ``kappa_min``,
        ``eps_min``, ``cos_min`` (``|cos(theta_h, mu_h)|``), ``angle_min`` (degrees) and
        ``risk_min``; ``grad_aligned``, the gradient (d/dkappa, d/deps) of the family's risk
        at the aligned point; the levels ``oracle`` (d sigma^2) and ``floor``
        ((d - 2) sigma^2); ``nodes``.
    """
    grid = _GRID[sizes.check(size, tuple(_GRID))]
    lam, r, sigma, d = DEFAULT.lam, DEFAULT.r, DEFAULT.sigma, DEFAULT.d
    mix = orthogonal_mixture(K=2, d=d, r=r, sigma=sigma)
    kappa = np.linspace(*grid["kappa"])
    eps = np.linspace(*grid["eps"])
    K, E = np.meshgrid(kappa, eps, indexing="ij")
    heads = jnp.asarray(family_heads(K, E, d).reshape(-1, 2, d))
    risk_of = jax.jit(jax.vmap(lambda th: population_risk(th, mix, lam, n_nodes=grid["nodes"])))
    risk = np.asarray(risk_of(heads), np.float64).reshape(K.shape)
    fp = symbolic.aligned_fixed_point(lam, r, sigma, d=d)
    tm = symbolic.tilted_minimiser(lam, r, sigma, d=d)

    def family_risk(p):
        th = jnp.zeros((2, d)).at[0, 0].set(p[0]).at[0, 1].set(p[1]).at[1, 0].set(p[1]).at[1, 1].set(p[0])
        return population_risk(th, mix, lam)

    grad = np.asarray(jax.grad(family_risk)(jnp.array([fp.c, 0.0], jnp.float32)), np.float64)
    return {"kappa": kappa, "eps": eps, "risk": risk,
            "kappa_aligned": fp.c, "risk_aligned": fp.risk,
            "kappa_min": tm.c, "eps_min": tm.eps, "cos_min": tm.cos,
            "angle_min": float(np.degrees(np.arccos(tm.cos))), "risk_min": tm.risk,
            "grad_aligned": grad, "oracle": d * sigma**2, "floor": (d - 2) * sigma**2,
            "nodes": grid["nodes"]}


@register("risk-landscape", chapter=CHAPTER)
@styled
def risk_landscape(size: str = "small") -> plt.Figure:
    """Contours of R_inf over (kappa, eps), the aligned manifold eps = 0, the aligned fixed
    point with its direction of steepest descent, the tilted minimiser, and the level of the
    oracle quantizer."""
    D = landscape_data(size)
    fig, ax = plt.subplots(figsize=(WIDTH, 4.1))
    K, E = np.meshgrid(D["kappa"], D["eps"], indexing="ij")
    top = 4 * D["oracle"]
    levels = np.geomspace(D["risk_min"] * 1.0005, top, 14)
    filled = ax.contourf(K, E, np.minimum(D["risk"], top), levels=np.r_[D["risk"].min(), levels],
                         cmap="viridis_r", extend="max")
    ax.contour(K, E, D["risk"], levels=levels, colors="white", linewidths=0.4, alpha=0.6)
    ax.contour(K, E, D["risk"], levels=[D["oracle"]], colors="black", linewidths=1.4, linestyles="--")
    cbar = fig.colorbar(filled, ax=ax, pad=0.02)
    cbar.set_label(r"large-$L$ risk $R_\infty$")
    ticks = [t for t in (1, 1.5, 2, 3, 4, 5) if D["risk"].min() <= t <= top]
    cbar.set_ticks(ticks)
    cbar.set_ticklabels([f"{t:g}" for t in ticks])
    cbar.ax.axhline(D["oracle"], color="black", ls="--", lw=1.4)
    ax.axhline(0, color="white", lw=1.2, ls=":")
    ka, ra = D["kappa_aligned"], D["risk_aligned"]
    ax.plot([ka], [0], "o", ms=9, mfc="white", mec="black", mew=1.5)
    ax.plot([D["kappa_min"]], [D["eps_min"]], "*", ms=15, mfc="gold", mec="black", mew=1.0)
    g = D["grad_aligned"]
    step = -0.6 * abs(D["eps_min"]) * g / np.linalg.norm(g)   # the descent direction, drawn short
    ax.annotate("", xy=(ka + step[0], step[1]), xytext=(ka, 0),
                arrowprops=dict(arrowstyle="-|>", color="white", lw=1.8, shrinkA=5, shrinkB=0))
    ax.set_xlabel(r"$\kappa$: each head's coordinate along its own centroid")
    ax.set_ylabel(r"$\varepsilon$: its coordinate along the other")
    handles = [
        Line2D([], [], ls="", marker="o", ms=8, mfc="white", mec="black", mew=1.5,
               label=rf"aligned fixed point, $R_\infty$ = {ra:.2f}"),
        Line2D([], [], ls="", marker="*", ms=12, mfc="gold", mec="black",
               label=rf"tilted minimiser, $R_\infty$ = {D['risk_min']:.2f}"),
        Line2D([], [], color="black", ls="--", lw=1.4,
               label=rf"oracle quantizer's level $d\sigma^2$ = {D['oracle']:.2f}"),
        Line2D([], [], color="0.5", ls=":", lw=1.2, label=r"aligned manifold $\varepsilon = 0$"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, handletextpad=0.4,
               columnspacing=1.0)
    return fig


@lru_cache(maxsize=None)
def aligned_reduction_data(size: str = "small") -> dict:
    """The aligned reduction at the default setting (prop-aligned): the head map
    f(u; kappa*) on a grid of u with the two clusters' densities of u, and the risk on the
    aligned manifold R_inf(kappa e_1, kappa e_2) on a grid of kappa, with the levels it is
    compared to. "small": 61 values of kappa; "full": 241.

    Returns:
        A dict with ``u``, ``f`` (f(u; kappa*)), ``density_active`` and
        ``density_inactive`` (the N(r, sigma^2) and N(0, sigma^2) densities of u), ``offset``
        (f(0; kappa*) = kappa*^2 r / 2); ``kappa`` and ``risk_aligned`` (the risk on the
        manifold); ``kappa_star``, ``risk_star`` (the aligned fixed point and its risk),
        ``risk_zero`` (the risk at kappa = 0, E||z||^2), ``risk_min`` (the tilted
        minimiser's), ``oracle`` and ``floor``; ``r``, ``sigma``.
    """
    n = {"small": 61, "full": 241}[sizes.check(size, ("small", "full"))]
    lam, r, sigma, d = DEFAULT.lam, DEFAULT.r, DEFAULT.sigma, DEFAULT.d
    fp = symbolic.aligned_fixed_point(lam, r, sigma, d=d)
    f_fn = symbolic.aligned_reduction().f_fn
    u = np.linspace(-1.5, r + 1.5, 201)
    kappa = np.linspace(0.0, 1.6, n)
    risk = np.array([symbolic.aligned_risk(k, k, lam, r, sigma, d=d) for k in kappa])
    normal = lambda x, m: np.exp(-((x - m) ** 2) / (2 * sigma**2)) / (sigma * np.sqrt(2 * np.pi))  # noqa: E731
    return {"u": u, "f": np.asarray(f_fn(u, fp.c, lam, r, sigma), float),
            "density_active": normal(u, r), "density_inactive": normal(u, 0.0),
            "offset": float(f_fn(0.0, fp.c, lam, r, sigma)),
            "kappa": kappa, "risk_aligned": risk, "kappa_star": fp.c, "risk_star": fp.risk,
            "risk_zero": float(risk[0]),
            "risk_min": symbolic.tilted_minimiser(lam, r, sigma, d=d).risk,
            "oracle": d * sigma**2, "floor": (d - 2) * sigma**2, "r": r, "sigma": sigma}


@register("aligned-reduction", chapter=CHAPTER)
@styled
def aligned_reduction(size: str = "small") -> plt.Figure:
    """Left: the aligned head map f(u; kappa*) against the identity, over the laws of u on
    the two clusters; right: the risk on the aligned manifold against kappa, with kappa*, the
    oracle quantizer's level, the floor and the tilted minimiser's risk."""
    D = aligned_reduction_data(size)
    fig, (a, b) = plt.subplots(1, 2, figsize=(WIDTH, 4.0))
    u = D["u"]
    base = u.min()
    height = (u.max() - u.min()) / 3 / D["density_active"].max()   # the densities, a third of the axis high
    for dens in (D["density_inactive"], D["density_active"]):
        a.fill_between(u, base, base + height * dens, color="0.82", lw=0)
    a.plot(u, u, ":", color="0.4", lw=1.2, label="identity $u$")
    a.plot(u, D["f"], color="tab:blue", lw=2, label=r"$f(u;\kappa^\star)$")
    a.plot([0], [D["offset"]], "o", color="tab:red", ms=6, zorder=5)
    a.annotate("offset $f(0) =$\n" + r"$(\kappa^\star)^2 r/2$" + f" = {D['offset']:.2f}",
               xy=(0, D["offset"]), xytext=(1.1, 0.35), color="tab:red", fontsize=9,
               arrowprops=dict(arrowstyle="-", color="tab:red", lw=0.8))
    a.text(0, base + 0.15, "inactive\ncluster", ha="center", fontsize=9)
    a.text(D["r"], base + 0.15, "active\ncluster", ha="center", fontsize=9)
    a.set_xlim(u.min(), u.max())
    a.set_ylim(base, u.max())
    a.set_xlabel("coordinate $u$ of a token")
    a.set_ylabel("head output, same axis")
    a.legend(frameon=False, loc="upper left")
    k = D["kappa"]
    b.plot(k, D["risk_aligned"], color="tab:blue", lw=2, label=r"aligned heads $\kappa e_h$")
    b.plot([D["kappa_star"]], [D["risk_star"]], "o", ms=8, mfc="white", mec="black", mew=1.5,
           label=rf"$\kappa^\star$ = {D['kappa_star']:.3f}")
    b.axhline(D["oracle"], color="black", ls="--", lw=1.2, label=r"oracle $d\sigma^2$")
    b.axhline(D["risk_min"], color="goldenrod", ls="-.", lw=1.5, label="tilted minimiser")
    b.axhline(D["floor"], color="0.5", ls=":", lw=1.2, label=r"floor $(d-2)\sigma^2$")
    b.set_yscale("log")
    ticks = [0.75, 1, 1.5, 2, 3, 5]
    b.set_yticks(ticks)
    b.set_yticklabels([f"{t:g}" for t in ticks])
    b.minorticks_off()
    b.set_ylim(0.65, 1.25 * D["risk_zero"])
    b.set_xlabel(r"head length $\kappa$")
    b.set_ylabel(r"$R_\infty(\kappa e_1, \kappa e_2)$")
    fig.legend(*b.get_legend_handles_labels(), loc="outside lower center", ncols=3,
               handletextpad=0.4, columnspacing=1.0)
    return fig


@lru_cache(maxsize=None)
def tilt_mechanisms_data(size: str = "small") -> dict:
    """The numbers behind the two mechanisms of the tilt at the aligned fixed point, default
    setting (sec-risk-tilt): ``symbolic.tilt_decomposition`` (the coefficient and direction
    terms of dR_inf/d eps_1, cluster by cluster, their ``total``, and head 1's mean ``offset``
    along e_1 on cluster 2), the mean output of the active head along its own axis,
    ``active`` = E_{u ~ N(r, sigma^2)} f(u; kappa*) (the head map f of
    ``symbolic.aligned_reduction``), the tilted minimiser's ``eps_min`` and ``kappa_min``,
    and ``cancel``, the first-order output of head 1 along -e_2 on cluster 1 at the
    minimiser's tilt, ``abs(eps_min) E[phi_1] = abs(eps_min) active / kappa*``. ``size`` is accepted for
    the registry; both sizes compute the same numbers."""
    sizes.check(size, ("small", "full"))
    lam, r, sigma = DEFAULT.lam, DEFAULT.r, DEFAULT.sigma
    fp = symbolic.aligned_fixed_point(lam, r, sigma, d=DEFAULT.d)
    dec = symbolic.tilt_decomposition(lam, r, sigma, c=fp.c)
    x, w = symbolic.gauss_hermite(80)
    f_fn = symbolic.aligned_reduction().f_fn
    active = float(np.sum(w * f_fn(r + sigma * x, fp.c, lam, r, sigma)))
    tm = symbolic.tilted_minimiser(lam, r, sigma, d=DEFAULT.d)
    return {"kappa": fp.c, "r": r, "sigma": sigma, "offset": dec["offset"], "active": active,
            "coefficient": np.asarray(dec["coefficient"]), "direction": np.asarray(dec["direction"]),
            "total": dec["total"], "eps_min": tm.eps, "kappa_min": tm.c,
            "cancel": abs(tm.eps) * active / fp.c}


def _plane(ax, D: dict, own: int) -> None:
    """The plane of the centroids: the tokens of cluster ``own`` (a disc of radius 2 sigma),
    both centroids, both aligned heads."""
    r, s, k = D["r"], D["sigma"], D["kappa"]
    mu = np.array([[r, 0.0], [0.0, r]])
    ax.add_patch(Circle(mu[own], 2 * s, color="0.85", zorder=0))
    ax.scatter(mu[:, 0], mu[:, 1], marker="x", s=60, linewidths=2, color="black", zorder=5)
    for c, (dx, dy) in enumerate(((0.12, -0.32), (-0.45, 0.12))):
        ax.text(mu[c, 0] + dx, mu[c, 1] + dy, rf"$\mu_{c + 1}$", fontsize=10)
    for h in range(2):
        tip = k * np.eye(2)[h]
        ax.annotate("", xy=tip, xytext=(0, 0),
                    arrowprops=dict(arrowstyle="-|>", color="black", lw=1.5, shrinkA=0, shrinkB=0))
    ax.text(k * 0.45, -0.27, r"$\theta_1$", fontsize=10)
    ax.text(-0.36, k * 0.45, r"$\theta_2$", fontsize=10)
    ax.set_xlim(-0.6, r + 2.5 * s)
    ax.set_ylim(-0.6, r + 2.5 * s)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xticks([0, 1, 2])
    ax.set_yticks([0, 1, 2])
    ax.set_xlabel("$z_1$")


@register("tilt-mechanisms", chapter=CHAPTER)
@styled
def tilt_mechanisms(size: str = "small") -> plt.Figure:
    """Top: the two mechanisms in the plane of the centroids (left, head 1's offset on the
    tokens of cluster 2; right, head 2's offset on the tokens of cluster 1 and head 1's turn
    that cancels it); bottom: the contribution of each term and cluster to dR_inf/d eps."""
    D = tilt_mechanisms_data(size)
    fig = plt.figure(figsize=(WIDTH, 5.2))
    panels = fig.subplot_mosaic([["a", "b"], ["c", "c"]], height_ratios=[2.2, 1.0])
    a, b, c = panels["a"], panels["b"], panels["c"]
    off, act, k = D["offset"], D["active"], D["kappa"]
    red, blue = "tab:red", "tab:blue"
    # (a) cluster 2: the layer's mean output is (offset, active); head 1 supplies the offset
    _plane(a, D, own=1)
    a.annotate("", xy=(off, act), xytext=(0, act),
               arrowprops=dict(arrowstyle="-|>", color=red, lw=2, shrinkA=0, shrinkB=0))
    a.plot([off], [act], "o", color=red, ms=6, zorder=6)
    a.text(0.05, act + 0.5, f"head 1's offset\n{off:.2f} along $e_1$", color=red, fontsize=9)
    a.add_patch(FancyArrowPatch((k + 0.05, 0.12), (k + 0.05, -0.42), connectionstyle="arc3,rad=-0.5",
                                arrowstyle="-|>", mutation_scale=12, color=blue, lw=1.5))
    a.text(k + 0.2, 0.35, "turn $\\theta_1$ away:\nthe offset falls", color=blue, fontsize=9)
    a.set_ylabel("$z_2$")
    a.set_title("tokens of cluster 2:\nthe coefficient term", color=TERM_COLOURS["coefficient"])
    # (b) cluster 1: the mean output is (active, offset); head 2 supplies the offset along e_2,
    # and head 1 turned towards -e_2 adds -|eps| phi_1 e_2 (drawn at the minimiser's eps)
    _plane(b, D, own=0)
    b.annotate("", xy=(act, off), xytext=(act, 0),
               arrowprops=dict(arrowstyle="-|>", color=red, lw=2, shrinkA=0, shrinkB=0))
    b.plot([act], [off], "o", color=red, ms=6, zorder=6)
    b.annotate("", xy=(act + 0.12, off - D["cancel"]), xytext=(act + 0.12, off),
               arrowprops=dict(arrowstyle="-|>", color=blue, lw=2, shrinkA=0, shrinkB=0))
    b.text(0.0, off + 0.3, f"head 2's offset\n{off:.2f} along $e_2$", color=red, fontsize=9)
    b.text(act + 0.3, off + 0.3, "tilted $\\theta_1$\ncancels\npart of it", color=blue, fontsize=9)
    b.set_title("tokens of cluster 1:\nthe direction term", color=TERM_COLOURS["direction"])
    # (c) the contributions to dR_inf/d eps_1 at the aligned point
    rows = [("coefficient, cluster 1", D["coefficient"][0], TERM_COLOURS["coefficient"]),
            ("coefficient, cluster 2", D["coefficient"][1], TERM_COLOURS["coefficient"]),
            ("direction, cluster 1", D["direction"][0], TERM_COLOURS["direction"]),
            ("direction, cluster 2", D["direction"][1], TERM_COLOURS["direction"]),
            ("total: the tilt gradient", D["total"], "0.3")]
    y = np.arange(len(rows))[::-1]
    c.barh(y, [v for _, v, _ in rows], color=[col for _, _, col in rows], height=0.7)
    for yi, (_, val, _) in zip(y, rows):
        c.text(max(val, 0) + 0.06, yi, f"{val:+.2f}", va="center", fontsize=9)
    c.set_yticks(y)
    c.set_yticklabels([name for name, _, _ in rows])
    c.axvline(0, color="black", lw=0.8)
    c.set_xlim(min(0.0, min(v for _, v, _ in rows)) - 0.2, D["total"] + 0.8)
    c.set_xlabel(r"contribution to $\partial R_\infty / \partial\varepsilon$ at the aligned point")
    return fig
