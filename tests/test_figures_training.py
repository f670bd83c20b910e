"""Every figure of the chapter "Training dynamics" builds at small size, is registered, and
shows sane data."""

import matplotlib.figure
import numpy as np
import pytest

import attnclust as ac
from attnclust import figures, sweeps
from attnclust.figures import training as ft

NAMES = ["training-inits", "training-outcomes", "training-separability", "training-dimension",
         "training-k-heads", "training-tilt", "training-explorer"]


def test_registered_for_the_chapter():
    names = figures.names()
    for name in NAMES:
        assert name in names
        assert figures.FIGURES[name].chapter == "training_dynamics"


def _ydata(fig):
    return [np.asarray(ln.get_ydata(), float) for ax in fig.axes for ln in ax.get_lines()]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_builds_small_with_sane_data(name):
    fig = figures.make(name, "small")
    assert isinstance(fig, matplotlib.figure.Figure) and fig.axes
    for ax in fig.axes:
        if ax.get_ylabel().startswith(("worst", "|cos|", "final")):
            for y in [np.asarray(ln.get_ydata(), float) for ln in ax.get_lines()]:
                y = y[np.isfinite(y)]
                assert np.all((y >= 0) & (y <= 1 + 1e-9)), (name, ax.get_ylabel())
            for c in ax.collections:
                off = np.asarray(c.get_offsets())
                if off.size:
                    assert np.all((off[:, 1] >= 0) & (off[:, 1] <= 1 + 1e-9)), name


@pytest.mark.slow
def test_outcome_fractions_sum_to_one():
    runs = sweeps.init_regimes("small")
    mu = ac.orthogonal_mixture().centroids
    for res in runs.values():
        o = sweeps.outcomes(res, mu)
        assert o.aligned + o.between + o.other == o.n == sweeps.budget("small").seeds
        assert o.between_ci[0] <= o.between / o.n <= o.between_ci[1]
    # near the centroids every run stays aligned
    assert sweeps.outcomes(runs["near"], mu).aligned == sweeps.budget("small").seeds


@pytest.mark.slow
def test_tilt_matches_large_L_minimiser():
    lams, cos = sweeps.tilt_vs_lam("small")
    for lam in sweeps.LAMS_TILT:
        measured = np.median(cos[lams == lam])
        assert abs(measured - ft.tilted_cos(lam, 2.0, 0.5)) < 0.01, lam


@pytest.mark.slow
def test_worst_alignment_shape():
    res = sweeps.run_seeds("small", init="near", steps=40, seeds=2)
    w = ft.worst_alignment(res, ac.orthogonal_mixture().centroids)
    assert w.shape == (2, 10) and np.all((w >= 0) & (w <= 1))
