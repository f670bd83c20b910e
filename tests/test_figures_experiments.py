"""Figures of the chapters "In-context quantization experiments" and "Beyond the paper":
registration, helpers, and (slow) every figure drawn at the tiny "test" size (the settings'
experiments themselves are tested in test_experiments_beyond.py)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnclust.figures import FIGURES, names
from attnclust.figures import beyond, icq

ICQ = ("icq-distortion", "icq-ari", "icq-stack", "icq-flatten")
BEYOND = ("beyond-settings", "beyond-variances", "beyond-digits")


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
        beyond.results("medium")


def test_icq_plane_is_orthonormal():
    P = icq._plane(np.array([[2.0, 0, 0], [1, 1, 0]]))
    np.testing.assert_allclose(P @ P.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(P[0], [1, 0, 0], atol=1e-12)


@pytest.mark.slow
def test_every_figure_draws_at_test_size():
    res = icq.results("test")
    assert set(res["ari"]) >= {"k-means", "EM", "identity, oracle", "trained layer, in-context"}
    assert np.all(res["D_bound"] >= res["D_exact"])
    for f in (icq.distortion_vs_lam, icq.ari_comparison, icq.stacked_layers, icq.flattened_clouds):
        fig = f(size="test")
        assert isinstance(fig, plt.Figure)
        plt.close(fig)
    res_b = beyond.results("test")
    assert set(res_b) >= {"digits_X", "digits_ari", "digits_cos"}
    for f in (beyond.settings_summary, beyond.variances, beyond.digits):
        fig = f(size="test")
        assert isinstance(fig, plt.Figure)
        plt.close(fig)
