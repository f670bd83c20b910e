"""Figures of the preface and of the chapter "Attention as soft pooling" (chapters/attention.md:
the rank-one heads, def-two-head-layer; the tilting lemma, lem-tilting; the large-L head
limit, prop-head-limit).

- ``preface-layers``: one 2-D prompt, the two-head layer's outputs and the identity layer's
  outputs side by side (:func:`layer_outputs_demo`);
- ``softmax-temperature``: softmax pooling of one prompt's keys, from the mean (lambda -> 0)
  to the maximum (lambda -> infinity);
- ``tilting-sampling``: the exponential tilt of a Gaussian, checked against samples
  (:func:`tilted_mean_sample`);
- ``head-large-L``: the finite-L output of the two-head layer approaching its large-L
  limit as L grows, on log-log axes with the fitted slope (:func:`head_limit_error`).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import matplotlib.figure
import numpy as np
from jaxtyping import ArrayLike, Float

from attnclust.attention import identity_attention, two_head_attend, two_head_layer
from attnclust.limits import head_output_limit
from attnclust.metrics import alignment
from attnclust.mixture import GaussianMixture, orthogonal_mixture, sample
from attnclust.book.figures._registry import register
from attnclust.book.figures._style import WIDTH, styled
from attnclust.setting import DEFAULT

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


# ---------------------------------------------------------------------------------------
# Preface
# ---------------------------------------------------------------------------------------


def preface_heads(size: str = "small") -> np.ndarray:
    """Heads (2, 2) of the two-head layer for the preface's 2-D mixture (K = 2, d = 2, r = 2,
    sigma = 0.5, lambda = 1).

    "small": the large-L minimiser of the population risk, theta_1 = (c, eps),
    theta_2 = (eps, c), computed by ``attnclust.symbolic.tilted_minimiser`` in about a second
    (a default ``attnclust.fit`` run reaches the same point to about two decimals, chapter
    "Training dynamics"). "full": the heads trained by ``attnclust.fit`` (2000 steps).
    """
    if size == "small":
        from attnclust.symbolic import tilted_minimiser

        tm = tilted_minimiser(lam=DEFAULT.lam, r=DEFAULT.r, sigma=DEFAULT.sigma, d=2)
        return np.array([[tm.c, tm.eps], [tm.eps, tm.c]])
    from attnclust.train import fit

    res = fit(jax.random.PRNGKey(0), orthogonal_mixture(d=2), lam=DEFAULT.lam, progress=False)
    return np.asarray(res.theta)


def layer_outputs_demo(size: str = "small", L: int = 100, lam: float = DEFAULT.lam, seed: int = 0) -> dict:
    """One 2-D prompt (K = 2, d = 2, r = 2, sigma = 0.5) through both layers.

    Returns a dict with ``X`` (L, 2) tokens, ``labels`` (L,), ``centroids`` (2, 2),
    ``theta`` (2, 2) heads (:func:`preface_heads`), ``T`` (L, 2) two-head outputs,
    ``Q`` (L, 2) identity-attention outputs, ``cos`` (2,) the heads' matched ``|cos|`` with the
    centroids; ``spread_in`` / ``spread_T`` / ``spread_Q``: the mean distance of tokens /
    two-head outputs / identity outputs to the mean of their cluster (the same quantity for
    the three panels); ``flat_in`` / ``flat_T``: per cluster, the ratio of the smaller to
    the larger singular value of the centred cloud (1 for a round cloud, 0 for a segment),
    averaged over the two clusters; ``mixture`` and ``lam``, the setting drawn.
    """
    mix = orthogonal_mixture(d=2)
    X, labels = sample(jax.random.PRNGKey(seed), mix, 1, L)
    X, labels = X[0], labels[0]
    theta = preface_heads(size)
    T = np.asarray(two_head_layer(jnp.asarray(theta, jnp.float32), X, lam))
    Q = np.asarray(identity_attention(X, lam))
    X, labels, mu = np.asarray(X), np.asarray(labels), np.asarray(mix.centroids)

    def spread(P):
        return float(np.mean([np.mean(np.linalg.norm(P[labels == c] - P[labels == c].mean(0),
                                                     axis=-1)) for c in range(2)]))

    def flatness(P):
        ratios = []
        for c in range(2):
            sv = np.linalg.svd(P[labels == c] - P[labels == c].mean(0), compute_uv=False)
            ratios.append(sv[-1] / sv[0])
        return float(np.mean(ratios))

    return dict(
        X=X, labels=labels, centroids=mu, theta=theta, T=T, Q=Q,
        cos=alignment(theta, mu),
        spread_in=spread(X), spread_T=spread(T), spread_Q=spread(Q),
        flat_in=flatness(X), flat_T=flatness(T), mixture=mix, lam=lam,
    )


@styled
def plot_layer_outputs(demo: dict) -> matplotlib.figure.Figure:
    """Three panels from :func:`layer_outputs_demo`: tokens, two-head outputs, identity
    outputs, all coloured by the tokens' true cluster."""
    X, lab, mu, theta = demo["X"], demo["labels"], demo["centroids"], demo["theta"]
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.0), layout="constrained")
    axes = fig.subplots(1, 3, sharex=True, sharey=True)
    panels = [
        (X, "input tokens"),
        (demo["T"], "two-head layer:\neach cloud flattened"),
        (demo["Q"], "identity attention:\neach cloud contracted"),
    ]
    for ax, (P, title) in zip(axes, panels):
        for c in range(2):
            sel = lab == c
            ax.scatter(P[sel, 0], P[sel, 1], s=12, alpha=0.7, color=COLOURS[c],
                       label=f"cluster {c + 1}")
        ax.scatter(mu[:, 0], mu[:, 1], marker="x", s=90, linewidths=2.5, color="black",
                   label="centroids", zorder=5)
        ax.set_title(title)
        ax.set_aspect("equal", adjustable="box")
        ax.grid(alpha=0.3)
        ax.set_xlabel("$x_1$")
    t = np.linspace(-4, 4, 2)
    for h in range(2):
        u = theta[h] / np.linalg.norm(theta[h])
        axes[1].plot(t * u[0], t * u[1], color="grey", lw=1, ls="--",
                     label="head directions" if h == 0 else None)
        axes[1].annotate("", xy=theta[h], xytext=(0, 0),
                         arrowprops=dict(arrowstyle="->", color="black", lw=1.5))
    axes[0].set_ylabel("$x_2$")
    axes[0].set_xlim(-1.8, 3.6)
    axes[0].set_ylim(-1.8, 3.6)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4, handletextpad=0.3,
               columnspacing=1.0)
    return fig


