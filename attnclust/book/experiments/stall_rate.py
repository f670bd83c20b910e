"""How often the close start stalls, against the prompt length (chapter "Training dynamics",
section "Where the stalled runs are").

At the training length L = 50 the split point of K = 2 is a shallow local minimum of R_L;
beyond the length where its smallest Hessian eigenvalue crosses zero (about L = 70,
``landscape``) it is a saddle. This experiment measures the stall rate of the close start
(``attnclust.INITS``: two heads started almost equal) at the book's small budget
(``sweeps.budget("small")``: its steps, batch and learning rate) with many seeds at each of
several lengths, on both sides of the crossing, so that the chapter states the rate at each L
with its exact binomial interval and what the trend against L shows.

A run "stalls" when it ends between the centroids: the class ``sweeps.BETWEEN`` of
``sweeps.classify`` applied to the tail-averaged final heads (``training.summarise``), the
chapter's own classification.

**Seeds.** The runs at length L use the keys ``jax.random.split(PRNGKey(SEED_BASE + L), S)``:
one stream per length, used by no other experiment of the book. They are not the small
budget's keys (``PRNGKey(0)``, the chapter's 16 seeds), so the rate at L = 50 here is
independent of the chapter's 16 runs, and the lengths are independent of one another (the
initial heads and batches of two lengths are separate draws): rates of two lengths are
compared as independent frequencies (``stats.rate_difference``), and the trend over all
lengths by a logistic regression on grouped counts (``attnclust.book.trend.logistic_slope``).

It takes about a quarter of an hour on a 2-core CPU (128 seeds at five lengths), so it is a
committed experiment (``python -m attnclust experiment training-stall-rate``, written to
``attnclust/book/results/training-stall-rate.json``), read by the chapter with ``stored``.
Only the counts and, per seed, its class and final worst ``|cos|`` are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnclust import _validate as v
from attnclust import stats
from attnclust.book import results, sizes, sweeps, trend
from attnclust.book.experiments import committed
from attnclust.book.experiments.training import CLASS_NAMES, Runs, budget_setting, summarise

__all__ = ["LENGTHS", "NAME", "SEED_BASE", "SIZES", "StallRate", "close_runs", "experiment", "stored"]

LENGTHS = (50, 70, 100, 140, 200)
"""The prompt lengths of the committed run: the training length and four beyond the crossing."""

SEED_BASE = 3000
"""The runs at length L use the stream ``PRNGKey(SEED_BASE + L)`` (one per length)."""

SIZES: dict[str, dict] = {
    # the committed run: 128 seeds at each length, the small budget's own steps
    "full": dict(Ls=LENGTHS, seeds=128, steps=None),
    # tests: every code path, tiny
    "test": dict(Ls=(10, 20), seeds=4, steps=8),
}
"""The lengths, the seeds per length and the steps (the small budget's when None)."""


def close_runs(L: int, seeds: int, steps: int | None = None) -> Runs:
    """Close starts (default K = 2 setting) at prompt length ``L`` with the small budget's
    batches and learning rate, ``seeds`` seeds of the stream ``SEED_BASE + L`` and ``steps``
    steps (the budget's when None), in one ``fit_many`` call."""
    L = v.positive_int("L", L)
    seeds = v.positive_int("seeds", seeds)
    s = budget_setting("small", init="close", L=L, seeds=seeds, seed=SEED_BASE + L)
    if steps is not None:
        s["steps"] = v.positive_int("steps", steps)
    res = sweeps.run_seeds("small", init="close", L=L, seeds=seeds, steps=s["steps"], seed=SEED_BASE + L)
    return summarise(res, s)


@dataclass(frozen=True)
class StallRate:
    """The close start's outcome at each length.

    Attributes:
        Ls: the prompt lengths.
        setting: the training setting shared by the lengths (the small budget, close start).
        seed: ``(n_L,)`` the integer stream of each length.
        codes: ``(n_L, S)`` each seed's class (``sweeps.ALIGNED``, ``BETWEEN``, ``OTHER``).
        final_worst: ``(n_L, S)`` each seed's final (tail-averaged) worst ``|cos|``.
    """

    Ls: tuple[int, ...]
    setting: dict
    seed: np.ndarray
    codes: np.ndarray
    final_worst: np.ndarray

    @property
    def seeds(self) -> int:
        """Seeds per length S."""
        return int(self.codes.shape[1])

    def _row(self, L: int) -> int:
        if L not in self.Ls:
            raise ValueError(f"L must be one of {self.Ls}, got L={L}")
        return self.Ls.index(L)

    def count(self, L: int, name: str = "between") -> int:
        """Seeds at length ``L`` that ended in class ``name`` (by default: stalled)."""
        return int(np.sum(self.codes[self._row(L)] == CLASS_NAMES.index(v.one_of("name", name, CLASS_NAMES))))

    def rate(self, L: int, name: str = "between") -> stats.Interval:
        """The frequency of class ``name`` at length ``L`` with its exact binomial 95% interval."""
        return stats.binomial_interval(self.count(L, name), self.seeds)

    def difference(self, L: int, L0: int, name: str = "between") -> stats.Interval:
        """The rate at ``L`` less the rate at ``L0``, with Newcombe's interval (the lengths'
        seeds are independent)."""
        return stats.rate_difference(self.count(L, name), self.seeds, self.count(L0, name), self.seeds)

    def trend(self, name: str = "between") -> stats.Interval:
        """The logistic-regression slope of the rate of ``name`` against log2 L (the change of
        the log-odds per doubling of the length), with its profile-likelihood 95% interval."""
        return trend.logistic_slope(np.log2(self.Ls), [self.count(L, name) for L in self.Ls],
                                    [self.seeds] * len(self.Ls))

    def as_data(self) -> dict:
        """JSON data for the results file: per length its stream, seeds, class counts, and per
        seed its class and final worst ``|cos|``."""
        return {"setting": self.setting, "lengths": [
            {"L": L, "seed": int(self.seed[i]), "seeds": self.seeds,
             "counts": {n: self.count(L, n) for n in CLASS_NAMES},
             "codes": self.codes[i], "final_worst": np.round(self.final_worst[i], 5)}
            for i, L in enumerate(self.Ls)]}

    @classmethod
    def from_data(cls, data: dict) -> "StallRate":
        """The inverse of ``as_data``."""
        rows = data["lengths"]
        return cls(tuple(int(r["L"]) for r in rows), dict(data["setting"]),
                   np.array([r["seed"] for r in rows], int), np.array([r["codes"] for r in rows], int),
                   np.array([r["final_worst"] for r in rows], np.float64))


NAME = "training-stall-rate"
"""The committed experiment's name (its results file is ``results/<NAME>.json``)."""

SOURCES = tuple(f"attnclust/{m}.py" for m in ("book/experiments/training", "book/sweeps", "train", "mixture", "metrics"))
"""The library files the runs depend on, beside this module and the default setting."""


@committed(NAME, sources=SOURCES, description="Close starts at the small budget, 128 seeds at each of five lengths")
def experiment(size: str = "full") -> dict:
    """The close-start runs at every length of ``SIZES[size]``, as the results file's data."""
    table = sizes.pick(SIZES, size)
    runs = {L: close_runs(L, table["seeds"], table["steps"]) for L in table["Ls"]}
    setting = {k: x for k, x in next(iter(runs.values())).setting.items() if k not in ("L", "seed")}
    return StallRate(tuple(runs), setting, np.array([SEED_BASE + L for L in runs]),
                     np.stack([r.codes for r in runs.values()]),
                     np.stack([r.final_worst() for r in runs.values()])).as_data()


def stored() -> tuple[StallRate, results.Stored]:
    """Read ``attnclust/book/results/training-stall-rate.json`` (see ``experiment``)."""
    st = results.load(NAME)
    return StallRate.from_data(st.data), st
