"""Gaussian mixtures and prompt samplers (chapter "Gaussian mixtures and clustering",
chapters/mixtures.md, {prf:ref} label def-mixture).

A prompt is a sequence of L tokens drawn i.i.d. from sum_c pi_c N(mu_c, sigma^2 I_d).
"Fixed" prompts share one mixture; "in-context" prompts draw fresh centroids per prompt.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from . import _validate as v
from .setting import DEFAULT

def _given(value) -> bool:
    """True for a field value a user passes: a number, an array-like (lists, NumPy and JAX
    arrays, memoryviews, objects with ``__array__`` such as a pandas Series), a string or
    None (refused by the checks). Anything else (tracers, the placeholders JAX unflattens
    with inside ``jit`` and ``vmap``, shape structs of ``jax.eval_shape``) skips validation."""
    return not v.is_tracer(value) and (
        isinstance(value, (numbers.Number, str, bytes, type(None))) or v.is_array_like(value))


@dataclass(frozen=True)
class GaussianMixture:
    """An isotropic Gaussian mixture sum_c weights[c] N(centroids[c], sigma^2 I_d)
    (chapters/mixtures.md, def-mixture).

    Weights and centroids are stored as float32 arrays, sigma as a Python float. A stack
    of mixtures (every field with the same leading axes, as ``jax.tree.map(jnp.stack)``
    builds for ``vmap``) is accepted too, sigma then an array. It is a JAX pytree
    (``jax.tree_util.register_dataclass``; the three fields are leaves), so mixtures pass
    through ``jit`` and ``vmap``. Rebuilding it from tracers or JAX's placeholders (inside
    a transformation) skips every check.

    Args:
        weights: (K,) mixing weights, real, >= 0, summing to 1 (within 1e-5).
        centroids: (K, d) component means mu_c, real and finite in float32, K, d >= 1.
        sigma: the common standard deviation, a real number > 0 that float32 holds.

    Raises:
        TypeError: a field that is not real numbers (a string, complex, None).
        ValueError: a field with a bad shape or value, named in the message.
    """

    weights: Float[Array, "*S K"]
    centroids: Float[Array, "*S K d"]
    sigma: float | Float[Array, "*S"]

    def __post_init__(self):
        if not all(_given(f) for f in (self.weights, self.centroids, self.sigma)):
            return  # pytree unflatten inside a transformation
        mu = v.centroids("centroids", self.centroids)
        w = v.mixture_weights("weights", self.weights, mu.shape[:-1])
        if mu.ndim == 2:
            sigma = v.positive_finite("sigma", self.sigma)
        else:  # a stack of mixtures (leading axes on every field), as jax.tree.map builds
            sigma = v.positive_array("sigma", self.sigma, mu.shape[:-2])
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "centroids", mu)
        object.__setattr__(self, "sigma", sigma)

    @classmethod
    def axes(cls, weights: int | None, centroids: int | None, sigma: int | None) -> "GaussianMixture":
        """A mixture-shaped prefix for ``jax.vmap``'s ``in_axes`` or ``out_axes``: the axis
        to map over in each field (an int) or None (not mapped), not validated as a mixture.

        ``jax.vmap(f, in_axes=(GaussianMixture.axes(0, 0, 0), None))(stack, x)`` maps ``f``
        over a stack of mixtures (``jax.tree.map(jnp.stack, *mixtures)``).

        Raises:
            TypeError: a field that is neither an int nor None.
        """
        for name, axis in (("weights", weights), ("centroids", centroids), ("sigma", sigma)):
            v.axis(name, axis)
        spec = object.__new__(cls)
        for name, axis in (("weights", weights), ("centroids", centroids), ("sigma", sigma)):
            object.__setattr__(spec, name, axis)
        return spec

    @property
    def K(self) -> int:
        """Number of components."""
        return self.centroids.shape[-2]

    @property
    def d(self) -> int:
        """Dimension of the tokens."""
        return self.centroids.shape[-1]

    @property
    def mean(self) -> Float[Array, "d"]:
        """The mixture mean sum_c pi_c mu_c."""
        return self.weights @ self.centroids

    @property
    def log_weights(self) -> Float[Array, "K"]:
        """(K,) log pi_c, with a zero weight read as the smallest normal float32 (log about
        -87), so that differences of log-weights stay finite."""
        return jnp.log(jnp.maximum(self.weights, jnp.finfo(jnp.float32).tiny))

    def centred(self) -> "GaussianMixture":
        """The same mixture shifted so that its mean is zero (chapter "Beyond the paper")."""
        return GaussianMixture(self.weights, self.centroids - self.mean, self.sigma)


jax.tree_util.register_dataclass(
    GaussianMixture, data_fields=["weights", "centroids", "sigma"], meta_fields=[]
)


def _weights(K: int, weights) -> jax.Array:
    if weights is None:
        return jnp.full((K,), 1.0 / K)
    return v.real_array("weights", weights)


def orthogonal_mixture(
    K: int = DEFAULT.K, d: int = DEFAULT.d, r: float = DEFAULT.r, sigma: float = DEFAULT.sigma, weights=None
) -> GaussianMixture:
    """The default mixture of the book: centroids mu_c = r e_c (chapters/mixtures.md,
    def-mixture).

    Args:
        K: number of components, 1 <= K <= d.
        d: dimension, >= 1.
        r: norm of every centroid, > 0; the separation is r / sigma.
        sigma: noise standard deviation, > 0.
        weights: (K,) mixing weights; equal when None.

    Returns:
        The ``GaussianMixture``.

    Raises:
        ValueError: K, d, r, sigma or weights out of range (named in the message).
        TypeError: r, sigma or weights not real numbers.
    """
    K, d = v.orthogonal_sizes(K, d)
    r = v.positive_finite("r", r)
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

    Args:
        key: a JAX PRNG key (``jax.random.key`` or ``jax.random.PRNGKey``).
        mixture: the ``GaussianMixture``.
        n_prompts: number of prompts, >= 1.
        L: tokens per prompt, >= 1.

    Returns:
        X: (n_prompts, L, d) tokens; labels: (n_prompts, L) the component of each token.

    Raises:
        TypeError: key is not a PRNG key, mixture not a GaussianMixture.
        ValueError: n_prompts or L not an integer >= 1, or tokens beyond float32's range.
    """
    key = v.prng_key("key", key)
    v.instance("mixture", mixture, GaussianMixture)
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    v.allocation("the sample (tokens, noise and labels)", n_prompts * L * (2 * mixture.d + 1), n_prompts=n_prompts, L=L)
    labels, noise = _sample_labels_and_noise(key, mixture.weights, n_prompts, L, mixture.d)
    X = mixture.centroids[labels] + mixture.sigma * noise
    return v.finite_result(X, "mixture.centroids and mixture.sigma are"), labels


