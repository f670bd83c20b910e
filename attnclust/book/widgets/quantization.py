"""The quantization explorer (chapter "In-context quantization experiments").

``draw_quantization`` is the update callback: it draws one in-context prompt (centroids
redrawn from ``seed``), applies identity attention at inverse temperature ``lam`` and shows the
tokens moving to their outputs, beside the prompt's distortion against lam.
``quantization_explorer`` wires it to sliders (ipywidgets). The chapter shows
``draw_quantization()`` at the default values above the widget, for readers without a
kernel.

Speed: a prompt of L tokens is the first L tokens of a prompt of ``L_MAX`` tokens (the
L slider's largest value), and identity attention runs on the full ``L_MAX`` array with
the keys beyond L masked out (``identity_attend`` with a ``key_mask``, equal to
``attnclust.identity_attention`` of the L tokens up to float rounding; tested). So the
array shapes depend on K only: :func:`prepare` compiles the three programs (K = 2, 3, 4)
and :func:`quantization_explorer` starts it in a background thread when it opens; after
that no move compiles anything. Moving L adds or removes tokens at the end of the same
prompt instead of drawing a new one.
"""

from __future__ import annotations

import math
import threading
from functools import lru_cache

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.ticker import FormatStrFormatter, NullFormatter

import attnclust as ac

from attnclust import _validate as v
from attnclust import symbolic
from attnclust.book.widgets._background import BackgroundPrepare, freeze_long_lived
from attnclust.setting import DEFAULT
from attnclust.book.widgets._registry import register
from attnclust.book.widgets.static import set_alt

R = DEFAULT.r
"""Norm of every centroid; the separation slider sets sigma = R / (r/sigma)."""

DEFAULTS = dict(lam=DEFAULT.lam, r_over_sigma=DEFAULT.r / DEFAULT.sigma, K=DEFAULT.K, L=100, seed=0)
"""The explorer's default slider values (the static figure of the chapter uses them)."""

LAM_GRID = np.geomspace(0.05, 4.0, 12)
"""Temperatures of the right panel's distortion curve."""

L_MAX = 400
"""The L slider's largest value. Every prompt of at most ``L_MAX`` tokens is the start of
the ``L_MAX``-token prompt of its (K, seed) (longer prompts are drawn at their length)."""

K_VALUES = (2, 3, 4)
"""The values of the K slider."""

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


def _projection(centroids: np.ndarray) -> np.ndarray:
    """(2, d) orthonormal rows: the centroids' plane for K = 2; for K >= 3 the two leading
    directions of the centred centroids (exact for K = 3, a projection beyond)."""
    mu = np.asarray(centroids, float)
    if mu.shape[0] >= 3:
        mu = mu - mu.mean(axis=0)
    _, _, vt = np.linalg.svd(mu, full_matrices=False)
    return vt[:2]


def _check(lam, r_over_sigma, K, L, seed) -> tuple[int, int, int]:
    v.positive_finite("lam", lam)
    v.positive_finite("r_over_sigma", r_over_sigma)
    K = v.positive_int("K", K)
    if not 2 <= K <= 4:
        raise ValueError(f"K must be 2, 3 or 4, got K={K}")
    L = v.positive_int("L", L, minimum=K)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got seed={seed!r}")
    return K, L, int(seed)


def _draw_prompt(K: int, n: int, seed: int):
    """One in-context prompt of ``n`` tokens at sigma = 1 (NumPy arrays with a leading
    prompt axis of 1): tokens, labels, centroids, each token's own centroid."""
    d = max(K, 2)
    X, lab, mus = ac.sample_in_context(jax.random.PRNGKey(seed), K, d, R, 1.0, 1, n)
    return tuple(np.asarray(a) for a in (X, lab, mus, ac.own_centroids(mus, lab)))


_prompt = lru_cache(maxsize=64)(_draw_prompt)
""":func:`_draw_prompt`, cached (moving lam or r/sigma does not resample; the noise is
rescaled instead)."""


