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
from .mixture import GaussianMixture


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
    logits = jnp.log(mixture.weights) + s[..., None] * m  # (..., H, K)
    alpha = jax.nn.softmax(logits, axis=-1)
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
    alpha = jax.nn.softmax(jnp.log(mixture.weights) + lam * z @ mixture.centroids.T, axis=-1)
    return lam * mixture.sigma**2 * z + alpha @ mixture.centroids
