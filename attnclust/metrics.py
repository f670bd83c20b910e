"""Measures used everywhere in the book (THEORY.md section 7).

- ``alignment``: |cos| of each head with its matched centroid, best matching over
  permutations (Hungarian algorithm, scipy.optimize.linear_sum_assignment).
- ``head_assignments``: a token's cluster by the heads, argmax_h <theta_h, x>^2.
- ``distortion``, ``noise_floor``: quantization error against d sigma^2.
- ``adjusted_rand``: scikit-learn's ARI of predicted against true labels, per prompt.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score

from .mixture import GaussianMixture


def abs_cosines(theta: Float[Array, "*b H d"], centroids: Float[Array, "K d"]) -> np.ndarray:
    """|cos(theta_h, mu_c)| for every head and centroid: shape (*b, H, K)."""
    theta = np.asarray(theta, dtype=np.float64)
    mu = np.asarray(centroids, dtype=np.float64)
    tn = np.linalg.norm(theta, axis=-1, keepdims=True)
    mn = np.linalg.norm(mu, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.abs((theta / tn) @ (mu / mn).T)
    return np.nan_to_num(cos, nan=0.0)


def matching(theta: Float[Array, "H d"], centroids: Float[Array, "K d"]) -> np.ndarray:
    """For each head, the index of its matched centroid (maximising the summed |cos|);
    -1 for heads left without a centroid when H > K."""
    cos = abs_cosines(theta, centroids)
    rows, cols = linear_sum_assignment(cos, maximize=True)
    match = np.full(cos.shape[0], -1)
    match[rows] = cols
    return match


def alignment(theta: Float[Array, "*b H d"], centroids: Float[Array, "K d"]) -> np.ndarray:
    """|cos| of each head with its matched centroid, best matching over permutations.

    Works on any leading batch shape (seeds, history): returns (*b, H); heads without a
    matched centroid (H > K) get their best |cos| to any centroid.
    """
    cos = abs_cosines(theta, centroids)
    flat = cos.reshape((-1,) + cos.shape[-2:])
    out = np.empty(flat.shape[:2])
    for i, c in enumerate(flat):
        rows, cols = linear_sum_assignment(c, maximize=True)
        out[i] = c.max(axis=-1)
        out[i, rows] = c[rows, cols]
    return out.reshape(cos.shape[:-1])


def head_assignments(theta: Float[Array, "H d"], X: Float[Array, "*b d"]) -> Int[Array, "*b"]:
    """The head that claims each token: argmax_h <theta_h, x>^2 (sign-invariant)."""
    return jnp.argmax((X @ jnp.asarray(theta).T) ** 2, axis=-1)


def distortion(
    outputs: Float[Array, "*b d"], targets: Float[Array, "*b d"], mask=None
) -> Float[Array, ""]:
    """Mean squared distance of outputs to their targets (for instance each token's own
    centroid): the quantization error D of THEORY.md section 6. With ``mask`` (*b,) bool,
    the mean runs over the tokens where it is True only (a padded prompt)."""
    err = jnp.sum((jnp.asarray(outputs) - jnp.asarray(targets)) ** 2, axis=-1)
    return jnp.mean(err) if mask is None else jnp.sum(jnp.where(mask, err, 0.0)) / jnp.sum(mask)


def noise_floor(mixture: GaussianMixture) -> float:
    """d sigma^2: E||x - mu_{c(x)}||^2, the distortion of the raw tokens themselves."""
    return float(mixture.d * mixture.sigma**2)


def adjusted_rand(labels_true: Int[Array, "*b L"], labels_pred: Int[Array, "*b L"]) -> np.ndarray:
    """Adjusted Rand index (Hubert and Arabie) of each prompt's predicted labels: shape (*b,).

    Permutation-invariant: 1 for a perfect clustering whatever the label names, about 0 for
    a random one.
    """
    t = np.asarray(labels_true)
    p = np.asarray(labels_pred)
    if t.shape != p.shape:
        raise ValueError(f"labels_true and labels_pred must have the same shape, got {t.shape} and {p.shape}")
    if t.ndim == 1:
        return np.asarray(adjusted_rand_score(t, p))
    flat_t = t.reshape(-1, t.shape[-1])
    flat_p = p.reshape(-1, p.shape[-1])
    return np.array([adjusted_rand_score(a, b) for a, b in zip(flat_t, flat_p)]).reshape(t.shape[:-1])
