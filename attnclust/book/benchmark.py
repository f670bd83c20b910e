"""The paired clustering benchmark: every method on exactly the same prompts (chapter
"In-context quantization experiments", chapters/icq_experiments.md, and the digits section of
chapters/beyond.md).

A benchmark takes a batch of prompts with their true labels and centroids (``Prompts``) and
a list of methods (``Method``). Each method clusters every prompt and gives each token a
*representative* (k-means: its centre; EM: its component's mean; mean shift: its mode;
identity attention: the layer's output). Per prompt the benchmark records

- the adjusted Rand index (ARI) of the method's labels against the true labels, and
- the distortion mean_l ``||rep_l - mu_c(l)||^2`` of the representatives against each token's
  own centroid (the quantity identity attention is said to make small; the raw tokens have
  d sigma^2),

and, for the whole batch, the wall-clock time per prompt (JAX methods are compiled on a
first, untimed call; scikit-learn methods run prompt by prompt with one thread).

``Benchmark.rows`` summarises each method: means with 95% t intervals over prompts, and the
paired difference to the reference method (k-means by default) on the same prompts with a
bootstrap interval and the counts of prompts won and lost (``attnclust.stats``). Methods that
see what a clustering algorithm is not given (sigma, r, the centroids or the labels) are
*oracles* (``Method.oracle``), kept apart in every table and figure.

The default methods (``default_methods``): scikit-learn's k-means, spherical EM and mean
shift; identity attention (one layer, and a stack of ``temperature.STACK_DEPTH`` layers, each
plain and self-key-masked) with lam chosen from the prompt (``attnclust.temperature``); and
three oracles: one layer at the large-L bound's best lam (needs sigma, r), one layer at the
lam of the grid with the smallest true distortion (needs the centroids), and the nearest
true centroid (the Bayes rule for equal weights).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import PRNGKeyArray

from attnclust import _validate as v
from attnclust import baselines, metrics, stats, temperature
from attnclust.mixture import sample_in_context

__all__ = [
    "Prompts",
    "Output",
    "Method",
    "MethodScores",
    "Row",
    "Benchmark",
    "default_methods",
    "in_context_prompts",
    "run",
    "concat",
    "summary_data",
    "markdown_table",
    "KMEANS",
    "EM",
    "MEANSHIFT",
    "IDENTITY",
    "IDENTITY_MASKED",
    "STACK",
    "STACK_MASKED",
    "ORACLE_BOUND",
    "ORACLE_BEST",
    "BAYES",
]

KMEANS = "k-means"
"""Method name of k-means (Lloyd, k-means++ seeding) run prompt by prompt."""
EM = "EM (spherical)"
"""Method name of EM for a spherical Gaussian mixture, prompt by prompt."""
MEANSHIFT = "mean shift"
"""Method name of flat-kernel mean shift (finds its own number of clusters)."""
IDENTITY = "identity, 1 layer"
"""Method name of one identity-attention layer at the inverse temperature chosen from the prompt."""
IDENTITY_MASKED = "identity, 1 layer, self-masked"
"""Method name of :data:`IDENTITY` with each token kept from attending to itself."""
STACK = f"identity, {temperature.STACK_DEPTH} layers"
"""Method name of the stack of identity layers at the inverse temperature chosen from the prompt."""
STACK_MASKED = f"identity, {temperature.STACK_DEPTH} layers, self-masked"
"""Method name of :data:`STACK` with each token kept from attending to itself."""
ORACLE_BOUND = "identity, 1 layer, bound's lam"
"""Method name of one identity layer at the best inverse temperature of the distortion bound (knows sigma and r)."""
ORACLE_BEST = "identity, 1 layer, best lam"
"""Method name of one identity layer at the inverse temperature that is best on the prompts themselves (an oracle)."""
BAYES = "nearest true centroid"
"""Method name of the assignment of each token to its nearest true centroid (knows the centroids)."""


@dataclass(frozen=True)
class Prompts:
    """A batch of prompts with the truth the methods are scored against.

    Attributes:
        X: (n, L, d) tokens.
        labels: (n, L) true components.
        centroids: (n, K, d) each prompt's centroids.
        K: the number of components (given to the methods that need it).
        sigma: the true noise level, or None when there is none (real data); only oracles
            read it.
        r: the true centroid norm, or None; only oracles read it.
    """

    X: np.ndarray
    labels: np.ndarray
    centroids: np.ndarray
    K: int
    sigma: float | None = None
    r: float | None = None

    def __post_init__(self):
        X = np.asarray(v.tokens("X", self.X))
        if X.ndim != 3:
            raise ValueError(f"X must have shape (n, L, d), got shape {X.shape}")
        labels = np.asarray(self.labels)
        if labels.shape != X.shape[:2]:
            raise ValueError(f"labels must have shape (n, L) = {X.shape[:2]}, got {labels.shape}")
        K = v.positive_int("K", self.K)
        cents = np.asarray(self.centroids, np.float32)
        if cents.shape != (X.shape[0], K, X.shape[2]):
            raise ValueError(f"centroids must have shape (n, K, d) = {(X.shape[0], K, X.shape[2])}, got {cents.shape}")
        if labels.min() < 0 or labels.max() >= K:
            raise ValueError(f"labels must lie in 0..K-1 = 0..{K - 1}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "labels", labels.astype(np.int64))
        object.__setattr__(self, "centroids", cents)
        object.__setattr__(self, "K", K)
        for name in ("sigma", "r"):
            val = getattr(self, name)
            if val is not None:
                object.__setattr__(self, name, v.positive_finite(name, val))

    @property
    def n(self) -> int:
        """Number of prompts."""
        return self.X.shape[0]

    @property
    def L(self) -> int:
        """Tokens per prompt."""
        return self.X.shape[1]

    @property
    def d(self) -> int:
        """Dimension."""
        return self.X.shape[2]

    def own_centroids(self) -> np.ndarray:
        """(n, L, d): each token's own centroid, the target of the distortion."""
        return np.asarray(metrics.own_centroids(self.centroids, self.labels))


