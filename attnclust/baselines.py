"""Reference clustering algorithms, run prompt by prompt: k-means (Lloyd) and EM.

The attention layers of the book cluster the tokens of *one* prompt; the fair reference is
therefore a classical clustering algorithm run on each prompt separately. Every function
takes a PRNG key and a batch of prompts ``X`` of shape ``(n, L, d)`` and returns, for every
prompt, hard labels ``(n, L)`` and ``K`` centres ``(n, K, d)``; prompt ``i`` draws its
randomness from ``jax.random.fold_in(key, i)``, so results do not depend on the batching:

- :func:`kmeans_per_prompt`: scikit-learn's ``KMeans`` (Lloyd's algorithm, k-means++ seeding)
  (Lloyd, 1982);
- :func:`em_per_prompt`: scikit-learn's ``GaussianMixture`` with spherical covariances,
  fitted by expectation-maximisation (Dempster, Laird and Rubin, 1977); its labels are the
  maximum-posterior components;
- :func:`meanshift_per_prompt`: scikit-learn's ``MeanShift`` (flat-kernel mean shift, which
  finds its own number of clusters) with the bandwidth of ``estimate_bandwidth`` on the same
  prompt; as its number of clusters varies it returns each token's centre, ``(n, L, d)``;
- :func:`kmeans_per_prompt_jax`, :func:`em_per_prompt_jax`: the same algorithms written in
  JAX and vmapped over prompts (k-means++ seeding, a fixed number of Lloyd or EM steps),
  hundreds of times faster on many short prompts; :func:`output_clusters` reads off the
  clusters of identity attention's outputs with it (chapter "In-context quantization
  experiments").

The scikit-learn functions are NumPy code (not JAX) and run on the CPU; they are meant for the
reference numbers of the book (a few hundred prompts), not for training loops. Each prompt
is a tiny problem (tens to hundreds of points), so the fits run with one BLAS/OpenMP thread
(``threadpoolctl``): on a busy 2-core machine this made k-means about 20 times faster than
letting scikit-learn spawn threads for every fit. Labels and
centres come in the algorithm's own order: compare them to the truth with a permutation-
invariant score (``attnclust.adjusted_rand``, ``attnclust.alignment``).
"""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from . import _validate as v

__all__ = [
    "kmeans_per_prompt",
    "em_per_prompt",
    "meanshift_per_prompt",
    "kmeans_per_prompt_jax",
    "em_per_prompt_jax",
    "output_clusters",
]

KMEANS_N_INIT = 10
"""Restarts of k-means per prompt (scikit-learn's ``n_init``, set explicitly)."""

EM_N_INIT = 3
"""Restarts of EM per prompt (scikit-learn's ``n_init``)."""

MEANSHIFT_QUANTILE = 0.3
"""The quantile of scikit-learn's ``estimate_bandwidth`` (its default) that sets mean shift's
bandwidth on each prompt."""


def _check(X: Float[ArrayLike, "n L d"], K: int) -> tuple[Float[np.ndarray, "n L d"], int]:
    """Validate a batch of prompts and the number of clusters; return X as float64."""
    K = v.positive_int("K", K)
    arr = v.prompts("X", X, min_L=K, why=f"for K={K} clusters", dtype=np.float64)
    return arr, K


def _prompt_keys(key: PRNGKeyArray, n: int) -> jax.Array:
    """One key per prompt, ``fold_in(key, i)`` for prompt ``i``: a prompt's randomness does
    not depend on how many prompts are in the batch."""
    key = v.prng_key("key", key)
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))


