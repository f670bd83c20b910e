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
from dataclasses import dataclass
from functools import lru_cache

import jax
import numpy as np
from jaxtyping import ArrayLike, Float

from attnclust import _validate as v
from attnclust.metrics import abs_cosines, alignment
from attnclust.mixture import orthogonal_mixture
from attnclust.train import INITS, FitResult, fit_many


@dataclass(frozen=True)
class Budget:
    """How much training one experiment gets: seeds per setting, Adam steps, prompts per
    step, prompt length, learning rate, and the stride of the records."""

    seeds: int
    steps: int
    batch: int
    L: int
    lr: float
    record_every: int


BUDGETS: dict[str, Budget] = {
    "small": Budget(seeds=16, steps=400, batch=8, L=50, lr=2e-2, record_every=4),
    "long": Budget(seeds=32, steps=4000, batch=8, L=50, lr=2e-2, record_every=40),
    "full": Budget(seeds=256, steps=4000, batch=32, L=50, lr=1e-2, record_every=40),
    "test": Budget(seeds=4, steps=40, batch=4, L=50, lr=2e-2, record_every=4),
}
"""The two sizes of every training figure (see the module docstring)."""

ALIGNED, BETWEEN, OTHER = 0, 1, 2
"""Codes returned by :func:`classify`."""
CLASS_NAMES = ("aligned", "between", "other")

def budget(size: str) -> Budget:
    """The :class:`Budget` of ``size`` (a key of ``BUDGETS``)."""
    v.one_of("size", size, BUDGETS)
    return BUDGETS[size]


def scaled_lr(lr: float, d: int, d0: int = 5) -> float:
    """The learning rate used at dimension ``d``: ``lr * sqrt(d0 / d)``.

    Adam moves every coordinate by about ``lr`` per step whatever the size of its gradient,
    so the d - K coordinates orthogonal to the centroids, whose gradients are pure sampling
    noise, jitter with a total norm of about ``lr * sqrt(d - K)``. Scaling ``lr`` by
    ``1/sqrt(d)`` keeps that jitter, and so the loss of ``|cos|`` it causes, the same across
    dimensions."""
    if d < 1 or d0 < 1:
        raise ValueError(f"d and d0 must be >= 1, got d={d}, d0={d0}")
    return float(lr) * math.sqrt(d0 / d)


def _lam_key(lam) -> float | tuple[float, ...]:
    arr = np.asarray(lam, dtype=float)
    return float(arr) if arr.ndim == 0 else tuple(float(x) for x in arr)


@lru_cache(maxsize=128)
def _run(size, K, d, r, sigma, lam, init, seed, lr, steps, seeds, L, repeat_keys) -> FitResult:
    b = budget(size)
    mixture = orthogonal_mixture(K=K, d=d, r=r, sigma=sigma)
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds // repeat_keys)
    keys = np.tile(np.asarray(keys), (repeat_keys, 1))
    lam_arg = np.asarray(lam, dtype=np.float32) if isinstance(lam, tuple) else lam
    return fit_many(
        keys, mixture, lam=lam_arg, steps=steps, batch=b.batch, L=L, init=init,
        lr=lr, record_every=b.record_every, progress=False,
    )


def run_seeds(
    size: str = "small",
    *,
    K: int = 2,
    d: int = 5,
    r: float = 2.0,
    sigma: float = 0.5,
    lam: float | tuple[float, ...] = 1.0,
    init: str = "small",
    seed: int = 0,
    lr: float | None = None,
    steps: int | None = None,
    seeds: int | None = None,
    L: int | None = None,
    repeat_keys: int = 1,
) -> FitResult:
    """All seeds of one setting in one ``fit_many`` call (cached per process).

    The keys are ``jax.random.split(PRNGKey(seed), seeds // repeat_keys)`` repeated
    ``repeat_keys`` times, so that with ``repeat_keys`` > 1 runs ``i`` and
    ``i + seeds // repeat_keys`` share their initial heads and batches (a temperature sweep
    then compares like with like). Runs with the same budget, shapes and learning rate
    reuse one compiled program.

    Args:
        size: the budget, a key of ``BUDGETS``.
        K, d, r, sigma: the mixture ``orthogonal_mixture(K, d, r, sigma)``.
        lam: the temperature, or a tuple of one per seed (a sweep in the same compiled call).
        init: the initialisation regime, one of ``INITS``.
        seed: the integer seed of the keys.
        lr, steps, seeds, L: the budget's values when None.
        repeat_keys: how many times the keys are repeated; divides ``seeds``.

    Returns:
        The ``FitResult`` of ``fit_many``, with a leading seed axis S = ``seeds``.

    Raises:
        ValueError: a bad ``size``, ``init``, ``lam`` length or ``repeat_keys``.
    """
    b = budget(size)
    v.one_of("init", init, INITS)
    seeds = b.seeds if seeds is None else int(seeds)
    lam = _lam_key(lam)
    if isinstance(lam, tuple) and len(lam) != seeds:
        raise ValueError(f"lam must be a scalar or have one value per seed ({seeds}), got {len(lam)}")
    if repeat_keys < 1 or seeds % repeat_keys:
        raise ValueError(f"repeat_keys must divide seeds={seeds}, got {repeat_keys}")
    return _run(size, int(K), int(d), float(r), float(sigma), lam, init, int(seed),
                float(b.lr if lr is None else lr), int(b.steps if steps is None else steps), seeds,
                int(b.L if L is None else L), int(repeat_keys))


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
