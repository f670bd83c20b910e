"""Gaussian mixtures and prompt samplers (THEORY.md section 1; chapter "Gaussian mixtures
and clustering").

A prompt is a sequence of L tokens drawn i.i.d. from sum_c pi_c N(mu_c, sigma^2 I_d).
"Fixed" prompts share one mixture; "in-context" prompts draw fresh centroids per prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from . import _validate as v


@dataclass(frozen=True)
class GaussianMixture:
    """An isotropic Gaussian mixture sum_c weights[c] N(centroids[c], sigma^2 I_d).

    Attributes:
        weights: (K,) mixing weights, non-negative, summing to 1.
        centroids: (K, d) component means mu_c.
        sigma: the common standard deviation, > 0.

    The constructor validates and raises ValueError naming the bad parameter. It is
    registered as a JAX pytree (sigma and arrays are leaves), so mixtures pass through jit.
    """

    weights: Float[Array, "K"]
    centroids: Float[Array, "K d"]
    sigma: float

    def __post_init__(self):
        w = v.concrete(self.weights)
        mu = v.concrete(self.centroids)
        if mu is not None:
            if mu.ndim != 2:
                raise ValueError(
                    f"centroids must have shape (K, d), got shape {mu.shape}"
                )
            if mu.shape[0] < 1:
                raise ValueError(f"K must be >= 1, got K={mu.shape[0]}")
            if mu.shape[1] < 1:
                raise ValueError(f"d must be >= 1, got d={mu.shape[1]}")
            v.finite_array("centroids", mu)
        if w is not None:
            if w.ndim != 1:
                raise ValueError(f"weights must have shape (K,), got shape {w.shape}")
            if mu is not None and w.shape[0] != mu.shape[0]:
                raise ValueError(
                    f"weights must have length K={mu.shape[0]} (one per centroid), "
                    f"got length {w.shape[0]}"
                )
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError(f"weights must be finite and >= 0, got weights={w!r}")
            if abs(float(w.sum()) - 1.0) > 1e-5:
                raise ValueError(f"weights must sum to 1, got sum {float(w.sum())!r}")
        v.positive_finite("sigma", self.sigma)
        object.__setattr__(self, "weights", jnp.asarray(self.weights, dtype=jnp.float32))
        object.__setattr__(self, "centroids", jnp.asarray(self.centroids, dtype=jnp.float32))

    @property
    def K(self) -> int:
        """Number of components."""
        return self.centroids.shape[0]

    @property
    def d(self) -> int:
        """Dimension of the tokens."""
        return self.centroids.shape[1]

    @property
    def mean(self) -> Float[Array, "d"]:
        """The mixture mean sum_c pi_c mu_c."""
        return self.weights @ self.centroids

    def centred(self) -> "GaussianMixture":
        """The same mixture shifted so that its mean is zero (chapter "Beyond the paper")."""
        return GaussianMixture(self.weights, self.centroids - self.mean, self.sigma)


jax.tree_util.register_pytree_node(
    GaussianMixture,
    lambda m: ((m.weights, m.centroids, m.sigma), None),
    lambda _, c: _unchecked_mixture(*c),
)


def _unchecked_mixture(weights, centroids, sigma) -> GaussianMixture:
    """Rebuild a mixture from traced leaves without validation (pytree unflatten)."""
    m = object.__new__(GaussianMixture)
    object.__setattr__(m, "weights", weights)
    object.__setattr__(m, "centroids", centroids)
    object.__setattr__(m, "sigma", sigma)
    return m


def _weights(K: int, weights) -> jnp.ndarray:
    if weights is None:
        return jnp.full((K,), 1.0 / K)
    return jnp.asarray(weights, dtype=jnp.float32)


def orthogonal_mixture(
    K: int = 2, d: int = 5, r: float = 2.0, sigma: float = 0.5, weights=None
) -> GaussianMixture:
    """The default mixture of the book: centroids mu_c = r e_c (THEORY.md section 1).

    Args:
        K: number of components, 1 <= K <= d.
        d: dimension.
        r: norm of every centroid, > 0; the separation is r / sigma.
        sigma: noise standard deviation, > 0.
        weights: (K,) mixing weights; equal when None.
    """
    K = v.positive_int("K", K)
    d = v.positive_int("d", d)
    if K > d:
        raise ValueError(f"K must be <= d for orthogonal centroids, got K={K}, d={d}")
    v.positive_finite("r", r)
    return GaussianMixture(_weights(K, weights), r * jnp.eye(K, d), sigma)


def _sample_labels_and_noise(key, weights, n_prompts, L, d):
    k_lab, k_noise = jax.random.split(key)
    labels = jax.random.categorical(
        k_lab, jnp.log(weights), shape=(n_prompts, L)
    ).astype(jnp.int32)
    noise = jax.random.normal(k_noise, (n_prompts, L, d))
    return labels, noise


def sample(
    key: PRNGKeyArray, mixture: GaussianMixture, n_prompts: int, L: int
) -> tuple[Float[Array, "n L d"], Int[Array, "n L"]]:
    """Draw ``n_prompts`` prompts of ``L`` tokens from one fixed mixture.

    Returns:
        X: (n_prompts, L, d) tokens; labels: (n_prompts, L) the component of each token.
    """
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    labels, noise = _sample_labels_and_noise(key, mixture.weights, n_prompts, L, mixture.d)
    X = mixture.centroids[labels] + mixture.sigma * noise
    return X, labels


def random_orthogonal_centroids(
    key: PRNGKeyArray, n: int, K: int, d: int, r: float
) -> Float[Array, "n K d"]:
    """``n`` sets of K orthogonal directions in R^d (Haar-random), each scaled to norm r."""
    G = jax.random.normal(key, (n, d, K))
    Q, R = jnp.linalg.qr(G)
    # Fix the sign ambiguity of QR so that the directions are Haar-distributed.
    Q = Q * jnp.sign(jnp.diagonal(R, axis1=-2, axis2=-1))[:, None, :]
    return r * jnp.swapaxes(Q, -1, -2)


def sample_in_context(
    key: PRNGKeyArray,
    K: int,
    d: int,
    r: float,
    sigma: float,
    n_prompts: int,
    L: int,
    weights=None,
    kind: str = "orthogonal",
) -> tuple[Float[Array, "n L d"], Int[Array, "n L"], Float[Array, "n K d"]]:
    """Prompts whose centroids are drawn afresh for every prompt (THEORY.md section 1, 6).

    Args:
        kind: "orthogonal" (K random orthogonal directions times r, needs K <= d) or
            "gaussian" (centroids i.i.d. N(0, r^2/d I_d), so that E||mu||^2 = r^2).

    Returns:
        X: (n_prompts, L, d); labels: (n_prompts, L); centroids: (n_prompts, K, d).
    """
    K = v.positive_int("K", K)
    d = v.positive_int("d", d)
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    v.positive_finite("r", r)
    v.positive_finite("sigma", sigma)
    w = _weights(K, weights)
    GaussianMixture(w, jnp.zeros((K, d)), sigma)  # validates the weights
    k_mu, k_rest = jax.random.split(key)
    if kind == "orthogonal":
        if K > d:
            raise ValueError(f"K must be <= d for orthogonal centroids, got K={K}, d={d}")
        mus = random_orthogonal_centroids(k_mu, n_prompts, K, d, r)
    elif kind == "gaussian":
        mus = jax.random.normal(k_mu, (n_prompts, K, d)) * (r / np.sqrt(d))
    else:
        raise ValueError(f"kind must be 'orthogonal' or 'gaussian', got kind={kind!r}")
    labels, noise = _sample_labels_and_noise(k_rest, w, n_prompts, L, d)
    X = jnp.take_along_axis(mus, labels[..., None], axis=1) + sigma * noise
    return X, labels, mus
