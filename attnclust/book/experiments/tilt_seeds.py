"""The tilt across temperatures with enough seeds per temperature for an interval (chapter
"Training dynamics", section "The measured tilt").

The minimiser of the large-L risk R_inf is not exactly aligned: each head tilts away from the
other centroid by an angle that shrinks as lam grows (``symbolic.tilted_minimiser``). The
chapter's figure trains one run per seed with the inverse temperatures of ``training.LAMS_TILT``
spread over the book's 16 seeds, which shows the trend but leaves too few seeds per
temperature for an interval. This experiment trains ``seeds`` runs at *every* temperature of
that grid, at the figure's setting (default K = 2 mixture, r / sigma = 4, the book's small
budget at L = 50, started near the centroids), in one ``fit_many`` call
(``sweeps.run_seeds`` with one inverse temperature per run). The keys are repeated across
temperatures (``repeat_keys``), so run ``i`` of every inverse temperature has the same initial heads
and batches and the rise of ``|cos|`` from one inverse temperature to the next is a paired
difference over seeds.

It takes under a minute on a 2-core CPU (41 s measured), more than the chapter's build should
spend on one statement, so it is a committed experiment
(``python -m attnclust experiment training-tilt-seeds``, written to
``attnclust/book/results/training-tilt-seeds.json``), read by the chapter with ``stored``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnclust import _validate as v
from attnclust.book import results, sweeps
from attnclust import stats
from attnclust.metrics import alignment
from attnclust.mixture import orthogonal_mixture
from attnclust.book.experiments import committed
from attnclust.book.experiments.training import LAMS_TILT, tilted_cos
from attnclust.setting import DEFAULT
from attnclust.book import sizes

__all__ = ["SIZES", "TiltSeeds", "tilt_seeds", "experiment", "stored"]

SIZES: dict[str, dict] = {
    # the committed run: 32 seeds at each temperature of the chapter's grid, the small budget
    # (under a minute on a 2-core CPU)
    "full": dict(budget="small", seeds=32, lams=LAMS_TILT),
    # tests: every code path, tiny
    "test": dict(budget="test", seeds=3, lams=(0.5, 2.0)),
}
"""The budget (``sweeps.BUDGETS``), the seeds per temperature and the temperatures."""


@dataclass(frozen=True)
class TiltSeeds:
    """The tilt with ``seeds`` runs at every temperature.

    Attributes:
        setting: the budget and mixture the runs were trained at.
        lams: ``(n_lam,)`` the temperatures.
        cos: ``(n_lam, seeds, 2)`` the matched ``|cos|`` of each head of each run
            (tail-averaged heads); run ``i`` shares its initial heads and batches at every
            temperature.
        theory: ``(n_lam,)`` the large-L tilted minimiser's ``|cos|`` at each temperature.
    """

    setting: dict
    lams: tuple[float, ...]
    cos: np.ndarray
    theory: np.ndarray

    @property
    def seeds(self) -> int:
        """Runs per temperature."""
        return int(self.cos.shape[1])

    def per_seed(self) -> np.ndarray:
        """``(n_lam, seeds)`` the mean of the two heads' ``|cos|`` of each run."""
        return self.cos.mean(axis=-1)

    def interval(self, i: int) -> stats.Interval:
        """The mean over seeds of ``per_seed`` at inverse temperature ``lams[i]``, with its t
        interval (the seeds are independent draws)."""
        return stats.mean_interval(self.per_seed()[i])

    def gap(self, i: int) -> stats.Interval:
        """``interval(i)`` less the large-L tilted minimiser's ``|cos|`` at ``lams[i]`` (a
        constant, so the interval is shifted)."""
        iv, c = self.interval(i), float(self.theory[i])
        return stats.Interval(iv.estimate - c, iv.low - c, iv.high - c, iv.level, iv.method, iv.n)

    def rise(self, i: int) -> stats.PairedDifference:
        """The paired difference over seeds of ``per_seed`` between ``lams[i + 1]`` and
        ``lams[i]`` (same initial heads and batches)."""
        p = self.per_seed()
        return stats.paired_difference(p[i + 1], p[i])

    def as_data(self) -> dict:
        """Plain JSON data (the results file)."""
        return {"setting": self.setting, "lams": list(self.lams), "cos": self.cos,
                "theory": self.theory}

    @classmethod
    def from_data(cls, data: dict) -> "TiltSeeds":
        """The inverse of ``as_data``."""
        return cls(dict(data["setting"]), tuple(float(x) for x in data["lams"]),
                   np.asarray(data["cos"], np.float64), np.asarray(data["theory"], np.float64))


def tilt_seeds(budget: str = "small", seeds: int = 16, lams: tuple[float, ...] = LAMS_TILT) -> TiltSeeds:
    """``seeds`` runs at each temperature of ``lams`` (default K = 2 mixture, r = 2,
    sigma = 0.5, d = 5, ``budget``'s steps, batch, L and learning rate, started near the
    centroids), in one ``fit_many`` call with the keys repeated across temperatures."""
    seeds = v.positive_int("seeds", seeds)
    lams = tuple(float(v.positive_finite("lams", lam)) for lam in lams)
    if len(lams) < 2:
        raise ValueError(f"lams must hold at least 2 temperatures, got lams={lams!r}")
    b = sweeps.budget(budget)
    per_run = tuple(lam for lam in lams for _ in range(seeds))
    res = sweeps.run_seeds(budget, lam=per_run, init="near", seeds=len(per_run), repeat_keys=len(lams))
    mix = orthogonal_mixture(**DEFAULT.mixture_args())
    cos = np.asarray(alignment(sweeps.tail_average(res), mix.centroids), np.float64)
    setting = dict(DEFAULT.mixture_args(), init="near", budget=budget, steps=b.steps,
                   batch=b.batch, L=b.L, lr=b.lr, seeds_per_lam=seeds)
    return TiltSeeds(setting, lams, cos.reshape(len(lams), seeds, 2),
                     np.array([tilted_cos(lam, DEFAULT.r, DEFAULT.sigma) for lam in lams]))


NAME = "training-tilt-seeds"


@committed(NAME, sources=("attnclust/book/experiments/training.py", "attnclust/book/sweeps.py",
                          "attnclust/train.py", "attnclust/mixture.py", "attnclust/metrics.py",
                          "attnclust/symbolic/aligned.py"),
           description="The tilt at each temperature with 32 seeds per temperature")
def experiment(size: str = "full") -> dict:
    """The committed tilt runs at ``size`` (``SIZES``)."""
    cfg = sizes.pick(SIZES, size)
    return tilt_seeds(cfg["budget"], cfg["seeds"], cfg["lams"]).as_data()


def stored() -> tuple[TiltSeeds, results.Stored]:
    """Read ``attnclust/book/results/training-tilt-seeds.json`` (see ``experiment``)."""
    st = results.load(NAME)
    return TiltSeeds.from_data(st.data), st