@jax.jit
def _quantize(X, own, mask, lam, lams):
    """Identity attention of the masked prompt at ``lam``, its distortion, and the
    distortion at every inverse temperature of ``lams`` (one compiled call per shape)."""
    Q = ac.identity_attend(X, X, lam, key_mask=mask)
    curve = jax.vmap(lambda l: ac.distortion(ac.identity_attend(X, X, l, key_mask=mask), own, mask))(lams)
    return Q, ac.distortion(Q, own, mask), curve


@lru_cache(maxsize=64)
def _exact_curve(sigma: float, d: int) -> np.ndarray:
    return np.array([symbolic.distortion_exact(l, R, sigma, d) for l in LAM_GRID])


def _data(lam, r_over_sigma, K, L, seed, prompt) -> dict:
    K, L, seed = _check(lam, r_over_sigma, K, L, seed)
    d = max(K, 2)
    sigma = R / float(r_over_sigma)
    n = max(L, L_MAX)
    X1, lab, mus, own = prompt(K, n, seed)
    X = own + sigma * (X1 - own)
    mask = np.arange(n) < L
    Q, dist, curve = _quantize(X, own, mask, float(lam), jnp.asarray(LAM_GRID, jnp.float32))
    pred = np.asarray(ac.nearest_centroid(Q, mus))[:, :L]
    Q = np.asarray(Q)
    out = {
        "X": X[0, :L], "labels": lab[0, :L], "centroids": mus[0], "Q": Q[0, :L],
        "sigma": sigma, "d": d, "distortion": float(dist),
        "ari": float(ac.adjusted_rand(lab[:, :L], pred)[0]),
        "noise_floor": d * sigma**2, "curve": np.asarray(curve),
        "exact": _exact_curve(sigma, d) if K == 2 else None,
    }
    if n == L_MAX:
        _PREPARED.add(K)
    return out


def quantization_data(
    lam: float = DEFAULTS["lam"], r_over_sigma: float = DEFAULTS["r_over_sigma"], K: int = DEFAULTS["K"],
    L: int = DEFAULTS["L"], seed: int = DEFAULTS["seed"],
) -> dict:
    """The numbers behind ``draw_quantization``: one in-context prompt (K orthogonal
    centroids of norm 2 in d = max(K, 2), sigma = 2 / r_over_sigma): the first L tokens
    of ``sample_in_context(PRNGKey(seed), K, d, 2, sigma, 1, max(L, L_MAX))``; its
    identity-attention outputs at ``lam``, the distortion and the oracle ARI (nearest true
    centroid of each output), and the prompt's distortion on ``LAM_GRID``. The centroids
    and the standard normal noise depend on (K, seed) only (and on L beyond ``L_MAX``):
    r/sigma rescales the same noise, L takes more or fewer of the same tokens."""
    return _data(lam, r_over_sigma, K, L, seed, _prompt)


def prepare(stop: threading.Event | None = None) -> None:
    """Compile every program a move can need, so that no move waits for compilation: the
    prompt sampler, the masked identity attention with its distortion curve and the
    nearest-centroid labels, at each K of ``K_VALUES`` (the shapes depend on K only, for
    L <= ``L_MAX``), skipping the K already compiled in this process. The prompts it
    draws are not cached. Safe to run in a background thread (a move that needs a program
    being compiled waits for it, once); when ``stop`` is set it returns before its next K.
    At the end it freezes what the process holds (``freeze_long_lived``), so that the
    garbage collector's full collections during later moves stay short. The chapter's
    static figure does not call it."""
    for K in K_VALUES:
        if K in _PREPARED:
            continue
        if stop is not None and stop.is_set():
            return
        with _lock(K):
            _data(DEFAULTS["lam"], DEFAULTS["r_over_sigma"], K, DEFAULTS["L"], 1, _draw_prompt)
    freeze_long_lived()  # what the process holds now is long-lived: no move walks it again


_LOCKS = {K: threading.Lock() for K in K_VALUES}
_OTHER_LOCK = threading.Lock()


