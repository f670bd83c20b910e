"""A softmax attention layer trained in context, against identity attention, k-means and EM
on the same held-out prompts (chapter "In-context quantization experiments",
chapters/icq_experiments.md, section "A layer trained in context"). Written, with its
provenance, by

    python -m attnclust experiment icq-trained-in-context   # attnclust/book/results/icq-trained-in-context.json

The layer is ``attnclust.in_context``'s, out_l = sum_k softmax_k(x_l^T A x_k) B x_k + c x_l,
trained by ``in_context.fit_in_context`` from identity attention at the default inverse temperature
on fresh in-context prompts of the default setting (K = 2 orthogonal centroids of norm r = 2
drawn afresh for every prompt, d = 5, sigma = 0.5, L = 50) to minimise the distortion
against each token's own centroid: a **label-trained** layer, an oracle in the book's
vocabulary. It is trained twice from the same keys, with the residual c and without it
(c = 0), ``SIZES[size]["seeds"]`` times each.

The held-out prompts are drawn from a stream of their own (independent of every training
draw). On them ``benchmark.run`` scores, paired: scikit-learn's k-means and EM, one identity
layer with lam chosen by SURE from the prompt (the book's rule), the oracle identity layer at
the grid lam with the smallest true distortion, and every trained layer (its labels read out
by k-means on its outputs, as identity attention's). Per-prompt scores are kept (ARI,
distortion, and the distortion split into the spread of each true cluster's representatives
and the distance of their mean to the centroid, ``spread_and_bias``), so that the chapter can
compare any two methods paired; the trained layers' per-prompt scores averaged over the
training seeds are ``seed_mean``'s.
"""

from __future__ import annotations

import dataclasses
import os
import time

import jax
import numpy as np

from attnclust import _validate as v
from attnclust import baselines, stats
from attnclust.book import benchmark, sizes
from attnclust.book.experiments import committed
from attnclust.in_context import InContextParams, fit_in_context, in_context_layer, isotropic_part
from attnclust.setting import DEFAULT

__all__ = [
    "NAME", "TRAINED", "TRAINED_NO_RESIDUAL", "VARIANTS", "COMPARED", "SIZES", "LR", "METRICS", "trained_method",
    "held_out_prompts", "spread_and_bias", "trained_in_context", "stored", "seed_mean", "paired",
    "per_seed_paired",
]

NAME = "icq-trained-in-context"
"""The committed experiment's name (and its results file's)."""

TRAINED = "attention trained in context"
"""Method name stem of the trained layer with its residual (one method per training seed:
``f"{TRAINED}, seed {s}"``)."""

TRAINED_NO_RESIDUAL = "attention trained in context, no residual"
"""Method name stem of the trained layer without residual (c held at 0)."""

VARIANTS = {"residual": TRAINED, "no_residual": TRAINED_NO_RESIDUAL}
"""The two trained variants: key in the results file -> method name stem."""

COMPARED = (benchmark.KMEANS, benchmark.EM, benchmark.IDENTITY, benchmark.ORACLE_BEST)
"""The benchmark's methods the trained layers are compared with on the same prompts."""

K, D, R, SIGMA, L = DEFAULT.K, DEFAULT.d, DEFAULT.r, DEFAULT.sigma, DEFAULT.L
"""The default setting, the training's and the held-out prompts'."""

LR = 1e-2
"""Adam's learning rate."""

SIZES = {
    # seeds: layers trained per variant; steps, batch, record_every: the training; n: held-out prompts
    "full": dict(seeds=4, steps=4000, batch=64, record_every=40, n=512),
    "test": dict(seeds=2, steps=20, batch=4, record_every=10, n=4),
}
"""The settings of each size."""


def trained_method(name: str, params: InContextParams) -> benchmark.Method:
    """A benchmark ``Method`` for one trained layer: its representatives are the layer's
    outputs, its labels a k-means on them (``baselines.output_clusters``, identity
    attention's read-out). An oracle: it was trained with the labels."""
    v.instance("params", params, InContextParams)

    def fn(key, p: benchmark.Prompts) -> benchmark.Output:
        Z = np.asarray(in_context_layer(params, p.X))
        return benchmark.Output(np.asarray(baselines.output_clusters(key, Z, p.K)), Z)

    return benchmark.Method(name, fn, "K; trained with labels", oracle=True, jax=True)


def held_out_prompts(size: str = "full") -> benchmark.Prompts:
    """The ``SIZES[size]["n"]`` held-out prompts of the default setting (a stream of their
    own, drawn by no training step)."""
    n = sizes.pick(SIZES, size)["n"]
    return benchmark.in_context_prompts(jax.random.PRNGKey(3031), K, D, R, SIGMA, n, L)


def spread_and_bias(points, prompts: benchmark.Prompts) -> tuple[np.ndarray, np.ndarray]:
    """The distortion of a method's representatives split in two, per prompt: (spread, bias)
    with spread + bias = mean_l ``||p_l - mu_c(l)||^2``. spread = mean_l ``||p_l - m_c(l)||^2``,
    the scatter of the representatives of each true cluster about their own mean m_c (0 when
    every token of a cluster gets the same point, as a centre); bias = mean_l
    ``||m_c(l) - mu_c(l)||^2``, how far those means are from the centroids.

    Args:
        points: (n, L, d) representatives, one per token of ``prompts``.
        prompts: the ``benchmark.Prompts`` they were computed on.

    Returns:
        (spread, bias), two (n,) float64 arrays.
    """
    v.instance("prompts", prompts, benchmark.Prompts)
    P = np.asarray(v.real_array("points", points, dtype=np.float64))
    v.same_shape("points", P.shape, "prompts.X", prompts.X.shape)
    one = (prompts.labels[..., None] == np.arange(prompts.K)).astype(np.float64)  # (n, L, K)
    means = np.einsum("nlk,nld->nkd", one, P) / np.maximum(one.sum(1), 1)[..., None]
    own_mean = np.einsum("nlk,nkd->nld", one, means)
    spread = np.mean(np.sum((P - own_mean) ** 2, -1), -1)
    bias = np.mean(np.sum((own_mean - prompts.own_centroids()) ** 2, -1), -1)
    return spread, bias


