"""The training explorer (chapter "Training dynamics").

Sliders: inverse temperature lam, separation r / sigma, dimension d, prompt length L, seed and the
initialisation regime. The update callback :func:`draw_training` is a library function and
must answer within a fraction of a second, so the sliders take values on small grids and
every move trains exactly the run it shows, on demand (:func:`training_run`, cached):

- one ``attnclust.fit`` call, without a seed axis, with the chapter's "small" budget
  (:data:`attnclust.book.sweeps.BUDGETS`: 400 Adam steps, batch 8, lr 2e-2) and the key that
  seed ``s`` has in the group :func:`training_runs` (every (lam, seed) of the grids in
  one ``fit_many`` call through :func:`attnclust.book.sweeps.run_seeds`:
  ``jax.random.split(PRNGKey(0), N_SEEDS)[s]``), so it is that group's run, up to float
  rounding (checked by ``tests/test_widgets_training.py``);
- lam, the mixture, the initial heads and the key are traced arguments of the compiled
  program, so one program serves every move at a given (d, L); :func:`prepare` compiles
  the nine programs of ``DIMS`` x ``LENGTHS`` (and the initialisations of every d), and
  :func:`training_explorer` starts it in a background thread when the explorer opens, so
  that a reader's moves do not wait for compilation.

In the static HTML book (``training_explorer(static=True)``, :mod:`attnclust.book.widgets.static`)
there is no kernel to train on demand: the frames over :data:`STATIC_GRID` are drawn from
the group computations :func:`training_runs` (``draw_training(..., batched=True)``), one
``fit_many`` call per (r/sigma, d, L, init) of the grid that trains every (lam, seed) of it.
"""

from __future__ import annotations

import threading
from functools import lru_cache, partial

import jax
import matplotlib.figure
import numpy as np
from matplotlib.ticker import MaxNLocator

from attnclust.book import sweeps
from attnclust import _validate as v
from attnclust.metrics import alignment
from attnclust.setting import DEFAULT
from attnclust.mixture import orthogonal_mixture, sample
from attnclust.train import INITS, FitResult, fit
from attnclust.book.widgets._background import BackgroundPrepare, freeze_long_lived
from attnclust.book.widgets._registry import register
from attnclust.book.widgets.static import set_alt

