"""attnclust.book.experiments.index_change: where the smallest eigenvalue's mean changes sign, from
a landscape (synthetic here, with a known crossing; and the committed one)."""

import numpy as np
import pytest
from scipy.stats import chi2 as chi2_dist

from attnclust.book.experiments import index_change as ic
from attnclust.book.experiments import landscape as ls

LS = (25, 35, 50, 70, 100, 140, 200, 400)


def _landscape(means, limit, spread=0.002, S=8, seed=0):
    rng = np.random.default_rng(seed)
    smallest = np.asarray(means)[:, None] + spread * rng.standard_normal((len(LS), S))
    return ls.Landscape("symmetric", ls.point_setting("symmetric"), LS, (8,) * len(LS), 1000,
                        smallest, 4 + smallest, np.zeros_like(smallest), np.array([limit, 4.0]))


def test_a_line_in_1_over_L_is_found():
    """Means c0 + c1 / L cross zero at L = -c1 / c0 = 80: the bracket holds it, the local line
    and the interpolation find it within their intervals, and a line fits (chi^2 near its dof)."""
    c0, c1 = -0.02, 1.6
    la = _landscape([c0 + c1 / L for L in LS], limit=c0)
    assert ic.bracket(la) == (70, 100)
    for neighbours in (0, 1):
        fit = ic.local_fit(la, neighbours, n_boot=500)
        assert fit.crossing.low < 80 < fit.crossing.high
        assert fit.crossing.estimate == pytest.approx(80, abs=3)
    line = ic.local_fit(la, 1, n_boot=500)
    assert line.Ls == (50, 70, 100, 140) and line.dof == 2
    assert line.chi2 < chi2_dist.ppf(0.99, 2)
    assert ic.local_fit(la, 0, n_boot=10).dof == 0


def test_a_curve_the_limit_fit_cannot_follow_has_a_large_chi2():
    """Means that bend towards a limit far from the one fixed in the fit: lambda_inf + a/L +
    b/L^2 with the stored limit cannot follow them, and its chi^2 says so; with the true
    limit it fits."""
    true_limit = -0.03
    means = [true_limit + 2.4 / L - 12.0 / L**2 for L in LS]
    good = _landscape(means, limit=true_limit, S=32)  # 32 samples: steady standard errors
    bad = _landscape(means, limit=-0.08, S=32)
    chi_good, dof = ic.limit_fit_chi2(good)
    chi_bad, _ = ic.limit_fit_chi2(bad)
    assert dof == len(LS) - 2
    assert chi_good < chi2_dist.ppf(0.99, dof) < chi_bad


def test_crossing_difference_of_two_points():
    """Crossings at 80 and 60: the difference is 20 and its interval excludes 0; a point
    against itself (independent noise) gives an interval that contains 0."""
    a = ic.local_fit(_landscape([-0.02 + 1.6 / L for L in LS], -0.02), n_boot=500)
    b = ic.local_fit(_landscape([-0.02 + 1.2 / L for L in LS], -0.02, seed=1), n_boot=500)
    d = ic.crossing_difference(a, b)
    assert d.estimate == pytest.approx(20, abs=4) and d.low > 0
    a2 = ic.local_fit(_landscape([-0.02 + 1.6 / L for L in LS], -0.02, seed=2), n_boot=500)
    assert ic.crossing_difference(a, a2).contains(0.0)


@pytest.mark.usefixtures("typecheck_off")
def test_no_sign_change_is_an_error():
    la = _landscape([0.1 + 1.0 / L for L in LS], limit=0.1)
    with pytest.raises(ValueError, match="sign"):
        ic.bracket(la)
    with pytest.raises(ValueError, match="neighbours"):
        ic.local_fit(_landscape([-0.02 + 1.6 / L for L in LS], -0.02), neighbours=-1)


def test_committed_k3_landscape():
    """What the chapter states of the committed K = 3 landscape: the global fit does not fit,
    the means change sign between L = 70 and 100, and the local line fits."""
    sy = ls.stored().symmetric
    chi, dof = ic.limit_fit_chi2(sy)
    assert chi > chi2_dist.ppf(0.99, dof)
    assert ic.bracket(sy) == (70, 100)
    line = ic.local_fit(sy, 1, n_boot=500)
    assert line.chi2 < chi2_dist.ppf(0.95, line.dof)
    assert 70 < ic.local_fit(sy, 0, n_boot=500).crossing.estimate < 100
