"""More heads than clusters (chapter "Beyond the paper", section "More heads than clusters").

The book trains H = K heads. This experiment trains H = 2, 3 and 4 heads (``HEADS``) on the
default K = 2 mixture (d = 5, r = 2, sigma = 0.5, lam = 1, L = 50) from small random starts,
at the book's small budget and at the long budget (``sweeps.BUDGETS``: the same seeds,
batches and learning rate, ten times the steps), and measures what the heads do:

- the runs are nested: seed ``s`` draws one small start of ``max(HEADS)`` heads
  (``attnclust.init_theta``, regime "small") and the run with H heads starts from its first H,
  on the same batches (``attnclust.fit_sampler`` with the same keys for every H). The run
  with one more head is the same run with a head added, so risks are paired by seed;
- the final heads are tail-averaged (``sweeps.tail_average``) and scored by ``HeadRuns``:
  ``|cos|`` with each centroid, the heads aligned by the book's threshold, the centroids
  covered, the heads left without a matched centroid (the extra heads,
  ``metrics.matching``), their norms and ``|cos|`` with the mixture mean, and how much of
  the centroids, and of the noise directions, the heads' span holds;
- every run is scored on the same held-out prompts (``heldout_risk``), and from the long
  runs BFGS on the large-L risk finds the local minimiser each run leads to
  (``stationary.large_L_minimiser``).

It takes five to ten minutes on a 2-core CPU (5 min measured alone), so it is a committed experiment
(``python -m attnclust experiment beyond-more-heads``, written to
``attnclust/book/results/beyond-more-heads.json``), read by the chapter with ``stored``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np
from jaxtyping import ArrayLike, Float

from attnclust import _validate as v
from attnclust import stationary
from attnclust.book import results, sizes, sweeps
from attnclust.book.experiments import committed
from attnclust.book.experiments.beyond import span_coverage
from attnclust.metrics import abs_cosines, matching
from attnclust.mixture import orthogonal_mixture, sample
from attnclust.setting import DEFAULT
from attnclust.train import FitResult, draw_from_mixture, fit_sampler, init_theta, risk_loss

__all__ = [
    "HEADS", "SEED", "ALIGNED_COS", "SHRUNK", "NOISE_HEAD", "SIZES", "HeadRuns", "heldout_risk", "outside_dimensions",
    "train_nested", "more_heads", "experiment", "stored", "MoreHeads",
]

HEADS = (2, 3, 4)
"""The numbers of heads trained on the K = 2 mixture."""

SEED = 30
"""The integer seed of this experiment's stream (training starts, batches, held-out prompts)."""

ALIGNED_COS = 0.95
"""The book's threshold of alignment (chapter "Training dynamics")."""

SHRUNK = 0.1
"""An extra head counts as shrunk when its norm is below this fraction of the median norm of
the heads matched to a centroid."""

NOISE_HEAD = 0.1
"""A head counts as a noise head when less than this fraction of its norm lies in the
centroids' plane (``HeadRuns.in_plane``): it reconstructs directions of pure noise only."""

SIZES: dict[str, dict] = {
    # the committed run: 32 seeds per number of heads at the small and the long budget
    # (the budgets' own steps), 512 held-out prompts, BFGS from every long run
    "full": dict(seeds=32, steps={"small": None, "long": None}, prompts=512),
    # tests: every code path, tiny
    "test": dict(seeds=2, steps={"small": 8, "long": 40}, prompts=8),
}
"""Seeds, steps per budget (the budget's own where None) and held-out prompts."""


def _mixture():
    return orthogonal_mixture(**DEFAULT.mixture_args())