def random_orthogonal_centroids(
    key: PRNGKeyArray, n_prompts: int, K: int, d: int, r: float
) -> Float[Array, "n_prompts K d"]:
    """``n_prompts`` sets (one per prompt) of K orthogonal directions in R^d (Haar-random), each scaled to norm r.

    Args:
        key: a JAX PRNG key.
        n_prompts: number of sets, >= 1.
        K: directions per set, 1 <= K <= d.
        d: dimension, >= 1.
        r: norm of every direction, > 0.

    Returns:
        (n_prompts, K, d) centroids; within a set, rows are orthogonal with norm r.

    Raises:
        TypeError: key is not a PRNG key, r not a real number.
        ValueError: n_prompts, K, d or r out of range (named in the message).
    """
    key = v.prng_key("key", key)
    n_prompts = v.positive_int("n_prompts", n_prompts)
    K, d = v.orthogonal_sizes(K, d)
    r = v.positive_finite("r", r)
    v.allocation("the centroids (and their QR factors)", 3 * n_prompts * d * K, n_prompts=n_prompts, K=K, d=d)
    G = jax.random.normal(key, (n_prompts, d, K))
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
    """Prompts whose centroids are drawn afresh for every prompt (chapters/mixtures.md, and
    chapter "In-context quantization with identity attention", chapters/quantization.md).

    Args:
        key: a JAX PRNG key.
        K: components per prompt, >= 1 (<= d when ``kind`` is "orthogonal").
        d: dimension, >= 1.
        r: centroid norm (root mean square norm for "gaussian"), > 0.
        sigma: noise standard deviation, > 0.
        n_prompts: number of prompts, >= 1.
        L: tokens per prompt, >= 1.
        weights: (K,) mixing weights; equal when None.
        kind: "orthogonal" (K random orthogonal directions times r, needs K <= d) or
            "gaussian" (centroids i.i.d. N(0, r^2/d I_d), so that E||mu||^2 = r^2).

    Returns:
        X: (n_prompts, L, d); labels: (n_prompts, L); centroids: (n_prompts, K, d).

    Raises:
        TypeError: key is not a PRNG key; r, sigma or weights not real numbers.
        ValueError: an argument out of range (named in the message).
    """
    key = v.prng_key("key", key)
    K = v.positive_int("K", K)
    d = v.positive_int("d", d)
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    r = v.positive_finite("r", r)
    sigma = v.positive_finite("sigma", sigma)
    w = GaussianMixture(_weights(K, weights), jnp.zeros((K, d)), sigma).weights  # validates the weights
    v.one_of("kind", kind, ("orthogonal", "gaussian"))
    v.allocation("the sample (tokens, noise, labels and centroids)", n_prompts * (L * (2 * d + 1) + 3 * K * d),
                 n_prompts=n_prompts, L=L)
    k_mu, k_rest = jax.random.split(key)
    if kind == "orthogonal":
        mus = random_orthogonal_centroids(k_mu, n_prompts, K, d, r)
    else:
        mus = jax.random.normal(k_mu, (n_prompts, K, d)) * (r / np.sqrt(d))
    labels, noise = _sample_labels_and_noise(k_rest, w, n_prompts, L, d)
    X = jnp.take_along_axis(mus, labels[..., None], axis=1) + sigma * noise
    return v.finite_result(X, "r and sigma are"), labels, mus


