"""Softmaxes that stay finite, and exact, when their logits are huge (lam = 1e4, large theta).

``jax.nn.softmax`` subtracts the row maximum, but under ``jit`` XLA fuses the logits'
products into both the maximum and the subtraction, where the CPU contracts them into
fused multiply-adds: s - max(s) is then off by up to half an ulp of s, and with s near 1e10
that is +500 or -500, so exp overflows or every term underflows and the softmax is NaN.
The two softmaxes here never subtract a separately computed maximum.
"""

import jax
import jax.numpy as jnp


def _shifted_weights(lam, Pq, Pk):
    """(ext, D, e): the shift ext_q, the largest key when Pq_q >= 0 and the smallest
    otherwise, the shifted keys D_qk = Pk_k - ext_q and the unnormalised weights
    e_qk = exp(lam Pq_q D_qk) in [0, 1]. Every logit lam Pq_q D_qk is <= 0 whatever the
    rounding (its two factors have opposite signs exactly) and the extremal key's is
    exactly 0, so the weights cannot overflow and their sum is >= 1. The slope lam Pq_q is
    clamped to float32's range, so that at a huge lam it is finite and slope * 0 stays 0."""
    ext = jnp.where(Pq >= 0, jnp.max(Pk, axis=-1, keepdims=True), jnp.min(Pk, axis=-1, keepdims=True))
    D = Pk[..., None, :] - ext[..., :, None]  # (..., Q, K)
    big = jnp.finfo(D.dtype).max
    return ext, D, jnp.exp(jnp.clip(lam * Pq, -big, big)[..., :, None] * D)


def _pool_moments(lam, Pq, Pk):
    """(output, Z, mean and variance of the keys under the weights), per query."""
    ext, D, e = _shifted_weights(lam, Pq, Pk)
    Z = jnp.sum(e, axis=-1)
    m1 = jnp.sum(e * D, axis=-1) / Z  # mean of Pk - ext: small where the weights concentrate
    m2 = jnp.sum(e * D * D, axis=-1) / Z
    return ext + m1, Z, m1, jnp.maximum(m2 - m1 * m1, 0.0)


@jax.custom_vjp
def rank_one_softmax_pool(lam, Pq, Pk):
    """sum_k softmax_k(lam Pq_q Pk_k) Pk_k for every query q: the pooling of one rank-one
    head (chapter "Attention as soft pooling", chapters/attention.md, def-two-head-layer). Shapes: lam scalar, Pq (..., Q), Pk (..., K) -> (..., Q).

    The output is ext_q + E_q[Pk - ext_q] with the exact shift of ``_shifted_weights``.
    The gradient is written by hand (``jax.custom_vjp``) from the derivatives of a softmax
    mean, with p_qk the weights and out_q the output:

        d out_q / d Pq_q = lam Var_q[Pk],   d out_q / d lam = Pq_q Var_q[Pk],
        d out_q / d Pk_k = p_qk (1 + lam Pq_q (Pk_k - out_q)),

    and lam Pq_q (Pk_k - out_q) is evaluated as logit_qk - E_q[logit], so nothing large
    cancels even at lam = 1e4. The backward pass recomputes the L x L weights instead of
    storing them: a step keeps no L x L array alive between its passes, and a training
    step took 1.5-1.75x less CPU time than with the forward formula differentiated by JAX
    at L = 50, 256 and 1024 (``benchmarks/alternatives.py``, alternatives.json).
    ``jax.grad``, ``jax.jacrev`` and ``jax.hessian`` (forward over reverse) work through
    it; a plain ``jax.jvp`` or ``jax.jacfwd`` raises.
    """
    return _pool_moments(lam, Pq, Pk)[0]


def _pool_fwd(lam, Pq, Pk):
    out, Z, m1, var = _pool_moments(lam, Pq, Pk)
    return out, (lam, Pq, Pk, Z, m1, var)


def _pool_bwd(res, g):
    lam, Pq, Pk, Z, m1, var = res
    _, D, e = _shifted_weights(lam, Pq, Pk)
    c = g / Z
    a = c * (1.0 - lam * Pq * m1)  # lam Pq m1 is the mean logit under the weights
    b = c * lam * Pq  # b_q D_qk = c_q logit_qk
    d_keys = jnp.sum(e * (a[..., :, None] + b[..., :, None] * D), axis=-2)
    d_queries = g * lam * var
    lam = jnp.asarray(lam)
    d_lam = jnp.sum(g * Pq * var).reshape(lam.shape).astype(lam.dtype)
    return d_lam, d_queries, d_keys


rank_one_softmax_pool.defvjp(_pool_fwd, _pool_bwd)


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
