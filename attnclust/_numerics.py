"""Softmaxes that stay finite, and exact, when their logits are huge (lam = 1e4, large theta).

``jax.nn.softmax`` subtracts the row maximum, but under ``jit`` XLA fuses the logits'
products into both the maximum and the subtraction, where the CPU contracts them into
fused multiply-adds: s - max(s) is then off by up to half an ulp of s, and with s near 1e10
that is +500 or -500, so exp overflows or every term underflows and the softmax is NaN.
The two softmaxes here never subtract a separately computed maximum.
"""

from functools import partial

import jax
import jax.numpy as jnp


TILE_BYTES = 4 * 2**20
"""Largest tile of weights the pooling's forward pass holds at once (bytes): 4 MB, the size
that ran fastest at L = 1024 on a 2-core CPU with 2 MB of L2 cache per core (tiles of 1, 2
and 4 MB measured: 41, 29 and 27 ms for the forward pass of 32 prompts x 2 heads;
``benchmarks/run.py`` reports the step against the exp roofline)."""


def _shift(lam, Pq, Pk):
    """(ext, s): the shift ext_q, the largest key when Pq_q >= 0 and the smallest otherwise,
    and the slope s_q = lam Pq_q clamped to the float range (finite at a huge lam, so that
    s * 0 stays 0). Every logit s_q (Pk_k - ext_q) is then <= 0 whatever the rounding (its
    two factors have opposite signs exactly) and the extremal key's is exactly 0, so the
    weights exp(logit) lie in [0, 1] and their sum is >= 1."""
    big = jnp.finfo(Pk.dtype).max
    ext = jnp.where(Pq >= 0, jnp.max(Pk, axis=-1, keepdims=True), jnp.min(Pk, axis=-1, keepdims=True))
    return ext, jnp.clip(lam * Pq, -big, big)


def _tile_moments(s, ext, pos, Pk, V):
    """(Z, sum_k e D, sum_k e D^2) for a tile of queries (..., T) against its keys (..., K):
    the weights e_qk = exp(s_q D_qk), D_qk = Pk_k - ext_q, are computed once (one exp per
    score) and reduced by one matrix product with V = [1, D+, D-, D+^2, D-^2] (..., K, 5),
    the keys shifted by their maximum (D+) and minimum (D-): D_qk is D+_k or D-_k exactly,
    as Pq_q >= 0 or not, so each query keeps the column of its own shift."""
    e = jnp.exp(s[..., :, None] * (Pk[..., None, :] - ext[..., :, None]))
    # full float32 products: an accelerator's default (TF32, bf16 passes) would round the
    # sums to about 1e-3
    M = jnp.einsum("...qk,...kj->...qj", e, V, precision=jax.lax.Precision.HIGHEST)
    return M[..., 0], jnp.where(pos, M[..., 1], M[..., 2]), jnp.where(pos, M[..., 3], M[..., 4])


def _one_tile(tile_bytes, Pq, Pk) -> bool:
    """Whether all the weights of ``Pq`` (n, Q) against ``Pk`` (n, K) fit in one tile."""
    n, Q = Pq.shape
    return n * Q * Pk.shape[-1] * Pk.dtype.itemsize <= tile_bytes