def _per_prompt(fit_one, key, X, K, n_init, centres_shape=None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``fit_one(x, K, n_init, random_state) -> (labels (L,), centres (K, d))`` on every
    prompt of ``X`` with one BLAS/OpenMP thread; prompt ``i``'s ``random_state`` is drawn
    from ``fold_in(key, i)``. ``centres_shape`` overrides the (n, K, d) of the centres."""
    arr, K = _check(X, K)
    n_init = v.positive_int("n_init", n_init)
    n, L, d = arr.shape
    seeds = np.asarray(jax.vmap(lambda k: jax.random.randint(k, (), 0, 2**31 - 1))(_prompt_keys(key, n)))
    labels = np.empty((n, L), dtype=np.int64)
    centres = np.empty((n, K, d) if centres_shape is None else centres_shape, dtype=np.float64)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        # Prompts with fewer distinct points than K (degenerate draws) warn; the result
        # is still a valid partition.
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i in range(n):
            labels[i], centres[i] = fit_one(arr[i], K, n_init, int(seeds[i]))
    return labels, centres


def kmeans_per_prompt(
    key: PRNGKeyArray, X: Float[ArrayLike, "n L d"], K: int, *, n_init: int = KMEANS_N_INIT
) -> tuple[np.ndarray, np.ndarray]:
    """k-means (Lloyd, k-means++ seeding, ``n_init=10`` restarts) on each prompt separately.

    Args:
        key: PRNG key; prompt ``i``'s scikit-learn ``random_state`` is drawn from
            ``jax.random.fold_in(key, i)``, so the result does not depend on how the batch
            is split.
        X: prompts, shape ``(n, L, d)`` (NumPy or JAX array).
        K: number of clusters, an integer with ``1 <= K <= L``.
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

    return _per_prompt(fit_one, key, X, K, n_init)


def em_per_prompt(
    key: PRNGKeyArray, X: Float[ArrayLike, "n L d"], K: int, *, n_init: int = EM_N_INIT
) -> tuple[np.ndarray, np.ndarray]:
    """EM for a spherical Gaussian mixture on each prompt separately.

    scikit-learn's ``GaussianMixture(covariance_type="spherical")``, ``n_init=3`` restarts by default: each component
    has its own weight, mean and variance ``s_k^2 I``. Labels are the components of maximum
    posterior probability.

    Args:
        key: PRNG key; prompt ``i``'s ``random_state`` is drawn from
            ``jax.random.fold_in(key, i)``.
        X: prompts, shape ``(n, L, d)`` (NumPy or JAX array).
        K: number of components, an integer with ``1 <= K <= L``.
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

    return _per_prompt(fit_one, key, X, K, n_init)


def meanshift_per_prompt(
    key: PRNGKeyArray, X: Float[ArrayLike, "n L d"], *, quantile: float = MEANSHIFT_QUANTILE
) -> tuple[np.ndarray, np.ndarray]:
    """Mean shift on each prompt separately, with the bandwidth read off that prompt.

    scikit-learn's ``MeanShift(bandwidth=h, bin_seeding=True)`` (flat kernel; seeds on a grid
    of cells of side h, every token assigned to its nearest mode) with
    ``h = estimate_bandwidth(x, quantile=quantile)``, the mean distance of a token to its
    ``quantile * L``-th nearest neighbour. Mean shift is not told the number of clusters: it
    finds as many modes as the density estimate has.

    Args:
        key: PRNG key; prompt ``i``'s ``random_state`` for ``estimate_bandwidth`` is drawn
            from ``jax.random.fold_in(key, i)``.
        X: prompts, shape ``(n, L, d)``, L >= 2.
        quantile: in (0, 1].

    Returns:
        ``(labels, token_centres)``: ``labels`` (n, L) int and ``token_centres`` (n, L, d),
        the mode each token was assigned to (the number of modes differs between prompts).

    Raises:
        ValueError: if ``X`` is not a finite ``(n, L, d)`` array with L >= 2, or ``quantile``
            is not in (0, 1].
    """
    from sklearn.cluster import MeanShift, estimate_bandwidth

    quantile = v.number_in("quantile", quantile, 0.0, 1.0)

    def fit_one(x, K, n_init, random_state):
        h = estimate_bandwidth(x, quantile=quantile, random_state=random_state)
        if not h > 0:  # every token equal: one cluster
            return np.zeros(x.shape[0], np.int64), np.repeat(x.mean(0, keepdims=True), x.shape[0], 0)
        ms = MeanShift(bandwidth=h, bin_seeding=True).fit(x)
        return ms.labels_, ms.cluster_centers_[ms.labels_]

    arr, _ = _check(X, 2)
    return _per_prompt(fit_one, key, arr, 2, 1, centres_shape=arr.shape)


# JAX twins of the scikit-learn functions, vmapped over prompts (fast on many short prompts)


def _kmeanspp(key, X, K):
    """k-means++ seeding for one prompt X (L, d): K rows, each drawn with probability
    proportional to the squared distance to the rows already chosen."""
    L = X.shape[0]
    keys = jax.random.split(key, K)
    first = X[jax.random.randint(keys[0], (), 0, L)]
    C = jnp.zeros((K, X.shape[1])).at[0].set(first)
    d2 = jnp.sum((X - first) ** 2, axis=-1)
    for k in range(1, K):
        p = d2 / jnp.maximum(d2.sum(), 1e-30)
        p = jnp.where(d2.sum() > 0, p, jnp.full((L,), 1.0 / L))
        c = X[jax.random.choice(keys[k], L, p=p)]
        C = C.at[k].set(c)
        d2 = jnp.minimum(d2, jnp.sum((X - c) ** 2, axis=-1))
    return C


def _lloyd(X, C, iters):
    def step(C, _):
        lab = jnp.argmin(jnp.sum((X[:, None] - C[None]) ** 2, -1), axis=-1)
        one = jax.nn.one_hot(lab, C.shape[0])
        cnt = one.sum(0)
        new = (one.T @ X) / jnp.maximum(cnt, 1)[:, None]
        return jnp.where(cnt[:, None] > 0, new, C), None

    C, _ = jax.lax.scan(step, C, None, length=iters)
    d2 = jnp.sum((X[:, None] - C[None]) ** 2, -1)
    return jnp.argmin(d2, -1), C, jnp.sum(jnp.min(d2, -1))


@partial(jax.jit, static_argnums=(2, 3, 4))
def _kmeans_jax(keys, X, K, restarts, iters):
    def one_prompt(key, x):
        def one_start(k):
            return _lloyd(x, _kmeanspp(k, x, K), iters)

        lab, C, inertia = jax.vmap(one_start)(jax.random.split(key, restarts))
        best = jnp.argmin(inertia)
        return lab[best], C[best]

    return jax.vmap(one_prompt)(keys, X)


@partial(jax.jit, static_argnums=(2,))
def _em_jax(X, C0, iters):
    """Spherical-covariance EM on each prompt, started from k-means centres C0 (n, K, d)."""
    n, L, d = X.shape
    K = C0.shape[1]

    def one(x, C):
        lab = jnp.argmin(jnp.sum((x[:, None] - C[None]) ** 2, -1), -1)
        resp = jax.nn.one_hot(lab, K)

        def m_step(resp):
            nk = resp.sum(0) + 1e-9
            mu = (resp.T @ x) / nk[:, None]
            var = jnp.sum(resp * jnp.sum((x[:, None] - mu[None]) ** 2, -1), 0) / (d * nk)
            return nk / L, mu, jnp.maximum(var, 1e-6)

        def step(resp, _):
            pi, mu, var = m_step(resp)
            logp = (jnp.log(pi) - 0.5 * d * jnp.log(var)
                    - jnp.sum((x[:, None] - mu[None]) ** 2, -1) / (2 * var))
            return jax.nn.softmax(logp, axis=-1), None

        resp, _ = jax.lax.scan(step, resp, None, length=iters)
        _, mu, _ = m_step(resp)
        return jnp.argmax(resp, -1), mu

    return jax.vmap(one)(X, C0)


def _check_prompts(X, K):
    arr, K = _check(X, K)
    return jnp.asarray(arr, jnp.float32), K


def kmeans_per_prompt_jax(
    key: PRNGKeyArray, X: Float[ArrayLike, "n L d"], K: int, *, restarts: int = 4, iters: int = 30
) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means run on each prompt alone (k-means++ seeding, ``restarts`` starts,
    best inertia kept, ``iters`` Lloyd steps), vmapped over prompts in JAX: labels (n, L) and
    centres (n, K, d); prompt ``i`` draws from ``fold_in(key, i)``. A vmapped JAX twin of
    :func:`kmeans_per_prompt` (scikit-learn, prompt by prompt), hundreds of times faster on
    many short prompts: used where speed matters (sweeps, the label-free read-out of
    identity attention)."""
    X, K = _check_prompts(X, K)
    keys = _prompt_keys(key, X.shape[0])
    lab, C = _kmeans_jax(keys, X, K, v.positive_int("restarts", restarts), v.positive_int("iters", iters))
    return np.asarray(lab), np.asarray(C)


def em_per_prompt_jax(
    key: PRNGKeyArray, X: Float[ArrayLike, "n L d"], K: int, *, iters: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """EM for a K-component Gaussian mixture with spherical covariances (one variance per
    component) on each prompt alone, started from :func:`kmeans_per_prompt_jax` (same key): MAP labels
    (n, L) and means (n, K, d). JAX twin of :func:`em_per_prompt`."""
    X, K = _check_prompts(X, K)
    _, C0 = kmeans_per_prompt_jax(key, X, K)
    lab, mu = _em_jax(X, jnp.asarray(C0), v.positive_int("iters", iters))
    return np.asarray(lab), np.asarray(mu)


def output_clusters(key: PRNGKeyArray, Z: Float[ArrayLike, "n L d"], K: int) -> np.ndarray:
    """Label-free assignment of identity attention: k-means with K clusters on the layer's
    outputs Z = Q^t(X) of each prompt (after quantization the outputs sit near K points, so
    this last step only reads off which point each token went to). Returns labels (n, L)."""
    return kmeans_per_prompt_jax(key, Z, K)[0]
