"""Measures used everywhere in the book (chapter "Gaussian mixtures and clustering",
chapters/mixtures.md, {prf:ref} label def-distortion).

- ``alignment``: ``|cos|`` of each head with its matched centroid, best matching over
  permutations (Hungarian algorithm, scipy.optimize.linear_sum_assignment).
- ``head_assignments``: a token's cluster by the heads, argmax_h <theta_h, x>^2.
- ``distortion``, ``noise_floor``: quantization error against d sigma^2.
- ``adjusted_rand``: scikit-learn's ARI of predicted against true labels, per prompt.

Non-finite input gives a non-finite answer rather than a plausible number: a head with NaN
or inf has ``|cos|`` NaN (``abs_cosines``, ``alignment``) and no matched centroid (-1 in
``matching``); a token whose scores are NaN is assigned -1 (``head_assignments``); the
distortion of NaN outputs is NaN. Lists are accepted wherever arrays are.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score

from . import _validate as v
from .mixture import GaussianMixture


def _heads_and_centroids(theta, centroids, batched: bool = True):
    """theta (*b, H, d) and centroids (K, d) as float64 NumPy arrays (NaN allowed)."""
    theta = np.asarray(v.real_array("theta", theta, finite=False), np.float64)
    mu = np.asarray(v.real_array("centroids", centroids, finite=False), np.float64)
    v.shape("theta", theta.shape, f"{'(..., H, d)' if batched else '(H, d)'} with H >= 1 heads",
            theta.ndim >= 2 and (batched or theta.ndim == 2) and theta.shape[-2] >= 1)
    v.shape("centroids", mu.shape, "(K, d) with K >= 1", mu.ndim == 2 and mu.shape[0] >= 1)
    v.same_dim("theta", theta.shape[-1], "centroids", mu.shape[-1])
    return theta, mu


def _cosines(theta, mu):
    tn = np.linalg.norm(theta, axis=-1, keepdims=True)
    mn = np.linalg.norm(mu, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # a zero vector has |cos| 0 with everything; NaN and inf propagate to NaN
        return np.abs((theta / np.where(tn == 0, 1.0, tn)) @ (mu / np.where(mn == 0, 1.0, mn)).T)


def abs_cosines(theta: Float[ArrayLike, "*b H d"], centroids: Float[ArrayLike, "K d"]) -> np.ndarray:
    """``|cos(theta_h, mu_c)|`` for every head and centroid (0 for a zero vector).

    Args:
        theta: (``*b``, H, d) heads, H >= 1.
        centroids: (K, d) centroids, K >= 1.

    Returns:
        (``*b``, H, K) float64; NaN in the row of a head with NaN or inf (and the column of
        such a centroid).

    Raises:
        TypeError: theta or centroids not real numbers.
        ValueError: wrong shapes, or different d (naming theta and centroids).
    """
    return _cosines(*_heads_and_centroids(theta, centroids))


def _assign(cos):
    """Best matching (rows, cols) over the heads whose ``|cos|`` row is finite."""
    ok = np.flatnonzero(np.all(np.isfinite(cos), axis=-1))
    rows, cols = linear_sum_assignment(cos[ok], maximize=True)
    return ok[rows], cols


def matching(theta: Float[ArrayLike, "H d"], centroids: Float[ArrayLike, "K d"]) -> np.ndarray:
    """For each head, the index of its matched centroid (maximising the summed ``|cos|``).

    Args:
        theta: (H, d) heads, H >= 1.
        centroids: (K, d) centroids.

    Returns:
        (H,) int: the matched centroid, or -1 for a head left without one (H > K) and for a
        head with NaN or inf.

    Raises:
        TypeError: theta or centroids not real numbers.
        ValueError: wrong shapes (theta must be (H, d)), or different d.
    """
    cos = _cosines(*_heads_and_centroids(theta, centroids, batched=False))
    rows, cols = _assign(cos)
    match = np.full(cos.shape[0], -1)
    match[rows] = cols
    return match


def alignment(theta: Float[ArrayLike, "*b H d"], centroids: Float[ArrayLike, "K d"]) -> np.ndarray:
    """``|cos|`` of each head with its matched centroid, best matching over permutations.

    Works on any leading batch shape (seeds, history). Heads without a matched centroid
    (H > K) get their best ``|cos|`` to any centroid.

    Args:
        theta: (``*b``, H, d) heads, H >= 1.
        centroids: (K, d) centroids, K >= 1.

    Returns:
        (``*b``, H) float64 in [0, 1]; NaN for a head with NaN or inf (a diverged run), so
        that it is not mistaken for an unaligned head.

    Raises:
        TypeError: theta or centroids not real numbers.
        ValueError: wrong shapes, H = 0 or K = 0, or different d.
    """
    cos = abs_cosines(theta, centroids)
    flat = cos.reshape((-1,) + cos.shape[-2:])
    out = np.empty(flat.shape[:2])
    for i, c in enumerate(flat):
        rows, cols = _assign(c)
        out[i] = c.max(axis=-1)  # NaN for the heads left out of the matching
        out[i, rows] = c[rows, cols]
    return out.reshape(cos.shape[:-1])


def head_assignments(theta: Float[ArrayLike, "H d"], X: Float[ArrayLike, "*b d"]) -> Int[Array, "*b"]:
    """The head that claims each token: argmax_h <theta_h, x>^2 (sign-invariant).

    Args:
        theta: (H, d) heads, H >= 1.
        X: (``*b``, d) tokens.

    Returns:
        (``*b``,) int32 head indices; -1 for a token whose scores are not finite (a token
        or a head with NaN or inf).

    Raises:
        TypeError: theta or X not real numbers.
        ValueError: theta not (H, d) with H >= 1, X without a last axis, or different d.
    """
    theta = v.real_array("theta", theta, finite=False)
    X = v.real_array("X", X, finite=False)
    v.shape("theta", theta.shape, "(H, d) with H >= 1 heads", theta.ndim == 2 and theta.shape[0] >= 1)
    v.shape("X", X.shape, "(..., d)", X.ndim >= 1)
    v.same_dim("theta", theta.shape[1], "X", X.shape[-1])
    scores = (X @ theta.T) ** 2
    ok = jnp.all(jnp.isfinite(scores), axis=-1)
    return jnp.where(ok, jnp.argmax(scores, axis=-1), -1).astype(jnp.int32)


def distortion(
    outputs: Float[ArrayLike, "*#b d"],
    targets: Float[ArrayLike, "*#b d"],
    mask: Bool[ArrayLike, "*#b"] | None = None,
) -> Float[Array, ""]:
    """Mean squared distance of outputs to their targets (for instance each token's own
    centroid): the quantization error D of chapters/mixtures.md, def-distortion.

    Args:
        outputs: (``*b``, d) points.
        targets: (``*b``, d) targets, broadcastable against outputs.
        mask: optional boolean (``*b``,), broadcastable against the tokens: the mean then
            runs over the tokens where it is True only (a padded prompt).

    Returns:
        A float32 scalar; NaN or inf when outputs or targets are.

    Raises:
        TypeError: outputs or targets not real numbers, or mask not boolean (an integer
            mask is refused rather than read as weights; pass ``mask != 0``).
        ValueError: shapes that do not broadcast (naming outputs and targets, or mask),
            no tokens, or a mask with no True entry (checked outside ``jit`` only).
    """
    outputs = v.real_array("outputs", outputs, finite=False)
    targets = v.real_array("targets", targets, finite=False)
    v.shape("outputs", outputs.shape, "(..., d)", outputs.ndim >= 1)
    v.shape("targets", targets.shape, "(..., d)", targets.ndim >= 1)
    v.same_dim("outputs", outputs.shape[-1], "targets", targets.shape[-1])
    batch = v.batch_match("outputs", outputs.shape[:-1], "targets", targets.shape[:-1])
    v.count("outputs and targets", int(np.prod(batch)), 1, f"token (batch shape {batch})")
    err = jnp.sum((outputs - targets) ** 2, axis=-1)
    if mask is None:
        return jnp.mean(err)
    mask = v.bool_mask("mask", mask, "tokens to average over")
    mask = jnp.broadcast_to(mask, v.batch_match("mask", mask.shape, "outputs", batch))
    v.any_true("mask", mask, "token")
    err = jnp.broadcast_to(err, mask.shape)
    return jnp.sum(jnp.where(mask, err, 0.0)) / jnp.sum(mask)


def noise_floor(mixture: GaussianMixture) -> float:
    """d sigma^2: E||x - mu_{c(x)}||^2, the distortion of the raw tokens themselves.

    Raises:
        TypeError: mixture not a GaussianMixture.
    """
    v.instance("mixture", mixture, GaussianMixture)
    return float(mixture.d * mixture.sigma**2)


def adjusted_rand(labels_true: Int[ArrayLike, "*b L"], labels_pred: Int[ArrayLike, "*b L"]) -> np.ndarray:
    """Adjusted Rand index (Hubert and Arabie) of each prompt's predicted labels.

    Permutation-invariant: 1 for a perfect clustering whatever the label names, about 0 for
    a random one.

    Args:
        labels_true: (``*b``, L) integer labels, L >= 1.
        labels_pred: (``*b``, L) integer labels, the same shape.

    Returns:
        (``*b``,) float64.

    Raises:
        TypeError: labels that are not numbers.
        ValueError: labels that are not integers (NaN, 0.5), no labels (L = 0 or a scalar),
            or shapes that differ.
    """
    t = v.labels("labels_true", labels_true)
    p = v.labels("labels_pred", labels_pred)
    v.same_shape("labels_true", t.shape, "labels_pred", p.shape)
    if t.ndim == 1:
        return np.asarray(adjusted_rand_score(t, p))
    flat_t = t.reshape(-1, t.shape[-1])
    flat_p = p.reshape(-1, p.shape[-1])
    return np.array([adjusted_rand_score(a, b) for a, b in zip(flat_t, flat_p)]).reshape(t.shape[:-1])


def own_centroids(
    centroids: Float[ArrayLike, "K d"] | Float[ArrayLike, "*b K d"], labels: Int[ArrayLike, "*b L"]
) -> Float[Array, "*b L d"]:
    """The centroid of every token's own component (the target of the distortion,
    chapters/mixtures.md, def-distortion).

    Args:
        centroids: (K, d) shared by every prompt, or (n, K, d) one set per prompt.
        labels: (n, L) the component of each token, in 0..K-1.

    Returns:
        (n, L, d) float32: mu of each token's component.

    Raises:
        TypeError: centroids not real numbers, or labels not integers.
        ValueError: centroids not finite or of a wrong shape, a label outside 0..K-1 (it
            would pick another component's centroid), or batch shapes of labels and
            centroids that do not broadcast.
    """
    mu = v.centroids("centroids", centroids)
    lab = jnp.asarray(v.labels("labels", labels, K=mu.shape[-2]))
    if mu.ndim == 2:
        return mu[lab]
    v.batch_match("labels", lab.shape[:-1], "centroids", mu.shape[:-2])
    return jnp.take_along_axis(mu, lab[..., None], axis=-2)


def nearest_centroid(
    Z: Float[ArrayLike, "*b L d"], centroids: Float[ArrayLike, "K d"] | Float[ArrayLike, "*b K d"]
) -> Int[Array, "*b L"]:
    """argmin_c ``||z_l - mu_c||`` for every token. Applied to Q(X) this is the "oracle"
    assignment of identity attention: it needs the true centroids (chapter "In-context
    quantization experiments", chapters/icq_experiments.md).

    Args:
        Z: (``*b``, L, d) points.
        centroids: (K, d) shared, or (``*b``, K, d) one set per prompt.

    Returns:
        (``*b``, L) int: the index of the nearest centroid.

    Raises:
        TypeError: Z or centroids not real numbers.
        ValueError: NaN or inf in Z or centroids (a NaN token has no nearest centroid),
            wrong shapes, different d, or batch shapes that do not broadcast.
    """
    Z = v.real_array("Z", Z)
    v.shape("Z", Z.shape, "(..., L, d)", Z.ndim >= 2)
    mu = v.centroids("centroids", centroids)
    v.same_dim("Z", Z.shape[-1], "centroids", mu.shape[-1])
    v.batch_match("Z", Z.shape[:-2], "centroids", mu.shape[:-2])
    if mu.ndim == 2:
        mu = jnp.broadcast_to(mu, Z.shape[:-2] + mu.shape)
    d2 = jnp.sum((Z[..., :, None, :] - mu[..., None, :, :]) ** 2, axis=-1)
    return jnp.argmin(d2, axis=-1)


def within_spread(
    Z: Float[ArrayLike, "*depth n L d"], labels: Int[ArrayLike, "n L"], K: int
) -> Float[np.ndarray, "*depth"] | np.float64:
    """Mean squared distance of tokens to their own cluster's mean (over the true labels),
    averaged over clusters and prompts: how far a cloud is from collapsing to a point
    (chapters/icq_experiments.md, stacked identity layers).

    Args:
        Z: (``*depth``, n, L, d) points, e.g. the layers of ``identity_stack``.
        labels: (n, L) true components, in 0..K-1.
        K: number of components, an integer >= 1.

    Returns:
        One number per leading index of Z except the prompt axis, e.g. (depth,); a scalar
        for Z of shape (n, L, d).

    Raises:
        TypeError: K not an integer, labels not integers, Z not real numbers.
        ValueError: K < 1, labels not (n, L) with n >= 1 or outside 0..K-1, or Z not
            (..., n, L, d) with the labels' (n, L).
    """
    K = v.positive_int("K", K)
    lab = v.labels("labels", labels, K=K)
    v.shape("labels", lab.shape, "(n, L) with n >= 1 prompts", lab.ndim == 2 and lab.shape[0] >= 1)
    Z = v.real_array("Z", Z, finite=False, dtype=np.float64)
    v.shape("Z", Z.shape, f"(..., n, L, d) with (n, L) = {lab.shape}, the labels' shape",
            Z.ndim >= 3 and Z.shape[-3:-1] == lab.shape)
    one = (lab[..., None] == np.arange(K)).astype(np.float64)  # (n, L, K)
    count = one.sum(axis=-2)  # (n, K)
    means = np.einsum("nlk,...nld->...nkd", one, Z) / np.maximum(count, 1)[..., None]
    sq = np.sum((Z - np.einsum("nlk,...nkd->...nld", one, means)) ** 2, axis=-1)  # (..., n, L)
    per = np.einsum("nlk,...nl->...nk", one, sq) / np.maximum(count, 1)
    valid = count > 0
    return np.sum(per * valid, axis=(-2, -1)) / valid.sum()