def outside_dimensions(theta: Float[ArrayLike, "*b H d"], centroids: Float[ArrayLike, "K d"],
                       tol: float = 1e-6) -> Float[np.ndarray, "*b"]:
    """How many dimensions the heads' span reaches outside the centroids' span:
    ``trace(P (I - Q))`` with ``P`` the projection on span(theta_1..theta_H) and ``Q`` the one on
    span(mu_1..mu_K). It is ``rank(theta) - K`` when the heads' span holds every centroid, and
    ``rank(theta)`` when it is orthogonal to them.

    Args:
        theta: ``(..., H, d)`` heads.
        centroids: ``(K, d)`` linearly independent centroids.
        tol: singular values of the heads below ``tol`` times the largest are left out of
            their span.

    Returns:
        ``(...)`` float64 (a 0-d array for one set of heads).
    """
    theta = np.asarray(theta, np.float64)
    q_mu, _ = np.linalg.qr(np.asarray(centroids, np.float64).T)  # (d, K)
    u, s, _ = np.linalg.svd(np.swapaxes(theta, -1, -2), full_matrices=False)  # u: (..., d, H)
    keep = s > tol * s[..., :1]
    rank = keep.sum(-1)
    inside = np.sum(keep[..., None, :] * (np.swapaxes(q_mu, 0, 1) @ u) ** 2, axis=(-2, -1))
    return np.asarray(rank - inside, np.float64)