LAMS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""The values of the lam slider (five: the static explorer varies it)."""
SEPARATIONS = (2.0, 3.0, 4.0, 6.0, 8.0)
"""The values of the r / sigma slider."""
DIMS = (2, 5, 10)
"""The values of the d slider."""
LENGTHS = (20, 50, 100)
"""The values of the L slider (tokens per prompt)."""
BUDGET = sweeps.budget("small")
"""The training budget of every run of the explorer (the chapter's "small" budget)."""
N_SEEDS = BUDGET.seeds // len(LAMS)
"""Seeds of the seed slider (the budget's seeds shared among the values of lam)."""
R = DEFAULT.r
DEFAULTS = dict(lam=DEFAULT.lam, r_over_sigma=DEFAULT.r / DEFAULT.sigma, d=DEFAULT.d, L=DEFAULT.L,
                seed=0, init="small")
"""Slider values of the static figure (the book's default setting)."""

HEAD_COLOURS = ("tab:blue", "tab:orange")


def _snap(value: float, grid: tuple) -> float:
    """The grid value nearest to ``value``."""
    grid_arr = np.asarray(grid, dtype=float)
    return grid[int(np.argmin(np.abs(grid_arr - float(value))))]


def _check(d: int, L: int, seed: int, init: str) -> None:
    v.one_of("d", d, DIMS)
    v.one_of("L", L, LENGTHS)
    if not 0 <= seed < N_SEEDS:
        raise ValueError(f"seed must be in 0..{N_SEEDS - 1}, got seed={seed}")
    v.one_of("init", init, INITS)


SEED0 = 0
"""The seed of ``jax.random.PRNGKey`` from which the runs' keys are split (the default
``seed`` of :func:`attnclust.book.sweeps.run_seeds`)."""

_LOCKS = {(d, L): threading.Lock() for d in DIMS for L in LENGTHS}
"""One lock per compiled program (d, L), held while a run of that shape trains: a callback
that needs the program the background :func:`prepare` is compiling waits for it instead
of compiling it a second time; callbacks at other shapes do not wait."""

_PREPARED: set = set()
"""(d, L) and (d, init) pairs already compiled in this process (by either thread)."""


@lru_cache(maxsize=64)
def training_runs(r_over_sigma: float, d: int, L: int, init: str) -> FitResult:
    """Every (lam, seed) of ``LAMS`` x ``range(N_SEEDS)`` trained in one ``fit_many`` call
    (lam-major order: run ``i * N_SEEDS + s`` has ``LAMS[i]`` and seed ``s``; seed ``s``
    has the same initial heads and batches for every lam), for the mixture
    ``orthogonal_mixture(2, d, r=2, sigma=2 / r_over_sigma)``, with the chapter's "small"
    budget (:data:`attnclust.book.sweeps.BUDGETS`), through :func:`attnclust.book.sweeps.run_seeds`.
    Cached. The explorer does not call it (it trains only the run it shows,
    :func:`training_run`); it is the group computation that run reproduces."""
    _check(d, L, 0, init)
    lams = tuple(float(lam) for lam in LAMS for _ in range(N_SEEDS))
    setting = DEFAULT.replace(d=d, r=R, sigma=R / float(r_over_sigma))
    return sweeps.run_seeds("small", setting=setting, lam=lams, init=init, L=L, seed=SEED0,
                            seeds=len(lams), repeat_keys=len(LAMS))


def run_key(seed: int) -> jax.Array:
    """The key of seed ``seed``: the one that run ``seed`` (and ``i * N_SEEDS + seed``) of
    :func:`training_runs` gets in :func:`attnclust.book.sweeps.run_seeds`."""
    return jax.random.split(jax.random.PRNGKey(SEED0), N_SEEDS)[int(seed)]


def _train(lam: float, r_over_sigma: float, d: int, L: int, seed: int, init: str) -> FitResult:
    """One run, trained now (uncached): ``attnclust.fit`` with the explorer's budget."""
    mixture = orthogonal_mixture(K=2, d=d, r=R, sigma=R / float(r_over_sigma))
    with _LOCKS[d, L]:
        result = fit(run_key(seed), mixture, BUDGET, lam=float(lam), L=L, init=init,
                     progress=False)
        _PREPARED.update({(d, L), (d, init)})
    return result


@lru_cache(maxsize=256)
def training_run(lam: float, r_over_sigma: float, d: int, L: int, seed: int, init: str) -> FitResult:
    """The run the explorer shows for these slider values (grid values, see
    :func:`draw_training`): ``attnclust.fit`` from the key :func:`run_key` ``(seed)`` on
    ``orthogonal_mixture(2, d, r=2, sigma=2 / r_over_sigma)`` at inverse temperature ``lam``,
    with the chapter's "small" budget (``BUDGET``: steps, batch, learning rate, records)
    and initialisation ``init``. Equal, up to float rounding, to run
    ``LAMS.index(lam) * N_SEEDS + seed`` of :func:`training_runs`. Cached."""
    _check(d, L, seed, init)
    return _train(lam, r_over_sigma, d, L, seed, init)


def _sample_tokens(r_over_sigma: float, d: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    mix = orthogonal_mixture(K=2, d=d, r=R, sigma=R / float(r_over_sigma))
    X, labels = sample(jax.random.PRNGKey(1), mix, 1, n)
    return np.asarray(X[0]), np.asarray(labels[0])


_tokens = lru_cache(maxsize=64)(_sample_tokens)


def _curves_of(run: FitResult, d: int):
    """(steps, ``|cos|`` per head (n, H), risk (n,), heads (n+1, H, d)) of one run."""
    mu = orthogonal_mixture(K=2, d=d, r=R, sigma=1.0).centroids
    thetas = np.concatenate([run.theta0[None], run.thetas], axis=0)
    return run.steps, alignment(run.thetas, mu), run.risk, thetas


@lru_cache(maxsize=256)
def _run_curves(r_over_sigma, d, L, init, lam, seed):
    """:func:`_curves_of` the run :func:`training_run` (cached)."""
    return _curves_of(training_run(lam, r_over_sigma, d, L, seed, init), d)


@lru_cache(maxsize=256)
def _group_curves(r_over_sigma, d, L, init, lam, seed):
    """:func:`_curves_of` run ``LAMS.index(lam) * N_SEEDS + seed`` of :func:`training_runs`
    (cached)."""
    group, i = training_runs(r_over_sigma, d, L, init), LAMS.index(lam) * N_SEEDS + seed
    run = FitResult(theta=group.theta[i], steps=group.steps, risk=group.risk[i],
                    thetas=group.thetas[i], theta0=group.theta0[i])
    return _curves_of(run, d)


def _prepare_jobs() -> list[tuple[int, int, str]]:
    """(d, L, init) of :func:`prepare`'s runs, so that every (d, L) and every (d, init) is
    compiled, in the order a reader's first moves need them: the defaults' d with every
    init, then the shapes one slider away from the defaults, then the others."""
    d0, L0 = DEFAULTS["d"], DEFAULTS["L"]
    jobs = [(d0, L0, DEFAULTS["init"])]
    jobs += [(d0, min(LENGTHS), init) for init in INITS if init != DEFAULTS["init"]]
    pairs = sorted(((d, L) for d in DIMS for L in LENGTHS), key=lambda p: (p[0] != d0) + (p[1] != L0))
    covered = {(d, init) for d, _, init in jobs}
    for d, L in pairs:
        if any(job[:2] == (d, L) for job in jobs):
            continue
        init = next((i for i in INITS if (d, i) not in covered), DEFAULTS["init"])
        covered.add((d, init))
        jobs.append((d, L, init))
    jobs += [(d, min(LENGTHS), init) for d in DIMS for init in INITS if (d, init) not in covered]
    return jobs


def prepare(stop: threading.Event | None = None) -> None:
    """Compile what a slider move can need, so that no move waits for compilation: the
    training program of every (d, L) in ``DIMS`` x ``LENGTHS`` (each through one real run
    of the budget, by the same ``fit`` call as a move), the initialisation of every regime
    at every d, and the token sample of every d (``_prepare_jobs``). Takes seconds per
    program; the results are not cached (the figure of a later move is trained afresh, as
    without ``prepare``), and what this process has compiled already is skipped. Safe to
    run in a background thread while the explorer's callbacks run: each shape's training
    holds a lock, so a shape is compiled once; when ``stop`` is set it returns before its
    next run. At the end it freezes what the process holds (``freeze_long_lived``), so
    that the garbage collector's full collections during later moves stay short. The
    chapter's static figure does not call it."""
    sampled = set()
    for d, L, init in _prepare_jobs():
        if stop is not None and stop.is_set():
            return
        if d not in sampled:
            _sample_tokens(DEFAULTS["r_over_sigma"], d)
            sampled.add(d)
        if {(d, L), (d, init)} <= _PREPARED:
            continue
        run = _train(DEFAULTS["lam"], DEFAULTS["r_over_sigma"], d, L, DEFAULTS["seed"], init)
        _curves_of(run, d)
    freeze_long_lived()  # what the process holds now is long-lived: no move walks it again


_background = BackgroundPrepare(prepare, name="attnclust-training-prepare")


prepare_in_background = _background.start
"""Start :func:`prepare` in a daemon thread (once per process) and return the thread, or
None when the environment variable ``ATTNCLUST_WIDGETS_NO_PREPARE`` is set
(``attnclust.book.widgets._background.BackgroundPrepare``)."""


FIGSIZE = (5.0, 6.6)
"""The explorer's figure size in inches: 500 px wide at the book's 100 dpi, so that its
smallest text (8 pt) is at least 7 CSS px on a phone (``attnclust.book.figures._legibility``);
the two panels one above the other."""

_MARGINS = dict(left=0.14, right=0.86, bottom=0.07, top=0.94, hspace=0.42)
"""Fixed margins (no layout engine: the layout is the same at every move, so a redraw
does not solve it again)."""


def _build(fig: matplotlib.figure.Figure) -> dict:
    """Create the axes and every artist once; :func:`draw_training` then only updates data.
    Plain text only (no mathtext, which is slow to lay out) and fixed margins."""
    fig.set_layout_engine("none")
    # the margins on the grid itself: subplots_adjust would warn on a figure made under a
    # layout engine (the book's style turns constrained layout on), which "none" leaves
    # marked incompatible with it
    ax_cos, ax_plane = fig.subplots(2, 1, height_ratios=(1, 1.35), gridspec_kw=_MARGINS)
    art = {"cos": [ax_cos.plot([], [], color=HEAD_COLOURS[h], label=f"|cos| head {h + 1}")[0]
                   for h in range(2)]}
    ax_cos.set_ylim(0, 1.02)
    ax_cos.set_xlabel("Adam step", fontsize=9)
    ax_cos.set_ylabel("|cos| with matched centroid", fontsize=9)
    ax_cos.grid(alpha=0.3)
    ax_risk = ax_cos.twinx()
    art["risk"] = ax_risk.plot([], [], color="grey", lw=0.8, alpha=0.8, label="minibatch risk")[0]
    ax_risk.set_ylabel("minibatch risk", fontsize=9)
    lines = art["cos"] + [art["risk"]]
    ax_cos.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="lower right")
    # a title at a set height: matplotlib does not move it above the tick labels at each
    # draw (which lays out every tick label of the axes once more)
    art["title"] = ax_cos.set_title("", fontsize=9, y=1.0, pad=5)
    art["tokens"] = ax_plane.scatter(np.zeros(1), np.zeros(1), s=5, alpha=0.25, linewidths=0)
    ax_plane.scatter([R, 0], [0, R], marker="x", s=70, color="black", label="centroids")
    art["paths"] = [ax_plane.plot([], [], color=HEAD_COLOURS[h], lw=1.2)[0] for h in range(2)]
    art["ends"] = [ax_plane.scatter([0], [0], color=HEAD_COLOURS[h], s=30, zorder=3,
                                    label=f"head {h + 1} (final)") for h in range(2)]
    ax_plane.set_xlabel("coordinate on e₁", fontsize=9)
    ax_plane.set_ylabel("coordinate on e₂", fontsize=9)
    ax_plane.set_title("heads' paths in the centroids' plane (× centroids, • final heads;\n"
                       "scaled to final length r; a head and its negative are the same head)",
                       fontsize=9, y=1.0, pad=5)
    ax_plane.set_aspect("equal", adjustable="box")
    ax_plane.grid(alpha=0.3)
    for ax in (ax_cos, ax_risk, ax_plane):  # few tick labels: each is text to lay out at a redraw
        ax.tick_params(labelsize=8)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    ax_cos.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    ax_plane.xaxis.set_major_locator(MaxNLocator(nbins=4))
    art["axes"] = (ax_cos, ax_risk, ax_plane)
    return art


def training_alt(lam, r_over_sigma, d, L, seed, init, cos, risk) -> str:
    """The alt text of the figure :func:`draw_training` draws: its slider values and how
    the run ended."""
    return (f"λ = {lam:g}, r/σ = {r_over_sigma:g}, d = {d}, L = {L}, seed {seed}, init {init}: "
            f"after {BUDGET.steps} Adam steps the heads' absolute cosines with their matched "
            f"centroids are {cos[-1, 0]:.2f} and {cos[-1, 1]:.2f} (from {cos[0, 0]:.2f} and "
            f"{cos[0, 1]:.2f}), the minibatch risk went from {risk[0]:.3g} to {risk[-1]:.3g}; "
            f"below, the heads' paths in the centroids' plane over a cloud of tokens.")


def draw_training(
    lam: float = DEFAULTS["lam"],
    r_over_sigma: float = DEFAULTS["r_over_sigma"],
    d: int = DEFAULTS["d"],
    L: int = DEFAULTS["L"],
    seed: int = DEFAULTS["seed"],
    init: str = DEFAULTS["init"],
    fig: matplotlib.figure.Figure | None = None,
    batched: bool = False,
) -> matplotlib.figure.Figure:
    """Draw one training run: ``|cos|`` of each head with its matched centroid and the minibatch
    risk against the step (above), and the heads' paths in the plane of the two centroids
    over a sample of tokens (below). ``lam`` and ``r_over_sigma`` snap to ``LAMS`` and
    ``SEPARATIONS``; ``d``, ``L``, ``seed``, ``init`` must be grid values.

    Draws into a new figure, or into ``fig`` when given: a figure this function drew before
    keeps its axes and artists and only gets new data (fast, for the widget); any other
    figure is cleared first.

    With ``batched``, the run is taken from its group computation :func:`training_runs`
    (the same run up to float rounding; one ``fit_many`` call trains every (lam, seed)
    of the grids at once): what the static explorer precomputes."""
    lam = _snap(lam, LAMS)
    r_over_sigma = _snap(r_over_sigma, SEPARATIONS)
    d, L, seed = int(d), int(L), int(seed)
    _check(d, L, seed, init)
    curves = _group_curves if batched else _run_curves
    steps, cos, risk, thetas = curves(r_over_sigma, d, L, init, lam, seed)
    X, labels = _tokens(r_over_sigma, d)
    if fig is None:
        fig = matplotlib.figure.Figure(figsize=FIGSIZE)
    art = getattr(fig, "_training_artists", None)
    if art is None:
        fig.clf()
        art = fig._training_artists = _build(fig)
    ax_cos, ax_risk, ax_plane = art["axes"]
    for h in range(2):
        art["cos"][h].set_data(steps, cos[:, h])
    art["risk"].set_data(steps, risk)
    ax_cos.set_xlim(0, steps[-1])
    lo, hi = float(np.min(risk)), float(np.max(risk))
    pad = 0.05 * (hi - lo) + 1e-6
    ax_risk.set_ylim(lo - pad, hi + pad)
    art["title"].set_text(
        f"λ={lam:g}, r/σ={r_over_sigma:g}, d={d}, L={L}, seed {seed}, init {init!r}")
    art["tokens"].set_offsets(X[:, :2])
    art["tokens"].set_facecolors(np.where(labels[:, None] == 0,
                                          np.array([[0.12, 0.47, 0.71, 1.0]]),
                                          np.array([[1.0, 0.5, 0.05, 1.0]])))
    points = [X[:, :2], np.array([[R, 0.0], [0.0, R]])]
    for h in range(2):
        path = thetas[:, h, :2] * R / max(np.linalg.norm(thetas[-1, h]), 1e-12)
        art["paths"][h].set_data(path[:, 0], path[:, 1])
        art["ends"][h].set_offsets(path[-1:])
        points.append(path)
    allp = np.concatenate(points)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    centre, half = (lo + hi) / 2, 0.55 * float(np.max(hi - lo)) + 1e-6  # a square view
    ax_plane.set_xlim(centre[0] - half, centre[0] + half)
    ax_plane.set_ylim(centre[1] - half, centre[1] + half)
    return set_alt(fig, training_alt(lam, r_over_sigma, d, L, seed, init, cos, risk))


STATIC_GRID = dict(lam=LAMS, r_over_sigma=SEPARATIONS, d=(DEFAULTS["d"],),
                   L=(DEFAULTS["L"],), seed=(DEFAULTS["seed"],), init=(DEFAULTS["init"],))
"""The slider values of the explorer in the static HTML book (every combination is drawn
when the book is built, :mod:`attnclust.book.widgets.static`): every lam and every
separation (25 frames), d, L, the seed and the initialisation at their defaults (the note
under the explorer names them). One compiled program and ``len(SEPARATIONS)`` calls of
:func:`training_runs` (each trains every (lam, seed) of ``LAMS`` x ``range(N_SEEDS)``).
Every other (d, L) is a program of its own to compile and train, and every other
initialisation a group of its own; the chapter's build pays for both, so they keep their
defaults there."""

STATIC_ALT = ("Above, the absolute cosine of the two heads with their matched centroids and "
              "the minibatch risk against the Adam step; below, the two heads' paths in the "
              "plane of the centroids over a cloud of tokens; the title gives the slider values.")
"""The alt text of a frame without its own (each frame has its own: :func:`training_alt`)."""


@register("training", chapter="training_dynamics", draw=draw_training,
          frames=partial(draw_training, batched=True),
          moves=(("lam", (0.25, 2.0, 4.0)), ("seed", (1, 2)), ("r_over_sigma", (2.0, 3.0, 6.0, 8.0)),
                 ("init", ("near", "large", "close")), ("L", (20, 100)), ("d", (2, 10))))
def training_explorer(static: bool = False):
    """The explorer: sliders lam, r/sigma, d, L, seed, and the initialisation regime.

    Returns an ``ipywidgets.VBox``; its ``figure`` attribute is the matplotlib figure that
    every move redraws through :func:`draw_training`, ``sliders`` maps names to controls,
    ``prepare_thread`` is the background thread of :func:`prepare` (started once the
    figure at the defaults is drawn, so that later moves do not wait for compilation).
    With ``static``, the box together with its precomputed twin over :data:`STATIC_GRID`
    (:func:`attnclust.book.widgets.static.twin`, frames by ``draw_training(batched=True)``):
    the live widget in Jupyter, the precomputed sliders in the HTML book.
    """
    box = _live_explorer()
    if static:  # the frames first: the background compilation would compete with them
        from attnclust.book.widgets.static import twin

        both = twin(training_explorer, box, STATIC_GRID, DEFAULTS, STATIC_ALT)
    box.prepare_thread = prepare_in_background()
    return both if static else box


def _live_explorer():
    import ipywidgets as w
    from IPython.display import display

    once = dict(continuous_update=False)  # a drag trains the value it ends on, not every one
    controls = dict(
        lam=w.SelectionSlider(options=LAMS, value=DEFAULTS["lam"], description="λ", **once),
        r_over_sigma=w.SelectionSlider(options=SEPARATIONS, value=DEFAULTS["r_over_sigma"],
                                       description="r / σ", **once),
        d=w.SelectionSlider(options=DIMS, value=DEFAULTS["d"], description="d", **once),
        L=w.SelectionSlider(options=LENGTHS, value=DEFAULTS["L"], description="L", **once),
        seed=w.IntSlider(value=DEFAULTS["seed"], min=0, max=N_SEEDS - 1, description="seed",
                         **once),
        init=w.ToggleButtons(options=INITS, value=DEFAULTS["init"], description="init"),
    )
    out = w.Output()
    fig = matplotlib.figure.Figure(figsize=FIGSIZE)

    def update(**values):
        draw_training(**values, fig=fig)
        with out:
            out.clear_output(wait=True)
            display(fig)

    wired = w.interactive_output(update, controls)
    c = controls
    box = w.VBox([w.HBox([w.VBox([c["lam"], c["r_over_sigma"], c["seed"]]),
                          w.VBox([c["d"], c["L"]])]), c["init"], out, wired])
    box.figure = fig
    box.sliders = controls
    return box


__all__ = ["LAMS", "SEPARATIONS", "DIMS", "LENGTHS", "N_SEEDS", "DEFAULTS", "BUDGET", "SEED0",
           "STATIC_GRID", "STATIC_ALT", "FIGSIZE", "training_alt",
           "training_runs", "training_run", "run_key", "prepare", "prepare_in_background",
           "draw_training", "training_explorer"]
