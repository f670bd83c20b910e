"""Baselines and repeated timings for the chapter "In-context quantization experiments"
(chapters/icq_experiments.md, closing note and section "Cost") and the paired centring test
of the digits (chapters/beyond.md, section "Real data: handwritten digits"). Written, with
its provenance, by

    python -m attnclust experiment icq-baselines          # attnclust/book/results/icq-baselines.json

It adds to the committed sweeps (``icq_sweeps``) what their run lacks, on **the same
prompts** (the same keys as the sweeps' points at the full size):

- at the default setting with d in ``DS`` (L = 50, equal weights), every method of
  ``benchmark.default_methods`` beside three more: the library's JAX k-means
  (``baselines.kmeans_per_prompt_jax``), k-means on each prompt's top K - 1 principal
  directions (``PCA_KMEANS``: the denoiser a statistician would put in front of k-means in
  high dimension) and the prompt's mean used for every token (``PROMPT_MEAN``, the one-point
  quantizer); per-prompt scores are kept, so that any two methods can be compared paired;
- wall-clock times per prompt of every method as min / median / max over ``repeats``
  repeats in the same run, the methods interleaved (each repeat times every method once),
  with the load average before and after, at L = 50 and at L = ``LONG_L``;
- for the 45 pairs of digits at d = 5, identity attention (one layer and the stack) and
  k-means on the same prompts centred and uncentred, per prompt with its pair, for a paired
  (cluster-bootstrap) comparison of the two origins.
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np

from attnclust import _validate as v
from attnclust import baselines, symbolic, temperature
from attnclust.book import benchmark
from attnclust.digits import split_digits
from attnclust.book.experiments import committed
from attnclust.book.experiments import digits as digits_exp
from attnclust.book.experiments import icq_sweeps
from attnclust.book import sizes

__all__ = [
    "DS", "LONG_L", "KMEANS_JAX", "PCA_KMEANS", "PROMPT_MEAN", "SIZES", "extra_methods", "time_methods",
    "icq_baselines",
]

DS = (5, 50, 200)
"""Dimensions of the closing note (L = 50, default otherwise)."""

LONG_L = 1000
"""The long prompt length of the timings."""

KMEANS_JAX = "k-means (JAX)"
"""Method name of k-means written in JAX and vmapped over prompts."""
PCA_KMEANS = "k-means on the top K-1 principal directions"
"""Method name of k-means on each prompt projected on its top K-1 principal directions."""
PROMPT_MEAN = "prompt mean (one point)"
"""Method name of the baseline that puts every token at the prompt's mean."""

SIZES = {
    # n: prompts per dimension (128: the sweeps' prompts); n_time, n_time_long: prompts timed
    # at L = 50 and L = LONG_L; pairs: the digit pairs of the centring test
    "full": dict(n=128, n_time=32, n_time_long=8, repeats=5, pairs=digits_exp.PAIRS),
    "test": dict(n=8, n_time=4, n_time_long=2, repeats=5, pairs=digits_exp.PAIRS[:3]),
}
"""The settings of each size (prompts scored and timed, repeats of a timing, digit pairs)."""

DIGITS_D = 5
"""The projection dimension of the centring test (the digits benchmark's first)."""

TIMED_LONG = (benchmark.KMEANS, KMEANS_JAX, benchmark.EM, benchmark.IDENTITY, benchmark.ORACLE_BOUND)
"""The methods timed at L = LONG_L (the others cost minutes there): the two k-means, EM, one
layer with lam chosen by SURE (a grid of layers) and one layer at a given lam (the bound's)."""


def _centres_output(labels, centres) -> benchmark.Output:
    labels = np.asarray(labels)
    return benchmark.Output(labels, np.take_along_axis(np.asarray(centres), labels[..., None], axis=1))


def _kmeans_jax(key, p: benchmark.Prompts) -> benchmark.Output:
    return _centres_output(*baselines.kmeans_per_prompt_jax(key, p.X, p.K))


