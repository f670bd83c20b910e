"""Experiments of the chapter "In-context quantization experiments" (chapters/icq_experiments.md)
computed when the book is built: the paired benchmark at the default setting and where
identity attention stops quantizing; and reading the committed results files: the scaling
sweeps (``attnclust.book.experiments.icq_sweeps``, ``python -m attnclust experiment icq-sweeps``),
the baselines and repeated timings of the closing note (``attnclust.book.experiments.icq_baselines``,
``icq-baselines``), and, for the chapter "Beyond the paper", the digits benchmark read with a
cluster bootstrap over its pairs of digits.

Default setting (``icq_sweeps.K``, ...): K = 2 equal-weight orthogonal centroids of norm
r = 2 drawn afresh for every prompt, d = 5, sigma = 0.5, L = 50.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import jax
import numpy as np

from attnclust import _validate as v
from attnclust.book import benchmark
from attnclust import stats, symbolic, temperature
from attnclust.book.experiments.icq_sweeps import D, K, L, R, SIGMA
from attnclust.setting import DEFAULT
from attnclust.book import sizes

__all__ = [
    "BENCHMARK_SEED", "REGIME_DS", "TRAINED", "Regimes", "best_from_summary", "best_label_free", "centring_difference", "closing_tables", "paired",
    "pair_cluster_difference", "summary_table", "default_benchmark", "default_prompts", "kmeans_and_identity", "regimes",
    "self_weight_estimate", "sweep_series", "trained_theta",
]

SIZES = {
    # prompts of the default benchmark and of the regimes experiment
    "small": dict(n=64, n_regime=32),
    "full": dict(n=512, n_regime=256),
    "test": dict(n=4, n_regime=3),
}

REGIME_DS = (5, 10, 20, 50, 100, 200, 400)
"""Dimensions of the regimes experiment (L = 50)."""


TRAINED = "two-head layer, trained on r e_1, r e_2"
"""The name in the benchmark of the trained two-head layer (trained on the fixed mixture
with centroids r e_1, r e_2, then scored on in-context prompts like every other method)."""

TRAIN_STEPS = {"small": 2000, "full": 2000, "test": 100}

BENCHMARK_SEED = 15
"""The seed of the default benchmark's key (``benchmark.run`` draws every method's randomness
on prompt ``i`` from ``fold_in(key, i)``): ``default_benchmark`` and ``kmeans_and_identity``
share it, so that their rows of k-means and of identity attention are the same."""


@lru_cache(maxsize=None)
def trained_theta(seed: int = 0, steps: int = 2000) -> np.ndarray:
    """The two-head layer trained by ``attnclust.fit`` on the book's default fixed mixture
    (r e_1, r e_2; lam = 1, ``steps`` steps, batch 32, L = 50): (2, d)."""
    from attnclust.mixture import orthogonal_mixture
    from attnclust.train import fit

    mixture = orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)
    return np.asarray(fit(jax.random.PRNGKey(seed), mixture, lam=DEFAULT.lam, steps=steps, progress=False).theta)


@lru_cache(maxsize=None)
def default_prompts(size: str = "small") -> benchmark.Prompts:
    """The ``SIZES[size]["n"]`` in-context prompts of the default setting that the chapter's
    benchmark and its distortion curves share."""
    n = sizes.pick(SIZES, size)["n"]
    return benchmark.in_context_prompts(jax.random.PRNGKey(14), K, D, R, SIGMA, n, L)


@lru_cache(maxsize=None)
def default_benchmark(size: str = "small") -> benchmark.Benchmark:
    """Every method of ``benchmark.default_methods`` on ``default_prompts(size)``, with the
    trained two-head layer (``trained_theta``, one training seed; labels
    argmax_h <theta_h, x>^2, representatives its outputs T(X)) added on the same prompts."""
    from attnclust.attention import two_head_layer
    from attnclust.metrics import adjusted_rand, head_assignments

    p = default_prompts(size)
    bench = benchmark.run(jax.random.PRNGKey(BENCHMARK_SEED), p)
    theta = trained_theta(steps=TRAIN_STEPS[size])
    two_head_layer(theta, p.X, DEFAULT.lam)  # compile before timing
    t0 = time.perf_counter()
    T = np.asarray(two_head_layer(theta, p.X, DEFAULT.lam), np.float64)
    labels = np.asarray(head_assignments(theta, p.X))
    seconds = time.perf_counter() - t0
    scores = benchmark.MethodScores(
        TRAINED, "1 training seed", False, np.asarray(adjusted_rand(p.labels, labels), np.float64),
        np.mean(np.sum((T - p.own_centroids()) ** 2, -1), -1), seconds / p.n, None,
        np.array([len(np.unique(x)) for x in labels]))
    return bench.with_scores(scores)


@lru_cache(maxsize=None)
def kmeans_and_identity(size: str = "small") -> benchmark.Benchmark:
    """k-means and one identity layer with lam chosen from each prompt (SURE), alone, on
    ``default_prompts(size)`` with ``default_benchmark``'s key: the same two rows as
    ``default_benchmark`` (the same prompts and draws, k-means the reference), without the other
    methods and the training. The page "The two results at a glance" (chapters/at_a_glance.md)
    reads from here the comparison that the chapter "In-context quantization experiments"
    states from the full benchmark (claim icq-kmeans-quantizes-better)."""
    methods = tuple(m for m in benchmark.default_methods(oracles=False, meanshift=False)
                    if m.name in (benchmark.KMEANS, benchmark.IDENTITY))
    return benchmark.run(jax.random.PRNGKey(BENCHMARK_SEED), default_prompts(size), methods)


@dataclass(frozen=True)
class Regimes:
    """Identity attention against the dimension at L = 50 (default otherwise).

    Attributes:
        ds: (m,) dimensions.
        lam_bound: (m,) the large-L bound's best lam at (r, sigma, d).
        self_weight_bound: (m,) mean weight w_ll a token gives its own key, at lam_bound.
        self_weight_sure: (m,) the same at the label-free lam (one layer, unmasked).
        self_weight_predicted: (m,) ``self_weight_estimate`` at lam_bound.
        D_bound: (m,) distortion of one layer at lam_bound.
        D_sure: (m,) distortion of one layer at the label-free lam.
        D_masked: (m,) distortion of the self-masked layer at its label-free lam.
        D_labels: (m,) distortion of the true clusters' means (each token replaced by the mean
            of its own cluster in the prompt: the best a partition can give; an oracle).
        floor: (m,) distortion of the raw tokens (about d sigma^2).
        D_mean: (m,) distortion of the prompt's mean used for every token (the one-point
            quantizer, identity attention's lam -> 0 limit).
        lam_sure: (m,) median label-free lam of the unmasked layer.
        lam_masked: (m,) median label-free lam of the self-masked layer.
        d_star: (r/sigma)^2 log(L pi): the dimension beyond which the unmasked layer cannot
            both ignore its own key and tell the clusters apart (prop-icq-self-weight).
        d_star_masked: (r/sigma)^4: the same for the self-masked layer.
        n: prompts per dimension.
    """

    ds: np.ndarray
    lam_bound: np.ndarray
    self_weight_bound: np.ndarray
    self_weight_sure: np.ndarray
    self_weight_predicted: np.ndarray
    D_bound: np.ndarray
    D_sure: np.ndarray
    D_masked: np.ndarray
    D_labels: np.ndarray
    floor: np.ndarray
    D_mean: np.ndarray
    lam_sure: np.ndarray
    lam_masked: np.ndarray
    d_star: float
    d_star_masked: float
    n: int


def self_weight_estimate(lam: float, sigma: float, d: int, L: int, pi: float) -> float:
    """The weight a token gives its own key, estimated as in prop-icq-self-weight:
    1 / (1 + (L pi - 1) exp(-lam sigma^2 d (1 - lam sigma^2 / 2))). The exponent is the mean
    gap -lam sigma^2 d between the logit of a same-cluster key and the token's own, plus the
    log-moment lam^2 sigma^4 d / 2 of the noise in the cross term; other clusters' keys are
    neglected."""
    t = lam * sigma**2
    return 1.0 / (1.0 + (L * pi - 1) * math.exp(-t * d * (1 - t / 2)))


@lru_cache(maxsize=None)
def regimes(size: str = "small") -> Regimes:
    """Identity attention against d (``REGIME_DS``, L = 50): the weight of the own key, and
    the distortion at the bound's lam, at the label-free lam, self-masked, beside the two trivial quantizers (raw tokens, prompt mean) and the true clusters' means."""
    from attnclust.mixture import orthogonal_mixture, sample

    n = sizes.pick(SIZES, size)["n_regime"]
    cols = {k: [] for k in ("lam_bound", "sw_bound", "sw_sure", "sw_pred", "D_bound", "D_sure", "D_masked",
                            "D_labels", "floor", "D_mean", "lam_sure", "lam_masked")}
    # One draw in the largest dimension; its first d coordinates are a draw of the same
    # mixture in dimension d (centroids r e_1, r e_2), so every d reuses one sample (and the
    # dimensions are compared on nested prompts). By prop-icq-equivariance fixed centroids
    # give the law of in-context prompts.
    big = orthogonal_mixture(K=K, d=max(REGIME_DS), r=R, sigma=SIGMA)
    X_all, lab_all = sample(jax.random.PRNGKey(100), big, n, L)
    X_all, lab_all = np.asarray(X_all), np.asarray(lab_all)
    for d in REGIME_DS:
        cents = np.broadcast_to(np.asarray(big.centroids)[:, :d], (n, K, d))
        p = benchmark.Prompts(X_all[..., :d], lab_all, cents, K, SIGMA, R)
        own = p.own_centroids()

        def dist(Z):
            return float(np.mean(np.sum((np.asarray(Z, np.float64) - own) ** 2, -1)))

        lam_b = symbolic.best_lambda_bound(R, SIGMA, d)["lam_bound"]
        w_b = np.asarray(temperature.identity_weights(p.X, lam_b))
        sure = temperature.sure_lambda(p.X, K)
        w_s = np.asarray(temperature.identity_weights(p.X, sure.lam))
        masked = temperature.sure_lambda(p.X, K, mask_self=True)
        one = (p.labels[..., None] == np.arange(K)).astype(np.float64)  # (n, L, K)
        means = np.einsum("nlk,nld->nkd", one, p.X) / np.maximum(one.sum(1), 1)[..., None]
        cols["lam_bound"].append(lam_b)
        cols["sw_bound"].append(float(np.mean(np.diagonal(w_b, axis1=1, axis2=2))))
        cols["sw_sure"].append(float(np.mean(np.diagonal(w_s, axis1=1, axis2=2))))
        cols["sw_pred"].append(self_weight_estimate(lam_b, SIGMA, d, L, 1.0 / K))
        cols["D_bound"].append(dist(temperature.identity_layer(p.X, lam_b)))
        cols["D_sure"].append(dist(sure.outputs))
        cols["D_masked"].append(dist(masked.outputs))
        cols["D_labels"].append(dist(np.take_along_axis(means, p.labels[..., None], 1)))
        cols["floor"].append(dist(p.X))
        cols["D_mean"].append(dist(np.broadcast_to(p.X.mean(1, keepdims=True), p.X.shape)))
        cols["lam_sure"].append(float(np.median(sure.lam)))
        cols["lam_masked"].append(float(np.median(masked.lam)))
    a = {k: np.asarray(x) for k, x in cols.items()}
    rho2 = (R / SIGMA) ** 2
    return Regimes(np.asarray(REGIME_DS), a["lam_bound"], a["sw_bound"], a["sw_sure"], a["sw_pred"],
                   a["D_bound"], a["D_sure"], a["D_masked"], a["D_labels"], a["floor"], a["D_mean"],
                   a["lam_sure"], a["lam_masked"], rho2 * math.log(L / K), rho2**2, n)


def sweep_series(data: dict, axis: str, method: str, metric: str, *, unequal: bool = False):
    """From the ``icq-sweeps`` data: the values of ``axis`` and the method's ``metric``
    ("ari", "distortion", "ari_vs_ref", "distortion_vs_ref") as arrays (values, estimate,
    low, high); "distortion" is divided by the point's noise floor."""
    rows = [p for p in data["points"] if axis in p["axes"] and p["unequal"] == unequal]
    key = "sigma" if axis == "r/sigma" else axis
    rows.sort(key=lambda p: p[key] if axis != "r/sigma" else -p[key])
    x = np.array([p["r"] / p["sigma"] if axis == "r/sigma" else p[key] for p in rows], float)
    est, low, high = [], [], []
    for p in rows:
        m = p["methods"][method][metric]
        scale = p["noise_floor"] if metric == "distortion" else 1.0
        est.append(m["estimate"] / scale)
        low.append(m["low"] / scale)
        high.append(m["high"] / scale)
    return x, np.array(est), np.array(low), np.array(high)


