"""Intervals for the book's statistics: the evidence behind every claim of the claims ledger
(``attnclust.book.claims``, the page "Claims and evidence", chapters/claims.md).

Three kinds of statement need three kinds of interval:

- a frequency ("k of n seeds end aligned"): ``binomial_interval``, the exact
  (Clopper-Pearson) interval; two frequencies of independent sets of seeds compared:
  ``rate_difference``, Newcombe's hybrid score interval of their difference;
- a mean over independent draws (seeds, prompts): ``mean_interval``, Student's t interval,
  or ``percentile_interval``, a percentile bootstrap whose ends stay inside the range of the
  draws (for a bounded score such as the adjusted Rand index, at most 1);
- a paired comparison of two methods scored on the same prompts: ``paired_difference``,
  the mean of the per-prompt differences with a bootstrap (BCa) interval, and how many
  prompts each method wins; when the prompts come in groups that share a source of
  variation (the prompts of one pair of digits share its images), ``cluster_paired_difference``
  resamples the groups instead (``cluster_mean_interval``, a cluster bootstrap);
- which methods are best: ``best_set``, the top method by its mean and every method whose
  paired difference to it has an interval that covers 0 (a tie is reported as a tie).

Every function returns an ``Interval``, whose ``format`` prints the estimate followed by the
interval ("0.983 (95% CI 0.978 to 0.988)"), so a sentence of the book shows both from one
value. SciPy computes the intervals (``scipy.stats.binomtest``, ``scipy.stats.t``,
``scipy.stats.bootstrap``); the bootstrap is seeded, so a build gives the same interval twice.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jaxtyping import ArrayLike, Float
from scipy import stats as _stats

from . import _validate as v

__all__ = [
    "Interval",
    "PairedDifference",
    "binomial_interval",
    "rate_difference",
    "mean_interval",
    "mean_difference",
    "paired_median_difference",
    "median_interval",
    "paired_difference",
    "percentile_interval",
    "cluster_mean_interval",
    "cluster_paired_difference",
    "best_set",
    "BestSet",
]


@dataclass(frozen=True)
class Interval:
    """An estimate with a confidence interval ``[low, high]`` at ``level``.

    ``format(iv, ".3f")`` (or ``f"{iv:.3f}"``) gives "0.983 (95% CI 0.978 to 0.988)": the
    format specification applies to the three numbers. In a sentence template the parts are
    ``{iv.estimate:.3f}``, ``{iv.low:.3f}``, ``{iv.high:.3f}``.

    Attributes:
        estimate: the point estimate.
        low: the lower end of the interval.
        high: the upper end of the interval.
        level: the confidence level, in (0, 1).
        method: how the interval was computed ("exact binomial", "t", "bootstrap BCa").
        n: the number of independent draws behind it.
    """

    estimate: float
    low: float
    high: float
    level: float = 0.95
    method: str = ""
    n: int = 0

    def __post_init__(self):
        for name in ("estimate", "low", "high"):
            object.__setattr__(self, name, v.real_number(f"Interval.{name}", getattr(self, name), finite=False))
        _level(self.level)
        v.ordered("low", self.low, "high", self.high)

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """True when ``low <= value <= high``."""
        return self.low <= value <= self.high

    def __format__(self, spec: str) -> str:
        spec = spec or ".3g"
        pct = f"{100 * self.level:g}%"
        return f"{self.estimate:{spec}} ({pct} CI {self.low:{spec}} to {self.high:{spec}})"

    def as_dict(self) -> dict[str, Any]:
        """The interval as plain JSON data (the claims ledger's file)."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high,
                "level": self.level, "method": self.method, "n": self.n}


def _level(level: Any) -> float:
    return v.number_in("level", level, 0.0, 1.0, high_open=True)


