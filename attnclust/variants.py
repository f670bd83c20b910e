"""Settings beyond the paper's assumptions, and the in-context experiments' helpers
(chapters "In-context quantization experiments" and "Beyond the paper").

The paper's analysis (and ``GaussianMixture``) assumes one isotropic noise level sigma
shared by every component. This module adds:

- ``GeneralMixture``: components with their own covariance, x = mu_c + A_c g with
  g ~ N(0, I_d); ``per_component_sigma_mixture`` (unequal isotropic variances) and
  ``anisotropic_mixture`` (elongated clouds); ``sample_general`` draws prompts from it.
- ``angled_mixture`` (two centroids at a given angle) and ``plusminus_mixture``
  (K = 4 centroids +-r e_1, +-r e_2, mean zero): plain ``GaussianMixture`` objects.
- ``fit_sampler``: the two-head layer trained on prompts from any sampler (``ac.fit`` only
  takes a ``GaussianMixture``); same loss and optimiser as ``ac.fit``.
- ``load_digits_pca`` and ``sample_rows``: scikit-learn's bundled digits (no download),
  projected on a few principal directions, and prompts drawn from its rows.
- ``identity_stack``, ``nearest_centroid``, ``own_centroids``, ``within_spread``,
  ``output_clusters``, and ``kmeans_per_prompt_jax`` / ``em_per_prompt_jax``: vmapped JAX
  twins of ``attnclust.baselines`` (scikit-learn, prompt by prompt) for speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from . import _validate as v
from .attention import identity_attention
from .mixture import GaussianMixture
from .train import fit_sampler as fit_sampler_many

# ---------------------------------------------------------------------------------------
# Mixtures the paper does not cover
# ---------------------------------------------------------------------------------------


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
        mu = np.asarray(self.centroids, dtype=np.float64)
        w = np.asarray(self.weights, dtype=np.float64)
        A = np.asarray(self.scales, dtype=np.float64)
        GaussianMixture(w, mu, 1.0)  # the same checks of weights and centroids
        K, d = mu.shape
        if A.shape != (K, d, d):
            raise ValueError(f"scales must have shape (K, d, d)=({K}, {d}, {d}), got {A.shape}")
        v.finite_array("scales", A)
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
    sigmas, r: float = 2.0, d: int = 5, weights=None
) -> GeneralMixture:
    """Orthogonal centroids r e_c with one isotropic noise level per component:
    component c is N(r e_c, sigmas[c]^2 I_d) (unequal variances)."""
    s = np.asarray(sigmas, dtype=np.float64)
    if s.ndim != 1 or s.size < 1:
        raise ValueError(f"sigmas must have shape (K,), got shape {s.shape}")
    for i, value in enumerate(s):
        v.positive_finite(f"sigmas[{i}]", value)
    K = s.size
    d = v.positive_int("d", d)
    if K > d:
        raise ValueError(f"K must be <= d for orthogonal centroids, got K={K}, d={d}")
    v.positive_finite("r", r)
    w = np.full(K, 1.0 / K) if weights is None else np.asarray(weights, float)
    return GeneralMixture(w, r * np.eye(K, d), s[:, None, None] * np.eye(d)[None])


def anisotropic_mixture(
    r: float = 2.0,
    d: int = 5,
    K: int = 2,
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
    K = v.positive_int("K", K)
    d = v.positive_int("d", d)
    if K > d:
        raise ValueError(f"K must be <= d for orthogonal centroids, got K={K}, d={d}")
    v.positive_finite("r", r)
    v.positive_finite("along", along)
    v.positive_finite("across", across)
    if direction == "radial":
        U = np.eye(K, d)
    elif direction == "shared":
        u = np.zeros(d)
        u[:K] = 1 / math.sqrt(K)
        U = np.broadcast_to(u, (K, d))
    else:
        raise ValueError(f"direction must be 'radial' or 'shared', got direction={direction!r}")
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
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    return _sample_general(key, mixture, n_prompts, L)


def _sample_general(key, mixture, n_prompts, L):
    k1, k2 = jax.random.split(key)
    w = jnp.asarray(mixture.weights, jnp.float32)
    labels = jax.random.categorical(k1, jnp.log(jnp.maximum(w, 1e-30)), shape=(n_prompts, L))
    g = jax.random.normal(k2, (n_prompts, L, mixture.d))
    A = jnp.asarray(mixture.scales, jnp.float32)[labels]  # (n, L, d, d)
    mu = jnp.asarray(mixture.centroids, jnp.float32)[labels]
    return mu + jnp.einsum("nlij,nlj->nli", A, g), labels.astype(jnp.int32)


def angled_mixture(
    angle: float, r: float = 2.0, sigma: float = 0.5, d: int = 5, weights=None
) -> GaussianMixture:
    """Two centroids of norm r at angle ``angle`` (radians, in (0, pi]):
    mu_1 = r e_1, mu_2 = r (cos(angle) e_1 + sin(angle) e_2). angle = pi/2 is the book's
    default mixture, angle = pi the antipodal (centred) one."""
    v.positive_finite("angle", angle)
    if angle > math.pi + 1e-12:
        raise ValueError(f"angle must be in (0, pi], got angle={angle!r}")
    d = v.positive_int("d", d, minimum=2)
    v.positive_finite("r", r)
    mu = np.zeros((2, d))
    mu[0, 0] = r
    mu[1, 0], mu[1, 1] = r * math.cos(angle), r * math.sin(angle)
    w = np.full(2, 0.5) if weights is None else np.asarray(weights, float)
    return GaussianMixture(jnp.asarray(w), jnp.asarray(mu), sigma)


def plusminus_mixture(r: float = 2.0, sigma: float = 0.5, d: int = 5) -> GaussianMixture:
    """K = 4 equal-weight centroids +-r e_1, +-r e_2: mean zero, and the two heads' targets
    (the lines e_1 and e_2) are orthogonal (``symbolic`` setting "plusminus")."""
    d = v.positive_int("d", d, minimum=2)
    v.positive_finite("r", r)
    mu = np.zeros((4, d))
    mu[0, 0], mu[1, 0], mu[2, 1], mu[3, 1] = r, -r, r, -r
    return GaussianMixture(jnp.full((4,), 0.25), jnp.asarray(mu), sigma)


# ---------------------------------------------------------------------------------------
# Training on any sampler
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplerFit:
    """Result of ``fit_sampler``: final heads (H, d), initial heads, and the minibatch risk
    averaged over each of ``n_records`` equal strides of the run."""

    theta: np.ndarray
    theta0: np.ndarray
    risk: np.ndarray


@lru_cache(maxsize=None)
def _ignoring_data(sampler):
    """``sampler(key, batch, L)`` as a ``draw(data, key, batch, L)`` for ``ac.fit_sampler``
    (cached, so that the same sampler reuses its compilation)."""

    def draw(data, key, batch, L):
        return sampler(key, batch, L)

    return draw


def fit_sampler(
    key: PRNGKeyArray,
    sampler: Callable[[PRNGKeyArray, int, int], Float[Array, "batch L d"]],
    theta0: Float[Array, "H d"],
    lam: float = 1.0,
    steps: int = 2000,
    batch: int = 32,
    L: int = 50,
    lr: float = 1e-2,
    n_records: int = 20,
) -> SamplerFit:
    """Train the two-head layer with Adam on prompts ``sampler(key, batch, L)`` (a JAX-
    traceable function returning (batch, L, d)), fresh at every step: ``ac.fit`` for data
    that are not a ``GaussianMixture``, through the same training loop
    (``ac.fit_sampler``); keep ``sampler`` the same object between calls to reuse the
    compilation."""
    theta0 = jnp.asarray(theta0, jnp.float32)
    if theta0.ndim != 2:
        raise ValueError(f"theta0 must have shape (H, d), got shape {theta0.shape}")
    n_records = v.positive_int("n_records", n_records)
    if not isinstance(steps, (int, np.integer)) or steps < 1 or steps % n_records:
        raise ValueError(f"steps must be a positive multiple of n_records, got {steps} and {n_records}")
    result = fit_sampler_many(
        jnp.asarray(key)[None], _ignoring_data(sampler), None, theta0, lam, steps, batch, L,
        lr=lr, record_every=steps // n_records, progress=False,
    )
    return SamplerFit(result.theta[0], np.asarray(theta0), result.risk[0])


# ---------------------------------------------------------------------------------------
# Real data: scikit-learn's digits
# ---------------------------------------------------------------------------------------


def load_digits_pca(
    classes: tuple[int, ...] = (0, 1), n_components: int = 5, centre: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits (1797 images, no download) of the given
    ``classes``, pixels scaled to [0, 1], projected on their top ``n_components``
    principal directions.

    Args:
        classes: which digits to keep (distinct, in 0..9); labels are renumbered 0..K-1 in
            this order.
        n_components: number of principal directions d.
        centre: subtract the mean before projecting (PCA's usual scores; the mixture is
            then centred). By default the images are projected without centring, so the
            class means stay away from the origin as in the book's mixtures.

    Returns:
        X (n, d) float32, labels (n,) int, class_means (K, d).
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    classes = tuple(int(c) for c in classes)
    if len(classes) < 1 or len(set(classes)) != len(classes) or not all(0 <= c <= 9 for c in classes):
        raise ValueError(f"classes must be distinct digits in 0..9, got classes={classes!r}")
    n_components = v.positive_int("n_components", n_components)
    if n_components > 64:
        raise ValueError(f"n_components must be <= 64, got {n_components}")
    images, y = load_digits(return_X_y=True)
    keep = np.isin(y, classes)
    Xs = images[keep] / 16.0
    labels = np.array([classes.index(int(c)) for c in y[keep]])
    pca = PCA(n_components=n_components, random_state=0).fit(Xs)
    Z = (Xs - (pca.mean_ if centre else 0.0)) @ pca.components_.T
    means = np.stack([Z[labels == c].mean(axis=0) for c in range(len(classes))])
    return Z.astype(np.float32), labels.astype(np.int64), means


def sample_rows(
    key: PRNGKeyArray, data: Float[Array, "n d"], n_prompts: int, L: int,
    labels: Int[Array, "n"] | None = None,
):
    """Prompts of L rows drawn uniformly with replacement from ``data``: (n_prompts, L, d),
    and their labels (n_prompts, L) when ``labels`` is given."""
    idx = jax.random.randint(key, (n_prompts, L), 0, jnp.shape(data)[0])
    X = jnp.asarray(data)[idx]
    return X if labels is None else (X, jnp.asarray(labels)[idx])


# ---------------------------------------------------------------------------------------
# In-context quantization helpers
# ---------------------------------------------------------------------------------------


def identity_stack(X: Float[Array, "*b L d"], lam: float, depth: int) -> Float[Array, "depth1 *b L d"]:
    """Stacked identity layers: X, Q(X), Q(Q(X)), ..., Q^depth(X), shape (depth+1, ..., L, d).

    Each layer is ``identity_attention`` applied to the previous layer's outputs (keys and
    queries move together), so tokens drift towards the fixed points of the iteration."""
    depth = v.positive_int("depth", depth, minimum=0)
    out = [jnp.asarray(X)]
    for _ in range(depth):
        out.append(identity_attention(out[-1], lam))
    return jnp.stack(out)


def own_centroids(centroids: Float[Array, "*b K d"], labels: Int[Array, "*b L"]) -> Float[Array, "*b L d"]:
    """The centroid of every token's own component: centroids (K, d) shared, or (n, K, d)
    one set per prompt, with labels (n, L)."""
    mu = jnp.asarray(centroids)
    lab = jnp.asarray(labels)
    if mu.ndim == 2:
        return mu[lab]
    return jnp.take_along_axis(mu, lab[..., None], axis=-2)


def nearest_centroid(Z: Float[Array, "*b L d"], centroids: Float[Array, "*b K d"]) -> Int[Array, "*b L"]:
    """argmin_c ||z_l - mu_c|| for every token: centroids (K, d) or (n, K, d) per prompt.
    Applied to Q(X) this is the "oracle" assignment of identity attention (it needs the true
    centroids; see the chapter)."""
    Z = jnp.asarray(Z)
    mu = jnp.asarray(centroids)
    if mu.ndim == 2:
        mu = jnp.broadcast_to(mu, Z.shape[:-2] + mu.shape)
    d2 = jnp.sum((Z[..., :, None, :] - mu[..., None, :, :]) ** 2, axis=-1)
    return jnp.argmin(d2, axis=-1)


def within_spread(Z: Float[Array, "*b L d"], labels: Int[Array, "*b L"], K: int) -> np.ndarray:
    """Mean squared distance of tokens to their own cluster's mean (over the true labels),
    averaged over clusters and prompts: how far a cloud is from collapsing to a point.
    Z may carry leading axes (depth, n, L, d); returns one number per leading index
    except the prompt axis, e.g. (depth,)."""
    K = v.positive_int("K", K)
    Z = np.asarray(Z, np.float64)
    lab = np.asarray(labels)
    one = (lab[..., None] == np.arange(K)).astype(np.float64)  # (n, L, K)
    count = one.sum(axis=-2)  # (n, K)
    means = np.einsum("nlk,...nld->...nkd", one, Z) / np.maximum(count, 1)[..., None]
    sq = np.sum((Z - np.einsum("nlk,...nkd->...nld", one, means)) ** 2, axis=-1)  # (..., n, L)
    per = np.einsum("nlk,...nl->...nk", one, sq) / np.maximum(count, 1)
    valid = count > 0
    return np.sum(per * valid, axis=(-2, -1)) / valid.sum()


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
    X = jnp.asarray(X, jnp.float32)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (n_prompts, L, d), got shape {X.shape}")
    K = v.positive_int("K", K)
    if K > X.shape[1]:
        raise ValueError(f"K must be <= L={X.shape[1]}, got K={K}")
    v.finite_array("X", X)
    return X, K


def kmeans_per_prompt_jax(
    X: Float[Array, "n L d"], K: int, seed: int = 0, restarts: int = 4, iters: int = 30
) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means run on each prompt alone (k-means++ seeding, ``restarts`` starts,
    best inertia kept, ``iters`` Lloyd steps), vmapped over prompts in JAX: labels (n, L) and
    centres (n, K, d). A vmapped JAX twin of ``attnclust.baselines.kmeans_per_prompt``
    (scikit-learn, prompt by prompt), hundreds of times faster on many short prompts: used
    where speed matters (the widget, the label-free read-out of identity attention); the
    chapters' reference numbers use ``attnclust.baselines``."""
    X, K = _check_prompts(X, K)
    keys = jax.random.split(jax.random.PRNGKey(seed), X.shape[0])
    lab, C = _kmeans_jax(keys, X, K, v.positive_int("restarts", restarts), v.positive_int("iters", iters))
    return np.asarray(lab), np.asarray(C)


