"""Where the index of a symmetric stationary point changes with the prompt length L (chapter
"Training dynamics", section "The finite-L landscape"), from a committed ``landscape.Landscape``.

The smallest Hessian eigenvalue of R_L at the point is measured on a grid of L with several
independent samples of prompts per L. Its sample means change sign between two adjacent grid
lengths (``bracket``). Two estimates of where:

- ``limit_fit_chi2``: the goodness of fit of ``Landscape.crossing``'s fit ``lambda_inf + a/L +
  b/L^2`` over the whole grid (``lambda_inf`` fixed at the R_inf value), chi^2 of the
  residuals against the standard errors of the means. Where it does not fit, its crossing is
  not evidence.
- ``local_fit``: a straight line in 1/L, weighted by the means' standard errors, through the
  bracket and ``neighbours`` grid lengths on each side, with its chi^2 and a bootstrap
  percentile interval of the crossing (the samples of each L resampled with replacement);
  ``crossing_difference`` compares two points' crossings.

Nothing here is a source of the committed results: it only reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sst

from attnclust import _validate as v
from attnclust import stats
from attnclust.book.experiments.landscape import Landscape

__all__ = ["LocalFit", "bracket", "crossing_difference", "limit_fit_chi2", "local_fit"]


def _se(land: Landscape) -> np.ndarray:
    """``(len(Ls),)`` the standard error of the mean smallest eigenvalue at each L."""
    return land.smallest.std(1, ddof=1) / np.sqrt(land.samples)


def bracket(land: Landscape) -> tuple[int, int]:
    """The first adjacent grid lengths ``(L_a, L_b)``, ascending, whose mean smallest
    eigenvalues go from >= 0 to < 0.

    Raises:
        ValueError: the means do not change sign on the grid.
    """
    m = land.smallest.mean(1)
    for i in range(len(land.Ls) - 1):
        if m[i] >= 0 > m[i + 1]:
            return land.Ls[i], land.Ls[i + 1]
    raise ValueError(f"the mean smallest eigenvalue of {land.point!r} does not change sign on the grid {land.Ls}")


def limit_fit_chi2(land: Landscape) -> tuple[float, int]:
    """(chi^2, degrees of freedom) of ``Landscape.crossing``'s least-squares fit of the means
    as ``limit + a/L + b/L^2`` over the whole grid, the residuals divided by the means'
    standard errors; two fitted coefficients."""
    x = 1.0 / np.asarray(land.Ls, float)
    y = land.smallest.mean(1) - land.limit[0]
    A = np.stack([x, x**2], 1)
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    return float(np.sum(((y - A @ coef) / _se(land)) ** 2)), len(land.Ls) - 2


@dataclass(frozen=True)
class LocalFit:
    """A straight line in 1/L through the grid lengths around the sign change (``local_fit``).

    Attributes:
        point: "split" or "symmetric".
        Ls: the grid lengths fitted.
        bracket: the grid lengths between which the means change sign.
        crossing: the L where the line crosses zero, with its bootstrap percentile interval.
        chi2: the fit's chi^2 (residuals over the means' standard errors).
        dof: its degrees of freedom, ``len(Ls) - 2``.
        draws: the bootstrap draws of the crossing (for ``crossing_difference``).
    """

    point: str
    Ls: tuple[int, ...]
    bracket: tuple[int, int]
    crossing: stats.Interval
    chi2: float
    dof: int
    draws: np.ndarray

    @property
    def p_value(self) -> float:
        """The chi^2 test's p-value (NaN with no degree of freedom)."""
        return float(sst.chi2.sf(self.chi2, self.dof)) if self.dof > 0 else float("nan")


def _line(t: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares ``y = c0 + c1 t``: (c0, c1, chi^2)."""
    A = np.stack([np.ones_like(t), t], 1)
    c0, c1 = np.linalg.solve(A.T @ (A * w[:, None]), A.T @ (w * y))
    return float(c0), float(c1), float(np.sum(w * (y - c0 - c1 * t) ** 2))


def local_fit(land: Landscape, neighbours: int = 1, n_boot: int = 4000, seed: int = 0,
              level: float = 0.95) -> LocalFit:
    """The crossing of zero by a straight line in 1/L fitted to the mean smallest eigenvalues
    at the bracket (``bracket``) and ``neighbours`` grid lengths on each side, weighted by
    ``1 / se^2``; the interval is a bootstrap percentile interval, the samples of each L
    resampled with replacement and the fit repeated with the same weights.

    Args:
        land: the committed landscape of one point.
        neighbours: grid lengths on each side of the bracket, >= 0 (0: linear interpolation
            between the bracket, with no degree of freedom left).
        n_boot: bootstrap resamples, >= 1.
        seed: the NumPy seed of the resampling.
        level: the interval's level, in (0, 1).

    Returns:
        The ``LocalFit``.
    """
    neighbours = v.positive_int("neighbours", neighbours, minimum=0)
    n_boot = v.positive_int("n_boot", n_boot)
    lo, hi = bracket(land)
    i = land.index(lo)
    rows = list(range(max(0, i - neighbours), min(len(land.Ls), i + 2 + neighbours)))
    t = 1.0 / np.asarray([land.Ls[r] for r in rows], float)
    x = land.smallest[rows]
    w = 1.0 / _se(land)[rows] ** 2
    c0, c1, chi2 = _line(t, x.mean(1), w)
    rng = np.random.default_rng(seed)
    S = land.samples
    draws = np.empty(n_boot)
    for b in range(n_boot):
        m = np.take_along_axis(x, rng.integers(0, S, x.shape), 1).mean(1)
        b0, b1, _ = _line(t, m, w)
        draws[b] = -b1 / b0  # L = 1 / t where b0 + b1 t = 0
    q = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    crossing = stats.Interval(-c1 / c0, float(q[0]), float(q[1]), level, "bootstrap percentile", S)
    return LocalFit(land.point, tuple(land.Ls[r] for r in rows), (lo, hi), crossing, chi2,
                    len(rows) - 2, draws)


def crossing_difference(a: LocalFit, b: LocalFit, level: float = 0.95) -> stats.Interval:
    """``a``'s crossing minus ``b``'s, with a percentile interval from their bootstrap draws
    paired at random (the two landscapes are measured on independent samples)."""
    if a.draws.size != b.draws.size:
        raise ValueError(f"a and b must have as many bootstrap draws, got {a.draws.size} and {b.draws.size}")
    d = a.draws - np.random.default_rng(1).permutation(b.draws)
    q = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    return stats.Interval(a.crossing.estimate - b.crossing.estimate, float(q[0]), float(q[1]), level,
                          "bootstrap percentile", a.crossing.n)
