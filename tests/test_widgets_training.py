"""The training explorer: its callback redraws from the sliders, fast, and the widget is
wired to it (chapter "Training dynamics")."""

import time

import matplotlib.figure
import numpy as np
import pytest

from attnclust.widgets import training as wt


def _axis(fig, ylabel):
    return next(ax for ax in fig.axes if ax.get_ylabel().startswith(ylabel))


def _curves(fig):
    """The |cos| curves, the risk and the heads' final points drawn in the figure."""
    ax_cos, ax_risk = _axis(fig, "|cos|"), _axis(fig, "minibatch risk")
    ax_plane = _axis(fig, "coordinate")
    return np.concatenate([np.asarray(ln.get_ydata(), float) for ln in ax_cos.get_lines()] +
                          [np.asarray(ln.get_ydata(), float) for ln in ax_risk.get_lines()] +
                          [np.asarray(c.get_offsets(), float).ravel() for c in ax_plane.collections])


def test_draw_training_defaults_are_sane():
    fig = wt.draw_training()
    assert isinstance(fig, matplotlib.figure.Figure)
    cos = np.concatenate([ln.get_ydata() for ln in _axis(fig, "|cos|").get_lines()])
    assert cos.size and np.all((cos >= 0) & (cos <= 1 + 1e-9))
    risk = np.asarray(_axis(fig, "minibatch risk").get_lines()[0].get_ydata())
    assert risk.size and np.all(np.isfinite(risk)) and np.all(risk > 0)


@pytest.mark.parametrize("change", [dict(lam=4.0), dict(seed=2), dict(r_over_sigma=8.0),
                                    dict(init="close")])
def test_slider_changes_data(change):
    base = _curves(wt.draw_training())
    moved = _curves(wt.draw_training(**change))
    assert base.shape != moved.shape or not np.allclose(base, moved)


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


def test_latency_p95_under_300ms():
    fig = wt.draw_training()  # warm-up: trains the default group (every lam and seed)
    times = []
    for i in range(20):  # every call a different (lam, seed) pair: 16 distinct, then repeats
        lam = wt.LAMS[i % len(wt.LAMS)]
        seed = (i // len(wt.LAMS)) % wt.N_SEEDS
        t = time.perf_counter()
        wt.draw_training(lam=lam, seed=seed, fig=fig)
        times.append(time.perf_counter() - t)
    p50, p95 = np.percentile(times, [50, 95])
    print(f"draw_training latency over 20 calls: p50 {p50 * 1e3:.0f} ms, p95 {p95 * 1e3:.0f} ms")
    assert p95 < 0.3


def test_explorer_widget():
    pytest.importorskip("ipywidgets")
    box = wt.training_explorer()
    assert set(box.sliders) == {"lam", "r_over_sigma", "d", "L", "seed", "init"}
    assert box.sliders["lam"].value == wt.DEFAULTS["lam"]
    assert tuple(box.sliders["init"].options) == tuple(wt.INITS)
    before = _curves(box.figure)
    box.sliders["lam"].value = 2.0  # a slider move redraws the widget's figure
    after = _curves(box.figure)
    assert before.shape != after.shape or not np.allclose(before, after)


def test_widgets_package_resolves_names():
    import attnclust.widgets as W

    assert W.training_explorer is wt.training_explorer
    assert W.draw_training is wt.draw_training