@register("preface-layers", chapter="preface")
def preface_layers(size: str = "small") -> matplotlib.figure.Figure:
    """A 2-D prompt, the two-head layer's outputs and identity attention's outputs."""
    return plot_layer_outputs(layer_outputs_demo(size))


# ---------------------------------------------------------------------------------------
# Softmax and temperature
# ---------------------------------------------------------------------------------------


def softmax_pool(
    values: Float[ArrayLike, "L"], scores: Float[ArrayLike, "L"], lam: float | Float[ArrayLike, "*m"]
) -> Float[np.ndarray, "*m"] | np.float64:
    """sum_k softmax_k(lam * scores_k) values_k for one or several temperatures.

    values, scores: (L,); lam scalar or (m,) -> scalar or (m,). Computed with the maximum
    subtracted, so any lam >= 0 is finite.
    """
    lam = np.asarray(lam, float)
    a = lam[..., None] * np.asarray(scores, float)
    a = a - a.max(axis=-1, keepdims=True)
    w = np.exp(a)
    w /= w.sum(axis=-1, keepdims=True)
    return w @ np.asarray(values, float)


SOFTMAX_DEMO = dict(keys_per_group=10, tilt=1.0, lams=(0.0, 0.5, 2.0, 8.0))
"""Setting of ``softmax-temperature``: two groups of keys (values N(0, 0.5^2) and
N(2, 0.5^2)), the query's tilt s (weights softmax(lam s u_k)) and the lambdas of the left panel."""


@register("softmax-temperature", chapter="attention")
@styled
def softmax_temperature(size: str = "small") -> matplotlib.figure.Figure:
    """Softmax weights of one query over a prompt's keys, and the pooled value, as lambda
    grows: from the average of the values to the value of the best-matching key
    (``SOFTMAX_DEMO``)."""
    rng = np.random.default_rng(1)
    n = SOFTMAX_DEMO["keys_per_group"]
    u = np.sort(np.concatenate([rng.normal(0.0, 0.5, n), rng.normal(2.0, 0.5, n)]))
    s = SOFTMAX_DEMO["tilt"]  # the query's score: weights softmax(lam * s * u_k), values u_k
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 3.4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    for lam, colour in zip(SOFTMAX_DEMO["lams"], ("grey", "tab:blue", "tab:orange", "tab:red")):
        a = lam * s * u
        w = np.exp(a - a.max())
        w /= w.sum()
        ax1.plot(u, w, marker="o", ms=4, color=colour, label=rf"$\lambda={lam:g}$")
    ax1.set_xlabel(r"key value $u_k$")
    ax1.set_ylabel(r"weight of key $k$")
    ax1.legend()
    ax1.grid(alpha=0.3)
    lams = np.logspace(-2, 2, 200)
    ax2.semilogx(lams, softmax_pool(u, s * u, lams), color="black", label="pooled value")
    ax2.axhline(u.mean(), color="grey", ls="--", label="mean of the values")
    ax2.axhline(u.max(), color="tab:red", ls=":", label="largest value")
    ax2.set_xlabel(r"inverse temperature $\lambda$")
    ax2.set_ylabel("pooled value")
    ax2.legend()
    ax2.grid(alpha=0.3)
    return fig


