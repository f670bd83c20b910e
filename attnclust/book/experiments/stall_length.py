"""The close start trained at a longer prompt length (chapter "Training dynamics", section
"Where the stalled runs are").

At the training length L = 50 the split point of K = 2 is a shallow local minimum of R_50,
and close starts stall next to it; beyond the length where its smallest Hessian eigenvalue
crosses zero (``landscape``) it is a saddle of R_L. This experiment tests what that predicts
for training: the close start trained at a length beyond the crossing, with the same seeds at
the book's small budget and at the long budget (the budgets' steps, batches and learning
rates, ``sweeps.budget``), so that the chapter states the stall rate per L and budget with
its exact binomial interval.

It takes about a quarter of an hour on a 2-core CPU, so it is a committed experiment
(``python -m attnclust experiment training-stall-length``, written to
``attnclust/book/results/training-stall-length.json``), read by the chapter with ``stored``.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnclust import _validate as v
from attnclust.book import results, sweeps
from attnclust.book.experiments import committed
from attnclust.book.experiments.training import Runs, budget_setting, summarise
from attnclust.book import sizes

__all__ = ["SIZES", "StallLength", "close_at", "experiment", "stored"]

SIZES: dict[str, dict] = {
    # the committed run: 32 seeds at L = 200, beyond the split point's crossing
    "full": dict(L=200, seeds=32, steps={"small": None, "long": None}),
    # tests: every code path, tiny
    "test": dict(L=25, seeds=2, steps={"small": 8, "long": 40}),
}
"""The prompt length, the seeds, and the steps of each budget (the budget's own where None)."""


def close_at(L: int, budget: str, seeds: int, steps: int | None = None) -> Runs:
    """Close starts (default K = 2 setting) trained at prompt length ``L`` with ``budget``'s
    batches and learning rate (``sweeps.budget``), ``seeds`` seeds and ``steps`` steps (the
    budget's when None), in one ``fit_many`` call."""
    L = v.positive_int("L", L)
    seeds = v.positive_int("seeds", seeds)
    s = budget_setting(budget, init="close", L=L, seeds=seeds)
    if steps is not None:
        s["steps"] = v.positive_int("steps", steps)
    res = sweeps.run_seeds(budget, init="close", L=L, seeds=seeds, steps=s["steps"])
    return summarise(res, s)


@dataclass(frozen=True)
class StallLength:
    """The close start at the longer length: ``runs[budget]`` for "small" and "long"."""

    L: int
    runs: dict[str, Runs]


NAME = "training-stall-length"


@committed(NAME, sources=("attnclust/book/experiments/training.py", "attnclust/book/sweeps.py",
                          "attnclust/train.py", "attnclust/mixture.py", "attnclust/metrics.py"),
           description="Close starts trained at L = 200 at the small and the long budget")
def experiment(size: str = "full") -> dict:
    """The committed close-start runs at ``size`` (``SIZES``)."""
    cfg = sizes.pick(SIZES, size)
    return {"L": cfg["L"], "runs": {b: close_at(cfg["L"], b, cfg["seeds"], n).as_data()
                                    for b, n in cfg["steps"].items()}}


def stored() -> tuple[StallLength, results.Stored]:
    """Read ``attnclust/book/results/training-stall-length.json`` (see ``experiment``)."""
    st = results.load(NAME)
    return StallLength(int(st.data["L"]), {b: Runs.from_data(r) for b, r in st.data["runs"].items()}), st