def in_context_prompts(
    key: PRNGKeyArray, K: int, d: int, r: float, sigma: float, n: int, L: int, weights=None
) -> Prompts:
    """``Prompts`` of ``attnclust.sample_in_context`` (orthogonal centroids of norm r, drawn
    afresh for every prompt), with sigma and r recorded for the oracles."""
    X, labels, mus = sample_in_context(key, K, d, r, sigma, n, L, weights=weights)
    return Prompts(np.asarray(X), np.asarray(labels), np.asarray(mus), K, sigma, r)


@dataclass(frozen=True)
class Output:
    """What a method returns for a batch of prompts.

    Attributes:
        labels: (n, L) cluster labels, any names (ARI is permutation-invariant).
        points: (n, L, d) each token's representative.
        lam: (n,) the inverse temperature used per prompt, for identity attention; else None.
    """

    labels: np.ndarray
    points: np.ndarray
    lam: np.ndarray | None = None


@dataclass(frozen=True)
class Method:
    """A clustering method of the benchmark.

    Attributes:
        name: the name shown in tables.
        fn: ``fn(key, prompts) -> Output``.
        sees: what it reads besides the tokens ("K", "nothing", "sigma, r", "centroids").
        oracle: True when it reads anything a clustering algorithm is not given.
        jax: True when it is JAX code (compiled on a first, untimed call).
    """

    name: str
    fn: Callable[[jax.Array, Prompts], Output]
    sees: str
    oracle: bool = False
    jax: bool = False


def _centres_output(labels, centres) -> Output:
    labels = np.asarray(labels)
    return Output(labels, np.take_along_axis(np.asarray(centres), labels[..., None], axis=1))


def _kmeans(key, p: Prompts) -> Output:
    return _centres_output(*baselines.kmeans_per_prompt(key, p.X, p.K))


def _em(key, p: Prompts) -> Output:
    return _centres_output(*baselines.em_per_prompt(key, p.X, p.K))


def _meanshift(key, p: Prompts) -> Output:
    labels, points = baselines.meanshift_per_prompt(key, p.X)
    return Output(labels, points)


def _readout(key, Z, K) -> np.ndarray:
    return np.asarray(baselines.output_clusters(key, jnp.asarray(Z, jnp.float32), K))


def _identity(mask_self: bool):
    def fn(key, p: Prompts) -> Output:
        ch = temperature.sure_lambda(p.X, p.K, mask_self=mask_self)
        return Output(_readout(key, ch.outputs, p.K), ch.outputs, ch.lam)

    return fn


def _stack(mask_self: bool):
    def fn(key, p: Prompts) -> Output:
        ch = temperature.stack_lambda(key, p.X, p.K, mask_self=mask_self)
        return Output(ch.labels, ch.outputs, ch.lam)

    return fn