# ---------------------------------------------------------------------------------------
# Exponential tilting
# ---------------------------------------------------------------------------------------


def tilted_mean_sample(
    key: jax.Array, t: float, m: float, s: float, n: int
) -> tuple[float, float]:
    """The softmax-weighted mean sum_k softmax_k(t u_k) u_k of n samples u_k ~ N(m, s^2).

    This is what one attention head computes over n keys; the tilting lemma says it tends to
    m + t s^2. Returns ``(estimate, standard_error)``, the standard error being the usual
    self-normalised importance-sampling one, sqrt(sum_k w_k^2 (u_k - estimate)^2).
    """
    if s <= 0 or n < 2:
        raise ValueError(f"need s > 0 and n >= 2, got s={s!r}, n={n!r}")
    u = m + s * jax.random.normal(key, (int(n),))
    w = jax.nn.softmax(t * u)
    est = jnp.sum(w * u)
    se = jnp.sqrt(jnp.sum(w**2 * (u - est) ** 2))
    return float(est), float(se)


TILTING_DEMO = dict(m=0.5, s=1.0, t=1.5, samples={"small": 20_000, "full": 1_000_000}, n_tilts=9)
"""Setting of ``tilting-sampling``: the Gaussian N(m, s^2), the tilt t of the left panel, the
samples by figure size and the number of tilts (from -2 to 2) of the right panel."""


@register("tilting-sampling", chapter="attention")
@styled
def tilting_sampling(size: str = "small") -> matplotlib.figure.Figure:
    """Samples of N(m, s^2) reweighted by e^{tu}: a histogram on the tilted Gaussian
    N(m + t s^2, s^2); and the sample tilted means against m + t s^2 for several t
    (``TILTING_DEMO``)."""
    n = TILTING_DEMO["samples"]["small" if size == "small" else "full"]
    m, s, t = TILTING_DEMO["m"], TILTING_DEMO["s"], TILTING_DEMO["t"]
    key = jax.random.PRNGKey(3)
    u = np.asarray(m + s * jax.random.normal(key, (n,)))
    w = np.exp(t * u - np.max(t * u))
    w /= w.sum()
    fig = matplotlib.figure.Figure(figsize=(WIDTH, 5.6), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1)
    grid = np.linspace(m - 4 * s, m + t * s**2 + 4 * s, 300)
    pdf = lambda mean: np.exp(-((grid - mean) ** 2) / (2 * s**2)) / np.sqrt(2 * np.pi * s**2)  # noqa: E731
    ax1.hist(u, bins=80, density=True, alpha=0.35, color="grey", label="samples $u_k$")
    ax1.hist(u, bins=80, weights=w, density=True, alpha=0.5, color="tab:orange",
             label=r"reweighted by $e^{t u_k}$")
    ax1.plot(grid, pdf(m), color="black", lw=1, label=rf"$N(m, s^2)$, $m={m}$")
    ax1.plot(grid, pdf(m + t * s**2), color="tab:red", lw=1.5,
             label=rf"$N(m + t s^2, s^2)$, $t={t}$")
    ax1.set_xlabel("$u$")
    ax1.set_ylabel("density")
    ax1.legend(loc="upper left")
    ts = np.linspace(-2.0, 2.0, TILTING_DEMO["n_tilts"])
    keys = jax.random.split(jax.random.PRNGKey(4), len(ts))
    est = np.array([tilted_mean_sample(k, float(tt), m, s, n) for k, tt in zip(keys, ts)])
    ax2.errorbar(ts, est[:, 0], yerr=2 * est[:, 1], fmt="o", capsize=3,
                 label=f"weighted mean of {n} samples (±2 s.e.)")
    ax2.plot(ts, m + ts * s**2, color="tab:red", label="$m + t s^2$")
    ax2.set_xlabel("tilt $t$")
    ax2.set_ylabel("tilted mean")
    ax2.legend()
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    return fig


# ---------------------------------------------------------------------------------------
# Large-L limit of a head
# ---------------------------------------------------------------------------------------


