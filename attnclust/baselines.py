"""Reference clustering algorithms, run prompt by prompt: k-means (Lloyd) and EM.

The attention layers of the book cluster the tokens of *one* prompt; the fair reference is
therefore a classical clustering algorithm run on each prompt separately. Both functions take
a batch of prompts ``X`` of shape ``(n, L, d)`` and return, for every prompt, hard labels
``(n, L)`` and ``K`` centres ``(n, K, d)``:

- :func:`kmeans_per_prompt`: scikit-learn's ``KMeans`` (Lloyd's algorithm, k-means++ seeding)
  (Lloyd, 1982);
- :func:`em_per_prompt`: scikit-learn's ``GaussianMixture`` with spherical covariances,
  fitted by expectation-maximisation (Dempster, Laird and Rubin, 1977); its labels are the
  maximum-posterior components.

They are NumPy/scikit-learn code (not JAX) and run on the CPU; they are meant for the
reference numbers of the book (a few hundred prompts), not for training loops. Each prompt
is a tiny problem (tens to hundreds of points), so the fits run with one BLAS/OpenMP thread
(``threadpoolctl``): on a busy 2-core machine this made k-means about 20 times faster than
letting scikit-learn spawn threads for every fit. Labels and
centres come in the algorithm's own order: compare them to the truth with a permutation-
invariant score (``attnclust.adjusted_rand``, ``attnclust.alignment``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

__all__ = ["kmeans_per_prompt", "em_per_prompt"]

KMEANS_N_INIT = 10
"""Restarts of k-means per prompt (scikit-learn's ``n_init``, set explicitly)."""

EM_N_INIT = 3
"""Restarts of EM per prompt (scikit-learn's ``n_init``)."""


def _check(X: np.ndarray, K: int) -> tuple[np.ndarray, int]:
    """Validate a batch of prompts and the number of clusters; return X as float64."""
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K must be an integer >= 1, got K={K!r}")
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 3:
        raise ValueError(f"X must have shape (n, L, d), got shape {arr.shape}")
    n, L, d = arr.shape
    if n < 1 or d < 1:
        raise ValueError(f"X must have n >= 1 prompts of dimension d >= 1, got shape {arr.shape}")
    if L < K:
        raise ValueError(f"each prompt needs at least K={K} tokens, got L={L} (X shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError("X must be finite; it contains NaN or inf")
    return arr, int(K)


def _check_n_init(n_init: int) -> int:
    if isinstance(n_init, bool) or not isinstance(n_init, (int, np.integer)) or n_init < 1:
        raise ValueError(f"n_init must be an integer >= 1, got n_init={n_init!r}")
    return int(n_init)

def _per_prompt(fit_one, X, K, seed, n_init) -> tuple[np.ndarray, np.ndarray]:
    """Run ``fit_one(x, K, n_init, random_state) -> (labels (L,), centres (K, d))`` on every
    prompt of ``X`` with one BLAS/OpenMP thread, prompt ``i`` seeded ``seed + i``."""
    arr, K = _check(X, K)
    n_init = _check_n_init(n_init)
    n, L, d = arr.shape
    labels = np.empty((n, L), dtype=np.int64)
    centres = np.empty((n, K, d), dtype=np.float64)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        # Prompts with fewer distinct points than K (degenerate draws) warn; the result
        # is still a valid partition.
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i in range(n):
            labels[i], centres[i] = fit_one(arr[i], K, n_init, int(seed) + i)
    return labels, centres



def kmeans_per_prompt(
    X: np.ndarray, K: int, seed: int = 0, n_init: int = KMEANS_N_INIT
) -> tuple[np.ndarray, np.ndarray]:
    """k-means (Lloyd, k-means++ seeding, ``n_init=10`` restarts) on each prompt separately.

    Args:
        X: prompts, shape ``(n, L, d)`` (NumPy or JAX array).
        K: number of clusters, an integer with ``1 <= K <= L``.
        seed: seed of scikit-learn's ``random_state``; prompt ``i`` uses ``seed + i``, so the
            result does not depend on how the batch is split.
        n_init: restarts per prompt (the best of ``n_init`` runs by inertia), >= 1.

    Returns:
        ``(labels, centres)``: ``labels`` of shape ``(n, L)`` (int, values in ``0..K-1``) and
        ``centres`` of shape ``(n, K, d)``, the k-means centres of each prompt.

    Raises:
        ValueError: if ``X`` is not a finite ``(n, L, d)`` array, ``K`` is not an integer
            in ``1..L`` or ``n_init`` is not an integer >= 1.
    """
    from sklearn.cluster import KMeans

    def fit_one(x, K, n_init, random_state):
        km = KMeans(n_clusters=K, n_init=n_init, random_state=random_state).fit(x)
        return km.labels_, km.cluster_centers_

    return _per_prompt(fit_one, X, K, seed, n_init)


def em_per_prompt(
    X: np.ndarray, K: int, seed: int = 0, n_init: int = EM_N_INIT
) -> tuple[np.ndarray, np.ndarray]:
    """EM for a spherical Gaussian mixture on each prompt separately.

    scikit-learn's ``GaussianMixture(covariance_type="spherical")``, ``n_init=3`` restarts by default: each component
    has its own weight, mean and variance ``s_k^2 I``. Labels are the components of maximum
    posterior probability.

    Args:
        X: prompts, shape ``(n, L, d)`` (NumPy or JAX array).
        K: number of components, an integer with ``1 <= K <= L``.
        seed: seed of ``random_state``; prompt ``i`` uses ``seed + i``.
        n_init: EM restarts per prompt (the best by likelihood), >= 1.

    Returns:
        ``(labels, means)``: ``labels`` of shape ``(n, L)`` and ``means`` of shape
        ``(n, K, d)``.

    Raises:
        ValueError: if ``X`` is not a finite ``(n, L, d)`` array, ``K`` is not an integer
            in ``1..L`` or ``n_init`` is not an integer >= 1.
    """
    from sklearn.mixture import GaussianMixture

    def fit_one(x, K, n_init, random_state):
        gm = GaussianMixture(
            n_components=K, covariance_type="spherical", n_init=n_init, random_state=random_state
        ).fit(x)
        return gm.predict(x), gm.means_

    return _per_prompt(fit_one, X, K, seed, n_init)