def _need(p: Prompts, *names: str) -> None:
    missing = [n for n in names if getattr(p, n) is None]
    if missing:
        raise ValueError(f"this oracle needs the prompts' {' and '.join(missing)} (Prompts has None)")


def _oracle_bound(key, p: Prompts) -> Output:
    from attnclust import symbolic

    _need(p, "sigma", "r")
    lam = symbolic.best_lambda_bound(p.r, p.sigma, p.d)["lam_bound"]
    Z = np.asarray(temperature.identity_layer(p.X, lam))
    return Output(_readout(key, Z, p.K), Z, np.full(p.n, lam))


def _oracle_best(key, p: Prompts) -> Output:
    """The grid lam (in units of 1/sigma_hat^2, as the label-free rule) with the smallest
    true distortion on each prompt."""
    s2 = np.maximum(temperature.noise_variance(p.X, p.K), 1e-12)
    own = p.own_centroids()
    best_D = np.full(p.n, np.inf)
    best_lam = np.zeros(p.n)
    best_Z = np.zeros_like(p.X)
    for g in temperature.SURE_GRID:
        Z = np.asarray(temperature.identity_layer(p.X, g / s2))
        D = np.mean(np.sum((Z - own) ** 2, -1), -1)
        better = D < best_D
        best_D[better], best_lam[better], best_Z[better] = D[better], g / s2[better], Z[better]
    return Output(_readout(key, best_Z, p.K), best_Z, best_lam)


def _bayes(key, p: Prompts) -> Output:
    labels = np.asarray(metrics.nearest_centroid(p.X, p.centroids))
    return _centres_output(labels, p.centroids)


def default_methods(*, oracles: bool = True, meanshift: bool = True) -> tuple[Method, ...]:
    """The benchmark's methods, peers first, then identity attention with lam from the
    prompt, then (``oracles``) the oracles. ``meanshift=False`` leaves mean shift out (its
    cost grows fastest with L)."""
    ms = (Method(MEANSHIFT, _meanshift, "nothing"),) if meanshift else ()
    out = (
        Method(KMEANS, _kmeans, "K"),
        Method(EM, _em, "K"),
        *ms,
        Method(IDENTITY, _identity(False), "K", jax=True),
        Method(IDENTITY_MASKED, _identity(True), "K", jax=True),
        Method(STACK, _stack(False), "K", jax=True),
        Method(STACK_MASKED, _stack(True), "K", jax=True),
    )
    if oracles:
        out += (
            Method(ORACLE_BOUND, _oracle_bound, "sigma, r", oracle=True, jax=True),
            Method(ORACLE_BEST, _oracle_best, "centroids", oracle=True, jax=True),
            Method(BAYES, _bayes, "centroids", oracle=True, jax=True),
        )
    return out


@dataclass(frozen=True)
class MethodScores:
    """One method's scores on the benchmark's prompts.

    Attributes:
        name: the method's name.
        sees: what it reads besides the tokens.
        oracle: whether it is an oracle.
        ari: (n,) ARI per prompt.
        distortion: (n,) distortion per prompt.
        time_per_prompt: wall-clock seconds per prompt (the batch's time over n).
        lam: (n,) temperature per prompt (identity attention), or None.
        n_clusters: (n,) distinct labels per prompt.
    """

    name: str
    sees: str
    oracle: bool
    ari: np.ndarray
    distortion: np.ndarray
    time_per_prompt: float
    lam: np.ndarray | None
    n_clusters: np.ndarray


@dataclass(frozen=True)
class Row:
    """A method's summary line (``Benchmark.rows``).

    Attributes:
        name: as in ``Method``.
        sees: as in ``Method``.
        oracle: as in ``Method``.
        ari: mean ARI with its 95% t interval over prompts.
        distortion: mean distortion with its interval.
        ari_vs_ref: paired difference of ARI to the reference method (this minus the
            reference), None for the reference itself.
        distortion_vs_ref: paired difference of distortion (negative: lower than the
            reference's), None for the reference.
        time_per_prompt: seconds.
        lam_median: median temperature over prompts (identity attention), else None.
    """

    name: str
    sees: str
    oracle: bool
    ari: stats.Interval
    distortion: stats.Interval
    ari_vs_ref: stats.PairedDifference | None
    distortion_vs_ref: stats.PairedDifference | None
    time_per_prompt: float
    lam_median: float | None