def head_limit_error(
    key: jax.Array,
    theta: np.ndarray,
    mixture: GaussianMixture,
    lam: float,
    Ls: Sequence[int],
    n_queries: int = 32,
    n_prompts: int = 32,
) -> dict[str, np.ndarray]:
    """Distance of the finite-L two-head output to its large-L limit, as L grows.

    For each L in ``Ls``, ``n_prompts`` independent prompts of L keys are drawn, each with
    its own ``n_queries`` query tokens z (all disjoint pieces of one sample, so independent
    across prompts, across L and of the keys), and ``two_head_attend(theta, z, X, lam)`` is
    compared with ``head_output_limit(theta, z, mixture, lam)``. The queries are not among
    the keys, so the finite-L output is a self-normalised average of L i.i.d. terms and its
    error should shrink like L^(-1/2).

    Returns a dict: ``L`` (m,), ``rmse`` (m,) the root mean squared error over queries and
    prompts, ``sem`` (m,) an approximate standard error of ``rmse`` (delta method over the
    ``n_prompts`` per-prompt mean squared errors, which are i.i.d.; the queries of one prompt
    share its keys, so its squared errors are not independent of each other), and
    ``slope`` / ``intercept`` of the least-squares line of log(rmse) on log(L).
    """
    Ls = np.asarray(Ls, int)
    theta = jnp.asarray(theta, jnp.float32)
    # One draw, cut into disjoint pieces: for each L, every prompt's queries and keys (one
    # sampling call instead of one per L, which on a CPU is dominated by compilation).
    X_all, _ = sample(key, mixture, n_prompts, int(Ls.size * n_queries + Ls.sum()))
    X_all = np.asarray(X_all)
    starts = np.concatenate([[0], np.cumsum(Ls + n_queries)[:-1]])
    rmse, sem = [], []
    for start, L in zip(starts, Ls):
        Z = X_all[:, start:start + n_queries]                                   # (P, Q, d)
        X = X_all[:, start + n_queries:start + n_queries + L]                   # (P, L, d)
        limit = np.asarray(head_output_limit(theta, jnp.asarray(Z), mixture, lam))
        out = np.asarray(two_head_attend(theta, Z, X, lam))
        per_prompt = np.sum((out - limit) ** 2, axis=-1).mean(axis=-1)         # (P,)
        mse = per_prompt.mean()
        rmse.append(np.sqrt(mse))
        sem.append(per_prompt.std(ddof=1) / np.sqrt(n_prompts) / (2 * np.sqrt(mse)))
    rmse, sem = np.asarray(rmse), np.asarray(sem)
    slope, intercept = np.polyfit(np.log(Ls), np.log(rmse), 1)
    return dict(L=Ls, rmse=rmse, sem=sem, slope=float(slope), intercept=float(intercept))


def default_heads() -> np.ndarray:
    """The heads (2, d) used to illustrate the large-L limit: the large-L minimiser of the
    default setting (``attnclust.DEFAULT``), theta_1 = c e_1 + eps e_2,
    theta_2 = eps e_1 + c e_2 (``attnclust.symbolic.tilted_minimiser``)."""
    from attnclust.symbolic import tilted_minimiser

    tm = tilted_minimiser(lam=DEFAULT.lam, r=DEFAULT.r, sigma=DEFAULT.sigma, d=DEFAULT.d)
    theta = np.zeros((2, DEFAULT.d))
    theta[0, :2] = tm.c, tm.eps
    theta[1, :2] = tm.eps, tm.c
    return theta


LS_SMALL = (16, 64, 256, 1024, 4096)
LS_FULL = (16, 64, 256, 1024, 4096, 16384, 65536)


@styled
def plot_head_limit_error(err: dict) -> matplotlib.figure.Figure:
    """Log-log plot of :func:`head_limit_error` with its fitted line and an L^(-1/2) guide."""
    fig = matplotlib.figure.Figure(figsize=(5.5, 4), layout="constrained")
    ax = fig.add_subplot()
    L = err["L"]
    ax.errorbar(L, err["rmse"], yerr=2 * err["sem"], fmt="o", capsize=3,
                label="finite-$L$ output vs limit (RMS, ±2 s.e.)")
    ax.plot(L, np.exp(err["intercept"]) * L ** err["slope"], color="tab:blue", lw=1,
            label=f"fitted slope {err['slope']:.3f}")
    ax.plot(L, err["rmse"][0] * (L / L[0]) ** -0.5, color="grey", ls="--", lw=1,
            label=r"$L^{-1/2}$ guide")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("prompt length $L$ (keys)")
    ax.set_ylabel(r"$\| T_L(z) - T_\infty(z) \|$ (RMS over $z$, prompts)")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return fig


@register("head-large-L", chapter="attention")
def head_large_L(size: str = "small") -> matplotlib.figure.Figure:
    """The two-head layer's finite-L output approaching its large-L limit as L grows."""
    Ls = LS_SMALL if size == "small" else LS_FULL
    mix = orthogonal_mixture(**DEFAULT.mixture_args())
    err = head_limit_error(jax.random.PRNGKey(0), default_heads(), mix, DEFAULT.lam, Ls)
    return plot_head_limit_error(err)