def _cell(m: dict, spec: str = ".3f", scale: float = 1.0) -> str:
    return f"{m['estimate'] / scale:{spec}} [{m['low'] / scale:{spec}}, {m['high'] / scale:{spec}}]"


def _diff_cell(m: dict | None, spec: str = "+.3f") -> str:
    if m is None:
        return "(reference)"
    return f"{m['estimate']:{spec}} [{m['low']:{spec}}, {m['high']:{spec}}] ({m['wins']}/{m['losses']})"


def summary_table(summary: dict, *, spec: str = ".3f") -> str:
    """A Markdown table of one ``benchmark.summary_data`` record (as stored in a results
    file): per method (oracles marked), the mean ARI and distortion with their 95% intervals,
    the paired differences to the reference with their bootstrap intervals and the number of
    prompts above/below it, the median lam and the time per prompt."""
    lines = [f"| method | sees | ARI [95% CI] | ARI - {summary['reference']} [95% CI] (above/below) "
             f"| distortion [95% CI] | distortion - {summary['reference']} [95% CI] (above/below) "
             "| median lam | ms / prompt |", "|" + "---|" * 8]
    for name, m in summary["methods"].items():
        lam = "" if m["lam_median"] is None else f"{m['lam_median']:.3g}"
        lines.append(f"| {'**oracle**: ' + name if m['oracle'] else name} | {m['sees']} | {_cell(m['ari'], spec)} "
                     f"| {_diff_cell(m['ari_vs_ref'], '+' + spec)} | {_cell(m['distortion'], spec)} "
                     f"| {_diff_cell(m['distortion_vs_ref'], '+' + spec)} | {lam} | {1e3 * m['time_per_prompt']:.3g} |")
    return "\n".join(lines)


