"""The quantization explorer's callback: a figure for every slider range, validation, the
masked computation equal to the library's unpadded one, and every slider move changing the
figure. (How fast a move is once ``prepare()`` has compiled, against the 0.3 s goal, is
measured by ``make bench``.)"""

import matplotlib

matplotlib.use("Agg")
import jax
import matplotlib.pyplot as plt
import numpy as np
import pytest

import attnclust as ac
from attnclust.book.widgets import quantization as wq
from attnclust.book.widgets import slider_values, time_moves
from attnclust.book.widgets._background import BackgroundPrepare
from attnclust.book.widgets.quantization import (
    DEFAULTS,
    LAM_GRID,
    draw_quantization,
    quantization_data,
    quantization_explorer,
)

@pytest.fixture(scope="module")
def prepared():
    """Compile the programs of every K (what the explorer does in the background when it
    opens)."""
    wq.prepare()


@pytest.mark.slow
@pytest.mark.parametrize("K", [2, 3, 4])
def test_draw_returns_figure(K):
    fig = draw_quantization(lam=0.7, r_over_sigma=3.0, K=K, L=60, seed=1)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 2
    plt.close(fig)


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("K, L, lam", [(2, 20, 1.0), (3, 137, 0.3), (4, 400, 4.0), (2, 100, 50.0),
                                       (2, 500, 1.0)])
def test_masked_equals_library_on_the_prompt(K, L, lam):
    """Every number of ``quantization_data`` (computed on the ``L_MAX``-token array with
    the keys beyond L masked) equals the library's computation on the L tokens alone: the
    prompt is the start of ``sample_in_context``'s ``L_MAX``-token prompt, then
    ``identity_attention``, ``distortion``, ``nearest_centroid`` and ``adjusted_rand``."""
    r_over_sigma, seed = 3.0, 2
    sigma = 2.0 / r_over_sigma
    data = quantization_data(lam, r_over_sigma, K, L, seed)
    n = max(L, wq.L_MAX)
    X, lab, mus = ac.sample_in_context(jax.random.PRNGKey(seed), K, max(K, 2), 2.0, sigma, 1, n)
    X, lab = X[:, :L], lab[:, :L]
    own = ac.own_centroids(mus, lab)
    np.testing.assert_allclose(data["X"], X[0], atol=1e-5)
    np.testing.assert_array_equal(data["labels"], lab[0])
    Q = ac.identity_attention(X, lam)
    np.testing.assert_allclose(data["Q"], Q[0], atol=1e-5)
    assert data["distortion"] == pytest.approx(float(ac.distortion(Q, own)), rel=1e-5, abs=1e-7)
    assert data["ari"] == pytest.approx(float(ac.adjusted_rand(lab, ac.nearest_centroid(Q, mus))[0]))
    curve = [float(ac.distortion(ac.identity_attention(X, float(l)), own)) for l in LAM_GRID]
    np.testing.assert_allclose(data["curve"], curve, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_same_noise_across_separations_and_lengths():
    a = quantization_data(lam=1.0, r_over_sigma=2.0, K=2, L=50, seed=3)
    b = quantization_data(lam=1.0, r_over_sigma=4.0, K=2, L=50, seed=3)
    np.testing.assert_array_equal(a["labels"], b["labels"])
    np.testing.assert_allclose(a["centroids"], b["centroids"])
    own = a["centroids"][a["labels"]]
    np.testing.assert_allclose((a["X"] - own) / a["sigma"], (b["X"] - own) / b["sigma"], atol=1e-4)
    # a longer prompt continues the same one
    c = quantization_data(lam=1.0, r_over_sigma=2.0, K=2, L=80, seed=3)
    np.testing.assert_array_equal(c["X"][:50], a["X"])


@pytest.mark.parametrize("bad, error", [(dict(lam=0.0), ValueError), (dict(lam=float("nan")), ValueError),
                                        (dict(r_over_sigma=-1.0), ValueError), (dict(K=1), ValueError),
                                        (dict(K=5), ValueError), (dict(L=1), ValueError), (dict(seed=-1), ValueError),
                                        (dict(K=2.5), TypeError)])
@pytest.mark.usefixtures("typecheck_off")
def test_validation(bad, error):
    with pytest.raises(error, match=next(iter(bad))):
        draw_quantization(**{**DEFAULTS, **bad})


def test_static_figure_does_not_prepare(monkeypatch):
    """The chapter's figure at the defaults compiles only what it draws."""
    calls = []
    monkeypatch.setattr(wq, "prepare", lambda: calls.append(1))
    monkeypatch.setattr(wq, "_background", BackgroundPrepare(lambda **_: calls.append(1), "x"))
    plt.close(draw_quantization(**DEFAULTS))
    assert calls == []


@pytest.mark.integration
def test_explorer_builds(prepared):
    w = quantization_explorer()
    assert w.children  # sliders and the output area
    if w.prepare_thread is not None:
        w.prepare_thread.join()
    assert wq._background.error is None
    assert set(wq.K_VALUES) <= wq._PREPARED
    plt.close("all")


def _data_of(fig):
    """Every offset and line datum drawn in the figure."""
    parts = [np.asarray(c.get_offsets(), float).ravel() for ax in fig.axes for c in ax.collections]
    parts += [np.asarray(ln.get_xydata(), float).ravel() for ax in fig.axes for ln in ax.get_lines()]
    return np.concatenate(parts)


@pytest.mark.integration
def test_every_slider_move_changes_the_figure(prepared):
    """Each slider of the explorer through every value of its grid, one slider at a time
    from the defaults, after ``prepare()``: every move changes the figure's data."""
    box = quantization_explorer()  # its background prepare() finds nothing left to do
    plt.close("all")
    fig = draw_quantization(**DEFAULTS)
    base = _data_of(fig)
    plt.close(fig)

    def changed(fig, name, value):
        moved = _data_of(fig)
        plt.close(fig)
        assert base.shape != moved.shape or not np.allclose(base, moved), (name, value)

    moves = time_moves(lambda **move: draw_quantization(**{**DEFAULTS, **move}), box.sliders,
                       DEFAULTS, changed)
    for name, control in box.sliders.items():  # every value but the default's (if on the grid)
        assert sum(n == name for n, _ in moves) >= len(slider_values(control)) - 1, name
