"""The scaling sweeps of the chapter "In-context quantization experiments"
(chapters/icq_experiments.md), too large for the book's build: the paired benchmark
(``attnclust.book.benchmark``, every method on the same prompts) at every point of a sweep over
K, L, d and r / sigma, with equal and unequal weights. Written, with its provenance, by

    python -m attnclust experiment icq-sweeps          # attnclust/book/results/icq-sweeps.json

Default setting (every sweep varies one parameter from it): K = 2 orthogonal centroids of
norm r = 2 drawn afresh for every prompt, d = 5, sigma = 0.5, L = 50, equal weights. Unequal
weights are geometric with a ratio ``WEIGHT_RATIO`` = 4 between the largest and the smallest
(``weights``): (0.8, 0.2) for K = 2.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from attnclust.book import benchmark
from attnclust import symbolic, temperature
from attnclust.book.experiments import committed
from attnclust.setting import DEFAULT
from attnclust.book import sizes

K, D, R, SIGMA, L = DEFAULT.K, DEFAULT.d, DEFAULT.r, DEFAULT.sigma, DEFAULT.L
"""The default setting."""

WEIGHT_RATIO = 4.0
"""The ratio of the largest to the smallest weight of the unequal mixtures (pi_c proportional to
WEIGHT_RATIO^(-c / (K - 1)), c = 0..K-1)."""

SWEEP_SIZES = {
    # prompts per sweep point (n_long for L >= 500)
    "full": dict(n=128, n_long=64),
    "test": dict(n=8, n_long=4),
}

def _around_default(values: tuple, default) -> tuple:
    """``values`` with the default setting's value among them, in increasing order."""
    return tuple(sorted(set(values) | {default}))


SWEEPS = {
    "K": dict(values=_around_default((3, 4, 6, 8), K), fixed=dict(d=8)),
    "L": dict(values=_around_default((10, 20, 100, 200, 500, 1000), L), fixed={}),
    "d": dict(values=_around_default((10, 20, 50, 100, 200), D), fixed={}),
    "r/sigma": dict(values=_around_default((2.0, 2.5, 3.0, 6.0), R / SIGMA), fixed={}),
}
"""The sweeps, each of which varies one parameter from the default setting (the K sweep at d = 8, so
that K = 8 orthogonal centroids fit) and passes through it; every point is run with equal and
unequal weights. r/sigma varies sigma = r / (r/sigma) at the default r."""


def weights(K: int, unequal: bool) -> tuple[float, ...] | None:
    """The mixing weights of a sweep point: None (equal) or geometric with ratio
    ``WEIGHT_RATIO`` between the largest and the smallest."""
    if not unequal:
        return None
    w = WEIGHT_RATIO ** (-np.arange(K) / max(K - 1, 1))
    return tuple(float(x) for x in w / w.sum())


def sweep_points() -> list[dict]:
    """Every sweep point once (a point shared by two sweeps, such as the default setting, is
    listed once with all its sweeps), with equal and unequal weights."""
    points: dict = {}
    for axis, spec in SWEEPS.items():
        for value in spec["values"]:
            s = dict(K=K, d=D, L=L, r=R, sigma=SIGMA)
            s.update(spec["fixed"])
            if axis == "r/sigma":
                s["sigma"] = R / value
            else:
                s[axis] = value
            for unequal in (False, True):
                key = (s["K"], s["d"], s["L"], s["sigma"], unequal)
                points.setdefault(key, {**s, "unequal": unequal, "axes": []})["axes"].append(axis)
    return list(points.values())


@committed("icq-sweeps", sources=("attnclust/book/benchmark.py", "attnclust/temperature.py", "attnclust/baselines.py"),
           description="Paired benchmark of every method at each point of the K, L, d and r/sigma sweeps")
def sweeps(size: str = "full") -> dict:
    """The paired benchmark (``benchmark.default_methods``) at every point of ``SWEEPS``, with
    equal and unequal weights: per point its setting, the load average when it ran,
    ``benchmark.summary_data`` of the benchmark and the median noise estimate; at d = 5, 50
    and 200 (equal weights) also the per-prompt inverse temperatures of the label-free rules and of
    the best-lam oracle."""
    from tqdm.auto import tqdm

    sz = sizes.pick(SWEEP_SIZES, size)
    out = []
    for i, pt in enumerate(tqdm(sweep_points(), desc="icq sweeps", unit="point")):
        n = sz["n_long"] if pt["L"] >= 500 else sz["n"]
        w = weights(pt["K"], pt["unequal"])
        prompts = benchmark.in_context_prompts(jax.random.PRNGKey(1000 + i), pt["K"], pt["d"], pt["r"],
                                               pt["sigma"], n, pt["L"], weights=w)
        load = os.getloadavg()[0]
        bench = benchmark.run(jax.random.PRNGKey(2000 + i), prompts)
        row = {**pt, "weights": w, "load_before": load, "load_after": os.getloadavg()[0],
               "lam_bound": symbolic.best_lambda_bound(pt["r"], pt["sigma"], pt["d"])["lam_bound"],
               **benchmark.summary_data(bench)}
        row["sigma2_hat_median"] = float(np.median(temperature.noise_variance(prompts.X, pt["K"])))
        if "d" in pt["axes"] and pt["d"] in (5, 50, 200) and not pt["unequal"]:
            row["lam_protocol"] = bench.scores[benchmark.IDENTITY].lam
            row["lam_protocol_masked"] = bench.scores[benchmark.IDENTITY_MASKED].lam
            row["lam_best"] = bench.scores[benchmark.ORACLE_BEST].lam
        out.append(row)
    return {"points": out, "sweeps": {k: {"values": list(s["values"]), "fixed": s["fixed"]} for k, s in SWEEPS.items()},
            "default": dict(K=K, d=D, L=L, r=R, sigma=SIGMA), "weight_ratio": WEIGHT_RATIO}


