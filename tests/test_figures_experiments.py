"""Figures of the chapters "In-context quantization experiments" and "Beyond the paper":
registration, helpers, and (slow) every figure drawn at the tiny "test" size (the settings'
experiments themselves are tested in test_experiments_beyond.py)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnclust.book.figures import FIGURES, names
from attnclust.book.figures import beyond, digits, icq

ICQ = ("icq-distortion", "icq-sure", "icq-benchmark", "icq-regimes", "icq-sweeps", "icq-sweeps-unequal", "icq-cost",
       "icq-stack", "icq-flatten", "icq-trained-in-context")
BEYOND = ("beyond-settings", "beyond-variances", "beyond-heads", "beyond-digits", "beyond-digits-ten")


def test_registered_with_chapters():
    known = names()
    for n in ICQ:
        assert n in known and FIGURES[n].chapter == "icq_experiments" and FIGURES[n].description
    for n in BEYOND:
        assert n in known and FIGURES[n].chapter == "beyond" and FIGURES[n].description


def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        icq.results("medium")
    with pytest.raises(ValueError, match="size"):
        beyond.scores("medium")


def test_icq_plane_is_orthonormal():
    P = icq._plane(np.array([[2.0, 0, 0], [1, 1, 0]]))
    np.testing.assert_allclose(P @ P.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(P[0], [1, 0, 0], atol=1e-12)


@pytest.mark.integration
def test_every_figure_draws_at_test_size():
    res = icq.results("test")
    assert np.all(res["D_bound"] >= res["D_exact"])
    for f in (icq.distortion_vs_lam, icq.sure_curves, icq.benchmark_forest, icq.regimes, icq.sweeps_equal,
              icq.sweeps_unequal, icq.cost, icq.stacked_layers, icq.flattened_clouds, icq.trained_in_context,
              digits.pairs, digits.ten):
        fig = f(size="test")
        assert isinstance(fig, plt.Figure)
        plt.close(fig)
    for f in (beyond.settings_summary, beyond.variances):
        fig = f(size="test")
        assert isinstance(fig, plt.Figure)
        plt.close(fig)


def test_more_heads_draws_every_head_of_every_seed():
    """beyond-heads: one panel per H > K and budget, one point per head and seed at its
    |cos| with the nearest centroid (in [0, 1], inside the axes), the extra heads as their
    own series, the threshold of alignment drawn, and a colour bar for the norms."""
    from matplotlib.collections import PathCollection

    from attnclust.book.experiments import more_heads as mh

    runs = mh.stored().runs
    fig = beyond.more_heads()
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4 and len(fig.axes) == 5
    for ax in panels:
        H = int(ax.get_title().split("=")[1].split(",")[0])
        steps = int(ax.get_title().split(",")[1].split()[0])
        r = next(x[H] for x in runs.values() if x[H].steps == steps)
        matched, extra = [c for c in ax.collections if isinstance(c, PathCollection)]
        assert len(extra.get_offsets()) == r.seeds * (H - 2) and len(matched.get_offsets()) == r.seeds * 2
        y = np.concatenate([np.asarray(c.get_offsets())[:, 1] for c in (matched, extra)])
        np.testing.assert_allclose(np.sort(y), np.sort(r.nearest().ravel()))
        lo, hi = ax.get_ylim()
        assert 0 <= lo and hi >= 1 and np.all((y >= lo) & (y <= hi))
        assert any(np.allclose(line.get_ydata(), mh.ALIGNED_COS) for line in ax.get_lines())
    plt.close(fig)


def test_digits_pair_matrix_holds_every_pair_once():
    from attnclust.book import benchmark as B

    dat = digits.data()
    d = next(iter(dat["pairs"]))
    M = digits.pair_matrix(d, B.IDENTITY)
    off = ~np.eye(10, dtype=bool)
    assert np.all(np.isnan(np.diag(M))) and np.all(np.isfinite(M[off]))
    np.testing.assert_array_equal(M, M.T)
    row = dat["pairs"][d]["per"][-1]
    a, b = row["classes"]
    assert M[b, a] == row["methods"][B.IDENTITY]["ari_vs_ref"]["estimate"]
