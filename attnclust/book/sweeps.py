"""Training runs over seeds and settings: the building blocks of the chapter "Training
dynamics" (chapters/training_dynamics.md), whose experiments are in
``attnclust.book.experiments.training``.

Every setting is one ``attnclust.fit_many`` call (all seeds of a setting in one compiled,
vmapped run), cached per process so that the chapter's figures and the numbers it quotes
share the same runs. ``size`` selects the budget (``BUDGETS``):

- ``"small"``: the book's CPU scale (16 seeds, 400 Adam steps with a batch of 8 prompts,
  learning rate 2e-2); seconds per setting on a laptop CPU;
- ``"long"``: ten times the steps and twice the seeds of "small" (32 seeds, 4000
  steps), minutes per setting on a CPU: the committed experiment ``training-long``;
- ``"full"``: paper scale for an accelerator (256 seeds, 4000 steps, batch 32, learning
  rate 1e-2);
- ``"test"``: a few steps and seeds, for the test suite.

Helpers: ``classify`` sorts final heads into aligned / between the centroids / other,
``mean_band`` the mean and a quantile band over seeds, ``tail_average`` the Polyak average of
the recorded heads at the end of a run, ``scaled_lr`` the learning rate used at dimension d,
``steps_to`` the first step a level of ``|cos|`` is reached, ``head_distance`` the distance
between two sets of heads up to what the layer cannot see.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields
from functools import lru_cache

import jax
import numpy as np
from jaxtyping import ArrayLike, Float

from attnclust import _validate as v
from attnclust.metrics import abs_cosines, alignment
from attnclust.mixture import orthogonal_mixture
from attnclust.setting import DEFAULT, Setting
from attnclust.train import INITS, FitResult, TrainConfig, fit_many


@dataclass(frozen=True)
class Budget(TrainConfig):
    """How much training one experiment gets: a :class:`attnclust.TrainConfig` (Adam steps,
    prompts per step, prompt length, learning rate, the stride of the records) and the
    number of seeds of each setting.

    Attributes:
        seeds: runs per setting, an integer >= 1.
    """

    seeds: int = 16

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "seeds", v.positive_int("seeds", self.seeds))


BUDGETS: dict[str, Budget] = {
    "small": Budget(seeds=16, steps=400, batch=8, L=DEFAULT.L, lr=2e-2, record_every=4),
    "long": Budget(seeds=32, steps=4000, batch=8, L=DEFAULT.L, lr=2e-2, record_every=40),
    "full": Budget(seeds=256, steps=4000, batch=32, L=DEFAULT.L, lr=1e-2, record_every=40),
    "test": Budget(seeds=4, steps=40, batch=4, L=DEFAULT.L, lr=2e-2, record_every=4),
}
"""The budgets of the training experiments (see the module docstring)."""

ALIGNED, BETWEEN, OTHER = 0, 1, 2
"""Codes returned by :func:`classify`."""
CLASS_NAMES = ("aligned", "between", "other")

def budget(size: str) -> Budget:
    """The :class:`Budget` of ``size`` (a key of ``BUDGETS``)."""
    v.one_of("size", size, BUDGETS)
    return BUDGETS[size]


def scaled_lr(lr: float, d: int, d0: int = DEFAULT.d) -> float:
    """The learning rate used at dimension ``d``: ``lr * sqrt(d0 / d)``.

    Adam moves every coordinate by about ``lr`` per step whatever the size of its gradient,
    so the d - K coordinates orthogonal to the centroids, whose gradients are pure sampling
    noise, jitter with a total norm of about ``lr * sqrt(d - K)``. Scaling ``lr`` by
    ``1/sqrt(d)`` keeps that jitter, and so the loss of ``|cos|`` it causes, the same across
    dimensions."""
    if d < 1 or d0 < 1:
        raise ValueError(f"d and d0 must be >= 1, got d={d}, d0={d0}")
    return float(lr) * math.sqrt(d0 / d)


@lru_cache(maxsize=128)
def _run(setting: Setting, config: TrainConfig, init: str, seed: int, seeds: int, repeat_keys: int) -> FitResult:
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds // repeat_keys)
    keys = np.tile(np.asarray(keys), (repeat_keys, 1))
    return fit_many(keys, orthogonal_mixture(**setting.mixture_args()), config, init=init, progress=False)


def run_seeds(
    size: str = "small",
    *,
    setting: Setting = DEFAULT,
    init: str = "small",
    seed: int = 0,
    seeds: int | None = None,
    repeat_keys: int = 1,
    **train,
) -> FitResult:
    """All seeds of one setting in one ``fit_many`` call (cached per process).

    The keys are ``jax.random.split(PRNGKey(seed), seeds // repeat_keys)`` repeated
    ``repeat_keys`` times, so that with ``repeat_keys`` > 1 runs ``i`` and
    ``i + seeds // repeat_keys`` share their initial heads and batches (an inverse temperature sweep
    then compares like with like). Runs with the same budget, shapes and learning rate
    reuse one compiled program.

    Args:
        size: the budget, a key of ``BUDGETS``.
        setting: the mixture ``orthogonal_mixture(K, d, r, sigma)`` of this setting (its
            ``lam`` and ``L`` are not used: the inverse temperature and the length are training
            fields, below).
        init: the initialisation regime, one of ``INITS``.
        seed: the integer seed of the keys.
        seeds: runs, the budget's when None.
        repeat_keys: how many times the keys are repeated; divides ``seeds``.
        **train: fields of :class:`attnclust.TrainConfig` replacing the budget's (``lam``,
            a scalar or one per seed; ``steps``, ``L``, ``lr``, ...).

    Returns:
        The ``FitResult`` of ``fit_many``, with a leading seed axis S = ``seeds``.

    Raises:
        ValueError: a bad ``size``, ``init``, training field, ``lam`` length or
            ``repeat_keys``.
    """
    b = budget(size)
    v.instance("setting", setting, Setting)
    v.one_of("init", init, INITS)
    seeds = b.seeds if seeds is None else v.positive_int("seeds", seeds)
    config = TrainConfig.of(TrainConfig(**{f.name: getattr(b, f.name) for f in fields(TrainConfig)}), **train)
    config.lams(seeds)  # one inverse temperature per seed, or one for all
    repeat_keys = v.positive_int("repeat_keys", repeat_keys)
    if seeds % repeat_keys:
        raise ValueError(f"repeat_keys must divide seeds={seeds}, got repeat_keys={repeat_keys}")
    return _run(setting, config, init, int(seed), seeds, repeat_keys)


def tail_average(result: FitResult, frac: float = 0.25) -> np.ndarray:
    """The heads averaged over the last ``frac`` of the records (Polyak-Ruppert
    averaging), which removes most of the optimiser's jitter from a converged run. Each
    recorded head is first given the sign of the final head (a head and its negative are
    the same head), so that a sign change in the window does not cancel the average.

    Args:
        result: a ``FitResult`` with ``thetas`` ``(..., n_records, H, d)``.
        frac: the fraction of the records averaged, in (0, 1].

    Returns:
        ``(..., H, d)`` float64 averaged heads.
    """
    if not 0 < frac <= 1:
        raise ValueError(f"frac must be in (0, 1], got frac={frac}")
    thetas = np.asarray(result.thetas, dtype=np.float64)
    n = thetas.shape[-3]
    k = max(1, int(round(frac * n)))
    window = thetas[..., n - k :, :, :]
    sign = np.sign(np.sum(window * window[..., -1:, :, :], axis=-1, keepdims=True))
    return (np.where(sign == 0, 1.0, sign) * window).mean(axis=-3)


def classify(theta, centroids, aligned: float = 0.95, in_span: float = 0.9,
             between: tuple[float, float] = (0.42, 0.91)) -> np.ndarray:
    """Sort final heads into ``ALIGNED``, ``BETWEEN`` and ``OTHER`` (chapter "Training
    dynamics", def-training-runs).

    ``ALIGNED``: every head's matched ``|cos|`` >= ``aligned``. ``BETWEEN``: not aligned;
    every head lies in the span of the centroids (the norm of its projection there is >=
    ``in_span`` times its norm) and has ``|cos|`` within ``between`` with every centroid
    (for K = 2, within about 20 degrees of a bisector). ``OTHER``: anything else (a head out
    of that plane, vanished, or still on its way).

    Args:
        theta: ``(..., H, d)`` heads.
        centroids: ``(K, d)`` centroids.
        aligned, in_span, between: the thresholds above.

    Returns:
        ``(...)`` int codes.
    """
    theta = np.asarray(theta, dtype=np.float64)
    mu = np.asarray(centroids, dtype=np.float64)
    al = alignment(theta, mu).min(axis=-1)
    q, _ = np.linalg.qr(mu.T)  # orthonormal basis (d, K) of the centroids' span
    norm = np.linalg.norm(theta, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.linalg.norm(theta @ q, axis=-1) / norm
    frac = np.nan_to_num(frac, nan=0.0).min(axis=-1)
    cos = abs_cosines(theta, mu)
    bisect = np.all((cos >= between[0]) & (cos <= between[1]), axis=(-2, -1))
    return np.where(al >= aligned, ALIGNED,
                    np.where((frac >= in_span) & bisect, BETWEEN, OTHER))


def mean_band(values, q: tuple[float, float] = (0.1, 0.9)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and the (q0, q1) quantiles over the leading (seed) axis."""
    values = np.asarray(values, dtype=float)
    lo, hi = np.quantile(values, q, axis=0)
    return values.mean(axis=0), lo, hi


def steps_to(result: FitResult, centroids, level: float = 0.9) -> np.ndarray:
    """The first recorded step at which every head's matched ``|cos|`` reaches ``level``.

    Args:
        result: a ``FitResult`` of S seeds (``thetas`` ``(S, n_records, H, d)``).
        centroids: ``(K, d)`` centroids.
        level: the ``|cos|`` to reach.

    Returns:
        ``(S,)`` steps, NaN for a seed that never reaches ``level``.
    """
    worst = alignment(result.thetas, centroids).min(axis=-1)  # (S, n_records)
    hit = worst >= level
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), np.asarray(result.steps)[first], np.nan)


def head_distance(
    theta: Float[ArrayLike, "*b H d"], reference: Float[ArrayLike, "H d"]
) -> Float[np.ndarray, "*b"] | np.float64:
    """Distance from heads to reference heads up to what the layer cannot see: the order of
    the heads and the sign of each head.

    Args:
        theta: ``(..., H, d)`` heads.
        reference: ``(H, d)`` reference heads.

    Returns:
        ``(...)`` the minimum over permutations and signs of the Frobenius norm of the
        difference.
    """
    theta = np.asarray(theta, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    H = ref.shape[0]
    best = None
    for perm in itertools.permutations(range(H)):
        p = ref[list(perm)]
        # the best sign per head is independent across heads
        sq = np.minimum(np.sum((theta - p) ** 2, -1), np.sum((theta + p) ** 2, -1)).sum(-1)
        best = sq if best is None else np.minimum(best, sq)
    return np.sqrt(best)