def binomial_interval(k: int, n: int, level: float = 0.95) -> Interval:
    """The frequency ``k / n`` with its exact (Clopper-Pearson) interval, for statements
    such as "k of n seeds end aligned" (``scipy.stats.binomtest``).

    Args:
        k: the number of successes, an integer in [0, n].
        n: the number of independent trials, an integer >= 1.
        level: the confidence level, in (0, 1).

    Returns:
        The ``Interval`` of the frequency, with ``n`` trials.

    Raises:
        ValueError: ``k`` or ``n`` not integers, ``k`` outside [0, n], a bad ``level``.
    """
    n = v.positive_int("n", n)
    k = v.positive_int("k", k, minimum=0, maximum=n)
    ci = _stats.binomtest(k, n).proportion_ci(confidence_level=_level(level), method="exact")
    return Interval(k / n, float(ci.low), float(ci.high), level, "exact binomial", n)


def rate_difference(k1: int, n1: int, k2: int, n2: int, level: float = 0.95) -> Interval:
    """The difference ``k1/n1 - k2/n2`` of two frequencies measured on independent trials
    (two settings trained with their own seeds), with Newcombe's hybrid score interval (his
    method 10, 1998): each rate's Wilson interval (``scipy.stats.binomtest``), combined as
    ``d - sqrt((p1 - l1)^2 + (u2 - p2)^2)`` to ``d + sqrt((u1 - p1)^2 + (p2 - l2)^2)``. Unlike the
    Wald interval it stays inside [-1, 1] and keeps its coverage when a rate is 0 or 1.

    Args:
        k1, n1: successes and trials of the first setting (0 <= k1 <= n1, n1 >= 1).
        k2, n2: those of the second.
        level: the confidence level, in (0, 1).

    Returns:
        The ``Interval`` of the difference (``n`` is ``n1 + n2``).

    Raises:
        ValueError: counts that are not integers, or outside [0, n].
    """
    level = _level(level)
    ends = []
    for k, n, name in ((k1, n1, "1"), (k2, n2, "2")):
        n = v.positive_int(f"n{name}", n)
        k = v.positive_int(f"k{name}", k, minimum=0, maximum=n)
        ci = _stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        ends.append((k / n, float(ci.low), float(ci.high), n))
    (p1, l1, u1, m1), (p2, l2, u2, m2) = ends
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return Interval(d, low, high, level, "Newcombe hybrid score", m1 + m2)


def _sample(name: str, x: Any, minimum: int = 2, what: str = "draws for an interval") -> np.ndarray:
    """``x`` as a finite one-dimensional float64 sample (one value per draw) of at least
    ``minimum`` ``what``."""
    arr = np.asarray(v.real_array(name, x), dtype=np.float64)
    v.shape(name, arr.shape, "(n,), one value per draw", arr.ndim == 1)
    v.count(name, arr.size, minimum, what)
    return arr


def mean_interval(x: Float[ArrayLike, " n"] | Sequence[float], level: float = 0.95) -> Interval:
    """The mean of ``n`` independent draws with Student's t interval,
    mean +- t_{n-1} s / sqrt(n).

    Args:
        x: ``(n,)`` the draws (one per seed or per prompt), finite, n >= 2.
        level: the confidence level, in (0, 1).

    Returns:
        The ``Interval`` of the mean. When every draw is equal the interval has width 0.

    Raises:
        ValueError: ``x`` not one-dimensional, fewer than 2 draws, not finite; a bad ``level``.
    """
    x = _sample("x", x)
    level = _level(level)
    mean = float(np.mean(x))
    half = float(_stats.t.ppf(0.5 + level / 2, x.size - 1) * np.std(x, ddof=1) / math.sqrt(x.size))
    return Interval(mean, mean - half, mean + half, level, "t", int(x.size))


def mean_difference(
    x: Float[ArrayLike, " n"] | Sequence[float], y: Float[ArrayLike, " m"] | Sequence[float], level: float = 0.95
) -> Interval:
    """The difference ``mean(x) - mean(y)`` of two independent samples (two settings measured on
    their own draws, not paired), with Welch's t interval (``scipy.stats.ttest_ind`` with
    ``equal_var=False``): it does not assume the two spreads are equal. For the same draws
    measured twice use ``paired_difference``.

    Args:
        x: ``(n,)`` the first sample, finite, n >= 2.
        y: ``(m,)`` the second, finite, m >= 2.
        level: the confidence level, in (0, 1).

    Returns:
        The ``Interval`` of the difference (``n`` is ``n + m``).

    Raises:
        ValueError: a sample not one-dimensional, with fewer than 2 draws or not finite.
    """
    x, y = _sample("x", x), _sample("y", y)
    level = _level(level)
    ci = _stats.ttest_ind(x, y, equal_var=False).confidence_interval(confidence_level=level)
    return Interval(float(np.mean(x) - np.mean(y)), float(ci.low), float(ci.high), level, "Welch t",
                    int(x.size + y.size))