def closing_tables(points: list[dict]) -> str:
    """Markdown tables of the ``icq-baselines`` points (``data["points"]``: the default
    setting at several d, every method on the same prompts): per method and d, the mean ARI
    and its paired difference to k-means; the distortion over the noise floor and its paired
    difference (in units of the noise floor); the time per prompt as median [min, max] over
    the run's repeats; and, per d, the label-free lam against the oracle's best and the
    bound's lam, with the load averages of the run."""
    pts = sorted(points, key=lambda p: p["d"])
    names = list(pts[0]["methods"])

    def label(name):
        return f"**oracle**: {name}" if pts[0]["methods"][name]["oracle"] else name

    def ms(p, name):
        t = p["timing"]["methods"][name]
        return f"{1e3 * t['median']:.3g} [{1e3 * t['min']:.3g}, {1e3 * t['max']:.3g}]"

    def scaled(p, m):
        pd = m["distortion_vs_ref"]
        if pd is None:
            return _diff_cell(None)
        return _diff_cell({**pd, **{k: pd[k] / p["noise_floor"] for k in ("estimate", "low", "high")}})

    out = []
    tables = (
        ("ARI [95% CI]", "ARI - k-means [95% CI] (above/below)",
         lambda p, m: _cell(m["ari"]), lambda p, m: _diff_cell(m["ari_vs_ref"], "+.4f")),
        ("distortion / noise floor [95% CI]", "distortion - k-means, / noise floor [95% CI] (above/below)",
         lambda p, m: _cell(m["distortion"], scale=p["noise_floor"]), scaled),
    )
    sep = "|---|" + "---|" * (2 * len(pts))
    for first, second, f1, f2 in tables:
        cols = [c for p in pts for c in (f"d = {p['d']}: {first}", f"d = {p['d']}: {second}")]
        lines = ["| method | " + " | ".join(cols) + " |", sep]
        for name in names:
            cells = [c for p in pts for c in (f1(p, p["methods"][name]), f2(p, p["methods"][name]))]
            lines.append(f"| {label(name)} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    lines = ["| method | " + " | ".join(f"d = {p['d']}: ms per prompt, median [min, max]" for p in pts) + " |",
             "|---|" + "---|" * len(pts)]
    for name in names:
        lines.append(f"| {label(name)} | " + " | ".join(ms(p, name) for p in pts) + " |")
    out.append("\n".join(lines))
    lines = ["| d | prompts | median label-free lam (1 layer) | its ratio to the oracle's best lam (median) "
             "| median label-free lam, self-masked | median oracle's best lam | bound's lam (oracle sigma, r) "
             "| median sigma_hat^2 / sigma^2 | timed: prompts x repeats | load average (benchmark; timings) |",
             "|---|" + "---|" * 9]
    for p in pts:
        sc = p["scores"]
        lp, lb = np.asarray(sc[benchmark.IDENTITY]["lam"]), np.asarray(sc[benchmark.ORACLE_BEST]["lam"])
        t = p["timing"]
        reps = next(iter(t["methods"].values()))["repeats"]
        lines.append(f"| {p['d']} | {p['n']} | {np.median(lp):.3g} | {np.median(lp / lb):.3g} "
                     f"| {np.median(sc[benchmark.IDENTITY_MASKED]['lam']):.3g} | {np.median(lb):.3g} "
                     f"| {p['lam_bound']:.3g} | {p['sigma2_hat_median'] / p['sigma'] ** 2:.3f} "
                     f"| {t['n']} x {reps} | {p['load_before']:.1f}; {t['load_before']:.1f} to {t['load_after']:.1f} |")
    out.append("\n".join(lines))
    return "\n\n".join(out)


