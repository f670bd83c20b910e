"""attnclust.stats: the intervals behind the claims ledger, against SciPy and exact cases."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from attnclust import stats


def test_binomial_interval_is_clopper_pearson():
    iv = stats.binomial_interval(5, 16)
    # Clopper-Pearson from the beta quantiles (an independent formula for the same interval)
    lo, hi = sps.beta.ppf(0.025, 5, 12), sps.beta.ppf(0.975, 6, 11)
    assert iv.estimate == 5 / 16 and iv.n == 16
    assert iv.low == pytest.approx(lo, rel=1e-9) and iv.high == pytest.approx(hi, rel=1e-9)
    # the extremes: 0 of n and n of n reach 0 and 1
    assert stats.binomial_interval(0, 16).low == 0 and stats.binomial_interval(16, 16).high == 1


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("k, n, error", [(17, 16, ValueError), (-1, 16, ValueError), (1, 0, ValueError),
                                         (1.5, 4, TypeError), (1, 4.0, TypeError)])
def test_binomial_interval_bad_counts(k, n, error):
    """A count out of range is a bad value, a count that is not an integer a bad type."""
    with pytest.raises(error, match="k" if k != 1 else "n"):
        stats.binomial_interval(k, n)


def test_mean_interval_is_student_t():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    iv = stats.mean_interval(x, level=0.9)
    half = sps.t.ppf(0.95, 3) * np.std(x, ddof=1) / 2
    assert iv.estimate == pytest.approx(3.5)
    assert iv.low == pytest.approx(3.5 - half) and iv.high == pytest.approx(3.5 + half)
    assert stats.mean_interval([2.0, 2.0, 2.0]).width == 0


@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=30))
def test_mean_interval_contains_the_mean(xs):
    iv = stats.mean_interval(xs)
    assert iv.low <= iv.estimate <= iv.high


def test_paired_difference_counts_and_interval():
    rng = np.random.default_rng(0)
    b = rng.uniform(0.8, 1.0, 64)
    a = b - 0.01 + rng.normal(0, 0.003, 64)   # a is worse by 0.01 on average
    pd = stats.paired_difference(a, b)
    assert pd.wins + pd.losses + pd.ties == 64
    assert pd.difference.high < 0 and pd.difference.contains(float(np.mean(a - b)))
    # the interval is the bootstrap's: it shrinks like 1/sqrt(n) (std 0.003 / 8 = 0.000375)
    assert 0.0005 < pd.difference.width < 0.004
    # same seed, same interval; equal scores give the degenerate interval [0, 0]
    assert stats.paired_difference(a, b) == pd
    same = stats.paired_difference(b, b)
    assert (same.difference.low, same.difference.high, same.ties) == (0.0, 0.0, 64)


def test_paired_difference_with_few_distinct_values_is_finite():
    # ARI-like scores that are mostly 1: BCa is undefined on such data; the percentile interval is used
    a = np.ones(32)
    b = np.ones(32)
    b[:2] = 0.9
    pd = stats.paired_difference(a, b)
    assert np.isfinite(pd.difference.low) and pd.difference.high >= pd.difference.estimate > 0
    assert (pd.wins, pd.losses) == (2, 0)


@pytest.mark.usefixtures("typecheck_off")
def test_paired_difference_bad_input():
    with pytest.raises(ValueError, match="same prompts"):
        stats.paired_difference([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        stats.paired_difference([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="level"):
        stats.mean_interval([1.0, 2.0], level=1.5)


def test_interval_format_shows_estimate_and_interval():
    iv = stats.Interval(0.98312, 0.978, 0.9881, 0.95, "t", 64)
    assert f"{iv:.3f}" == "0.983 (95% CI 0.978 to 0.988)"
    assert f"{iv.low:.2f}" == "0.98"
    with pytest.raises(ValueError, match="low must be <= high"):
        stats.Interval(1.0, 2.0, 1.0)


def test_percentile_interval_is_scipy_percentile_and_stays_in_range():
    # scores piled at the bound 1 (an ARI): the t interval passes 1, the percentile one does not
    x = np.array([1.0] * 17 + [0.55, 0.8, 0.9])
    iv = stats.percentile_interval(x)
    ref = sps.bootstrap((x,), np.mean, method="percentile", n_resamples=9_999,
                        random_state=np.random.default_rng(0)).confidence_interval
    assert iv.estimate == pytest.approx(x.mean()) and iv.method == "bootstrap percentile" and iv.n == x.size
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), rel=1e-6)   # the draws pass through float32
    assert stats.mean_interval(x).high > 1 >= iv.high >= iv.estimate >= iv.low >= x.min()
    assert stats.percentile_interval([0.5, 0.5, 0.5]).width == 0


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=30))
def test_percentile_interval_within_the_draws(xs):
    iv = stats.percentile_interval(xs, n_resamples=199)
    x = np.asarray(xs, np.float32).astype(float)
    assert x.min() - 1e-12 <= iv.low <= iv.high <= x.max() + 1e-12


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("x, kw", [([1.0], {}), ([[1.0, 2.0]], {}), ([1.0, np.nan], {}), ([1.0, 2.0], {"n_resamples": 0})])
def test_percentile_interval_bad_input(x, kw):
    with pytest.raises(ValueError):
        stats.percentile_interval(x, **kw)


@pytest.mark.parametrize("counts, low, high", [
    ((56, 70, 48, 80), 0.0524, 0.3339),   # Newcombe (1998), Table II, method 10
    ((9, 10, 3, 10), 0.1705, 0.8090),
    ((10, 10, 0, 20), 0.6791, 1.0),       # rates of 1 and 0: the interval stays in [-1, 1]
])
def test_rate_difference_is_newcombes_hybrid_score(counts, low, high):
    d = stats.rate_difference(*counts)
    k1, n1, k2, n2 = counts
    assert d.estimate == pytest.approx(k1 / n1 - k2 / n2)
    assert (d.low, d.high) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))
    assert d.n == n1 + n2 and d.method == "Newcombe hybrid score"


@pytest.mark.usefixtures("typecheck_off")
def test_rate_difference_bad_counts():
    with pytest.raises(ValueError, match="k2"):
        stats.rate_difference(1, 2, 3, 2)
    with pytest.raises(ValueError, match="n1"):
        stats.rate_difference(0, 0, 1, 2)


def test_mean_difference_is_welchs_interval():
    # Welch's interval written out: the two variances of the means and the Welch-Satterthwaite
    # degrees of freedom, against scipy's ttest_ind behind stats.mean_difference
    import scipy.stats as st

    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 4.0, 6.0, 8.0, 10.0])
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    df = (vx + vy) ** 2 / (vx ** 2 / (x.size - 1) + vy ** 2 / (y.size - 1))
    half = st.t.ppf(0.975, df) * np.sqrt(vx + vy)
    d = stats.mean_difference(x, y)
    assert d.estimate == pytest.approx(-3.5)
    assert (d.low, d.high) == pytest.approx((-3.5 - half, -3.5 + half), rel=1e-10)
    assert d.method == "Welch t" and d.n == 9
    with pytest.raises(ValueError, match="y must hold at least 2"):
        stats.mean_difference(x, [1.0])


def test_paired_median_difference_keeps_the_pairs():
    rng = np.random.default_rng(0)
    base = rng.normal(size=16) * 10.0  # a large spread shared by both settings of a seed
    a, b = base + 1.0, base.copy()
    d = stats.paired_median_difference(a, b)
    # paired, the shared spread cancels: every resample's difference of medians is 1
    assert (d.estimate, d.low, d.high) == pytest.approx((1.0, 1.0, 1.0))
    # the pairs broken (b shuffled), the same medians give a wide interval
    wide = stats.paired_median_difference(a, rng.permutation(b))
    assert wide.estimate == pytest.approx(1.0) and wide.high - wide.low > 5
    assert d.method == "paired bootstrap percentile" and d.n == 16
    with pytest.raises(ValueError, match="same draws"):
        stats.paired_median_difference(list(a), list(b[:-1]))


def test_median_interval():
    x = np.arange(1.0, 18.0)  # median 9; an order-statistic interval around it
    m = stats.median_interval(x)
    assert m.estimate == 9.0 and 5.0 <= m.low < 9.0 < m.high <= 13.0
    # a far outlier moves the mean, not the median or its interval
    y = x.copy()
    y[-1] = 1e6
    assert stats.median_interval(y).estimate == 9.0 and stats.median_interval(y).high <= 13.0
    assert stats.median_interval([2.0, 2.0, 2.0]).low == 2.0
def _clustered(rng, clusters, size, between):
    """Scores of ``clusters`` groups of ``size`` prompts: a group effect of standard deviation
    ``between`` plus independent unit noise."""
    labels = np.repeat(np.arange(clusters), size)
    return rng.normal(size=clusters)[labels] * between + rng.normal(size=clusters * size), labels


def test_cluster_bootstrap_matches_the_plain_one_on_independent_prompts():
    # 100 groups of 8 independent draws: resampling groups or prompts estimates the same
    # variance; the bootstrap's own noise on a width is about 1/sqrt(2 * 100) = 7%, so 15%
    x, labels = _clustered(np.random.default_rng(0), 100, 8, between=0.0)
    zero = np.zeros_like(x)
    plain = stats.paired_difference(x, zero).difference
    clus = stats.cluster_paired_difference(x, zero, labels).difference
    assert clus.estimate == pytest.approx(plain.estimate)
    assert clus.width / plain.width == pytest.approx(1.0, abs=0.15)
    assert clus.n == 100 and clus.method.startswith("cluster bootstrap")
    # every prompt its own cluster: the plain bootstrap
    single = stats.cluster_paired_difference(x, zero, np.arange(x.size)).difference
    assert single.width / plain.width == pytest.approx(1.0, abs=0.05)


def test_cluster_bootstrap_widens_the_interval_on_clustered_prompts():
    # a group effect as large as the noise, 8 prompts a group: the variance of the mean is
    # (1 + 7 * 0.5) = 4.5 times that of independent prompts, the width about 2.1 times
    x, labels = _clustered(np.random.default_rng(1), 60, 8, between=1.0)
    zero = np.zeros_like(x)
    plain = stats.paired_difference(x, zero).difference
    pd = stats.cluster_paired_difference(x, zero, labels)
    assert pd.difference.width / plain.width > 1.6
    assert pd.wins + pd.losses + pd.ties == x.size


def test_cluster_mean_interval_weights_by_size_and_bad_input():
    iv = stats.cluster_mean_interval([0.0, 1.0, 1.0], [2, 1, 1])
    assert iv.estimate == pytest.approx(0.5) and iv.low <= iv.estimate <= iv.high
    assert stats.cluster_mean_interval([0.3, 0.3], [4, 5]).width == 0
    with pytest.raises(ValueError, match="at least 2 clusters"):
        stats.cluster_mean_interval([1.0], [3])
    with pytest.raises(ValueError, match="sizes must be > 0"):
        stats.cluster_mean_interval([1.0, 2.0], [3, 0])
    with pytest.raises(ValueError, match="same prompts"):
        stats.cluster_paired_difference([1.0, 2.0], [0.0, 1.0], [0])


def test_best_set_reports_ties():
    rng = np.random.default_rng(2)
    base = rng.normal(size=64)
    scores = {"a": base + 0.5, "b": base + 0.5 + 0.01 * rng.normal(size=64), "c": base}
    best = stats.best_set(scores)
    assert best.top in ("a", "b") and set(best.tied) == {"a", "b"}
    assert best.differences["c"].difference.high < 0
    assert stats.best_set(scores, larger_is_better=False).tied == ("c",)
    with pytest.raises(ValueError, match="at least 2"):
        stats.best_set({"a": base})
