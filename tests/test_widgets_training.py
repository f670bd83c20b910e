"""The training explorer (chapter "Training dynamics"): its callback draws the run it
claims (the run of the chapter's sweep, trained on demand), every slider move changes the
figure, and the widget is wired to it. (How fast a move is once ``prepare()`` has
compiled, against the 0.3 s goal, is measured by ``make bench``.)"""

import threading

import matplotlib.figure
import numpy as np
import pytest

from attnclust.metrics import alignment
from attnclust.mixture import orthogonal_mixture
from attnclust.book.widgets import slider_values, time_moves
from attnclust.book.widgets import training as wt
from attnclust.book.widgets._background import BackgroundPrepare

@pytest.fixture(scope="module")
def prepared():
    """Compile every (d, L) program and initialisation (what the explorer does in the
    background when it opens)."""
    wt.prepare()


def _axis(fig, ylabel):
    return next(ax for ax in fig.axes if ax.get_ylabel().startswith(ylabel))


def _curves(fig):
    """The |cos| curves, the risk and the heads' final points drawn in the figure."""
    ax_cos, ax_risk = _axis(fig, "|cos|"), _axis(fig, "minibatch risk")
    ax_plane = _axis(fig, "coordinate")
    return np.concatenate([np.asarray(ln.get_ydata(), float) for ln in ax_cos.get_lines()] +
                          [np.asarray(ln.get_ydata(), float) for ln in ax_risk.get_lines()] +
                          [np.asarray(c.get_offsets(), float).ravel() for c in ax_plane.collections])


@pytest.mark.slow
def test_draw_training_defaults_are_sane():
    fig = wt.draw_training()
    assert isinstance(fig, matplotlib.figure.Figure)
    cos = np.concatenate([ln.get_ydata() for ln in _axis(fig, "|cos|").get_lines()])
    assert cos.size and np.all((cos >= 0) & (cos <= 1 + 1e-9))
    risk = np.asarray(_axis(fig, "minibatch risk").get_lines()[0].get_ydata())
    assert risk.size and np.all(np.isfinite(risk)) and np.all(risk > 0)


@pytest.mark.slow
@pytest.mark.parametrize("change", [dict(lam=4.0), dict(seed=2), dict(r_over_sigma=8.0),
                                    dict(init="close")])
def test_slider_changes_data(change):
    base = _curves(wt.draw_training())
    moved = _curves(wt.draw_training(**change))
    assert base.shape != moved.shape or not np.allclose(base, moved)


@pytest.mark.slow
def test_redraw_into_given_figure():
    fig = wt.draw_training()
    before = _curves(fig)
    again = wt.draw_training(lam=0.5, fig=fig)
    assert again is fig and len(fig.axes) == 3
    assert not np.allclose(before, _curves(fig))
    # a figure drawn by someone else is cleared and rebuilt
    other = matplotlib.figure.Figure()
    other.subplots(3, 3)
    assert len(wt.draw_training(fig=other).axes) == 3


def test_bad_values_raise():
    with pytest.raises(ValueError, match="d must be one of"):
        wt.draw_training(d=7)
    with pytest.raises(ValueError, match="init"):
        wt.draw_training(init="far")
    with pytest.raises(ValueError, match="seed"):
        wt.draw_training(seed=wt.N_SEEDS)


@pytest.mark.slow
def test_on_demand_run_is_the_group_run():
    """The run the explorer trains alone (``fit``, no seed axis) is run
    ``i * N_SEEDS + s`` of the chapter's group computation (one ``fit_many`` through
    ``sweeps.run_seeds``): the same initial heads exactly, and the same heads and risk up
    to float32 rounding, which the tiled pooling accumulates in a different order with and
    without the seed axis (measured on every run of this group: heads within 3.4e-5, the
    risk curve within 1.9e-4 relative; a neighbouring seed's curve differs at order one)."""
    r_over_sigma, d, L, init = 4.0, 2, 20, "close"  # the cheapest group to train
    group = wt.training_runs(r_over_sigma, d, L, init)
    mu = orthogonal_mixture(K=2, d=d, r=2.0, sigma=1.0).centroids
    for i, lam in enumerate(wt.LAMS):
        for s in range(wt.N_SEEDS):
            run, j = wt.training_run(lam, r_over_sigma, d, L, s, init), i * wt.N_SEEDS + s
            np.testing.assert_array_equal(run.theta0, group.theta0[j])
            np.testing.assert_allclose(run.thetas, group.thetas[j], rtol=0, atol=1e-4)
            np.testing.assert_allclose(alignment(run.thetas, mu), alignment(group.thetas[j], mu),
                                       rtol=0, atol=1e-4)
            np.testing.assert_allclose(run.risk, group.risk[j], rtol=1e-3)
            np.testing.assert_array_equal(run.steps, group.steps)