@dataclass(frozen=True)
class Benchmark:
    """The result of ``run``.

    Attributes:
        scores: method name -> ``MethodScores``, in the order the methods were given.
        reference: the name of the reference method of the paired differences.
        n: the number of prompts.
        L: the prompts' length.
        d: the tokens' dimension.
        K: the number of clusters.
        noise_floor: mean over prompts of the raw tokens' distortion (d sigma^2 in
            expectation for a Gaussian mixture).
    """

    scores: dict
    reference: str
    n: int
    L: int
    d: int
    K: int
    noise_floor: float
    _rows: dict = field(default_factory=dict, repr=False, compare=False)

    def row(self, name: str) -> Row:
        """The summary ``Row`` of method ``name`` (computed once)."""
        v.one_of("name", name, tuple(self.scores))
        if name not in self._rows:
            s, ref = self.scores[name], self.scores[self.reference]
            paired = name != self.reference
            self._rows[name] = Row(
                s.name, s.sees, s.oracle,
                stats.mean_interval(s.ari), stats.mean_interval(s.distortion),
                stats.paired_difference(s.ari, ref.ari) if paired else None,
                stats.paired_difference(s.distortion, ref.distortion) if paired else None,
                s.time_per_prompt,
                None if s.lam is None else float(np.median(s.lam)),
            )
        return self._rows[name]

    def with_scores(self, scores: MethodScores) -> "Benchmark":
        """A new ``Benchmark`` with one more method's scores (for instance a trained model
        scored outside ``run`` on the same prompts, averaged over its training seeds)."""
        v.instance("scores", scores, MethodScores)
        if scores.name in self.scores:
            raise ValueError(f"scores.name must be new, got {scores.name!r}")
        if scores.ari.shape != (self.n,) or scores.distortion.shape != (self.n,):
            raise ValueError(f"scores must hold one ARI and one distortion per prompt (n={self.n})")
        return Benchmark({**self.scores, scores.name: scores}, self.reference, self.n, self.L, self.d,
                         self.K, self.noise_floor)

    @property
    def rows(self) -> list[Row]:
        """Every method's ``Row``, label-free methods first, then the oracles."""
        names = [n for n, s in self.scores.items() if not s.oracle] + [n for n, s in self.scores.items() if s.oracle]
        return [self.row(n) for n in names]


def concat(benches: Sequence[Benchmark]) -> Benchmark:
    """The benchmarks of several batches of prompts pooled into one (the same methods and
    reference in each): per-prompt scores concatenated, times per prompt averaged with the
    batches' sizes as weights, the noise floor likewise. L, d and K are those of the first."""
    benches = list(benches)
    if not benches:
        raise ValueError("benches must hold at least one Benchmark")
    names = list(benches[0].scores)
    for b in benches:
        if list(b.scores) != names or b.reference != benches[0].reference:
            raise ValueError("benches must have the same methods, in the same order, and the same reference")
    n = sum(b.n for b in benches)

    def cat(name, attr):
        parts = [getattr(b.scores[name], attr) for b in benches]
        return None if parts[0] is None else np.concatenate(parts)

    scores = {}
    for name in names:
        s0 = benches[0].scores[name]
        scores[name] = MethodScores(
            name, s0.sees, s0.oracle, cat(name, "ari"), cat(name, "distortion"),
            float(sum(b.scores[name].time_per_prompt * b.n for b in benches) / n),
            cat(name, "lam"), cat(name, "n_clusters"))
    floor = float(sum(b.noise_floor * b.n for b in benches) / n)
    b0 = benches[0]
    return Benchmark(scores, b0.reference, n, b0.L, b0.d, b0.K, floor)


def _timed(method: Method, key, prompts: Prompts) -> tuple[Output, float]:
    if method.jax:  # compile (and warm the caches) first
        method.fn(key, prompts)
    t0 = time.perf_counter()
    out = method.fn(key, prompts)
    return out, time.perf_counter() - t0