def _lock(K) -> threading.Lock:
    """The lock of K's programs: held by :func:`prepare` while it compiles them and by a
    callback at that K, so that a callback needing a program being compiled waits for it
    instead of compiling it a second time (callbacks at other K do not wait)."""
    return _LOCKS.get(K, _OTHER_LOCK) if isinstance(K, (int, np.integer)) else _OTHER_LOCK


_PREPARED: set = set()
"""The K whose programs (at ``L_MAX`` tokens) this process has compiled, by either thread."""

_background = BackgroundPrepare(prepare, name="attnclust-quantization-prepare")


prepare_in_background = _background.start
"""Start :func:`prepare` in a daemon thread (once per process) and return the thread, or
None when the environment variable ``ATTNCLUST_WIDGETS_NO_PREPARE`` is set
(``attnclust.book.widgets._background.BackgroundPrepare``)."""


def draw_quantization(
    lam: float = DEFAULTS["lam"], r_over_sigma: float = DEFAULTS["r_over_sigma"], K: int = DEFAULTS["K"],
    L: int = DEFAULTS["L"], seed: int = DEFAULTS["seed"],
) -> plt.Figure:
    """Draw the explorer's figure for one set of slider values (the widget's callback).

    Above: the prompt's tokens (coloured by true component) and their identity-attention
    outputs (black dots, joined to their tokens), in the plane of the centroids (stars).
    Below: this prompt's distortion against lam, the current lam marked, with the large-L
    exact curve when K = 2 and the noise floor d sigma^2.
    """
    with _lock(K):
        data = quantization_data(lam, r_over_sigma, K, L, seed)
    P = _projection(data["centroids"])
    x, q, mu = data["X"] @ P.T, data["Q"] @ P.T, data["centroids"] @ P.T
    fig, (a, b) = plt.subplots(2, 1, figsize=FIGSIZE, gridspec_kw={"height_ratios": [1.45, 1]})
    cols = [_COLOURS[c] for c in data["labels"]]
    a.add_collection(LineCollection(np.stack([x, q], axis=1), colors="0.7", linewidths=0.5))
    a.scatter(x[:, 0], x[:, 1], c=cols, s=10, alpha=0.8)
    a.scatter(q[:, 0], q[:, 1], c="k", s=6)
    a.scatter(mu[:, 0], mu[:, 1], marker="*", s=220, c="gold", edgecolors="k", zorder=3)
    a.set_aspect("equal", adjustable="datalim")
    a.set_title(f"λ = {lam:.3g}, r/σ = {r_over_sigma:.3g}, K = {K}, L = {L}, seed {seed}\n"
                f"distortion {data['distortion']:.3f}, oracle ARI {data['ari']:.3f}", fontsize=9)
    a.set_xticks([])
    a.set_yticks([])
    b.loglog(LAM_GRID, data["curve"], "o-", ms=3, label="this prompt")
    if data["exact"] is not None:
        b.loglog(LAM_GRID, data["exact"], "k-", lw=1, label="large-L exact")
    b.axhline(data["noise_floor"], color="0.5", ls=":", label="dσ²")
    b.axvline(lam, color="tab:red", lw=1, label="current λ")
    b.set_xlabel("λ", fontsize=9)
    b.set_ylabel("distortion", fontsize=9)
    b.tick_params(labelsize=8)
    b.legend(fontsize=8, ncols=2)
    for axis in (b.xaxis, b.yaxis):  # plain tick labels: no mathtext, a fast redraw
        axis.set_major_formatter(FormatStrFormatter("%g"))
        axis.set_minor_formatter(NullFormatter())
    fig.subplots_adjust(left=0.13, right=0.97, bottom=0.08, top=0.93, hspace=0.28)
    return set_alt(fig, quantization_alt(lam, r_over_sigma, K, L, seed, data))


FIGSIZE = (5.0, 6.6)
"""The explorer's figure size in inches: 500 px wide at the book's 100 dpi, so that its
smallest text (8 pt) is at least 7 CSS px on a phone (``attnclust.book.figures._legibility``)."""