def percentile_interval(
    x: Float[ArrayLike, " n"] | Sequence[float], level: float = 0.95, n_resamples: int = 9_999, seed: int = 0
) -> Interval:
    """The mean of ``n`` independent draws with a percentile bootstrap interval
    (``scipy.stats.bootstrap``, ``method="percentile"``, seeded).

    The ends are quantiles of means of resampled draws, so they lie within
    ``[min(x), max(x)]``: for a score bounded above (the adjusted Rand index is at most 1)
    the interval respects the bound, where Student's t interval of ``mean_interval`` can
    pass it when most draws sit at the bound.

    Args:
        x: ``(n,)`` the draws (one per seed or per prompt), finite, n >= 2.
        level: the confidence level, in (0, 1).
        n_resamples: bootstrap resamples, >= 1.
        seed: the NumPy seed of the resampling.

    Returns:
        The ``Interval`` of the mean, method "bootstrap percentile". When every draw is equal
        the interval has width 0.

    Raises:
        ValueError: ``x`` not one-dimensional, fewer than 2 draws, not finite; a bad
            ``level`` or ``n_resamples``.
    """
    x = _sample("x", x)
    level = _level(level)
    n_resamples = v.positive_int("n_resamples", n_resamples)
    mean = float(np.mean(x))
    if np.all(x == x[0]):
        return Interval(mean, mean, mean, level, "bootstrap percentile", int(x.size))
    res = _stats.bootstrap((x,), np.mean, confidence_level=level, n_resamples=n_resamples,
                           method="percentile", random_state=np.random.default_rng(seed))
    return Interval(mean, float(res.confidence_interval.low), float(res.confidence_interval.high), level,
                    "bootstrap percentile", int(x.size))