def run(
    key: PRNGKeyArray,
    prompts: Prompts,
    methods: Sequence[Method] | None = None,
    *,
    reference: str = KMEANS,
) -> Benchmark:
    """Score every method on the same prompts (see the module docstring).

    Args:
        key: PRNG key, the same for every method (each draws prompt ``i``'s randomness from
            ``fold_in(key, i)``).
        prompts: the ``Prompts``.
        methods: ``Method`` list; ``default_methods()`` when None.
        reference: the name of the method the paired differences are taken against.

    Returns:
        A ``Benchmark``.

    Raises:
        ValueError: duplicate method names, a reference that is not among them, fewer than
            2 prompts, or a method whose output has the wrong shape.
    """
    key = v.prng_key("key", key)
    v.instance("prompts", prompts, Prompts)
    methods = tuple(default_methods() if methods is None else methods)
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise ValueError(f"method names must be distinct, got {names}")
    v.one_of("reference", reference, names)
    if prompts.n < 2:
        raise ValueError(f"prompts must hold at least 2 prompts for intervals, got n={prompts.n}")
    own = prompts.own_centroids()
    scores = {}
    for m in methods:
        out, seconds = _timed(m, key, prompts)
        labels, points = np.asarray(out.labels), np.asarray(out.points, np.float64)
        if labels.shape != prompts.labels.shape or points.shape != prompts.X.shape:
            raise ValueError(f"method {m.name!r} returned labels {labels.shape} and points {points.shape}, "
                             f"expected {prompts.labels.shape} and {prompts.X.shape}")
        scores[m.name] = MethodScores(
            m.name, m.sees, m.oracle,
            np.asarray(metrics.adjusted_rand(prompts.labels, labels), np.float64),
            np.mean(np.sum((points - own) ** 2, -1), -1),
            seconds / prompts.n,
            None if out.lam is None else np.asarray(out.lam, np.float64),
            np.array([len(np.unique(l)) for l in labels]),
        )
    floor = float(np.mean(np.sum((prompts.X.astype(np.float64) - own) ** 2, -1)))
    return Benchmark(scores, reference, prompts.n, prompts.L, prompts.d, prompts.K, floor)


def _iv(iv: stats.Interval) -> dict:
    return {"estimate": iv.estimate, "low": iv.low, "high": iv.high}


def _pd(pd: stats.PairedDifference | None) -> dict | None:
    if pd is None:
        return None
    return {**_iv(pd.difference), "wins": pd.wins, "losses": pd.losses, "ties": pd.ties}


def summary_data(bench: Benchmark) -> dict:
    """A ``Benchmark`` as JSON data (for a results file): per method, label-free ones first,
    the mean ARI and distortion with their intervals (estimate, low, high), the paired
    differences to the reference (with wins, losses, ties), the time per prompt, the median
    temperature and the mean number of clusters found; and the prompts' sizes, the
    reference and the noise floor."""
    methods = {}
    for row in bench.rows:
        s = bench.scores[row.name]
        methods[row.name] = {
            "oracle": row.oracle, "sees": row.sees,
            "ari": _iv(row.ari), "distortion": _iv(row.distortion),
            "ari_vs_ref": _pd(row.ari_vs_ref), "distortion_vs_ref": _pd(row.distortion_vs_ref),
            "time_per_prompt": row.time_per_prompt, "lam_median": row.lam_median,
            "n_clusters": float(np.mean(s.n_clusters)),
        }
    return {"n": bench.n, "L": bench.L, "d": bench.d, "K": bench.K, "noise_floor": bench.noise_floor,
            "reference": bench.reference, "methods": methods}


def _fmt_diff(pd: stats.PairedDifference | None, spec: str) -> str:
    if pd is None:
        return "(reference)"
    iv = pd.difference
    return f"{iv.estimate:+{spec}} [{iv.low:+{spec}}, {iv.high:+{spec}}] ({pd.wins}/{pd.losses})"


def markdown_table(bench: Benchmark, *, spec: str = ".3f") -> str:
    """The benchmark as a Markdown table: one line per method (oracles last, marked), the
    means with 95% intervals, the paired differences to the reference with their bootstrap
    intervals and wins/losses, the median lam and the time per prompt."""
    head = ("| method | sees | ARI [95% CI] | ARI - ref. [95% CI] (wins/losses) | distortion [95% CI] "
            "| distortion - ref. [95% CI] (wins/losses) | median lam | ms / prompt |")
    lines = [head, "|" + "---|" * 8]
    for r in bench.rows:
        name = f"**oracle**: {r.name}" if r.oracle else r.name
        lam = "" if r.lam_median is None else f"{r.lam_median:.3g}"
        lines.append(
            f"| {name} | {r.sees} | {r.ari.estimate:{spec}} [{r.ari.low:{spec}}, {r.ari.high:{spec}}] "
            f"| {_fmt_diff(r.ari_vs_ref, spec)} "
            f"| {r.distortion.estimate:{spec}} [{r.distortion.low:{spec}}, {r.distortion.high:{spec}}] "
            f"| {_fmt_diff(r.distortion_vs_ref, spec)} | {lam} | {1e3 * r.time_per_prompt:.3g} |"
        )
    return "\n".join(lines)