def _row_moments(tile_bytes, lam, Pq, Pk):
    """(ext, Z, m1, var) per query: the shift, the normaliser, and the mean and variance of
    the shifted keys Pk - ext under the weights. Pq (n, Q) and Pk (n, K): n (prompt, head)
    pairs.

    When all the weights fit in one tile (``_one_tile``) they are computed at once and
    reduced by three sums over the keys, which XLA fuses with the exps: at these sizes a
    step is bound by per-operation overheads, and this is the program with the fewest.
    Otherwise they are computed tile by tile, no tile over ``tile_bytes``
    (``_tile_moments``): ``lax.map`` over groups of as many whole pairs as fit in a tile
    (the last group padded with zero pairs, dropped after) or, when one pair's Q x K weights
    do not fit, over the pairs and over blocks of queries (the last padded, its rows
    dropped). At L = 256 (32 prompts, two heads) a tile holds 16 pairs: the step took 3.66 ms
    (median of 7 interleaved repeats, 2026-12-02) against 3.85 ms with one pair a tile."""
    ext, s = _shift(lam, Pq, Pk)
    if _one_tile(tile_bytes, Pq, Pk):
        D = Pk[:, None, :] - ext[:, :, None]
        e = jnp.exp(s[:, :, None] * D)
        Z, S1, S2 = jnp.sum(e, axis=-1), jnp.sum(e * D, axis=-1), jnp.sum(e * D * D, axis=-1)
    else:
        pos = Pq >= 0
        mx, mn = jnp.max(Pk, axis=-1, keepdims=True), jnp.min(Pk, axis=-1, keepdims=True)
        Dp, Dm = Pk - mx, Pk - mn
        V = jnp.stack([jnp.ones_like(Pk), Dp, Dm, Dp * Dp, Dm * Dm], axis=-1)  # (n, K, 5)
        (n, Q), row = Pq.shape, Pk.shape[-1] * Pk.dtype.itemsize
        if Q * row <= tile_bytes:  # G whole pairs a tile (the last tile padded with zeros)
            G = min(n, tile_bytes // (Q * row))
            ng = -(-n // G)
            group = lambda x: jnp.pad(x, [(0, ng * G - n)] + [(0, 0)] * (x.ndim - 1)).reshape(ng, G, *x.shape[1:])
            out = jax.lax.map(lambda t: _tile_moments(*t), tuple(group(x) for x in (s, ext, pos, Pk, V)))
            Z, S1, S2 = (o.reshape(ng * G, Q)[:n] for o in out)
        else:  # one pair at a time, in blocks of T queries (the last padded)
            T = max(1, tile_bytes // row)
            nt = -(-Q // T)

            def pair(args):
                s, ext, pos, Pk, V = args
                pad = lambda x: jnp.pad(x, (0, nt * T - Q)).reshape(nt, T)
                out = jax.lax.map(lambda q: _tile_moments(*q, Pk, V), (pad(s), pad(ext), pad(pos)))
                return tuple(o.reshape(-1)[:Q] for o in out)

            Z, S1, S2 = jax.lax.map(pair, (s, ext, pos, Pk, V))
    m1 = S1 / Z  # mean of Pk - ext: small where the weights concentrate
    return ext, Z, m1, jnp.maximum(S2 / Z - m1 * m1, 0.0)


def _key_grads(lam, Pq, Pk, a, b, one_tile: bool):
    """sum_q e_qk (a_q + b_q D_qk) for every key k (n, K): one reduction over the queries
    with the weights recomputed inside it (one exp per score), which XLA fuses, so no
    Q x K array is stored. Laid out queries x keys (a reduction over the rows) when all the
    weights fit in one tile, where that compiles to the shorter program; keys x queries
    otherwise, so that the reduction runs along the last axis, which XLA compiles into a
    kernel that sums the exps as it computes them."""
    ext, s = _shift(lam, Pq, Pk)
    if one_tile:
        D = Pk[:, None, :] - ext[:, :, None]  # (n, Q, K)
        return jnp.sum(jnp.exp(s[:, :, None] * D) * (a[:, :, None] + b[:, :, None] * D), axis=-2)
    D = Pk[:, :, None] - ext[:, None, :]  # (n, K, Q)
    return jnp.sum(jnp.exp(s[:, None, :] * D) * (a[:, None, :] + b[:, None, :] * D), axis=-1)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _pool(tile_bytes, lam, Pq, Pk):
    """``rank_one_softmax_pool`` on (n, Q) and (n, K), with tiles of at most ``tile_bytes``."""
    ext, _, m1, _ = _row_moments(tile_bytes, lam, Pq, Pk)
    return ext + m1


def _pool_fwd(tile_bytes, lam, Pq, Pk):
    ext, Z, m1, var = _row_moments(tile_bytes, lam, Pq, Pk)
    return ext + m1, (lam, Pq, Pk, Z, m1, var)


def _pool_bwd(tile_bytes, res, g):
    lam, Pq, Pk, Z, m1, var = res
    c = g / Z
    a = c * (1.0 - lam * Pq * m1)  # lam Pq m1 is the mean logit under the weights
    b = c * lam * Pq  # b_q D_qk = c_q logit_qk
    d_keys = _key_grads(lam, Pq, Pk, a, b, _one_tile(tile_bytes, Pq, Pk))
    d_queries = g * lam * var
    lam = jnp.asarray(lam)
    d_lam = jnp.sum(g * Pq * var).reshape(lam.shape).astype(lam.dtype)
    return d_lam, d_queries, d_keys


_pool.defvjp(_pool_fwd, _pool_bwd)


def rank_one_softmax_pool(lam, Pq, Pk, tile_bytes: int = TILE_BYTES):
    """sum_k softmax_k(lam Pq_q Pk_k) Pk_k for every query q: the pooling of one rank-one
    head (chapter "Attention as soft pooling", chapters/attention.md, def-two-head-layer).
    Shapes: lam scalar, Pq (..., Q), Pk (..., K) with broadcastable batch shapes -> (..., Q).

    The output is ext_q + E_q[Pk - ext_q] with the exact shift of ``_shift``. The gradient
    is written by hand (``jax.custom_vjp``) from the derivatives of a softmax mean, with
    p_qk the weights and out_q the output:

        d out_q / d Pq_q = lam Var_q[Pk],   d out_q / d lam = Pq_q Var_q[Pk],
        d out_q / d Pk_k = p_qk (1 + lam Pq_q (Pk_k - out_q)),

    and lam Pq_q (Pk_k - out_q) is evaluated as logit_qk - E_q[logit], so nothing large
    cancels even at lam = 1e4.

    Cost and memory: the scores have rank one, so there is no matrix product to speed them
    up: each costs an exp, and the two passes of a training step take one exp per score
    each. The forward pass computes the weights tile by tile (``_row_moments``; no tile over
    ``tile_bytes``) and reduces each tile with one small matrix product; the backward pass
    recomputes them inside one fused reduction over the queries (``_key_grads``), so a step
    stores O(L) numbers per head between its passes and no Q x K array larger than one tile
    (``tests/test_numerics.py`` checks the compiled step's temporary memory). When all the
    weights fit in one tile (the book's training runs: 32 prompts of 50 tokens, two heads,
    are 640 kB), both passes are plain fused reductions instead, the shortest program, as
    a step of that size costs more in per-operation overheads than in exps.
    ``jax.grad``, ``jax.jacrev`` and ``jax.hessian`` (forward over reverse) work through it;
    a plain ``jax.jvp`` or ``jax.jacfwd`` raises.
    """
    batch = jnp.broadcast_shapes(jnp.shape(Pq)[:-1], jnp.shape(Pk)[:-1])
    Q, K = jnp.shape(Pq)[-1], jnp.shape(Pk)[-1]
    Pq = jnp.broadcast_to(Pq, batch + (Q,)).reshape(-1, Q)
    Pk = jnp.broadcast_to(Pk, batch + (K,)).reshape(-1, K)
    return _pool(int(tile_bytes), lam, Pq, Pk).reshape(batch + (Q,))


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