# Mixtures of the chapter "Beyond the paper" (chapters/beyond.md): other geometries.


def angled_mixture(
    angle: float, r: float = DEFAULT.r, sigma: float = DEFAULT.sigma, d: int = DEFAULT.d, weights=None
) -> GaussianMixture:
    """Two centroids of norm r at angle ``angle``: mu_1 = r e_1,
    mu_2 = r (cos(angle) e_1 + sin(angle) e_2). angle = pi/2 is the book's default mixture,
    angle = pi the antipodal (centred) one (chapter "Beyond the paper", chapters/beyond.md).

    Args:
        angle: the angle between the centroids, in radians, in (0, pi].
        r: norm of both centroids, > 0.
        sigma: noise standard deviation, > 0.
        d: dimension, an integer >= 2.
        weights: (2,) mixing weights; equal when None.

    Returns:
        The ``GaussianMixture``.

    Raises:
        TypeError: an argument that is not a real number.
        ValueError: angle, r, sigma, d or weights out of range (named in the message).
    """
    angle = v.number_in("angle", angle, 0.0, np.pi)
    d = v.positive_int("d", d, minimum=2)
    r = v.positive_finite("r", r)
    mu = np.zeros((2, d))
    mu[0, 0] = r
    mu[1, 0], mu[1, 1] = r * np.cos(angle), r * np.sin(angle)
    return GaussianMixture(_weights(2, weights), jnp.asarray(mu), sigma)


def plusminus_mixture(r: float = DEFAULT.r, sigma: float = DEFAULT.sigma, d: int = DEFAULT.d) -> GaussianMixture:
    """K = 4 equal-weight centroids +-r e_1, +-r e_2: mean zero, and the two heads' targets
    (the lines e_1 and e_2) are orthogonal (``symbolic`` setting "plusminus"; chapter
    "Beyond the paper", chapters/beyond.md).

    Args:
        r: norm of every centroid, > 0.
        sigma: noise standard deviation, > 0.
        d: dimension, an integer >= 2.

    Returns:
        The ``GaussianMixture``.

    Raises:
        TypeError: r or sigma not a real number.
        ValueError: r, sigma or d out of range (named in the message).
    """
    d = v.positive_int("d", d, minimum=2)
    r = v.positive_finite("r", r)
    mu = np.zeros((4, d))
    mu[0, 0], mu[1, 0], mu[2, 1], mu[3, 1] = r, -r, r, -r
    return GaussianMixture(jnp.full((4,), 0.25), jnp.asarray(mu), sigma)
