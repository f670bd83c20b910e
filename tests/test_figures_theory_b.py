"""Figures of "The two-head layer and its population risk" and "In-context quantization
with identity attention": each builds and contains data; the finite-L helpers they rest on
compute what they claim."""

import jax
import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pytest

import attnclust as ac
from attnclust import symbolic as sym
from attnclust.book.figures import FIGURES, make, names
from attnclust.book.figures import quantization as fq
from attnclust.book.figures import risk as fr

FIGURE_CHAPTERS = {
    "risk-gap": "population_risk",
    "aligned-branch": "population_risk",
    "distortion-lambda": "quantization",
    "distortion-scaling": "quantization",
    "identity-fixed-points": "quantization",
    "identity-limit-terms": "quantization",
    "identity-limit-rate": "quantization",
}


def _data_count(fig: matplotlib.figure.Figure) -> int:
    n = 0
    for ax in fig.axes:
        n += sum(len(line.get_xdata()) for line in ax.get_lines())
        n += sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets"))
    return n


def test_registered():
    all_names = names()
    for name, chapter in FIGURE_CHAPTERS.items():
        assert name in all_names
        assert FIGURES[name].chapter == chapter


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(FIGURE_CHAPTERS))
def test_figure_builds_with_data(name):
    fig = make(name)
    assert isinstance(fig, matplotlib.figure.Figure)
    assert _data_count(fig) > 10
    plt.close(fig)


def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        fr.risk_gap_data("huge")
    with pytest.raises(ValueError, match="size"):
        fq.distortion_curve_data("huge")


@pytest.mark.slow
def test_identity_limit_error_shrinks():
    mix = ac.orthogonal_mixture()
    out = fq.identity_limit_error(jax.random.PRNGKey(0), mix, 1.0, [100, 10_000], n_queries=32)
    assert out["error"][1] < out["error"][0] / 3


@pytest.mark.slow
def test_finite_L_distortion_below_bound():
    mix = ac.orthogonal_mixture()
    lams = np.array([0.2, 0.7, 2.0])
    out = fq.finite_L_distortion(jax.random.PRNGKey(1), mix, lams, 50, n_tokens=5000)
    bound = np.array([sym.distortion_bound(l, 2.0, 0.5, 5) for l in lams])
    assert np.all(out["D"] < bound) and np.all(out["se"] > 0)
    # at a flat softmax (lam -> 0) every token is pulled to the prompt mean: D near E||mean - mu_c||^2
    cold = fq.finite_L_distortion(jax.random.PRNGKey(2), mix, np.array([1e-4]), 50, n_tokens=5000)
    assert abs(cold["D"][0] - 2.0) < 0.1  # ||(mu_1 + mu_2)/2 - mu_1||^2 = r^2 / 2 = 2


@pytest.mark.slow
def test_distortion_data_consistent():
    d = fq.distortion_curve_data()
    assert np.all(d["bound"] >= d["exact"])
    assert np.isclose(d["best"]["lam_exact"], 0.5907, atol=1e-3)
    s = fq.distortion_scaling_data()
    assert s["lam_exact_s2"].shape == (len(s["d"]), len(s["rho"]))
    assert np.all(s["bound_s2"] >= s["exact_min_s2"])


@pytest.mark.slow
def test_risk_gap_terms_add_up_and_match_the_masked_estimator():
    # R_L - R_inf by two routes on the same tokens (same key and shape): the variance and
    # cross terms of figures.risk (two_head_layer on reshaped prompts) and the paired
    # estimator of stationary.risk_gap (a block-masked softmax). Float32 rounding of a
    # per-token difference of squared errors of size ~1: 1e-5 absolute.
    from attnclust import stationary as st

    mix = ac.orthogonal_mixture()
    theta = np.array([[0.93, -0.16, 0, 0, 0], [-0.16, 0.93, 0, 0, 0]])
    out = fr.risk_gap_terms(jax.random.PRNGKey(3), theta, mix, 1.0, [8, 32], n_tokens=2048)
    ref = st.risk_gap(jax.random.PRNGKey(3), theta, mix, 1.0, [8, 32], n_tokens=2048)
    np.testing.assert_allclose(out["gap"], out["variance"] + out["cross"], rtol=1e-12)
    np.testing.assert_allclose(out["gap"], ref["gap"], atol=1e-5)
    assert np.all(out["variance"] > 0) and out["variance"][0] > out["variance"][1]
    with pytest.raises(ValueError, match="divide"):
        fr.risk_gap_terms(jax.random.PRNGKey(3), theta, mix, 1.0, [8, 12], n_tokens=2048)


