"""The second figures of the preface ("preface-two-words") and of "The two results at a glance"
("glance-tilt"): each is registered for its page and draws data, and the numbers their
captions state are what the helpers compute."""

import io

import matplotlib.figure
import numpy as np
import pytest

import attnclust as ac
from attnclust import symbolic as sym
from attnclust.book.figures import FIGURES, make, names
from attnclust.book.figures import glance as fg
from attnclust.book.figures import preface as fp
from attnclust.book.figures.attention import layer_outputs_demo

FIGURE_CHAPTERS = {"preface-two-words": "preface", "glance-tilt": "at_a_glance"}


def test_registered():
    all_names = names()
    for name, chapter in FIGURE_CHAPTERS.items():
        assert name in all_names and FIGURES[name].chapter == chapter and FIGURES[name].description


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURE_CHAPTERS))
def test_figure_builds_with_data(name):
    fig = make(name)
    assert isinstance(fig, matplotlib.figure.Figure) and fig.axes
    n = sum(len(line.get_xdata()) for ax in fig.axes for line in ax.get_lines())
    n += sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections if hasattr(c, "get_offsets"))
    assert n > 10
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)
    assert buf.tell() > 1000


# --- the preface: risk and distortion -------------------------------------------------


def _toy_demo():
    """Four tokens on two centroids with outputs set by hand: the squared distances are known."""
    X = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    labels = np.array([0, 0, 1, 1])
    centroids = np.array([[2.0, 0.0], [0.0, 2.0]])
    T = X + np.array([0.5, 0.0])                 # each output 0.5 from its token
    Q = centroids[labels] + np.array([0.0, 0.1])  # each output 0.1 from its centroid
    return {"X": X, "labels": labels, "centroids": centroids, "T": T, "Q": Q}


def test_two_words_data_is_the_mean_of_squared_lengths():
    w = fp.two_words_data(_toy_demo())
    assert w["L"] == 4
    np.testing.assert_allclose(w["distortion_tokens"], 1.0)      # every token 1 from its centroid
    np.testing.assert_allclose(w["risk_T"], 0.25)
    np.testing.assert_allclose(w["distortion_T"], np.mean([1.5**2, 0.5**2, 1 + 0.25, 1 + 0.25]))
    np.testing.assert_allclose(w["distortion_Q"], 0.01)
    np.testing.assert_allclose(w["risk_Q"], np.mean([1 + 0.01, 1 + 0.01, 0.9**2, 1.1**2]))


def test_two_words_data_needs_both_layers():
    demo = _toy_demo()
    del demo["Q"]
    with pytest.raises(ValueError, match="Q"):
        fp.two_words_data(demo)


@pytest.mark.slow
def test_two_words_on_the_preface_prompt_rank_the_layers_in_opposite_orders():
    """What the caption says: the trained layer has the lower risk, identity attention the
    lower distortion, and both bring the distortion below that of the raw tokens."""
    w = fp.two_words_data(layer_outputs_demo())
    assert w["risk_T"] < w["risk_Q"]
    assert w["distortion_Q"] < w["distortion_T"] < w["distortion_tokens"]


# --- the overview: the risk along the tilt ----------------------------------------------


@pytest.mark.slow
def test_tilt_profile_is_lowest_at_the_tilted_minimiser():
    """The profile's lowest angle is the tilted minimiser's, within the grid's spacing, and its
    value there is no lower than the minimiser's; at angle 0 it is the aligned fixed point's
    risk (prop-aligned), above the oracle quantizer's level; the minimiser is below it."""
    D = fg.tilt_profile_data()
    step = D["angle"][1] - D["angle"][0]
    i = int(np.argmin(D["risk"]))
    assert D["angle_min"] < 0 and abs(D["angle"][i] - D["angle_min"]) <= step
    assert D["risk"][i] >= D["risk_min"] - 1e-4 and D["risk"][i] - D["risk_min"] < 0.01
    zero = int(np.argmin(np.abs(D["angle"])))
    assert D["angle"][zero] == 0
    np.testing.assert_allclose(D["risk"][zero], D["risk_aligned"], rtol=1e-4)
    np.testing.assert_allclose(D["rho"][zero], D["kappa_aligned"], atol=1e-3)
    assert D["floor"] < D["risk_min"] < D["oracle"] < D["risk_aligned"]
    tm = sym.tilted_minimiser(ac.DEFAULT.lam, ac.DEFAULT.r, ac.DEFAULT.sigma, d=ac.DEFAULT.d)
    np.testing.assert_allclose(np.cos(np.radians(D["angle_min"])), tm.cos, rtol=1e-9)


@pytest.mark.slow
def test_tilt_profile_only_shifts_with_the_dimension():
    """prop-dimension: heads in the plane of the centroids have, in dimension d, the risk of
    dimension 2 plus (d - 2) sigma^2, so the profile only shifts and its minimiser stays."""
    d5, d2 = fg.tilt_profile_data(d=5), fg.tilt_profile_data(d=2)
    np.testing.assert_allclose(d5["risk"], d2["risk"] + 3 * ac.DEFAULT.sigma**2, atol=1e-4)
    np.testing.assert_allclose(d5["rho"], d2["rho"], atol=1e-3)
    np.testing.assert_allclose(d5["angle_min"], d2["angle_min"], atol=1e-6)


def test_tilt_profile_rejects_bad_settings():
    with pytest.raises(ValueError, match="size"):
        fg.tilt_profile_data("huge")
    with pytest.raises(ValueError, match="d must"):
        fg.tilt_profile_data(d=1)
    with pytest.raises(ValueError, match="lam"):
        fg.tilt_profile_data(lam=0.0)