def _kept(method: benchmark.Method, outputs: dict) -> benchmark.Method:
    """``method`` that also keeps its last output in ``outputs[method.name]``."""

    def fn(key, p):
        outputs[method.name] = out = method.fn(key, p)
        return out

    return dataclasses.replace(method, fn=fn)


def _fit_data(fit) -> dict:
    A_scale, A_gap = isotropic_part(fit.params.A)
    B_scale, B_gap = isotropic_part(fit.params.B)
    return {"A": fit.params.A, "B": fit.params.B, "c": fit.params.c, "steps": fit.steps, "loss": fit.loss,
            "temperature": fit.temperature, "residual": fit.residual,
            "A_scale": A_scale, "A_gap": A_gap, "B_scale": B_scale, "B_gap": B_gap}


@committed(NAME, sources=("attnclust/in_context.py", "attnclust/train.py", "attnclust/mixture.py",
                          "attnclust/book/benchmark.py", "attnclust/temperature.py", "attnclust/baselines.py"),
           description="An attention layer trained in context against identity attention, k-means and EM, paired")
def trained_in_context(size: str = "full") -> dict:
    """The experiment of the module docstring: the two variants trained from the same keys,
    then every method on the same held-out prompts; per variant its final parameters, their
    isotropic parts and the training records; per method its per-prompt ARI and distortion
    and ``benchmark.summary_data``."""
    s = sizes.pick(SIZES, size)
    keys = jax.random.split(jax.random.PRNGKey(3030), s["seeds"])
    train = dict(steps=s["steps"], batch=s["batch"], L=L, lr=LR, record_every=s["record_every"])
    fits, seconds = {}, {}
    for variant in VARIANTS:
        t0 = time.perf_counter()
        fits[variant] = fit_in_context(keys, K=K, d=D, r=R, sigma=SIGMA, residual=variant == "residual", **train)
        seconds[variant] = time.perf_counter() - t0
    prompts = held_out_prompts(size)
    methods = [m for m in benchmark.default_methods() if m.name in COMPARED]
    for variant, stem in VARIANTS.items():
        methods += [trained_method(f"{stem}, seed {i}", fits[variant].layer(i)) for i in range(s["seeds"])]
    outputs: dict = {}
    load = os.getloadavg()[0]
    bench = benchmark.run(jax.random.PRNGKey(3032), prompts, [_kept(m, outputs) for m in methods])
    scores = {}
    for name, sc in bench.scores.items():
        spread, bias = spread_and_bias(outputs[name].points, prompts)
        scores[name] = {"ari": sc.ari, "distortion": sc.distortion, "spread": spread, "bias": bias,
                        **({} if sc.lam is None else {"lam": sc.lam})}
    return {"setting": dict(K=K, d=D, L=L, r=R, sigma=SIGMA, weights="equal"),
            "train": {**train, "seeds": s["seeds"], "init": "identity attention at lam = 1 (A = I, B = I, c = 0)",
                      "optimizer": "adam", "seconds": seconds},
            "fits": {variant: _fit_data(fit) for variant, fit in fits.items()},
            "n": prompts.n, "noise_floor": bench.noise_floor, "load_before": load,
            "scores": scores, "summary": benchmark.summary_data(bench)}


def stored():
    """The committed results (``attnclust.book.results.Stored``) of this experiment."""
    from attnclust.book import results

    return results.load(NAME)


METRICS = ("ari", "distortion", "spread", "bias")
"""The per-prompt scores of every method in the results file (``spread_and_bias`` for the last two)."""


def seed_mean(data: dict, variant: str, metric: str = "distortion") -> np.ndarray:
    """(n,) a trained variant's ``metric`` (one of ``METRICS``) on each held-out prompt,
    averaged over its training seeds."""
    v.one_of("variant", variant, VARIANTS)
    v.one_of("metric", metric, METRICS)
    runs = [np.asarray(sc[metric]) for name, sc in data["scores"].items() if name.startswith(VARIANTS[variant] + ", seed ")]
    return np.mean(runs, axis=0)


def paired(data: dict, variant: str, other: str, metric: str = "distortion", *,
           level: float = 0.95) -> stats.PairedDifference:
    """The paired difference, on the held-out prompts, of a trained variant (its per-prompt
    score averaged over seeds) minus the method ``other`` (a name of ``COMPARED``, or the
    other variant's key), with its bootstrap interval at ``level`` (``stats.paired_difference``)."""
    b = seed_mean(data, other, metric) if other in VARIANTS else np.asarray(data["scores"][other][metric])
    return stats.paired_difference(seed_mean(data, variant, metric), b, level=level)


def per_seed_paired(data: dict, variant: str, other: str, metric: str = "distortion") -> list[stats.PairedDifference]:
    """``paired`` for each training seed on its own (every seed's layer minus ``other``)."""
    v.one_of("variant", variant, VARIANTS)
    b = np.asarray(data["scores"][other][metric])
    return [stats.paired_difference(np.asarray(sc[metric]), b) for name, sc in data["scores"].items()
            if name.startswith(VARIANTS[variant] + ", seed ")]