def test_fixed_points_data_end_points_on_the_branch():
    d = fq.fixed_points_data()
    i = np.searchsorted(d["lam"], d["lam_iterated"])
    # the iterated map ends on the computed branch (interpolated on the grid), away from lam_c
    far = np.abs(d["lam_iterated"] - d["lam_critical"]) > 0.1
    interp = np.stack([np.interp(d["lam_iterated"], d["lam"], d["split"][:, k]) for k in range(2)], -1)
    np.testing.assert_allclose(d["iterated"][far], interp[far], atol=0.05)
    assert np.all(i > 0)


def test_fixed_points_data_marks_where_the_first_coordinate_reaches_r():
    d = fq.fixed_points_data()
    lam_r = d["lam_reach_r"]
    fp = sym.identity_fixed_points(lam_r, d["r"], d["sigma"])
    assert fp["split"][0] == pytest.approx(d["r"], abs=1e-9) and lam_r > d["lam_critical"]
    # on the plotted branch the first coordinate is below r before lam_r and above it after
    assert np.all(d["split"][d["lam"] < lam_r, 0] < d["r"]) and np.all(d["split"][d["lam"] > lam_r, 0] > d["r"])


def test_identity_limit_terms_shows_what_the_caption_says():
    """The images are Q_inf of the tokens (the library's limit and the proposition's formula),
    closer to the own centroid on average than the tokens; the weights sum to one, cross one
    half at the midpoint of the centroids, and at a centroid give the other one
    logistic(-lam r^2); the tokens sent closer to the other centroid lie near the boundary."""
    d = fq.identity_limit_terms_data()
    mix = ac.orthogonal_mixture(K=2, d=2, r=d["r"], sigma=d["sigma"])
    np.testing.assert_allclose(d["Q"], np.asarray(ac.identity_limit(d["X"], mix, d["lam"])), atol=1e-5)
    np.testing.assert_allclose(d["Q"], d["shrink"] * d["X"] + d["alpha"] @ d["centroids"], atol=1e-5)
    assert d["shrink"] == pytest.approx(d["lam"] * d["sigma"] ** 2)
    np.testing.assert_allclose(d["alpha"].sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(d["line_alpha"].sum(-1), 1.0, rtol=1e-12)
    mid = np.argmin(np.abs(d["line_t"] - 0.5))
    assert d["line_alpha"][mid, 0] == pytest.approx(0.5, abs=1e-2)
    assert np.all(np.diff(d["line_alpha"][:, 0]) > 0)  # alpha_1 rises from mu_2 to mu_1
    assert d["beta_centroid"] == pytest.approx(1 / (1 + np.exp(d["lam"] * d["r"] ** 2)), rel=1e-9)
    assert d["D_images"] < d["D_tokens"]
    own = d["centroids"][d["labels"]]
    assert d["D_tokens"] == pytest.approx(np.mean(np.sum((d["X"] - own) ** 2, -1)))
    wrong = d["misassigned"]
    assert 0 < wrong.sum() < 0.05 * len(wrong)
    assert d["boundary_distance"][wrong].max() < 0.5 * np.median(d["boundary_distance"])
    assert np.all(d["beta"][wrong] > 0.4)  # they give the other centroid nearly half or more


def test_identity_limit_terms_figure_builds():
    fig = make("identity-limit-terms")
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
    assert _data_count(fig) > 100
    plt.close(fig)


@pytest.mark.slow
def test_identity_limit_rate_data_is_the_measurement_per_seed():
    d = fq.identity_limit_rate_data()
    assert d["error"].shape == (len(d["seeds"]), len(d["L"]))
    first = fq.identity_limit_error(jax.random.PRNGKey(int(d["seeds"][0])), ac.orthogonal_mixture(), d["lam"],
                                    d["L"], n_queries=d["queries"])
    np.testing.assert_allclose(d["error"][0], first["error"], rtol=1e-6)
    np.testing.assert_allclose(d["slope"][0], np.polyfit(np.log(d["L"]), np.log(d["error"][0]), 1)[0])
    assert np.all(d["slope"] < 0) and abs(d["slope"].mean() + 0.5) < 0.15