@pytest.mark.slow
def test_batched_draw_is_the_group_run():
    """``draw_training(batched=True)`` (the static explorer's frames) draws run
    ``LAMS.index(lam) * N_SEEDS + seed`` of the group computation, exactly."""
    r_over_sigma, d, L, init = 4.0, 2, 20, "close"  # the group of the test above (cached)
    group = wt.training_runs(r_over_sigma, d, L, init)
    mu = orthogonal_mixture(K=2, d=d, r=2.0, sigma=1.0).centroids
    lam, seed = wt.LAMS[2], 1
    j = wt.LAMS.index(lam) * wt.N_SEEDS + seed
    fig = wt.draw_training(lam, r_over_sigma, d, L, seed, init, batched=True)
    cos = [np.asarray(ln.get_ydata()) for ln in _axis(fig, "|cos|").get_lines()]
    np.testing.assert_array_equal(np.stack(cos, axis=1), alignment(group.thetas[j], mu))
    np.testing.assert_array_equal(_axis(fig, "minibatch risk").get_lines()[0].get_ydata(),
                                  group.risk[j])


@pytest.mark.integration
def test_every_slider_move_changes_the_figure(prepared):
    """Each slider of the explorer through every value of its grid, one slider at a time
    from the defaults (each move a new run, trained on demand), after ``prepare()``."""
    box = wt.training_explorer()  # its background prepare() finds nothing left to do
    fig = matplotlib.figure.Figure(figsize=(9.5, 4.0), layout="constrained")
    base = _curves(wt.draw_training(fig=fig))

    def changed(_, name, value):
        moved = _curves(fig)
        assert base.shape != moved.shape or not np.allclose(base, moved), (name, value)

    moves = time_moves(lambda **move: wt.draw_training(**move, fig=fig), box.sliders,
                       wt.DEFAULTS, changed)
    wt.draw_training(fig=fig)
    assert np.array_equal(_curves(fig), base)  # back at the defaults: the same figure
    assert len(moves) == sum(len(slider_values(c)) - 1 for c in box.sliders.values())


@pytest.mark.integration
def test_prepare_in_background_beside_moves(prepared):
    """``prepare()`` in a thread while moves train: no error, and the moves' runs are the
    same as without it (each shape's lock makes a move wait for a compilation in
    progress instead of doing it twice)."""
    expected = {L: wt.training_run(2.0, 6.0, 10, L, 1, "near").thetas for L in wt.LENGTHS}
    wt._PREPARED.clear()  # prepare() redoes its runs (compiled already: seconds)
    background = BackgroundPrepare(wt.prepare, name="test-prepare", delay_s=0)
    thread = background.start()
    assert background.start() is thread  # started once
    for L in wt.LENGTHS:
        np.testing.assert_array_equal(wt._train(2.0, 6.0, 10, L, 1, "near").thetas, expected[L])
    thread.join()
    assert background.error is None
    assert {(d, L) for d in wt.DIMS for L in wt.LENGTHS} <= wt._PREPARED


def test_prepare_covers_every_shape_and_init():
    jobs = wt._prepare_jobs()
    assert {(d, L) for d, L, _ in jobs} == {(d, L) for d in wt.DIMS for L in wt.LENGTHS}
    assert {(d, i) for d, _, i in jobs} == {(d, i) for d in wt.DIMS for i in wt.INITS}
    assert jobs[0] == (wt.DEFAULTS["d"], wt.DEFAULTS["L"], wt.DEFAULTS["init"])


def test_background_prepare_stops_and_can_be_disabled(monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("prepare trained after stop was set")

    monkeypatch.setattr(wt, "_train", no_training)
    monkeypatch.setattr(wt, "_PREPARED", set())
    stop = threading.Event()
    stop.set()
    wt.prepare(stop=stop)  # returns before its first run
    # at interpreter exit (or any stop) during the start delay, the thread ends without work:
    # _finish (what atexit runs) sets stop and joins the thread, which returns from its delay
    # at once. Were the stop broken, the join would last the 60 s delay, and the thread would
    # then train: no_training's error fails the test (whatever the load, no time is asserted).
    waiting = BackgroundPrepare(no_training, "test-delay", delay_s=60)
    thread = waiting.start()
    waiting._finish()
    assert waiting.stop.is_set() and not thread.is_alive() and waiting.error is None
    monkeypatch.setenv("ATTNCLUST_WIDGETS_NO_PREPARE", "1")
    assert BackgroundPrepare(lambda **_: None, "x").start() is None


@pytest.mark.slow
def test_static_figure_does_not_prepare(monkeypatch):
    """The chapter's figure at the defaults compiles only what it draws."""
    calls = []
    monkeypatch.setattr(wt, "prepare", lambda: calls.append(1))
    monkeypatch.setattr(wt, "_background", BackgroundPrepare(lambda **_: calls.append(1), "x"))
    wt.draw_training()
    assert calls == []


@pytest.mark.integration
def test_explorer_widget(prepared):
    box = wt.training_explorer()
    if box.prepare_thread is not None:
        box.prepare_thread.join()
    assert wt._background.error is None
    assert set(box.sliders) == {"lam", "r_over_sigma", "d", "L", "seed", "init"}
    assert box.sliders["lam"].value == wt.DEFAULTS["lam"]
    assert tuple(box.sliders["init"].options) == tuple(wt.INITS)
    before = _curves(box.figure)
    box.sliders["lam"].value = 2.0  # a slider move redraws the widget's figure
    after = _curves(box.figure)
    assert before.shape != after.shape or not np.allclose(before, after)


def test_widgets_package_resolves_names():
    import attnclust.book.widgets as W

    assert W.training_explorer is wt.training_explorer
    assert W.draw_training is wt.draw_training
