"""The trend of a rate against a setting: a logistic regression on grouped counts (chapter
"Training dynamics", section "Where the stalled runs are": the close start's stall rate
against the prompt length, ``attnclust.book.experiments.stall_rate``).

A rate measured at several values of a setting, each value with its own seeds (independent
trials), is summarised by the slope ``b`` of ``logit P(success) = a + b x``. ``logistic_slope``
fits it by maximum likelihood and gives its profile-likelihood interval as a
``attnclust.stats.Interval``, beside the intervals of ``attnclust.stats`` (the exact interval
of one rate, ``binomial_interval``; the difference of two, ``rate_difference``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jaxtyping import ArrayLike, Float
from scipy import optimize, special
from scipy import stats as sps

from attnclust import _validate as v
from attnclust.stats import Interval

__all__ = ["logistic_slope"]


def _grouped_loglik(eta: np.ndarray, k: np.ndarray, n: np.ndarray) -> float:
    """The binomial log-likelihood of ``k`` of ``n`` at log-odds ``eta`` (without the
    binomial coefficients)."""
    return float(np.sum(k * eta - n * np.logaddexp(0.0, eta)))


def _profile_intercept(b: float, x: np.ndarray, k: np.ndarray, n: np.ndarray) -> float:
    """The intercept that maximises the log-likelihood at slope ``b``: the root of
    ``sum n sigmoid(a + b x) = sum k``, increasing in ``a``."""
    total = float(k.sum())
    f = lambda a: float(np.sum(n * special.expit(a + b * x))) - total  # noqa: E731
    lo, hi = -1.0, 1.0
    while f(lo) > 0:
        lo *= 2
    while f(hi) < 0:
        hi *= 2
    return float(optimize.brentq(f, lo, hi, xtol=1e-13))


def logistic_slope(
    x: Float[ArrayLike, " g"] | Sequence[float],
    k: Sequence[int],
    n: Sequence[int],
    level: float = 0.95,
) -> Interval:
    """The slope ``b`` of the logistic regression ``logit P(success) = a + b x`` fitted by
    maximum likelihood to grouped counts: ``k[i]`` successes of ``n[i]`` independent trials at
    ``x[i]`` (a rate measured at several values of a setting, each with its own seeds). Its
    interval is the profile-likelihood interval: the slopes ``b`` at which twice the drop of
    the log-likelihood, maximised over ``a``, stays below the chi-square quantile with one
    degree of freedom. Unlike the Wald interval it follows the likelihood's asymmetry when a
    rate is near 0 or 1. ``exp(b)`` is the odds ratio per unit of ``x``.

    Args:
        x: ``(g,)`` the setting of each group, finite, at least two distinct values.
        k: ``(g,)`` successes per group, integers with ``0 <= k <= n``.
        n: ``(g,)`` trials per group, integers >= 1.
        level: the confidence level, in (0, 1).

    Returns:
        The ``Interval`` of the slope (``n`` is the total number of trials), method "logistic
        profile likelihood". An end is infinite when the likelihood does not drop that far on
        that side (a rate of 0 or 1 at the end of the range), and so is the estimate when the
        counts are separated by ``x``.

    Raises:
        ValueError: lengths that differ, fewer than two distinct ``x``, counts out of range,
            no success or no failure at all (no intercept fits), a bad ``level``.
    """
    x = v.real_array("x", x, dtype=np.float64)
    v.shape("x", x.shape, "(g,), one value per group", x.ndim == 1)
    level = v.number_in("level", level, 0.0, 1.0, high_open=True)
    if len(k) != x.size or len(n) != x.size:
        raise ValueError(f"k and n must have one count per value of x ({x.size}), got {len(k)} and {len(n)}")
    n_ = np.array([v.positive_int(f"n[{i}]", m) for i, m in enumerate(n)], np.float64)
    k_ = np.array([v.positive_int(f"k[{i}]", j, minimum=0, maximum=int(m)) for i, (j, m) in enumerate(zip(k, n_))],
                  np.float64)
    if np.unique(x).size < 2:
        raise ValueError(f"x must take at least two distinct values for a slope, got x={x.tolist()}")
    if k_.sum() == 0 or k_.sum() == n_.sum():
        raise ValueError(f"k must have at least one success and one failure in all, got k={k_.astype(int).tolist()}")
    xc = x - x.mean()  # centred: the slope is the same, the intercept better conditioned

    def profile(b: float) -> float:
        return _grouped_loglik(_profile_intercept(b, xc, k_, n_) + b * xc, k_, n_)

    # The profile log-likelihood is concave in b. Where the counts are separated by x (no
    # failure above the last success's x, or none below the first success's) it rises without
    # end: the estimate is infinite and its supremum is taken at the edge of the search. Slopes
    # are searched within +-64 / sd(x) (an odds ratio of e^64 per standard deviation of x); an
    # end of the interval that reaches that bound is infinite (the likelihood stays above the
    # cut on that side).
    bound = 64.0 / float(np.std(xc))
    succ, fail = xc[k_ > 0], xc[k_ < n_]
    sep = 1.0 if fail.max() <= succ.min() else -1.0 if succ.max() <= fail.min() else 0.0
    if sep:
        b_hat, top = sep * math.inf, profile(sep * bound)
    else:
        res = optimize.minimize_scalar(lambda b: -profile(b), bounds=(-bound, bound), method="bounded",
                                        options={"xatol": 1e-9 * bound})
        b_hat, top = float(res.x), -float(res.fun)
    cut = top - 0.5 * float(sps.chi2.ppf(level, 1))
    ends = []
    for side in (-1.0, 1.0):
        far = side * bound
        if (math.isinf(b_hat) and math.copysign(1.0, b_hat) == side) or profile(far) >= cut:
            ends.append(side * math.inf)
            continue
        near = b_hat if math.isfinite(b_hat) else -far
        ends.append(float(optimize.brentq(lambda b: profile(b) - cut, *sorted((near, far)), xtol=1e-12 * bound)))
    return Interval(b_hat, ends[0], ends[1], level, "logistic profile likelihood", int(n_.sum()))

