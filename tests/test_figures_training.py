"""Every figure of the chapter "Training dynamics" builds at small size, is registered, and
shows sane data; the chapter's experiments give what the chapter says at the book's budget."""

import matplotlib.collections
import matplotlib.figure
import numpy as np
import pytest

from attnclust.book import figures, sweeps
from attnclust.book.experiments import training as tr

NAMES = ["training-inits", "training-outcomes", "training-landscape", "training-separability",
         "training-dimension", "training-k-heads", "training-tilt", "training-stall-rate"]


def test_registered_for_the_chapter():
    names = figures.names()
    for name in NAMES:
        assert name in names
        assert figures.FIGURES[name].chapter == "training_dynamics"


@pytest.mark.integration
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
        # no point of a scatter is cut off by the axis range
        lo, hi = ax.get_ylim()
        for c in ax.collections:
            if isinstance(c, matplotlib.collections.PathCollection):
                y = np.asarray(c.get_offsets())[:, 1]
                assert np.all((y >= lo) & (y <= hi)), (name, ax.get_ylabel(), y.min(), lo)


@pytest.mark.integration
def test_outcomes_at_the_books_budget():
    runs = tr.init_regimes("small")
    for r in runs.values():
        assert r.count("aligned") + r.count("between") + r.count("other") == r.seeds == sweeps.budget("small").seeds
        iv = r.rate("between")
        assert iv.low <= r.count("between") / r.seeds <= iv.high
    # near the centroids every run stays aligned; the close start is the one that stalls
    assert runs["near"].count("aligned") == runs["near"].seeds
    assert runs["close"].count("between") > runs["small"].count("between")


@pytest.mark.integration
def test_tilt_matches_large_L_minimiser():
    t = tr.tilt("small")
    assert np.all(np.abs(t.measured - t.theory) < 0.01)
    np.testing.assert_allclose(t.theory, [tr.tilted_cos(lam, 2.0, 0.5) for lam in tr.LAMS_TILT])
