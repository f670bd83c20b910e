"""attnclust.book.trend: the logistic slope of a rate against a setting, with its profile-likelihood
interval, against closed forms, an independent profile and the Wald limit (chapter "Training
dynamics", section "Where the stalled runs are")."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from attnclust.book import trend


def _loglik(a, b, x, k, n):
    eta = a + b * np.asarray(x, float)
    return float(np.sum(np.asarray(k) * eta - np.asarray(n) * np.logaddexp(0, eta)))


def _profile(b, x, k, n):
    """The profile log-likelihood at slope b, maximised over the intercept by SciPy (not
    the library's root of the score)."""
    from scipy.optimize import minimize_scalar

    return -minimize_scalar(lambda a: -_loglik(a, b, x, k, n), bounds=(-30, 30), method="bounded",
                            options={"xatol": 1e-10}).fun


def test_logistic_slope_two_groups_and_the_profile_cut():
    """With two groups the fit is exact: the slope is the difference of the log-odds over the
    difference of x; each end of the interval lies where twice the profile log-likelihood has
    dropped by the chi-square(1) quantile, the profile computed independently."""
    x, k, n = [1.0, 3.0], [10, 20], [40, 40]
    iv = trend.logistic_slope(x, k, n)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    assert iv.estimate == pytest.approx((logit(0.5) - logit(0.25)) / 2, rel=1e-6)
    assert iv.low < iv.estimate < iv.high and iv.n == 80 and iv.method == "logistic profile likelihood"
    top = _profile(iv.estimate, x, k, n)
    for end in (iv.low, iv.high):
        assert 2 * (top - _profile(end, x, k, n)) == pytest.approx(sps.chi2.ppf(0.95, 1), rel=1e-5)


def test_logistic_slope_approaches_wald_with_many_trials():
    """With many trials per group the profile interval is the Wald interval b +- z se, se from
    the Fisher information of two groups, sqrt(1/(n1 p1 q1) + 1/(n2 p2 q2)) / (x2 - x1)."""
    n, p = 20_000, (0.15, 0.3)
    iv = trend.logistic_slope([0.0, 2.0], [int(n * p[0]), int(n * p[1])], [n, n])
    se = np.sqrt(sum(1 / (n * q * (1 - q)) for q in p)) / 2
    assert iv.high - iv.estimate == pytest.approx(1.959964 * se, rel=0.02)
    assert iv.estimate - iv.low == pytest.approx(1.959964 * se, rel=0.02)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=3, max_size=5), st.floats(-3, 3))
def test_logistic_slope_symmetries(k, shift):
    """Negating x, or swapping successes and failures, negates the slope and its interval;
    shifting x leaves it unchanged; the 99% interval contains the 95% one."""
    x = np.arange(len(k), dtype=float)
    n = [12] * len(k)
    succ, fail = x[np.asarray(k) > 0], x[np.asarray(k) < 12]
    assume(succ.size and fail.size and fail.max() > succ.min() and succ.max() > fail.min())  # not separated
    iv = trend.logistic_slope(x, k, n)
    for other in (trend.logistic_slope(-x, k, n), trend.logistic_slope(x, [12 - j for j in k], n)):
        assert (other.estimate, other.low, other.high) == pytest.approx((-iv.estimate, -iv.high, -iv.low), abs=1e-6)
    moved = trend.logistic_slope(x + shift, k, n)
    assert (moved.estimate, moved.low, moved.high) == pytest.approx((iv.estimate, iv.low, iv.high), abs=1e-6)
    wide = trend.logistic_slope(x, k, n, level=0.99)
    assert wide.low < iv.low <= iv.estimate <= iv.high < wide.high


def test_logistic_slope_separated_counts_are_infinite():
    """No failure above the first success: the likelihood rises without end, so the estimate
    and the upper end are infinite and the lower end finite; equal rates give a slope of 0
    with a symmetric interval."""
    iv = trend.logistic_slope([0, 1, 2], [0, 5, 10], [10, 10, 10])
    assert iv.estimate == np.inf and iv.high == np.inf and 0 < iv.low < np.inf
    down = trend.logistic_slope([0, 1, 2], [10, 5, 0], [10, 10, 10])
    assert down.estimate == -np.inf and down.low == -np.inf and down.high == pytest.approx(-iv.low)
    flat = trend.logistic_slope([0, 1, 2], [3, 3, 3], [10, 10, 10])
    assert flat.estimate == pytest.approx(0, abs=1e-6) and flat.low == pytest.approx(-flat.high)


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("x, k, n, match", [
    ([0, 1], [1], [4, 4], "one count per value"),
    ([1, 1], [1, 2], [4, 4], "two distinct"),
    ([0, 1], [0, 0], [4, 4], "one success and one failure"),
    ([0, 1], [4, 4], [4, 4], "one success and one failure"),
    ([0, 1], [5, 1], [4, 4], "k"),
    ([0, 1], [1, 1], [0, 4], "n"),
])
def test_logistic_slope_bad_input(x, k, n, match):
    with pytest.raises(ValueError, match=match):
        trend.logistic_slope(x, k, n)