def em_per_prompt_jax(
    X: Float[Array, "n L d"], K: int, seed: int = 0, iters: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """EM for a K-component Gaussian mixture with spherical covariances (one variance per
    component) on each prompt alone, started from ``kmeans_per_prompt``: MAP labels (n, L)
    and means (n, K, d). JAX twin of ``attnclust.baselines.em_per_prompt``."""
    X, K = _check_prompts(X, K)
    _, C0 = kmeans_per_prompt_jax(X, K, seed)
    lab, mu = _em_jax(X, jnp.asarray(C0), v.positive_int("iters", iters))
    return np.asarray(lab), np.asarray(mu)


def output_clusters(Z: Float[Array, "n L d"], K: int, seed: int = 0) -> np.ndarray:
    """Label-free assignment of identity attention: k-means with K clusters on the layer's
    outputs Z = Q^t(X) of each prompt (after quantization the outputs sit near K points, so
    this last step only reads off which point each token went to). Returns labels (n, L)."""
    return kmeans_per_prompt_jax(Z, K, seed)[0]


# ---------------------------------------------------------------------------------------
# Several mixtures trained in one call, and large-L limits for unequal covariances
# ---------------------------------------------------------------------------------------


def stack_mixtures(mixtures) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack ``GaussianMixture`` / ``GeneralMixture`` objects of one dimension d into
    arrays (S, Kmax), (S, Kmax, d), (S, Kmax, d, d), padding with zero-weight components
    (copies of the first centroid, never sampled)."""
    gms = [m if isinstance(m, GeneralMixture) else GeneralMixture.from_gaussian(m) for m in mixtures]
    if not gms:
        raise ValueError("mixtures must not be empty")
    d = gms[0].d
    if any(m.d != d for m in gms):
        raise ValueError(f"all mixtures must have the same d, got {[m.d for m in gms]}")
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


def _draw_general(data, key, batch, L):
    """``batch`` prompts from one stacked mixture ``data = (w (K,), mu (K, d), A (K, d, d))``
    (``stack_mixtures``), for ``ac.fit_sampler``."""
    w, mu, a = data
    k1, k2 = jax.random.split(key)
    lab = jax.random.categorical(k1, jnp.log(jnp.maximum(w, 1e-30)), shape=(batch, L))
    g = jax.random.normal(k2, (batch, L, mu.shape[-1]))
    return mu[lab] + jnp.einsum("nlij,nlj->nli", a[lab], g)


def fit_mixtures(
    key: PRNGKeyArray,
    mixtures,
    H: int = 2,
    lam: float = 1.0,
    steps: int = 2000,
    batch: int = 32,
    L: int = 50,
    lr: float = 1e-2,
    init_scale: float = 1e-2,
    n_records: int = 20,
    theta0: Float[Array, "S H d"] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Train the two-head layer (H heads, Adam, small random start N(0, init_scale^2)) on
    each of several mixtures (``GaussianMixture`` or ``GeneralMixture``, same d) in one
    vmapped, jit-compiled run: ``ac.fit`` for many different data distributions at once.

    ``theta0`` (S, H, d), when given, replaces the random start (e.g. a start near the
    aligned point). Returns thetas (S, H, d) and risks (S, n_records) (minibatch risk
    averaged per stride).
    """
    W, M, A = stack_mixtures(mixtures)
    H = v.positive_int("H", H)
    v.positive_finite("lam", lam)
    v.positive_finite("lr", lr)
    v.positive_finite("init_scale", init_scale)
    steps = v.positive_int("steps", steps)
    n_records = v.positive_int("n_records", n_records)
    if steps % n_records:
        raise ValueError(f"steps must be a multiple of n_records, got {steps} and {n_records}")
    S, d = W.shape[0], M.shape[-1]
    k_init, k_run = jax.random.split(key)
    if theta0 is None:
        theta0 = init_scale * jax.random.normal(k_init, (S, H, d))
    else:
        theta0 = jnp.asarray(theta0, jnp.float32)
        if theta0.shape != (S, H, d):
            raise ValueError(f"theta0 must have shape (S, H, d)=({S}, {H}, {d}), got {theta0.shape}")
    data = tuple(jnp.asarray(x, jnp.float32) for x in (W, M, A))
    result = fit_sampler_many(
        jax.random.split(k_run, S), _draw_general, data, theta0, lam, steps, batch, L, lr=lr,
        record_every=steps // n_records, progress=False, data_per_seed=True,
    )
    return result.theta, result.risk


def general_identity_limit(z: Float[Array, "*b d"], mixture: GeneralMixture, lam: float) -> Float[Array, "*b d"]:
    """Large-L identity attention for a mixture with per-component covariances Sigma_c:

        Q(z) = sum_c alpha_c(z) (mu_c + lam Sigma_c z),
        alpha(z) = softmax_c(log pi_c + lam <z, mu_c> + lam^2 z^T Sigma_c z / 2)

    (the tilting lemma with each component's own covariance; chapter "Beyond the paper").
    With Sigma_c = sigma^2 I it is ``ac.identity_limit``: the z^T Sigma z term is then the
    same for every c and cancels in the softmax."""
    v.positive_finite("lam", lam)
    z = jnp.asarray(z, jnp.float32)
    v.same_dim("z", z.shape[-1], "mixture", mixture.d)
    mu = jnp.asarray(mixture.centroids, jnp.float32)
    S = jnp.asarray(mixture.covariances, jnp.float32)
    logw = jnp.log(jnp.maximum(jnp.asarray(mixture.weights, jnp.float32), 1e-30))
    quad = jnp.einsum("...i,cij,...j->...c", z, S, z)
    alpha = jax.nn.softmax(logw + lam * z @ mu.T + 0.5 * lam**2 * quad, axis=-1)
    return alpha @ mu + lam * jnp.einsum("...c,cij,...j->...i", alpha, S, z)


@jax.jit
def _risk_and_grad(theta, mixture, lam):
    from .risk import population_risk

    return jax.value_and_grad(lambda t: population_risk(t, mixture, lam))(theta)


def large_L_minimiser(
    theta0: Float[Array, "H d"], mixture: GaussianMixture, lam: float = 1.0, tol: float = 1e-6
) -> tuple[np.ndarray, float]:
    """Local minimiser of the large-L risk ``ac.population_risk`` (quadrature, isotropic
    mixtures only) reached by BFGS from ``theta0`` (e.g. a trained theta): (theta, R_inf).
    Compares a finite-L training result with the large-L answer for the same mixture."""
    from scipy.optimize import minimize

    v.positive_finite("lam", lam)
    theta0 = np.asarray(theta0, np.float64)
    if theta0.ndim != 2 or theta0.shape[1] != mixture.d:
        raise ValueError(f"theta0 must have shape (H, d={mixture.d}), got {theta0.shape}")
    shape = theta0.shape

    def fun(x):
        val, grad = _risk_and_grad(jnp.asarray(x.reshape(shape), jnp.float32), mixture, float(lam))
        return float(val), np.asarray(grad, np.float64).reshape(-1)

    res = minimize(fun, theta0.reshape(-1), jac=True, method="BFGS", options={"gtol": tol, "maxiter": 500})
    return res.x.reshape(shape), float(res.fun)