def _pca_kmeans(key, p: benchmark.Prompts) -> benchmark.Output:
    """k-means (scikit-learn, as ``benchmark.KMEANS``) on each prompt's scores on its top
    K - 1 principal directions; the representatives are the found clusters' means in the
    full space."""
    X = p.X.astype(np.float64)
    Xc = X - X.mean(1, keepdims=True)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)  # (n, min(L, d), d)
    q = max(p.K - 1, 1)
    Z = np.einsum("nld,nqd->nlq", Xc, Vt[:, :q])
    labels, _ = baselines.kmeans_per_prompt(key, Z, p.K)
    one = (labels[..., None] == np.arange(p.K)).astype(np.float64)  # (n, L, K)
    means = np.einsum("nlk,nld->nkd", one, X) / np.maximum(one.sum(1), 1)[..., None]
    return _centres_output(labels, means)


def _prompt_mean(key, p: benchmark.Prompts) -> benchmark.Output:
    return benchmark.Output(np.zeros(p.labels.shape, np.int64),
                            np.broadcast_to(p.X.mean(1, keepdims=True), p.X.shape))


def extra_methods() -> tuple[benchmark.Method, ...]:
    """The three methods this experiment adds to ``benchmark.default_methods``."""
    return (benchmark.Method(KMEANS_JAX, _kmeans_jax, "K", jax=True),
            benchmark.Method(PCA_KMEANS, _pca_kmeans, "K"),
            benchmark.Method(PROMPT_MEAN, _prompt_mean, "nothing"))


def time_methods(key, prompts: benchmark.Prompts, methods, repeats: int = 5) -> dict:
    """Wall-clock seconds per prompt of every method on ``prompts``: ``repeats`` rounds, each
    timing every method once in turn (so that a change of load reaches every method alike),
    after one untimed call of each method (compilation of the JAX ones, first-call costs of
    the others). Returns method name ->
    {"min", "median", "max", "repeats"} and "load_before", "load_after" (1-minute load
    averages) and "n" (prompts)."""
    repeats = v.positive_int("repeats", repeats, minimum=5)
    for m in methods:
        m.fn(key, prompts)
    load_before = os.getloadavg()[0]
    times = {m.name: [] for m in methods}
    for _ in range(repeats):
        for m in methods:
            t0 = time.perf_counter()
            m.fn(key, prompts)
            times[m.name].append((time.perf_counter() - t0) / prompts.n)
    out = {name: {"min": float(np.min(t)), "median": float(np.median(t)), "max": float(np.max(t)),
                  "repeats": repeats} for name, t in times.items()}
    return {"methods": out, "load_before": load_before, "load_after": os.getloadavg()[0], "n": prompts.n}


def _sweep_index(**setting) -> int:
    """The index of the equal-weight sweep point with this setting (its prompts' key is
    PRNGKey(1000 + index), its benchmark's PRNGKey(2000 + index))."""
    for i, pt in enumerate(icq_sweeps.sweep_points()):
        if not pt["unequal"] and all(pt[k] == val for k, val in setting.items()):
            return i
    raise ValueError(f"no sweep point with {setting}")  # pragma: no cover


def _subset(p: benchmark.Prompts, n: int) -> benchmark.Prompts:
    n = min(n, p.n)
    return benchmark.Prompts(p.X[:n], p.labels[:n], p.centroids[:n], p.K, p.sigma, p.r)