@dataclass(frozen=True)
class HeadRuns:
    """The seeds trained with H heads at one budget, on the default K = 2 mixture.

    Attributes:
        H: the number of heads.
        budget: the budget's name (``sweeps.BUDGETS``).
        steps: the Adam steps.
        theta: ``(S, H, d)`` the tail-averaged final heads.
        risk: ``(S,)`` the held-out risk at L = 50 of each seed (mean over the prompts).
        prompt_risk_best: ``(n,)`` the held-out risk on each prompt of the seed with the
            lowest ``risk``.
        prompt_risk_worst: ``(n,)`` the same for the seed with the highest ``risk``.
        theta_inf: ``(S, H, d)`` the large-L local minimiser reached by BFGS from each seed
            (empty when not computed).
        risk_inf: ``(S,)`` R_inf there (empty when not computed).
    """

    H: int
    budget: str
    steps: int
    theta: np.ndarray
    risk: np.ndarray
    prompt_risk_best: np.ndarray
    prompt_risk_worst: np.ndarray
    theta_inf: np.ndarray
    risk_inf: np.ndarray

    @property
    def seeds(self) -> int:
        """The number of seeds S."""
        return int(self.theta.shape[0])

    @property
    def centroids(self) -> np.ndarray:
        """``(K, d)`` the centroids of the default mixture."""
        return np.asarray(_mixture().centroids, np.float64)

    @property
    def has_inf(self) -> bool:
        """Whether the large-L minimisers were computed."""
        return self.risk_inf.size > 0

    def _heads(self, large_L: bool) -> np.ndarray:
        if large_L and not self.has_inf:
            raise ValueError(f"the large-L minimisers of H={self.H} at budget {self.budget!r} were not computed")
        return self.theta_inf if large_L else self.theta

    def cos(self, large_L: bool = False) -> np.ndarray:
        """``(S, H, K)`` ``|cos|`` of every head with every centroid."""
        return abs_cosines(self._heads(large_L), self.centroids)

    def nearest(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` each head's ``|cos|`` with its nearest centroid."""
        return self.cos(large_L).max(-1)

    def aligned_heads(self, level: float = ALIGNED_COS, large_L: bool = False) -> np.ndarray:
        """``(S,)`` how many heads of each seed have ``|cos|`` >= ``level`` with a centroid."""
        return np.sum(self.nearest(large_L) >= level, axis=-1)

    def covered(self, level: float = ALIGNED_COS, large_L: bool = False) -> np.ndarray:
        """``(S,)`` whether every centroid has a head at ``|cos|`` >= ``level``."""
        return np.all(np.any(self.cos(large_L) >= level, axis=-2), axis=-1)

    def extra(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` the heads left without a matched centroid (``metrics.matching``,
        the best matching of heads to centroids by ``|cos|``): H - K per seed."""
        return np.stack([matching(th, self.centroids) < 0 for th in self._heads(large_L)])

    def norms(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` the heads' norms."""
        return np.linalg.norm(self._heads(large_L), axis=-1)

    def mean_cos(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` each head's ``|cos|`` with the mixture mean."""
        mu = self.centroids
        return abs_cosines(self._heads(large_L), mu.mean(0, keepdims=True))[..., 0]

    def in_plane(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` the fraction of each head's norm inside the centroids' span."""
        q, _ = np.linalg.qr(self.centroids.T)
        th = self._heads(large_L)
        return np.linalg.norm(th @ q, axis=-1) / np.linalg.norm(th, axis=-1)

    def noise_heads(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` the heads with less than ``NOISE_HEAD`` of their norm in the centroids'
        plane."""
        return self.in_plane(large_L) < NOISE_HEAD

    def shrunk(self, large_L: bool = False) -> np.ndarray:
        """``(S, H)`` the extra heads whose norm is below ``SHRUNK`` times the median norm of
        the seed's matched heads."""
        extra, norms = self.extra(large_L), self.norms(large_L)
        ref = np.array([np.median(n[~e]) for n, e in zip(norms, extra)])
        return extra & (norms < SHRUNK * ref[:, None])

    def coverage(self, large_L: bool = False) -> np.ndarray:
        """``(S,)`` how much of the centroids the heads' span holds
        (``experiments.beyond.span_coverage``; 1 when it holds both)."""
        return np.array([span_coverage(th, self.centroids) for th in self._heads(large_L)])

    def outside(self, large_L: bool = False) -> np.ndarray:
        """``(S,)`` the dimensions the heads' span reaches outside the centroids' plane
        (``outside_dimensions``)."""
        return outside_dimensions(self._heads(large_L), self.centroids)

    def as_data(self) -> dict:
        """JSON data for the results file."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_data(cls, data: dict) -> "HeadRuns":
        """The inverse of ``as_data``."""
        arr = {k: np.asarray(data[k], np.float64) for k in
               ("theta", "risk", "prompt_risk_best", "prompt_risk_worst", "theta_inf", "risk_inf")}
        return cls(int(data["H"]), str(data["budget"]), int(data["steps"]), **arr)


def heldout_risk(theta: Float[ArrayLike, "S H d"], X: Float[ArrayLike, "n L d"], lam: float = DEFAULT.lam) -> np.ndarray:
    """``(S, n)`` the empirical risk of each set of heads on each prompt of ``X``
    (``attnclust.risk_loss`` per prompt), in one vmapped call."""
    theta = np.asarray(theta, np.float32)
    X = np.asarray(X, np.float32)
    if theta.ndim != 3 or X.ndim != 3 or theta.shape[-1] != X.shape[-1]:
        raise ValueError(f"theta must be (S, H, d) and X (n, L, d) with the same d, got {theta.shape} and {X.shape}")
    lam = v.positive_finite("lam", lam)
    per = jax.vmap(jax.vmap(risk_loss, (None, 0, None)), (0, None, None))
    return np.asarray(jax.jit(per)(theta, X, lam), np.float64)


def train_nested(budget: str, seeds: int, heads: tuple[int, ...] = HEADS, steps: int | None = None,
                 key=None) -> dict[int, FitResult]:
    """Train every number of heads of ``heads`` on the default mixture with ``budget``'s
    batches, learning rate and records (``steps``: the budget's when None), ``seeds`` seeds.

    Seed ``s`` draws one small start of ``max(heads)`` heads and one stream of batches from
    ``split(key, seeds)[s]`` (``key``: ``PRNGKey(SEED)`` when None); the run with H heads
    starts from the first H of them, on the same batches."""
    seeds = v.positive_int("seeds", seeds)
    heads = tuple(v.positive_int("heads", H) for H in heads)
    config = sweeps.budget(budget)
    if steps is not None:
        config = config.replace(steps=v.positive_int("steps", steps))
    mix = _mixture()
    key = jax.random.PRNGKey(SEED) if key is None else key
    pairs = jax.vmap(jax.random.split)(jax.random.split(key, seeds))
    theta0 = np.stack([init_theta(k, mix, H=max(heads), init="small") for k in pairs[:, 0]])
    return {H: fit_sampler(pairs[:, 1], draw_from_mixture, mix, config, init=theta0[:, :H], progress=False)
            for H in heads}


def more_heads(budget: str, seeds: int, prompts: int, steps: int | None = None, large_L: bool = False,
               heads: tuple[int, ...] = HEADS) -> dict[int, HeadRuns]:
    """``train_nested`` scored: H -> ``HeadRuns``, every run on the same ``prompts`` held-out
    prompts of L = 50 tokens, and with ``large_L`` the large-L minimiser BFGS reaches from
    every run."""
    prompts = v.positive_int("prompts", prompts)
    mix = _mixture()
    fits = train_nested(budget, seeds, heads, steps)
    X, _ = sample(jax.random.fold_in(jax.random.PRNGKey(SEED), 1), mix, prompts, DEFAULT.L)
    out = {}
    for H, fit in fits.items():
        theta = sweeps.tail_average(fit)
        per = heldout_risk(theta, X, DEFAULT.lam)
        risk = per.mean(-1)
        th_inf, r_inf = [], []
        if large_L:
            for th in theta:
                t, r = stationary.large_L_minimiser(th, mix, DEFAULT.lam)
                th_inf.append(t)
                r_inf.append(r)
        out[H] = HeadRuns(H, budget, int(fit.steps[-1]), theta, risk, per[np.argmin(risk)], per[np.argmax(risk)],
                          np.asarray(th_inf, np.float64).reshape(-1, H, mix.d), np.asarray(r_inf, np.float64))
    return out


NAME = "beyond-more-heads"
SOURCES = ("attnclust/train.py", "attnclust/book/sweeps.py", "attnclust/book/experiments/beyond.py",
           "attnclust/stationary.py", "attnclust/risk.py", "attnclust/mixture.py", "attnclust/metrics.py")


@committed(NAME, sources=SOURCES,
           description="H = 2, 3, 4 heads on the K = 2 mixture at the small and long budgets, 32 nested seeds")
def experiment(size: str = "full") -> dict:
    """The committed runs at ``size`` (``SIZES``): every H of ``HEADS`` at the small and the
    long budget, BFGS on R_inf from the long runs."""
    cfg = sizes.pick(SIZES, size)
    out = {"heads": list(HEADS), "seeds": cfg["seeds"], "prompts": cfg["prompts"], "L": DEFAULT.L,
           "setting": dict(DEFAULT.mixture_args(), lam=DEFAULT.lam, init="small"), "budgets": {}}
    for budget, steps in cfg["steps"].items():
        b = sweeps.budget(budget)
        runs = more_heads(budget, cfg["seeds"], cfg["prompts"], steps, large_L=budget == "long")
        out["budgets"][budget] = {"batch": b.batch, "lr": b.lr, "runs": {str(H): r.as_data() for H, r in runs.items()}}
    return out


@dataclass(frozen=True)
class MoreHeads:
    """``attnclust/book/results/beyond-more-heads.json`` read back: ``runs[budget][H]``, the
    setting (mixture, temperature, seeds, held-out prompts, L, each budget's batch and
    learning rate) and the file's provenance."""

    runs: dict[str, dict[int, HeadRuns]]
    setting: dict
    stored: results.Stored


def stored() -> MoreHeads:
    """Read the committed runs (see ``experiment``)."""
    st = results.load(NAME)
    d = st.data
    runs = {b: {int(H): HeadRuns.from_data(r) for H, r in x["runs"].items()} for b, x in d["budgets"].items()}
    setting = dict(d["setting"], seeds=d["seeds"], prompts=d["prompts"], L=d["L"],
                   budgets={b: {"batch": x["batch"], "lr": x["lr"]} for b, x in d["budgets"].items()})
    return MoreHeads(runs, setting, st)
