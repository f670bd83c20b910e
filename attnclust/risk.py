"""Risks of the two-head layer (chapter "The two-head layer and its population risk",
chapters/population_risk.md, {prf:ref} labels def-risks and prop-rinf).

- ``empirical_risk``: the finite-L risk R_L estimated on a batch of prompts.
- ``population_risk``: the large-L risk R_inf(Theta) = E_z ||z - T_inf(z)||^2 by
  Gauss-Hermite quadrature. Since T_inf(z) = sum_h phi_h(<theta_h, z>) theta_h,

      ||z - T_inf(z)||^2 = ||z||^2 - 2 sum_h phi_h P_h + sum_{h,h'} G_{hh'} phi_h phi_h',

  with P_h = <theta_h, z> and G = Theta Theta^T. So R_inf needs only E||z||^2 (closed form),
  one-dimensional Gaussian integrals (the h = h' terms) and two-dimensional ones (pairs),
  whatever H and d are; each is computed by a tensor Gauss-Hermite rule.
- ``population_risk_mc``: the same expectation by Monte Carlo, for checking.

Checks under a user's own ``jit``: shapes and dtypes are still checked; values (NaN or inf,
the range of ``lam``, a risk that overflows float32) are not.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from . import _kernels as k
from . import _validate as v
from .mixture import GaussianMixture, sample


def _risk_from_outputs(X, out):
    return jnp.mean(jnp.sum((X - out) ** 2, axis=-1))


def empirical_risk(
    theta: Float[ArrayLike, "H d"], X: Float[ArrayLike, "*batch L d"], lam: float | Float[ArrayLike, ""]
) -> Float[Array, ""]:
    """Mean over prompts and tokens of ||x_l - T(X)_l||^2: an unbiased estimate of R_L
    (chapters/population_risk.md, def-risks; tokens are exchangeable, so every position
    estimates E||x_1 - T(X)_1||^2).

    Args:
        theta: (H, d) heads, finite.
        X: (``*batch``, L, d) prompts, finite; lists are converted.
        lam: temperature, > 0 and finite in float32.

    Returns:
        A float32 scalar.

    Raises:
        TypeError: an argument that is not real numbers.
        ValueError: wrong shapes (naming theta or X), an empty batch (no prompt to average
            over), NaN or inf, a bad lam, or a risk that overflows float32 (theta or X too
            large). Under ``jit`` only the shape checks run.
    """
    theta = v.heads("theta", theta)
    X = v.tokens("X", X, d=theta.shape[1], nonempty=True)
    lam = v.positive_finite("lam", lam)
    return v.finite_result(_risk_from_outputs(X, k.two_head(theta, X, lam)), "theta and X are")


MAX_NODES = 256
"""Most quadrature nodes per dimension ``population_risk`` takes: NumPy's Gauss-Hermite rule
(``numpy.polynomial.hermite.hermgauss``) returns NaN beyond about 370 nodes and costs
O(n_nodes^3) (minutes at 20,000), while 40 nodes already agree with 80 to float32 precision."""


def _gauss_hermite(n: int):
    """Nodes and weights for E[f(g)], g ~ N(0, 1): sum_i w_i f(x_i)."""
    x, w = np.polynomial.hermite.hermgauss(n)
    return jnp.asarray(np.sqrt(2.0) * x), jnp.asarray(w / np.sqrt(np.pi))


def _safe_sqrt(x, floor):
    return jnp.sqrt(jnp.maximum(x, floor))


def _population_risk(theta, mixture, lam, n_nodes: int):
    g, w = _gauss_hermite(n_nodes)
    g1, g2 = (a.reshape(-1) for a in jnp.meshgrid(g, g, indexing="ij"))
    w2 = jnp.outer(w, w).reshape(-1)
    sigma = mixture.sigma
    G = theta @ theta.T  # (H, H)
    sq = jnp.diagonal(G)
    a = _safe_sqrt(sq, 1e-30)  # ||theta_h||
    b = G / a[:, None]  # <theta_h, theta_h'> / ||theta_h||
    e = _safe_sqrt(sq[None, :] - b**2, 1e-12 * sq[None, :] + 1e-30)
    off = 1.0 - jnp.eye(theta.shape[0])

    def per_component(mu):
        m = theta @ mu  # (H,) means of the projections P_h
        # one-dimensional integrals, P_h = m_h + sigma ||theta_h|| g
        P = m + sigma * a * g[:, None]  # (n, H)
        coef = k.head_coefficients(P, theta, mixture, lam)
        e_coef_p = w @ (coef * P)  # (H,)
        e_coef_sq = w @ coef**2  # (H,)
        # two-dimensional integrals over pairs (h, h'), Cholesky factor of their covariance
        P1 = m[:, None] + sigma * a[:, None] * g1[:, None, None]  # (N, H, H)
        P1 = jnp.broadcast_to(P1, (g1.shape[0],) + G.shape)
        P2 = m[None, :] + sigma * (b * g1[:, None, None] + e * g2[:, None, None])
        c1 = jnp.swapaxes(
            k.head_coefficients(jnp.swapaxes(P1, -1, -2), theta, mixture, lam), -1, -2
        )
        c2 = k.head_coefficients(P2, theta, mixture, lam)
        e_cross = jnp.einsum("n,nij->ij", w2, c1 * c2)  # (H, H)
        e_norm = mu @ mu + mixture.d * sigma**2
        return e_norm - 2 * e_coef_p.sum() + sq @ e_coef_sq + jnp.sum(off * G * e_cross)

    return mixture.weights @ jax.vmap(per_component)(mixture.centroids)


_population_risk_jit = jax.jit(_population_risk, static_argnums=3)


def population_risk(
    theta: Float[ArrayLike, "H d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""], n_nodes: int = 40
) -> Float[Array, ""]:
    """R_inf(Theta) = E_z ||z - T_inf(z)||^2, z from the mixture
    (chapters/population_risk.md, def-risks and prop-rinf).

    Computed by Gauss-Hermite quadrature with ``n_nodes`` per dimension over the 1-D and
    2-D Gaussian laws of the projections <theta_h, z>; differentiable in theta (jax.grad).
    The integrand is smooth, so the rule converges geometrically: 40 nodes agree with 80 to
    float32 precision for the book's settings (tested).

    Args:
        theta: (H, d) heads, finite.
        mixture: the ``GaussianMixture``, of dimension d.
        lam: temperature, > 0 and finite in float32.
        n_nodes: quadrature nodes per dimension, an integer in 2..``MAX_NODES`` (256).

    Returns:
        A float32 scalar.

    Raises:
        TypeError: mixture not a GaussianMixture, or theta or lam not real numbers.
        ValueError: theta not (H, d) with the mixture's d, NaN or inf in theta, a bad lam,
            n_nodes outside 2..256 or a rule too large for the device's memory, or a risk
            that overflows float32 (theta or lam too large). Under ``jit`` only the shape
            checks run.
    """
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    lam = v.positive_finite("lam", lam)
    n_nodes = v.positive_int("n_nodes", n_nodes, minimum=2, maximum=MAX_NODES)
    H, K = theta.shape[0], mixture.K
    v.allocation("the two-dimensional quadrature rule", 8 * K * n_nodes**2 * H * H, n_nodes=n_nodes, H=H, K=K)
    return v.finite_result(_population_risk_jit(theta, mixture, lam, n_nodes), "theta or lam is")


def population_risk_mc(
    key: PRNGKeyArray, theta: Float[ArrayLike, "H d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""], n_samples: int
) -> Float[Array, ""]:
    """Monte Carlo estimate of R_inf from ``n_samples`` draws of z; its standard error is about
    std(||z - T(z)||^2) / sqrt(n_samples).

    Args:
        key: a JAX PRNG key.
        theta: (H, d) heads, finite.
        mixture: the ``GaussianMixture``, of dimension d.
        lam: temperature, > 0 and finite in float32.
        n_samples: number of draws, an integer >= 1.

    Returns:
        A float32 scalar.

    Raises:
        TypeError: key not a PRNG key, mixture not a GaussianMixture, or theta or lam not
            real numbers.
        ValueError: as ``population_risk``, or n_samples not an integer >= 1.
    """
    key = v.prng_key("key", key)
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    lam = v.positive_finite("lam", lam)
    n_samples = v.positive_int("n_samples", n_samples)
    v.allocation("the draws and their outputs", 4 * n_samples * mixture.d, n_samples=n_samples)
    z = sample(key, mixture, n_samples, 1)[0][:, 0, :]
    risk = jnp.mean(jnp.sum((z - k.head_output_limit(theta, z, mixture, lam)) ** 2, axis=-1))
    return v.finite_result(risk, "theta or lam is")
