"""Large-L limits of the two layers (chapter "Attention as soft pooling", chapters/attention.md,
{prf:ref} labels lem-tilting and prop-head-limit; chapter "In-context quantization with
identity attention", chapters/quantization.md, prop-identity-limit).

By the exponential-tilting lemma, for a query z and keys drawn from the mixture, the
two-head layer tends to T_inf(z) = sum_h phi_h(z) theta_h with

    phi_h(z) = t_h v_h + sum_c alpha_hc(z) m_hc,   alpha_h = softmax_c(log pi_c + t_h m_hc),

the tilt t_h = lam <theta_h, z>, m_hc = <theta_h, mu_c> and v_h = sigma^2 ||theta_h||^2 (the
notation of the preface), and identity attention tends to

    Q_inf(z) = lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c.

Checks under a user's own ``jit``: shapes and dtypes are still checked; values (NaN or inf,
the range of ``lam``, an output that overflows float32) are not.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from . import _kernels as k
from . import _validate as v
from .general_mixture import GeneralMixture
from .mixture import GaussianMixture


def _queries(name, z, mixture):
    z = v.real_array(name, z)
    v.shape(name, z.shape, f"(..., d) with d={mixture.d}", z.ndim >= 1)
    v.same_dim(name, z.shape[-1], "mixture", mixture.d)
    return z


def head_coefficients(
    P: Float[ArrayLike, "*batch H"],
    theta: Float[ArrayLike, "H d"],
    mixture: GaussianMixture,
    lam: float | Float[ArrayLike, ""],
) -> Float[Array, "*batch H"]:
    """The coefficients phi_h(z) of theta_h in T_inf(z), given the projections
    P_h = <theta_h, z> (chapters/attention.md, prop-head-limit); the population risk
    integrates them over P.

    Args:
        P: (``*batch``, H) projections, finite.
        theta: (H, d) heads, finite.
        mixture: the ``GaussianMixture`` of the keys, of dimension d.
        lam: temperature, > 0 and finite in float32.

    Returns:
        (``*batch``, H) coefficients.

    Raises:
        TypeError: mixture not a GaussianMixture, or an argument not real numbers.
        ValueError: wrong shapes (naming P, theta or mixture), NaN or inf, a bad lam, or an
            output that overflows float32. Under ``jit`` only the shape checks run.
    """
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    P = v.real_array("P", P)
    v.shape("P", P.shape, f"(..., H) with H={theta.shape[0]} heads (theta's rows)", P.ndim >= 1 and P.shape[-1] == theta.shape[0])
    lam = v.positive_finite("lam", lam)
    return v.finite_result(k.head_coefficients(P, theta, mixture, lam), "P, theta or lam is")


def head_output_limit(
    theta: Float[ArrayLike, "H d"], z: Float[ArrayLike, "*batch d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""]
) -> Float[Array, "*batch d"]:
    """T_inf(z) = sum_h phi_h(z) theta_h: the large-L output of the two-head layer at
    query z (chapters/attention.md, prop-head-limit).

    Args:
        theta: (H, d) heads, finite.
        z: (``*batch``, d) queries, finite.
        mixture: the ``GaussianMixture`` of the keys, of dimension d.
        lam: temperature, > 0 and finite in float32.

    Returns:
        (``*batch``, d) outputs.

    Raises:
        TypeError: mixture not a GaussianMixture, or an argument not real numbers.
        ValueError: wrong shapes (naming theta, z or mixture), NaN or inf in theta or z, a
            bad lam, or an output that overflows float32 (theta, z or lam too large).
            Under ``jit`` only the shape checks run.
    """
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    z = _queries("z", z, mixture)
    lam = v.positive_finite("lam", lam)
    return v.finite_result(k.head_output_limit(theta, z, mixture, lam), "theta, z or lam is")


def identity_limit(
    z: Float[ArrayLike, "*batch d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""]
) -> Float[Array, "*batch d"]:
    """Q_inf(z): the large-L output of identity attention at query z (chapters/quantization.md,
    prop-identity-limit).

    Args:
        z: (``*batch``, d) queries, finite.
        mixture: the ``GaussianMixture`` of the keys, of dimension d.
        lam: temperature, > 0 and finite in float32.

    Returns:
        (``*batch``, d) outputs.

    Raises:
        TypeError: mixture not a GaussianMixture, or z or lam not real numbers.
        ValueError: z not (..., d) with the mixture's d, NaN or inf in z, a bad lam, or an
            output that overflows float32. Under ``jit`` only the shape checks run.
    """
    v.instance("mixture", mixture, GaussianMixture)
    z = _queries("z", z, mixture)
    lam = v.positive_finite("lam", lam)
    return v.finite_result(k.identity_limit(z, mixture, lam), "z or lam is")


def general_identity_limit(z: Float[ArrayLike, "*b d"], mixture: GeneralMixture, lam: float | Float[ArrayLike, ""]) -> Float[Array, "*b d"]:
    """Large-L identity attention for a mixture with per-component covariances Sigma_c:

        Q(z) = sum_c alpha_c(z) (mu_c + lam Sigma_c z),
        alpha(z) = softmax_c(log pi_c + lam <z, mu_c> + lam^2 z^T Sigma_c z / 2)

    (the tilting lemma with each component's own covariance; chapter "Beyond the paper").
    With Sigma_c = sigma^2 I it is ``ac.identity_limit``: the z^T Sigma z term is then the
    same for every c and cancels in the softmax."""
    v.instance("mixture", mixture, GeneralMixture)
    z = _queries("z", z, mixture)
    lam = v.positive_finite("lam", lam)
    mu = jnp.asarray(mixture.centroids, jnp.float32)
    S = jnp.asarray(mixture.covariances, jnp.float32)
    logw = jnp.log(jnp.maximum(jnp.asarray(mixture.weights, jnp.float32), 1e-30))
    return k.general_identity_limit(z, logw, mu, S, lam)
