"""Choosing identity attention's temperature from the prompt alone (chapter "In-context
quantization experiments", chapters/icq_experiments.md, section "Choosing lambda from the
prompt").

Identity attention Q(X)_l = sum_k softmax_k(lam <x_l, x_k>) x_k has one parameter, lam. The
large-L theory (chapters/quantization.md) gives the best lam in terms of the noise level
sigma and the centroid norm r, which a prompt does not come with. The rules here read
everything they need off the prompt and the number of clusters K (which k-means is given
too); none looks at labels or centroids:

- :func:`noise_variance`: sigma^2 estimated from the spectrum of the prompt's covariance,
  the mean of its eigenvalues once the K - 1 largest (the directions that carry the
  centroids) are set aside.
- :func:`identity_sure`, :func:`sure_lambda` (one layer): Stein's unbiased risk estimate
  (SURE) of the distortion mean_l ``||Q(X)_l - mu_c(l)||^2``. For tokens x_l = mu_c(l) + sigma g_l
  with Gaussian g, Stein's lemma gives
  E ``||Q - M||^2`` = E ``||Q - X||^2`` - L d sigma^2 + 2 sigma^2 E div Q, where the divergence
  div Q = sum_l trace dQ_l/dx_l has the closed form of :func:`identity_sure`. The rule takes,
  for every prompt, the lam of a fixed grid (in units of 1/sigma_hat^2) that minimises SURE
  with sigma^2 replaced by its estimate.
- :func:`stack_lambda` (stacked layers, whose job is to cluster rather than to quantize):
  the lam of a grid whose stack induces the partition with the smallest within-cluster sum
  of squares of the input tokens (the k-means objective); the partition is read off the
  stack's outputs by k-means (``attnclust.baselines.output_clusters``).

Both come in the self-key-masked variant (``mask_self=True``): token l does not attend to
itself, the softmax runs over k != l (``masked_identity_attention``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from . import _kernels as k
from . import _validate as v

__all__ = [
    "SURE_GRID",
    "STACK_GRID",
    "STACK_DEPTH",
    "LambdaChoice",
    "StackChoice",
    "noise_variance",
    "masked_identity_attention",
    "identity_layer",
    "identity_weights",
    "identity_sure",
    "sure_lambda",
    "stack_lambda",
]

SURE_GRID = np.geomspace(1e-3, 4.0, 25)
"""The values of lam sigma_hat^2 the one-layer rule searches (log-spaced, 25 points from
0.001 to 4; neighbours differ by a factor 1.41)."""

STACK_GRID = np.geomspace(0.05, 4.0, 12)
"""The values of lam sigma_hat^2 the stack rule searches (log-spaced, 12 points)."""

STACK_DEPTH = 8
"""Layers of the stacked identity attention of the benchmark."""

_MAX_SCORES = 2**24
"""Scores (floats) held at once by the batched layers: prompts are processed in chunks of
at most this many n L^2 entries (64 MB), so that L = 1000 prompts fit in memory."""


def noise_variance(X: Float[ArrayLike, "n L d"], K: int) -> Float[np.ndarray, " n"]:
    """Estimate of the noise variance sigma^2 of every prompt, from the prompt alone.

    With S the prompt's sample covariance (divisor L - 1) and e_1 >= e_2 >= ... its
    eigenvalues, sigma_hat^2 = (trace S - e_1 - ... - e_m) / (d - m) with m = K - 1: the
    mixture's covariance is sigma^2 I plus the scatter of the centroids about their mean,
    which has rank K - 1, so the other d - K + 1 directions carry noise only. When d < K
    there is no such direction and m = d - 1 (the smallest eigenvalue, an overestimate).
    When L <= d the L x L Gram matrix gives the same non-zero eigenvalues more cheaply.

    Args:
        X: (n, L, d) prompts, L >= 2, finite.
        K: number of clusters, an integer >= 1.

    Returns:
        (n,) float64 estimates, > 0 for prompts that do not lie in an m-dimensional affine
        subspace.

    Raises:
        ValueError: X not (n, L, d) with L >= 2 or not finite, K not an integer >= 1.
    """
    X = np.asarray(v.prompts("X", X, min_L=2, why="for a covariance"), np.float64)
    n, L, d = X.shape
    K = v.positive_int("K", K)
    m = min(K - 1, d - 1)
    Xc = X - X.mean(axis=1, keepdims=True)
    if L <= d:
        ev = np.linalg.eigvalsh(np.einsum("nld,nkd->nlk", Xc, Xc)) / (L - 1)
    else:
        ev = np.linalg.eigvalsh(np.einsum("nld,nle->nde", Xc, Xc)) / (L - 1)
    top = ev[:, ev.shape[1] - m:].sum(axis=1) if m > 0 else 0.0
    return (ev.sum(axis=1) - top) / (d - m)


@partial(jax.jit, static_argnums=(3,))
def _sure_grid(X, lams, sigma2, mask_self):
    """SURE of every grid temperature (G, n): ``lams`` is (G, n)."""
    d = X.shape[-1]

    def one(lam):
        _, res, div = k.sure_terms(X, lam, mask_self)
        return jnp.mean(res + 2 * sigma2[:, None] * div, -1) - d * sigma2

    return jax.lax.map(one, lams)


def _chunks(n: int, L: int):
    """Slices of at most ``_MAX_SCORES // L^2`` prompts (at least one)."""
    step = max(1, _MAX_SCORES // (L * L))
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


def identity_layer(
    X: Float[ArrayLike, "n L d"], lam: float | Float[ArrayLike, " n"], *, mask_self: bool = False
) -> Float[Array, "n L d"]:
    """One identity layer with an inverse temperature per prompt: Q(X)_l = sum_k w_lk x_k with
    w_lk = softmax_k(lam_n <x_l, x_k>), the softmax over k != l when ``mask_self``.

    The same values as ``attnclust.identity_attention`` (unmasked) and
    :func:`masked_identity_attention` for a scalar lam, computed in chunks of prompts so
    that memory stays bounded; used by the rules of this module, which choose one lam per
    prompt.

    Args:
        X: (n, L, d) prompts, finite (L >= 2 with ``mask_self``).
        lam: an inverse temperature > 0, or (n,) one per prompt.
        mask_self: exclude each token's own key.

    Returns:
        (n, L, d) float32 outputs.

    Raises:
        TypeError: X or lam not real numbers.
        ValueError: X not a finite (n, L, d) array, lam not positive or of the wrong shape.
    """
    X, lam = _layer_args(X, lam, mask_self)
    n, L, _ = X.shape
    return jnp.concatenate([k.identity_layer(X[s], lam[s], bool(mask_self)) for s in _chunks(n, L)])


def _layer_args(X, lam, mask_self: bool):
    """(X, lam) of a layer with an inverse temperature per prompt, validated: L >= 2 with the mask."""
    X = v.prompts("X", X, min_L=2 if mask_self else 1, why="to mask each token's own key")
    return X, v.per_prompt("lam", lam, X.shape[0])


def identity_weights(
    X: Float[ArrayLike, "n L d"], lam: float | Float[ArrayLike, " n"], *, mask_self: bool = False
) -> Float[Array, "n L L"]:
    """The weights w_lk = softmax_k(lam_n <x_l, x_k>) of :func:`identity_layer`, one L x L
    matrix per prompt (the softmax over k != l, w_ll = 0, when ``mask_self``); each row sums
    to 1. The weight of a token's own key, diag(w), is how much a layer keeps of the token
    itself.

    Args:
        X: (n, L, d) prompts, finite (L >= 2 with ``mask_self``).
        lam: an inverse temperature > 0, or (n,) one per prompt.
        mask_self: exclude each token's own key.

    Returns:
        (n, L, L) float32.

    Raises:
        TypeError: X or lam not real numbers.
        ValueError: X not a finite (n, L, d) array, lam not positive or of the wrong shape.
    """
    X, lam = _layer_args(X, lam, mask_self)
    return k.layer_weights(X, lam, bool(mask_self))


def masked_identity_attention(X: Float[ArrayLike, "*b L d"], lam: float) -> Float[Array, "*b L d"]:
    """Self-key-masked identity attention: Q(X)_l = sum_{k != l} softmax_k(lam <x_l, x_k>) x_k.

    The library's identity attention (scaling, shifted logits) with the mask of each
    token's own key. Memory O(L^2) per prompt.

    Args:
        X: (``*b``, L, d) prompts with L >= 2, finite.
        lam: temperature, > 0 and finite in float32.

    Returns:
        (``*b``, L, d) float32.

    Raises:
        ValueError: X not finite or with L < 2, a bad lam.
    """
    X = v.tokens("X", X)
    v.shape("X", X.shape, "(..., L, d) with L >= 2 tokens per prompt, to mask each token's own key", X.shape[-2] >= 2)
    return k.identity_layer(X, v.positive_finite("lam", lam), True)


def identity_sure(
    X: Float[ArrayLike, "n L d"],
    lam: float | Float[ArrayLike, " n"],
    sigma2: float | Float[ArrayLike, " n"],
    *,
    mask_self: bool = False,
) -> Float[np.ndarray, " n"]:
    """Stein's unbiased risk estimate of one identity layer's distortion, per prompt.

    For x_l = mu_c(l) + sigma g_l with g_l ~ N(0, I_d) given the labels and centroids,
    E[SURE] = E mean_l ``||Q(X)_l - mu_c(l)||^2`` exactly, with

        SURE = mean_l ( ``||Q_l - x_l||^2`` + 2 sigma^2 div_l ) - d sigma^2,

    div_l = trace dQ_l/dx_l (the derivative through x_l as query and as key; chapter "In-context
    quantization experiments", prop-icq-sure). With w = softmax weights of token l,
    Q_l = sum_k w_k x_k and V_l = sum_k w_k ``||x_k||^2`` - ``||Q_l||^2`` (the weighted spread of the
    keys it attends to):

        div_l = d w_ll + lam (V_l + w_ll (``||x_l||^2`` - <Q_l, x_l>)),   unmasked,
        div_l = lam V_l,                                            self-masked.

    Args:
        X: (n, L, d) prompts, finite.
        lam: temperature > 0, scalar or (n,).
        sigma2: the noise variance to plug in, > 0, scalar or (n,).
        mask_self: the self-masked layer.

    Returns:
        (n,) float64.

    Raises:
        ValueError: bad shapes or values (named).
    """
    X = v.prompts("X", X)
    n, L, d = X.shape
    lam = v.per_prompt("lam", lam, n)
    s2 = v.per_prompt("sigma2", sigma2, n)
    out = [np.asarray(_sure_grid(X[s], lam[None, s], s2[s], bool(mask_self))[0]) for s in _chunks(n, L)]
    return np.concatenate(out).astype(np.float64)


@dataclass(frozen=True)
class LambdaChoice:
    """The one-layer rule's choice for every prompt.

    Attributes:
        lam: (n,) the chosen inverse temperature of each prompt.
        sigma2: (n,) the noise variance estimate it was chosen with.
        grid: (G,) the searched values of lam sigma2 (``SURE_GRID``).
        sure: (G, n) SURE at every grid point.
        outputs: (n, L, d) the layer's outputs at the chosen lam.
    """

    lam: np.ndarray
    sigma2: np.ndarray
    grid: np.ndarray
    sure: np.ndarray
    outputs: np.ndarray


def sure_lambda(
    X: Float[ArrayLike, "n L d"],
    K: int,
    *,
    mask_self: bool = False,
    grid: Float[ArrayLike, " G"] | None = None,
    sigma2: Float[ArrayLike, " n"] | None = None,
) -> LambdaChoice:
    """The one-layer temperature rule: for every prompt, lam = g / sigma_hat^2 with g the
    point of ``grid`` (``SURE_GRID`` by default) minimising :func:`identity_sure` at
    sigma_hat^2 = :func:`noise_variance` (X, K). Label-free: it reads the prompt and K.

    Args:
        X: (n, L, d) prompts, finite.
        K: number of clusters (for the noise estimate), >= 1.
        mask_self: choose for the self-masked layer.
        grid: (G,) values of lam sigma_hat^2, all > 0.
        sigma2: (n,) a noise variance to use instead of the estimate (an oracle when it is
            the true sigma^2).

    Returns:
        A ``LambdaChoice``.

    Raises:
        ValueError: bad X, K, grid or sigma2.
    """
    X = v.prompts("X", X)
    n, L, d = X.shape
    grid = np.asarray(SURE_GRID if grid is None else v.positive_array("grid", grid), np.float64)
    s2 = noise_variance(X, K) if sigma2 is None else np.asarray(v.per_prompt("sigma2", sigma2, n), np.float64)
    s2 = np.maximum(s2, 1e-12)
    lams = jnp.asarray(grid[:, None] / s2[None, :], jnp.float32)  # (G, n)
    s2j = jnp.asarray(s2, jnp.float32)
    sure = np.concatenate([np.asarray(_sure_grid(X[s], lams[:, s], s2j[s], bool(mask_self)))
                           for s in _chunks(n, L)], axis=1)
    best = np.argmin(sure, axis=0)
    lam = np.asarray(lams)[best, np.arange(n)]
    outputs = np.asarray(identity_layer(X, lam, mask_self=mask_self))
    return LambdaChoice(lam.astype(np.float64), s2, grid, sure, outputs)


def _wcss(X: np.ndarray, labels: np.ndarray, n_groups: int) -> np.ndarray:
    """Within-cluster sum of squares of the tokens X (n, L, d) under ``labels`` (n, L), (n,)."""
    one = (labels[..., None] == np.arange(n_groups)).astype(np.float64)
    count = one.sum(1)
    means = np.einsum("nlk,nld->nkd", one, X) / np.maximum(count, 1)[..., None]
    return np.sum((X - np.einsum("nlk,nkd->nld", one, means)) ** 2, axis=(-1, -2))


@dataclass(frozen=True)
class StackChoice:
    """The stack rule's choice for every prompt.

    Attributes:
        lam: (n,) the chosen temperature.
        sigma2: (n,) the noise variance estimate.
        grid: (G,) the searched values of lam sigma2 (``STACK_GRID``).
        wcss: (G, n) within-cluster sum of squares of the input tokens under each grid
            point's partition.
        labels: (n, L) the partition at the chosen lam.
        outputs: (n, L, d) the stack's last layer at the chosen lam.
    """

    lam: np.ndarray
    sigma2: np.ndarray
    grid: np.ndarray
    wcss: np.ndarray
    labels: np.ndarray
    outputs: np.ndarray


def stack_lambda(
    key: PRNGKeyArray,
    X: Float[ArrayLike, "n L d"],
    K: int,
    *,
    depth: int = STACK_DEPTH,
    mask_self: bool = False,
    grid: Float[ArrayLike, " G"] | None = None,
) -> StackChoice:
    """The stack's temperature rule: for every prompt, lam = g / sigma_hat^2 with g the point
    of ``grid`` (``STACK_GRID``) whose ``depth``-layer stack gives the partition (k-means on
    the stack's outputs, ``baselines.output_clusters``) with the smallest within-cluster
    sum of squares of the *input* tokens. Label-free: it reads the prompt and K.

    Args:
        key: PRNG key of the read-out (the same for every grid point).
        X: (n, L, d) prompts, finite.
        K: number of clusters, 1 <= K <= L.
        depth: layers, >= 1.
        mask_self: stack self-masked layers.
        grid: (G,) values of lam sigma_hat^2, > 0.

    Returns:
        A ``StackChoice``.

    Raises:
        ValueError: bad arguments (named).
    """
    from .baselines import output_clusters

    X = v.prompts("X", X)
    n, L, d = X.shape
    depth = v.positive_int("depth", depth)
    grid = np.asarray(STACK_GRID if grid is None else v.positive_array("grid", grid), np.float64)
    s2 = np.maximum(noise_variance(X, K), 1e-12)
    Xn = np.asarray(X, np.float64)
    labels, outputs, wcss = [], [], []
    for g in grid:
        lam = jnp.asarray(g / s2, jnp.float32)
        Z = jnp.concatenate([k.identity_stack(X[s], lam[s], depth, bool(mask_self)) for s in _chunks(n, L)])
        lab = np.asarray(output_clusters(key, Z, K))
        labels.append(lab)
        outputs.append(np.asarray(Z))
        wcss.append(_wcss(Xn, lab, K))
    wcss = np.asarray(wcss)
    best = np.argmin(wcss, axis=0)
    idx = np.arange(n)
    return StackChoice(grid[best] / s2, s2, grid, wcss, np.asarray(labels)[best, idx],
                       np.asarray(outputs)[best, idx])
