"""The risk landscape and the two mechanisms of the tilt (chapter "The two-head layer and its
population risk"): both figures are registered for the chapter and draw data, and the numbers
they draw are what their captions say: the landscape's lowest point is the tilted minimiser,
below the line of aligned heads; the aligned point is not stationary off that line; the
mechanisms' contributions add up to the tilt gradient, and the offset is kappa^2 r / 2.
The tests that compute the landscape (a grid of the library's quadrature, seconds) are
marked slow."""

import io

import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pytest

import attnclust as ac
from attnclust import symbolic as sym
from attnclust.book.figures import FIGURES, make, names
from attnclust.book.figures import risk_landscape as rl

FIGURE_CHAPTERS = {"risk-landscape": "population_risk", "aligned-reduction": "population_risk",
                   "tilt-mechanisms": "population_risk"}


def test_registered():
    all_names = names()
    for name, chapter in FIGURE_CHAPTERS.items():
        assert name in all_names
        assert FIGURES[name].chapter == chapter


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURE_CHAPTERS))
def test_figure_builds_with_data(name):
    fig = make(name)
    assert isinstance(fig, matplotlib.figure.Figure)
    n = sum(len(line.get_xdata()) for ax in fig.axes for line in ax.get_lines())
    n += sum(len(ax.patches) + len(ax.collections) for ax in fig.axes)
    assert n > 5
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)
    assert buf.tell() > 1000
    plt.close(fig)


def test_family_heads_are_mirror_images():
    th = rl.family_heads(np.array([0.9, 1.1]), np.array([-0.2, 0.0]), d=5)
    assert th.shape == (2, 2, 5)
    np.testing.assert_allclose(th[0, 0], [0.9, -0.2, 0, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(th[:, 1], th[:, 0][:, [1, 0, 2, 3, 4]])  # theta_2: e_1 and e_2 swapped
    np.testing.assert_allclose(th[1], 1.1 * np.eye(2, 5), rtol=1e-6)   # eps = 0: aligned


@pytest.mark.usefixtures("typecheck_off")
def test_family_heads_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        rl.family_heads(1.0, 0.0, d=1)
    with pytest.raises(ValueError, match="one shape"):
        rl.family_heads(np.ones(2), np.zeros(3))


@pytest.mark.slow
def test_landscape_minimum_is_the_tilted_minimiser_below_the_aligned_line():
    D = rl.landscape_data()
    i, j = np.unravel_index(np.argmin(D["risk"]), D["risk"].shape)
    dk, de = np.diff(D["kappa"][:2])[0], np.diff(D["eps"][:2])[0]
    assert abs(D["kappa"][i] - D["kappa_min"]) <= dk and abs(D["eps"][j] - D["eps_min"]) <= de
    assert D["eps_min"] < -3 * de                          # tilted, by more than the grid's step
    # the library's quadrature at the marked points agrees with the symbolic solvers
    mix = ac.orthogonal_mixture()
    at_min = float(ac.population_risk(rl.family_heads(D["kappa_min"], D["eps_min"]), mix, ac.DEFAULT.lam))
    assert abs(at_min - D["risk_min"]) < 1e-4 * D["risk_min"]
    assert D["floor"] < D["risk_min"] < D["oracle"] < D["risk_aligned"]
    # on the line eps = 0 the grid's lowest point is the aligned fixed point
    on_line = D["risk"][:, np.argmin(np.abs(D["eps"]))]
    assert abs(D["kappa"][np.argmin(on_line)] - D["kappa_aligned"]) <= dk


@pytest.mark.slow
def test_landscape_nodes_suffice_at_the_corners():
    D = rl.landscape_data()
    mix = ac.orthogonal_mixture()
    for i, j in ((0, 0), (0, -1), (-1, 0), (-1, -1)):
        th = rl.family_heads(D["kappa"][i], D["eps"][j])
        fine = float(ac.population_risk(th, mix, ac.DEFAULT.lam, n_nodes=2 * D["nodes"]))
        assert abs(D["risk"][i, j] - fine) < 1e-3 * fine


@pytest.mark.slow
def test_aligned_point_descends_off_the_line_at_twice_the_tilt_gradient():
    D = rl.landscape_data()
    g_kappa, g_eps = D["grad_aligned"]
    tilt = sym.tilt_gradient(ac.DEFAULT.lam, ac.DEFAULT.r, ac.DEFAULT.sigma)
    assert abs(g_kappa) < 1e-3 * abs(g_eps)                 # stationary along the manifold
    assert g_eps == pytest.approx(2 * tilt, rel=1e-3)       # both heads turn: twice one head's


def test_aligned_reduction_numbers():
    A = rl.aligned_reduction_data()
    r, sigma, d = ac.DEFAULT.r, ac.DEFAULT.sigma, ac.DEFAULT.d
    assert A["offset"] == pytest.approx(A["kappa_star"] ** 2 * r / 2, rel=1e-10)   # logistic(0) = 1/2
    # at kappa = 0 the layer outputs zero: the risk is E||z||^2 = r^2 (equal weights, |mu_c| = r) + d sigma^2
    assert A["risk_zero"] == pytest.approx(r**2 + d * sigma**2, rel=1e-6)
    dk = A["kappa"][1] - A["kappa"][0]
    assert abs(A["kappa"][np.argmin(A["risk_aligned"])] - A["kappa_star"]) <= dk
    assert A["risk_star"] <= A["risk_aligned"].min() + 1e-9
    assert A["floor"] < A["risk_min"] < A["oracle"] < A["risk_star"] < A["risk_zero"]
    # the head map reconstructs the active cluster better than the inactive one (where it outputs the offset)
    i0, ir = np.argmin(np.abs(A["u"])), np.argmin(np.abs(A["u"] - r))
    assert abs(A["f"][ir] - r) < abs(A["f"][i0] - 0.0)
    with pytest.raises(ValueError, match="size"):
        rl.aligned_reduction_data("huge")


def test_mechanism_numbers():
    M = rl.tilt_mechanisms_data()
    assert M["coefficient"].sum() + M["direction"].sum() == pytest.approx(M["total"], rel=1e-12)
    assert M["offset"] == pytest.approx(M["kappa"] ** 2 * M["r"] / 2, rel=1e-8)
    assert M["coefficient"][1] > 0.9 * M["coefficient"].sum() > 0   # the coefficient term: cluster 2
    assert M["direction"][0] > M["direction"].sum() > 0             # the direction term: cluster 1
    assert M["offset"] < M["active"] < M["r"] + 0.5                 # the active head outputs more
    assert 0 < M["cancel"] < M["offset"]                            # cancels part of the offset
    with pytest.raises(ValueError, match="size"):
        rl.tilt_mechanisms_data("huge")
    with pytest.raises(ValueError, match="size"):
        rl.landscape_data("huge")
