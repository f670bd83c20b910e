"""The quantization explorer's callback: a figure for every slider range, validation, and
its speed (95th percentile of a redraw below 0.3 s)."""

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnclust.widgets.quantization import (
    DEFAULTS,
    LAM_GRID,
    draw_quantization,
    quantization_data,
    quantization_explorer,
)


@pytest.mark.parametrize("K", [2, 3, 4])
def test_draw_returns_figure(K):
    fig = draw_quantization(lam=0.7, r_over_sigma=3.0, K=K, L=60, seed=1)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 2
    plt.close(fig)


def test_data_consistent():
    data = quantization_data(**DEFAULTS)
    assert data["X"].shape == data["Q"].shape == (DEFAULTS["L"], 2)
    assert data["curve"].shape == LAM_GRID.shape
    assert np.all(np.isfinite(data["curve"]))
    # the curve at lam equal to a grid point is the distortion reported at that lam
    d = quantization_data(lam=float(LAM_GRID[5]), r_over_sigma=4.0, K=2, L=100, seed=0)
    assert d["distortion"] == pytest.approx(d["curve"][5], rel=1e-4)
    # identity outputs are convex combinations of the tokens
    assert data["Q"].min() >= data["X"].min() - 1e-5 and data["Q"].max() <= data["X"].max() + 1e-5
    # well separated: quantization beats the noise floor and the oracle ARI is high
    assert data["distortion"] < data["noise_floor"] and data["ari"] > 0.9


def test_same_noise_across_separations():
    a = quantization_data(lam=1.0, r_over_sigma=2.0, K=2, L=50, seed=3)
    b = quantization_data(lam=1.0, r_over_sigma=4.0, K=2, L=50, seed=3)
    np.testing.assert_array_equal(a["labels"], b["labels"])
    np.testing.assert_allclose(a["centroids"], b["centroids"])
    own = a["centroids"][a["labels"]]
    np.testing.assert_allclose((a["X"] - own) / a["sigma"], (b["X"] - own) / b["sigma"], atol=1e-4)


@pytest.mark.parametrize("bad", [dict(lam=0.0), dict(lam=float("nan")), dict(r_over_sigma=-1.0),
                                 dict(K=1), dict(K=5), dict(L=1), dict(seed=-1), dict(K=2.5)])
def test_validation(bad):
    with pytest.raises(ValueError):
        draw_quantization(**{**DEFAULTS, **bad})


def test_explorer_builds():
    w = quantization_explorer()
    assert w.children  # sliders and the output area
    plt.close("all")


def test_redraw_p95_below_300ms():
    draw_quantization(**DEFAULTS)  # compile once
    plt.close("all")
    times = []
    for i in range(20):
        t0 = time.perf_counter()
        fig = draw_quantization(lam=0.3 + 0.1 * i, r_over_sigma=2.0 + 0.2 * (i % 5), K=2, L=100, seed=i % 3)
        times.append(time.perf_counter() - t0)
        plt.close(fig)
    assert np.percentile(times, 95) < 0.3, f"p95 = {np.percentile(times, 95):.3f} s"