def quantization_alt(lam, r_over_sigma, K, L, seed, data: dict) -> str:
    """The alt text of the figure :func:`draw_quantization` draws: its slider values and
    what the prompt's outputs give."""
    best = float(LAM_GRID[int(np.argmin(data["curve"]))])
    return (f"λ = {lam:.3g}, r/σ = {r_over_sigma:.3g}, K = {K}, L = {L}, seed {seed}: the "
            f"prompt's tokens joined to their identity-attention outputs in the centroids' "
            f"plane; distortion {data['distortion']:.3f} against the noise floor "
            f"{data['noise_floor']:.3f}, oracle ARI {data['ari']:.3f}. Below, the prompt's "
            f"distortion against λ, lowest near λ = {best:.2g}.")


STATIC_GRID = dict(lam=(0.1, 0.3, 1.0, 2.0, 4.0), r_over_sigma=(1.5, 2.0, 3.0, 4.0, 8.0),
                   K=(DEFAULTS["K"],), L=(DEFAULTS["L"],), seed=(DEFAULTS["seed"],))
"""The slider values of the explorer in the static HTML book (every combination is drawn
when the book is built, :mod:`attnclust.book.widgets.static`): five temperatures and five
separations (25 frames), K, L and the seed at their defaults (the note under the explorer
names them)."""

STATIC_ALT = ("Above, one prompt's tokens and their identity-attention outputs projected on the "
              "centroid plane; below, the distortion against lambda with the current lambda "
              "marked; the title gives the prompt's distortion and the oracle ARI.")
"""The alt text of a frame without its own (each frame has its own: :func:`quantization_alt`)."""


@register("quantization", chapter="icq_experiments", draw=draw_quantization,
          moves=(("lam", (0.25, 0.5, 2.0, 4.0)), ("r_over_sigma", (2.0, 6.0)), ("K", (3, 4)),
                 ("L", (200, 400)), ("seed", (1, 2, 3))))
def quantization_explorer(static: bool = False):
    """Sliders for lam (log scale), r/sigma, K, L and seed, redrawing
    ``draw_quantization`` (needs a live kernel; returns an ipywidgets VBox). Opening it
    starts :func:`prepare` in a background thread (the box's ``prepare_thread``), so that
    the first move to a new K does not wait for compilation. With ``static``, the box
    together with its precomputed twin over :data:`STATIC_GRID`
    (:func:`attnclust.book.widgets.static.twin`): the live widget in Jupyter, the
    precomputed sliders in the HTML book."""
    box = _live_explorer()
    if not static:
        return box
    from attnclust.book.widgets.static import twin

    return twin(quantization_explorer, box, STATIC_GRID, DEFAULTS, STATIC_ALT)


def _live_explorer():
    import ipywidgets as w
    from IPython.display import display

    sliders = dict(
        lam=w.FloatLogSlider(value=DEFAULTS["lam"], base=10, min=math.log10(0.05), max=math.log10(4.0),
                             step=0.05, description="λ", continuous_update=False),
        r_over_sigma=w.FloatSlider(value=DEFAULTS["r_over_sigma"], min=1.0, max=8.0, step=0.25,
                                   description="r / σ", continuous_update=False),
        K=w.IntSlider(value=DEFAULTS["K"], min=min(K_VALUES), max=max(K_VALUES), description="K",
                      continuous_update=False),
        L=w.IntSlider(value=DEFAULTS["L"], min=20, max=L_MAX, step=10, description="L",
                      continuous_update=False),
        seed=w.IntSlider(value=DEFAULTS["seed"], min=0, max=20, description="seed", continuous_update=False),
    )

    def update(**values):
        fig = draw_quantization(**values)
        display(fig)
        plt.close(fig)

    out = w.interactive_output(update, sliders)  # redraws into ``out`` on every change
    box = w.VBox([w.HBox([sliders["lam"], sliders["r_over_sigma"], sliders["K"]]),
                  w.HBox([sliders["L"], sliders["seed"]]), out])
    box.sliders = sliders
    box.prepare_thread = prepare_in_background()
    return box