def best_label_free(point: dict, metric: str = "ari") -> stats.BestSet:
    """The best label-free method of an ``icq-baselines`` point by ``metric`` ("ari": larger
    is better; "distortion": smaller), with every method tied with it (``stats.best_set``:
    paired difference to the top one on the same prompts, interval covering 0)."""
    v.one_of("metric", metric, ("ari", "distortion"))
    scores = {n: point["scores"][n][metric] for n, m in point["methods"].items() if not m["oracle"]}
    return stats.best_set(scores, larger_is_better=metric == "ari")


def paired(point: dict, a: str, b: str, metric: str = "ari") -> stats.PairedDifference:
    """The paired difference ``a - b`` of ``metric`` on an ``icq-baselines`` point's prompts."""
    sc = point["scores"]
    return stats.paired_difference(sc[a][metric], sc[b][metric])


def pair_cluster_difference(setting: dict, name: str, metric: str = "ari_vs_ref") -> stats.Interval:
    """From one projection dimension of the ``digits-benchmark`` pairs (``data["pairs"][d]``,
    whose "per" holds one summary per pair of digits): the mean over every prompt of
    ``name``'s paired difference to the reference (``metric``: "ari_vs_ref" or
    "distortion_vs_ref") with the cluster bootstrap interval over the pairs
    (``stats.cluster_mean_interval``: the pairs resampled whole, since the prompts of a pair
    share its images and its split)."""
    per = setting["per"]
    return stats.cluster_mean_interval([r["methods"][name][metric]["estimate"] for r in per],
                                       [r["n"] for r in per])


