"""Mixtures whose components have their own covariance, beyond the isotropic
``GaussianMixture`` (chapter "Beyond the paper", chapters/beyond.md).

- ``GeneralMixture``: sum_c pi_c N(mu_c, A_c A_c^T), x = mu_c + A_c g with g ~ N(0, I_d);
- ``per_component_sigma_mixture`` (unequal isotropic variances) and ``anisotropic_mixture``
  (elongated clouds);
- ``sample_general``: prompts from a ``GeneralMixture``;
- ``stack_mixtures`` and ``draw_stacked``: several mixtures of one dimension as padded arrays,
  and a sampler of those arrays for ``attnclust.fit_sampler`` (train on many mixtures in one
  vmapped run, ``attnclust.fit_mixtures``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from . import _validate as v
from .mixture import GaussianMixture
from .setting import DEFAULT

__all__ = [
    "GeneralMixture",
    "per_component_sigma_mixture",
    "anisotropic_mixture",
    "sample_general",
    "stack_mixtures",
    "draw_stacked",
]


@dataclass(frozen=True)
class GeneralMixture:
    """sum_c weights[c] N(centroids[c], A_c A_c^T): every component its own covariance.

    Attributes:
        weights: (K,) mixing weights, >= 0, summing to 1.
        centroids: (K, d) component means.
        scales: (K, d, d) square roots A_c of the covariances (x = mu_c + A_c g).

    The constructor validates shapes and values and raises ValueError naming the bad one.
    """

    weights: np.ndarray
    centroids: np.ndarray
    scales: np.ndarray

    def __post_init__(self):
        mu = v.real_array("centroids", self.centroids, dtype=np.float64)
        w = v.real_array("weights", self.weights, dtype=np.float64)
        A = v.real_array("scales", self.scales, dtype=np.float64)
        v.shape("centroids", mu.shape, "(K, d)", mu.ndim == 2)
        GaussianMixture(w, mu, 1.0)  # the same checks of weights and centroids
        K, d = mu.shape
        v.shape("scales", A.shape, f"(K, d, d)=({K}, {d}, {d})", A.shape == (K, d, d))
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "centroids", mu)
        object.__setattr__(self, "scales", A)

    @property
    def K(self) -> int:
        """Number of components."""
        return self.centroids.shape[0]

    @property
    def d(self) -> int:
        """Dimension of the tokens."""
        return self.centroids.shape[1]

    @property
    def covariances(self) -> np.ndarray:
        """(K, d, d) covariances A_c A_c^T."""
        return self.scales @ np.swapaxes(self.scales, -1, -2)

    @property
    def mean(self) -> np.ndarray:
        """The mixture mean sum_c pi_c mu_c."""
        return self.weights @ self.centroids

    def noise_floor(self) -> float:
        """E||x - mu_{c(x)}||^2 = sum_c pi_c tr(Sigma_c) (``ac.noise_floor`` when isotropic)."""
        return float(self.weights @ np.trace(self.covariances, axis1=-2, axis2=-1))

    @classmethod
    def from_gaussian(cls, mixture: GaussianMixture) -> "GeneralMixture":
        """The same isotropic mixture as a ``GeneralMixture`` (for checks)."""
        K, d = mixture.K, mixture.d
        A = np.broadcast_to(float(mixture.sigma) * np.eye(d), (K, d, d))
        return cls(np.asarray(mixture.weights), np.asarray(mixture.centroids), A)


def per_component_sigma_mixture(
    sigmas, r: float = DEFAULT.r, d: int = DEFAULT.d, weights=None
) -> GeneralMixture:
    """Orthogonal centroids r e_c with one isotropic noise level per component:
    component c is N(r e_c, sigmas[c]^2 I_d) (unequal variances)."""
    s = v.positive_array("sigmas", sigmas, dtype=np.float64)
    K, d = v.orthogonal_sizes(s.size, d)
    v.positive_finite("r", r)
    w = np.full(K, 1.0 / K) if weights is None else np.asarray(weights, float)
    return GeneralMixture(w, r * np.eye(K, d), s[:, None, None] * np.eye(d)[None])


def anisotropic_mixture(
    r: float = DEFAULT.r,
    d: int = DEFAULT.d,
    K: int = DEFAULT.K,
    along: float = 0.8,
    across: float = 0.3,
    direction: str = "radial",
    weights=None,
) -> GeneralMixture:
    """Orthogonal centroids r e_c with elongated clouds: standard deviation ``along`` in one
    direction and ``across`` in every other one.

    Args:
        direction: "radial" (each cloud stretched along its own centroid, u_c = e_c) or
            "shared" (every cloud stretched along the same direction
            u = (e_1 + ... + e_K) / sqrt K, the line joining the mixture mean to 0).
    """
    K, d = v.orthogonal_sizes(K, d)
    v.positive_finite("r", r)
    v.positive_finite("along", along)
    v.positive_finite("across", across)
    v.one_of("direction", direction, ("radial", "shared"))
    if direction == "radial":
        U = np.eye(K, d)
    else:
        u = np.zeros(d)
        u[:K] = 1 / math.sqrt(K)
        U = np.broadcast_to(u, (K, d))
    # A_c = across I + (along - across) u u^T: symmetric square root of the covariance
    A = across * np.eye(d)[None] + (along - across) * U[:, :, None] * U[:, None, :]
    w = np.full(K, 1.0 / K) if weights is None else np.asarray(weights, float)
    return GeneralMixture(w, r * np.eye(K, d), A)


def sample_general(
    key: PRNGKeyArray, mixture: GeneralMixture, n_prompts: int, L: int
) -> tuple[Float[Array, "n L d"], Int[Array, "n L"]]:
    """Draw ``n_prompts`` prompts of ``L`` tokens from a ``GeneralMixture``.

    Returns X (n_prompts, L, d) and labels (n_prompts, L). Traceable inside ``jit`` (the
    mixture's arrays become constants)."""
    key = v.prng_key("key", key)
    v.instance("mixture", mixture, GeneralMixture)
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    d = mixture.d
    v.allocation("the sample (tokens, noise, labels and scales)", n_prompts * L * (d * d + 2 * d + 1),
                 n_prompts=n_prompts, L=L)
    return _sample_general(key, mixture, n_prompts, L)


def _sample_general(key, mixture, n_prompts, L):
    k1, k2 = jax.random.split(key)
    w = jnp.asarray(mixture.weights, jnp.float32)
    labels = jax.random.categorical(k1, jnp.log(jnp.maximum(w, 1e-30)), shape=(n_prompts, L))
    g = jax.random.normal(k2, (n_prompts, L, mixture.d))
    A = jnp.asarray(mixture.scales, jnp.float32)[labels]  # (n, L, d, d)
    mu = jnp.asarray(mixture.centroids, jnp.float32)[labels]
    return mu + jnp.einsum("nlij,nlj->nli", A, g), labels.astype(jnp.int32)


def stack_mixtures(mixtures) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack ``GaussianMixture`` / ``GeneralMixture`` objects of one dimension d into
    arrays (S, Kmax), (S, Kmax, d), (S, Kmax, d, d), padding with zero-weight components
    (copies of the first centroid, never sampled)."""
    gms = [m if isinstance(m, GeneralMixture) else GeneralMixture.from_gaussian(v.instance(f"mixtures[{i}]", m, GaussianMixture))
           for i, m in enumerate(mixtures)]
    v.shape("mixtures", (len(gms),), "(S,) with S >= 1 mixtures", len(gms) >= 1)
    for i, m in enumerate(gms):
        v.same_dim("mixtures[0]", gms[0].d, f"mixtures[{i}]", m.d)
    d = gms[0].d
    Kmax = max(m.K for m in gms)
    W = np.zeros((len(gms), Kmax))
    M = np.zeros((len(gms), Kmax, d))
    A = np.zeros((len(gms), Kmax, d, d))
    for i, m in enumerate(gms):
        W[i, : m.K] = m.weights
        M[i] = m.centroids[0]
        M[i, : m.K] = m.centroids
        A[i] = np.eye(d)
        A[i, : m.K] = m.scales
    return W, M, A


def draw_stacked(
    key: PRNGKeyArray,
    data: tuple[Float[ArrayLike, "K"], Float[ArrayLike, "K d"], Float[ArrayLike, "K d d"]],
    batch: int,
    L: int,
) -> Float[Array, "batch L d"]:
    """``batch`` prompts of ``L`` tokens from one stacked mixture ``data = (w, mu, A)`` (a slice
    of ``stack_mixtures``' arrays): the sampler that ``attnclust.fit_mixtures`` passes to
    ``attnclust.fit_sampler`` (the sampler protocol ``draw(key, data, batch, L)``, key first as
    in ``attnclust.sample``). Traceable (no validation)."""
    w, mu, a = data
    k1, k2 = jax.random.split(key)
    lab = jax.random.categorical(k1, jnp.log(jnp.maximum(w, 1e-30)), shape=(batch, L))
    g = jax.random.normal(k2, (batch, L, mu.shape[-1]))
    return mu[lab] + jnp.einsum("nlij,nlj->nli", a[lab], g)