def _synthetic(d: int, s: dict) -> dict:
    i = _sweep_index(K=icq_sweeps.K, d=d, L=icq_sweeps.L, sigma=icq_sweeps.SIGMA)
    prompts = benchmark.in_context_prompts(jax.random.PRNGKey(1000 + i), icq_sweeps.K, d, icq_sweeps.R,
                                           icq_sweeps.SIGMA, s["n"], icq_sweeps.L)
    methods = benchmark.default_methods() + extra_methods()
    key = jax.random.PRNGKey(2000 + i)
    load = os.getloadavg()[0]
    bench = benchmark.run(key, prompts, methods)
    scores = {name: {"ari": sc.ari, "distortion": sc.distortion, **({} if sc.lam is None else {"lam": sc.lam})}
              for name, sc in bench.scores.items()}
    return {"d": d, "L": icq_sweeps.L, "K": icq_sweeps.K, "r": icq_sweeps.R, "sigma": icq_sweeps.SIGMA,
            "sweep_index": i, "load_before": load, **benchmark.summary_data(bench), "scores": scores,
            "lam_bound": symbolic.best_lambda_bound(icq_sweeps.R, icq_sweeps.SIGMA, d)["lam_bound"],
            "sigma2_hat_median": float(np.median(temperature.noise_variance(prompts.X, icq_sweeps.K))),
            "timing": time_methods(key, _subset(prompts, s["n_time"]), methods, s["repeats"])}


def _timing_long(s: dict) -> dict:
    i = _sweep_index(K=icq_sweeps.K, d=icq_sweeps.D, L=LONG_L, sigma=icq_sweeps.SIGMA)
    prompts = benchmark.in_context_prompts(jax.random.PRNGKey(1000 + i), icq_sweeps.K, icq_sweeps.D, icq_sweeps.R,
                                           icq_sweeps.SIGMA, s["n_time_long"], LONG_L)
    methods = [m for m in benchmark.default_methods() + extra_methods() if m.name in TIMED_LONG]
    return {"L": LONG_L, "d": icq_sweeps.D, **time_methods(jax.random.PRNGKey(2000 + i), prompts, methods,
                                                             s["repeats"])}


def _digits_centring(s: dict) -> dict:
    """The digits benchmark's prompts of every pair at d = DIGITS_D (same keys), scored
    centred and uncentred by k-means, one identity layer and the stack: per-prompt ARI and
    the pair of each prompt."""
    names = (benchmark.KMEANS, benchmark.IDENTITY, benchmark.STACK)
    methods = [m for m in benchmark.default_methods(oracles=False, meanshift=False) if m.name in names]
    key = jax.random.fold_in(jax.random.PRNGKey(45), DIGITS_D)  # the digits benchmark's key at this d
    out = {"centred": {n: [] for n in names}, "uncentred": {n: [] for n in names}, "pair": [], "d": DIGITS_D}
    for i, pair in enumerate(s["pairs"]):
        for origin, centre in (("centred", True), ("uncentred", False)):
            p = digits_exp.split_prompts(split_digits(pair, DIGITS_D, centre=centre), jax.random.fold_in(key, 10 + i),
                                    digits_exp.SIZES["full"]["pair_n"], digits_exp.SIZES["full"]["pair_L"])
            bench = benchmark.run(jax.random.fold_in(key, 20 + i), p, methods)
            for n in names:
                out[origin][n].extend(bench.scores[n].ari.tolist())
        out["pair"].extend([list(pair)] * p.n)
    return out


@committed("icq-baselines", sources=("attnclust/book/benchmark.py", "attnclust/temperature.py", "attnclust/baselines.py",
                                     "attnclust/stats.py", "attnclust/digits.py", "attnclust/book/experiments/icq_sweeps.py",
                                     "attnclust/book/experiments/digits.py"),
           description="PCA and prompt-mean baselines, JAX k-means, repeated timings and the paired centring test")
def icq_baselines(size: str = "full") -> dict:
    """The experiment of the module docstring: per dimension of ``DS`` the benchmark with the
    extra methods, per-prompt scores and repeated timings; timings at L = ``LONG_L``; the
    digits' centring test."""
    from tqdm.auto import tqdm

    s = sizes.pick(SIZES, size)
    out = {"points": [], "repeats": s["repeats"]}
    bar = tqdm(total=len(DS) + 2, desc="icq baselines", unit="part")
    for d in DS:
        out["points"].append(_synthetic(d, s))
        bar.update()
    out["timing_long"] = _timing_long(s)
    bar.update()
    out["digits_centring"] = _digits_centring(s)
    bar.update()
    bar.close()
    return out