def centring_difference(data: dict, name: str) -> stats.PairedDifference:
    """From the ``icq-baselines`` digits centring test (``data["digits_centring"]``): the
    paired difference of ``name``'s ARI uncentred minus centred, on the same prompts, with the
    cluster bootstrap over the pairs of digits (``stats.cluster_paired_difference``)."""
    c = data["digits_centring"]
    pairs = [f"{a}-{b}" for a, b in c["pair"]]
    return stats.cluster_paired_difference(c["uncentred"][name], c["centred"][name], pairs)


def best_from_summary(summary: dict, metric: str = "ari") -> tuple[str, tuple[str, ...]]:
    """From one ``benchmark.summary_data`` record (a results file keeps no per-prompt scores):
    the label-free method with the best mean ``metric`` and the label-free methods tied with
    it, those whose stored paired difference to it has an interval covering 0. The stored
    differences are to the reference method, so this needs the top method to be the
    reference (else a ValueError: compare per-prompt scores with ``stats.best_set``)."""
    v.one_of("metric", metric, ("ari", "distortion"))
    free = {n: m for n, m in summary["methods"].items() if not m["oracle"]}
    sign = 1.0 if metric == "ari" else -1.0
    top = max(free, key=lambda n: sign * free[n][metric]["estimate"])
    if top != summary["reference"]:
        raise ValueError(f"the best method {top!r} is not the reference {summary['reference']!r}: the stored "
                         "differences cannot say which methods tie with it")
    tied = tuple(n for n, m in free.items() if n != top and m[f"{metric}_vs_ref"]["low"] <= 0 <= m[f"{metric}_vs_ref"]["high"])
    return top, (top, *tied)
