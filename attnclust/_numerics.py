"""Softmaxes that stay finite, and exact, when their logits are huge (lam = 1e4, large theta).

``jax.nn.softmax`` subtracts the row maximum, but under ``jit`` XLA fuses the logits'
products into both the maximum and the subtraction, where the CPU contracts them into
fused multiply-adds: s - max(s) is then off by up to half an ulp of s, and with s near 1e10
that is +500 or -500, so exp overflows or every term underflows and the softmax is NaN.
The two softmaxes here never subtract a separately computed maximum.
"""

import jax.numpy as jnp


def rank_one_softmax_pool(lam, Pq, Pk):
    """sum_k softmax_k(lam Pq_q Pk_k) Pk_k for every query q: the pooling of one rank-one
    head (THEORY.md section 2).

    The logits are shifted exactly: lam Pq (Pk_k - Pk_ext), with Pk_ext the largest key when
    Pq >= 0 and the smallest otherwise, so every shifted logit is <= 0 and the extremal
    key's is exactly 0. Shapes: Pq (..., Q), Pk (..., K) -> (..., Q).
    """
    ext = jnp.where(
        Pq[..., :, None] >= 0, jnp.max(Pk, axis=-1)[..., None, None], jnp.min(Pk, axis=-1)[..., None, None]
    )  # (..., Q, 1)
    e = jnp.exp(lam * Pq[..., :, None] * (Pk[..., None, :] - ext))  # (..., Q, K), in [0, 1]
    return jnp.sum(e * Pk[..., None, :], axis=-1) / jnp.sum(e, axis=-1)


def softmax_small(base, slope, s):
    """softmax_c(base_c + s slope_c) over a short last axis (the K mixture components).

    Written as 1 / sum_c' exp(base_c' - base_c + s (slope_c' - slope_c)): the c' = c term is
    exactly 1, so the denominator is >= 1 and overflowing terms only drive a weight to 0.
    Shapes: base, slope (..., K), s (...,) broadcastable -> (..., K). Costs O(K^2).
    """
    d_base = base[..., None, :] - base[..., :, None]  # (..., K, K'): base_c' - base_c
    d_slope = slope[..., None, :] - slope[..., :, None]
    s = jnp.asarray(s)[..., None, None]
    return 1.0 / jnp.sum(jnp.exp(d_base + s * d_slope), axis=-1)
