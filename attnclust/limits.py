"""Large-L limits of the two layers (THEORY.md sections 4 and 6).

By the exponential-tilting lemma (chapter "Attention as soft pooling"), for a query z and
keys drawn from the mixture, head h tends to

    T_h(z) = theta_h [ s sigma^2 ||theta_h||^2 + sum_c alpha_c(s) <theta_h, mu_c> ],
    alpha(s) = softmax_c(log pi_c + s <theta_h, mu_c>),   s = lam <theta_h, z>,

and identity attention tends to
    Q(z) = lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from . import _validate as v
from ._numerics import softmax_small
from .mixture import GaussianMixture


def _log_weights(mixture: GaussianMixture):
    """log pi_c, with a zero weight read as the smallest normal float (log about -87) so
    that differences of log-weights stay finite."""
    return jnp.log(jnp.maximum(mixture.weights, jnp.finfo(jnp.float32).tiny))


def head_coefficients(
    P: Float[Array, "*batch H"],
    theta: Float[Array, "H d"],
    mixture: GaussianMixture,
    lam: float,
) -> Float[Array, "*batch H"]:
    """The scalar coefficient of theta_h in T_h(z), given the projections P_h = <theta_h, z>.

    THEORY.md section 4; the population risk integrates this over P.
    """
    m = theta @ mixture.centroids.T  # (H, K): <theta_h, mu_c>
    s = lam * P  # (..., H)
    alpha = softmax_small(_log_weights(mixture), m, s)  # (..., H, K)
    sq_norm = jnp.sum(theta**2, axis=-1)  # (H,)
    return s * mixture.sigma**2 * sq_norm + jnp.sum(alpha * m, axis=-1)


def head_output_limit(
    theta: Float[Array, "H d"], z: Float[Array, "*batch d"], mixture: GaussianMixture, lam: float
) -> Float[Array, "*batch d"]:
    """sum_h T_h(z): the large-L output of the two-head layer at query z (THEORY.md §4)."""
    v.same_dim("theta", jnp.shape(theta)[-1], "mixture", mixture.d)
    v.same_dim("z", jnp.shape(z)[-1], "mixture", mixture.d)
    v.positive_finite("lam", lam)
    coef = head_coefficients(z @ theta.T, theta, mixture, lam)
    return coef @ theta


def identity_limit(
    z: Float[Array, "*batch d"], mixture: GaussianMixture, lam: float
) -> Float[Array, "*batch d"]:
    """Q(z): the large-L output of identity attention at query z (THEORY.md section 6)."""
    v.same_dim("z", jnp.shape(z)[-1], "mixture", mixture.d)
    v.positive_finite("lam", lam)
    alpha = softmax_small(_log_weights(mixture), z @ mixture.centroids.T, lam)
    return lam * mixture.sigma**2 * z + alpha @ mixture.centroids