def _bootstrap_mean(x: np.ndarray, level: float, n_resamples: int, seed: int) -> tuple[float, float, str]:
    """A bootstrap interval of the mean of ``x``: BCa, or the percentile interval where BCa
    is undefined (few distinct values make its acceleration 0 / 0; SciPy then returns NaN
    with a warning, which is caught here rather than printed)."""
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = _stats.bootstrap((x,), np.mean, confidence_level=level, n_resamples=n_resamples,
                                   method=method, random_state=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            return low, high, f"bootstrap {method}"
    raise ValueError("the bootstrap interval is undefined for these differences")  # pragma: no cover


def _paired_args(a, b, level, n_resamples, what: str) -> tuple[np.ndarray, np.ndarray, float, int]:
    """The checked arguments of a paired comparison: two samples of the same ``what``."""
    a, b = _sample("a", a, 2, what), _sample("b", b, 2, what)
    v.same_shape("a", a.shape, "b", b.shape, what)
    return a, b, _level(level), v.positive_int("n_resamples", n_resamples, minimum=100)


def paired_median_difference(
    a: Float[ArrayLike, " n"] | Sequence[float],
    b: Float[ArrayLike, " n"] | Sequence[float],
    *,
    level: float = 0.95,
    n_resamples: int = 4999,
    seed: int = 0,
) -> Interval:
    """The difference ``median(a) - median(b)`` of two settings measured on the same draws (the
    same seeds trained at two separations), with a paired percentile bootstrap interval
    (``scipy.stats.bootstrap`` with ``paired=True``: a resample draws seeds, and keeps each
    seed's two values together). Percentile, not BCa: the median of a few draws takes few
    distinct values, where BCa's acceleration is undefined.

    Args:
        a: ``(n,)`` the first setting's value for each draw.
        b: ``(n,)`` the second setting's value for the same draws, in the same order.
        level: the confidence level, in (0, 1).
        n_resamples: bootstrap resamples, an integer >= 100.
        seed: the bootstrap's seed.

    Returns:
        The ``Interval`` of the difference of the medians, method "paired bootstrap
        percentile" (width 0 when every resample gives the same difference).

    Raises:
        ValueError: ``a`` and ``b`` of different lengths, fewer than 2 draws, not finite; a
            bad ``level`` or ``n_resamples``.
    """
    a, b, level, n_resamples = _paired_args(a, b, level, n_resamples, "draws")
    est = float(np.median(a) - np.median(b))
    method = "paired bootstrap percentile"
    if np.all(a == a[0]) and np.all(b == b[0]):
        return Interval(est, est, est, level, method, int(a.size))

    def stat(x, y, axis=-1):
        return np.median(x, axis=axis) - np.median(y, axis=axis)

    res = _stats.bootstrap((a, b), stat, paired=True, vectorized=True, confidence_level=level,
                           n_resamples=n_resamples, method="percentile",
                           random_state=np.random.default_rng(seed))
    return Interval(est, float(res.confidence_interval.low), float(res.confidence_interval.high), level,
                    method, int(a.size))


def median_interval(
    x: Float[ArrayLike, " n"] | Sequence[float], level: float = 0.95, n_resamples: int = 4999, seed: int = 0
) -> Interval:
    """The median of ``n`` independent draws with a percentile bootstrap interval
    (``scipy.stats.bootstrap``, seeded; percentile, as in ``paired_median_difference``).

    Args:
        x: ``(n,)`` the draws, finite, n >= 2.
        level: the confidence level, in (0, 1).
        n_resamples: bootstrap resamples, an integer >= 100.
        seed: the bootstrap's seed.

    Returns:
        The ``Interval`` of the median, method "bootstrap percentile" (width 0 when every draw
        is equal).

    Raises:
        ValueError: ``x`` not one-dimensional, fewer than 2 draws, not finite; a bad ``level``
            or ``n_resamples``.
    """
    x = _sample("x", x)
    level = _level(level)
    n_resamples = v.positive_int("n_resamples", n_resamples, minimum=100)
    med = float(np.median(x))
    if np.all(x == x[0]):
        return Interval(med, med, med, level, "bootstrap percentile", int(x.size))
    res = _stats.bootstrap((x,), np.median, confidence_level=level, n_resamples=n_resamples,
                           method="percentile", random_state=np.random.default_rng(seed))
    return Interval(med, float(res.confidence_interval.low), float(res.confidence_interval.high), level,
                    "bootstrap percentile", int(x.size))


@dataclass(frozen=True)
class PairedDifference:
    """Two methods scored on the same ``n`` prompts: the mean of the differences ``a - b``
    with its interval, and how often each method is ahead.

    Attributes:
        difference: the ``Interval`` of the mean difference mean(a - b).
        wins: the number of prompts where a > b.
        losses: the number of prompts where a < b.
        ties: the number of prompts where a == b.
    """

    difference: Interval
    wins: int
    losses: int
    ties: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data (the claims ledger's file)."""
        return {"difference": self.difference.as_dict(), "wins": self.wins,
                "losses": self.losses, "ties": self.ties}


def paired_difference(
    a: Float[ArrayLike, " n"] | Sequence[float],
    b: Float[ArrayLike, " n"] | Sequence[float],
    *,
    level: float = 0.95,
    n_resamples: int = 4999,
    seed: int = 0,
) -> PairedDifference:
    """The paired comparison of two methods scored on the same prompts: the mean of
    ``a - b`` with a bootstrap BCa interval (``scipy.stats.bootstrap``, resampling prompts),
    and the counts of prompts won, lost and tied by ``a``.

    When every difference is equal (for instance all zero: two methods that agree on every
    prompt) the interval is that single value.

    Args:
        a: ``(n,)`` the first method's score on each prompt.
        b: ``(n,)`` the second method's score on the same prompts, in the same order.
        level: the confidence level, in (0, 1).
        n_resamples: bootstrap resamples, an integer >= 100.
        seed: the bootstrap's seed (a build gives the same interval twice).

    Returns:
        A ``PairedDifference``.

    Raises:
        ValueError: ``a`` and ``b`` of different lengths, fewer than 2 prompts, not finite;
            a bad ``level`` or ``n_resamples``.
    """
    a, b, level, n_resamples = _paired_args(a, b, level, n_resamples, "prompts")
    diff = a - b
    mean = float(np.mean(diff))
    if np.all(diff == diff[0]):
        iv = Interval(mean, mean, mean, level, "degenerate (all differences equal)", int(diff.size))
    else:
        low, high, method = _bootstrap_mean(diff, level, n_resamples, seed)
        iv = Interval(mean, low, high, level, method, int(diff.size))
    return PairedDifference(iv, int(np.sum(diff > 0)), int(np.sum(diff < 0)), int(np.sum(diff == 0)))


def cluster_mean_interval(
    means: Float[ArrayLike, " g"] | Sequence[float],
    sizes: Float[ArrayLike, " g"] | Sequence[float],
    *,
    level: float = 0.95,
    n_resamples: int = 4999,
    seed: int = 0,
) -> Interval:
    """The mean over every unit of clustered data, from each cluster's mean and size, with a
    cluster bootstrap interval: the clusters are resampled with replacement and the statistic
    is the size-weighted mean of the chosen clusters' means (``sum(size * mean) / sum(size)``),
    a BCa interval by ``scipy.stats.bootstrap`` (``paired=True``: a cluster's mean and size
    are drawn together), or the percentile interval where BCa is undefined.

    Units of one cluster (the prompts of one pair of digits, which share that pair's images
    and split) are not independent: a bootstrap over units treats them as if they were and
    gives too narrow an interval when the clusters differ. Resampling whole clusters keeps
    their within-cluster variation inside each draw. Units are **not** resampled a second
    time within the chosen clusters: that would add the within-cluster variance once more
    (Davison and Hinkley, *Bootstrap Methods and their Application*, 1997, section 3.8), and
    on independent units it would widen the interval by about sqrt(2) instead of matching the
    plain bootstrap.

    Args:
        means: ``(g,)`` each cluster's mean, finite, g >= 2 clusters.
        sizes: ``(g,)`` each cluster's number of units, positive.
        level: the confidence level, in (0, 1).
        n_resamples: bootstrap resamples, an integer >= 100.
        seed: the bootstrap's seed.

    Returns:
        The ``Interval`` of the mean over units; its ``n`` is the number of clusters, the
        number of independent draws behind it. When every cluster has the same mean the
        interval has width 0.

    Raises:
        ValueError: ``means`` and ``sizes`` of different lengths, fewer than 2 clusters, a size
            that is not positive, values not finite; a bad ``level`` or ``n_resamples``.
    """
    means = _sample("means", means, 2, "clusters for an interval")
    sizes = v.positive_array("sizes", _sample("sizes", sizes, 2, "clusters for an interval"), dtype=np.float64)
    v.same_shape("means", means.shape, "sizes", sizes.shape, "clusters")
    level = _level(level)
    n_resamples = v.positive_int("n_resamples", n_resamples, minimum=100)
    estimate = float(np.sum(sizes * means) / np.sum(sizes))
    if np.all(means == means[0]):
        return Interval(estimate, estimate, estimate, level, "degenerate (all clusters equal)", int(means.size))

    def weighted(m, s, axis=-1):
        return np.sum(m * s, axis=axis) / np.sum(s, axis=axis)

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = _stats.bootstrap((means, sizes), weighted, paired=True, vectorized=True, confidence_level=level,
                                   n_resamples=n_resamples, method=method, random_state=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            return Interval(estimate, low, high, level, f"cluster bootstrap {method}", int(means.size))
    raise ValueError("the bootstrap interval is undefined for these clusters")  # pragma: no cover


def cluster_paired_difference(
    a: Float[ArrayLike, " n"] | Sequence[float],
    b: Float[ArrayLike, " n"] | Sequence[float],
    clusters: ArrayLike | Sequence[Any],
    *,
    level: float = 0.95,
    n_resamples: int = 4999,
    seed: int = 0,
) -> PairedDifference:
    """The paired comparison of two methods scored on the same prompts when the prompts come
    in clusters (``clusters[i]`` names prompt ``i``'s cluster: the pair of digits it was drawn
    from): the mean of ``a - b`` with the cluster bootstrap interval of
    ``cluster_mean_interval`` (whole clusters resampled), and the counts of prompts won, lost
    and tied by ``a``. With every prompt its own cluster it is the plain bootstrap of
    ``paired_difference``.

    Args:
        a: ``(n,)`` the first method's score on each prompt.
        b: ``(n,)`` the second method's score on the same prompts.
        clusters: ``(n,)`` a cluster label per prompt (any hashable values), at least 2 distinct.
        level: the confidence level, in (0, 1).
        n_resamples: bootstrap resamples, an integer >= 100.
        seed: the bootstrap's seed.

    Returns:
        A ``PairedDifference``; its interval's ``n`` is the number of clusters.

    Raises:
        ValueError: ``a``, ``b`` and ``clusters`` of different lengths, fewer than 2 clusters,
            scores not finite; a bad ``level`` or ``n_resamples``.
    """
    a = _sample("a", a, 1, "prompts")
    b = _sample("b", b, 1, "prompts")
    groups = np.asarray(clusters)
    v.same_shape("a", a.shape, "b", b.shape, "prompts")
    v.same_shape("clusters", groups.shape, "a", a.shape, "prompts")
    diff = a - b
    _, index = np.unique(groups, return_inverse=True)
    sizes = np.bincount(index).astype(np.float64)
    means = np.bincount(index, weights=diff) / sizes
    iv = cluster_mean_interval(means, sizes, level=level, n_resamples=n_resamples, seed=seed)
    iv = Interval(float(np.mean(diff)), iv.low, iv.high, iv.level, iv.method, iv.n)
    return PairedDifference(iv, int(np.sum(diff > 0)), int(np.sum(diff < 0)), int(np.sum(diff == 0)))


@dataclass(frozen=True)
class BestSet:
    """The methods that ``best_set`` cannot tell apart from the top one.

    Attributes:
        top: the method with the best mean score.
        tied: the methods (``top`` first) whose paired difference to ``top`` has an interval
            that covers 0.
        differences: method name -> ``PairedDifference`` of its score minus the top's (every
            method but ``top``).
    """

    top: str
    tied: tuple[str, ...]
    differences: dict


def best_set(
    scores: Mapping[str, Float[ArrayLike, " n"]],
    *,
    larger_is_better: bool = True,
    clusters: ArrayLike | None = None,
    level: float = 0.95,
    seed: int = 0,
) -> BestSet:
    """The best method of several scored on the same prompts, reported with its ties: the
    top one by mean score, and every method whose paired difference to it
    (``paired_difference``, or ``cluster_paired_difference`` when ``clusters`` is given) has
    an interval that covers 0. A point estimate alone does not make a winner.

    Args:
        scores: method name -> ``(n,)`` scores on the same prompts, in the same order; at
            least 2 methods.
        larger_is_better: True for a score such as the ARI, False for a loss such as the
            distortion.
        clusters: ``(n,)`` cluster labels of the prompts, or None for independent prompts.
        level: the confidence level of the intervals.
        seed: the bootstrap's seed.

    Returns:
        A ``BestSet``.

    Raises:
        ValueError: fewer than 2 methods, or scores of different lengths.
    """
    v.instance("scores", scores, Mapping)
    v.count("scores", len(scores), 2, "methods (names mapped to their scores)")
    arrays = {name: _sample(f"scores[{name!r}]", x, 1, "scores") for name, x in scores.items()}
    first = next(iter(arrays))
    for name, x in arrays.items():  # one score per prompt for every method, on the same prompts
        v.same_shape(f"scores[{name!r}]", x.shape, f"scores[{first!r}]", arrays[first].shape, "prompts")
    sign = 1.0 if larger_is_better else -1.0
    top = max(arrays, key=lambda name: sign * float(np.mean(arrays[name])))
    diffs = {}
    for name, x in arrays.items():
        if name == top:
            continue
        if clusters is None:
            diffs[name] = paired_difference(x, arrays[top], level=level, seed=seed)
        else:
            diffs[name] = cluster_paired_difference(x, arrays[top], clusters, level=level, seed=seed)
    tied = (top,) + tuple(n for n, pd in diffs.items() if pd.difference.contains(0.0))
    return BestSet(top, tied, diffs)
