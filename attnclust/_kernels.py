"""The array kernels every public layer, limit and risk of the core is built on
(package-private: the public functions in ``attention``, ``limits``, ``risk``, ``stationary``
and ``temperature`` validate their arguments and call these; nothing here validates).

One implementation of each computation, each overflow-safe:

- the two-head layer: ``rank_one_softmax_pool`` (one rank-one head's softmax pooling, with
  its hand-written gradient), ``two_head_attend`` and ``two_head`` (the layer);
- identity attention: ``identity_weights``, ``identity_rows`` (queries against keys, with an
  optional mask of the keys each query sees), ``identity_full`` (a prompt against itself),
  ``identity_blocked`` (the same tile by tile, memory O(L d)), ``identity_layer`` and
  ``identity_stack`` (temperatures per prompt, the self-key mask), ``sure_terms``;
- the large-L limits: ``head_coefficients``, ``head_output_limit``, ``identity_limit``,
  ``general_identity_limit``;
- the softmaxes they share: ``shift`` (the two-head layer's exact shift), ``pow2_scale`` and
  ``slope`` (identity attention's exact scaling), ``softmax_small`` (over the K components).

Softmaxes that stay finite, and exact, when their logits are huge (lam = 1e4, large theta):
``jax.nn.softmax`` subtracts the row maximum, but under ``jit`` XLA fuses the logits'
products into both the maximum and the subtraction, where the CPU contracts them into
fused multiply-adds: s - max(s) is then off by up to half an ulp of s, and with s near 1e10
that is +500 or -500, so exp overflows or every term underflows and the softmax is NaN.
The softmaxes here never subtract a separately computed maximum of products: the two-head
layer shifts by an exact key (``shift``), identity attention scales each prompt by a power
of two to ``|x| <= 1`` and subtracts the largest score read from the same array
(``identity_weights``), and ``softmax_small`` takes differences of logits.
"""

from functools import partial

import jax
import jax.numpy as jnp


TILE_BYTES = 4 * 2**20
"""Largest tile of weights the pooling's forward pass holds at once (bytes): 4 MB, the size
that ran fastest at L = 1024 on a 2-core CPU with 2 MB of L2 cache per core (tiles of 1, 2
and 4 MB measured: 41, 29 and 27 ms for the forward pass of 32 prompts x 2 heads;
``benchmarks/run.py`` reports the step against the exp roofline)."""


def shift(lam, Pq, Pk):
    """(ext, s): the shift ext_q, the largest key when Pq_q >= 0 and the smallest otherwise,
    and the slope s_q = lam Pq_q clamped to the float range (finite at a huge lam, so that
    s * 0 stays 0). Every logit s_q (Pk_k - ext_q) is then <= 0 whatever the rounding (its
    two factors have opposite signs exactly) and the extremal key's is exactly 0, so the
    weights exp(logit) lie in [0, 1] and their sum is >= 1."""
    big = jnp.finfo(Pk.dtype).max
    ext = jnp.where(Pq >= 0, jnp.max(Pk, axis=-1, keepdims=True), jnp.min(Pk, axis=-1, keepdims=True))
    return ext, jnp.clip(lam * Pq, -big, big)


def tile_moments(s, ext, pos, Pk, V):
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


def one_tile(tile_bytes, Pq, Pk) -> bool:
    """Whether all the weights of ``Pq`` (n, Q) against ``Pk`` (n, K) fit in one tile."""
    n, Q = Pq.shape
    return n * Q * Pk.shape[-1] * Pk.dtype.itemsize <= tile_bytes


def row_moments(tile_bytes, lam, Pq, Pk):
    """(ext, Z, m1, var) per query: the shift, the normaliser, and the mean and variance of
    the shifted keys Pk - ext under the weights. Pq (n, Q) and Pk (n, K): n (prompt, head)
    pairs.

    When all the weights fit in one tile (``one_tile``) they are computed at once and
    reduced by three sums over the keys, which XLA fuses with the exps: at these sizes a
    step is bound by per-operation overheads, and this is the program with the fewest.
    Otherwise they are computed tile by tile, no tile over ``tile_bytes``
    (``tile_moments``): ``lax.map`` over groups of as many whole pairs as fit in a tile
    (the last group padded with zero pairs, dropped after) or, when one pair's Q x K weights
    do not fit, over the pairs and over blocks of queries (the last padded, its rows
    dropped). Several pairs a tile mean fewer, larger operations for XLA to schedule (at
    L = 256, 32 prompts and two heads a tile holds 16 pairs); ``make bench`` times the step."""
    ext, s = shift(lam, Pq, Pk)
    if one_tile(tile_bytes, Pq, Pk):
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
            out = jax.lax.map(lambda t: tile_moments(*t), tuple(group(x) for x in (s, ext, pos, Pk, V)))
            Z, S1, S2 = (o.reshape(ng * G, Q)[:n] for o in out)
        else:  # one pair at a time, in blocks of T queries (the last padded)
            T = max(1, tile_bytes // row)
            nt = -(-Q // T)

            def pair(args):
                s, ext, pos, Pk, V = args
                pad = lambda x: jnp.pad(x, (0, nt * T - Q)).reshape(nt, T)
                out = jax.lax.map(lambda q: tile_moments(*q, Pk, V), (pad(s), pad(ext), pad(pos)))
                return tuple(o.reshape(-1)[:Q] for o in out)

            Z, S1, S2 = jax.lax.map(pair, (s, ext, pos, Pk, V))
    m1 = S1 / Z  # mean of Pk - ext: small where the weights concentrate
    return ext, Z, m1, jnp.maximum(S2 / Z - m1 * m1, 0.0)


def key_grads(lam, Pq, Pk, a, b, single: bool):
    """sum_q e_qk (a_q + b_q D_qk) for every key k (n, K): one reduction over the queries
    with the weights recomputed inside it (one exp per score), which XLA fuses, so no
    Q x K array is stored. Laid out queries x keys (a reduction over the rows) when all the
    weights fit in one tile, where that compiles to the shorter program; keys x queries
    otherwise, so that the reduction runs along the last axis, which XLA compiles into a
    kernel that sums the exps as it computes them."""
    ext, s = shift(lam, Pq, Pk)
    if single:
        D = Pk[:, None, :] - ext[:, :, None]  # (n, Q, K)
        return jnp.sum(jnp.exp(s[:, :, None] * D) * (a[:, :, None] + b[:, :, None] * D), axis=-2)
    D = Pk[:, :, None] - ext[:, None, :]  # (n, K, Q)
    return jnp.sum(jnp.exp(s[:, None, :] * D) * (a[:, None, :] + b[:, None, :] * D), axis=-1)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def pool(tile_bytes, lam, Pq, Pk):
    """``rank_one_softmax_pool`` on (n, Q) and (n, K), with tiles of at most ``tile_bytes``."""
    ext, _, m1, _ = row_moments(tile_bytes, lam, Pq, Pk)
    return ext + m1


def pool_fwd(tile_bytes, lam, Pq, Pk):
    ext, Z, m1, var = row_moments(tile_bytes, lam, Pq, Pk)
    return ext + m1, (lam, Pq, Pk, Z, m1, var)


def pool_bwd(tile_bytes, res, g):
    lam, Pq, Pk, Z, m1, var = res
    c = g / Z
    a = c * (1.0 - lam * Pq * m1)  # lam Pq m1 is the mean logit under the weights
    b = c * lam * Pq  # b_q D_qk = c_q logit_qk
    d_keys = key_grads(lam, Pq, Pk, a, b, one_tile(tile_bytes, Pq, Pk))
    d_queries = g * lam * var
    lam = jnp.asarray(lam)
    d_lam = jnp.sum(g * Pq * var).reshape(lam.shape).astype(lam.dtype)
    return d_lam, d_queries, d_keys


pool.defvjp(pool_fwd, pool_bwd)


def rank_one_softmax_pool(lam, Pq, Pk, tile_bytes: int = TILE_BYTES):
    """sum_k softmax_k(lam Pq_q Pk_k) Pk_k for every query q: the pooling of one rank-one
    head (chapter "Attention as soft pooling", chapters/attention.md, def-two-head-layer).
    Shapes: lam scalar, Pq (..., Q), Pk (..., K) with broadcastable batch shapes -> (..., Q).

    The output is ext_q + E_q[Pk - ext_q] with the exact shift of ``shift``. The gradient
    is written by hand (``jax.custom_vjp``) from the derivatives of a softmax mean, with
    p_qk the weights and out_q the output:

        d out_q / d Pq_q = lam Var_q[Pk],   d out_q / d lam = Pq_q Var_q[Pk],
        d out_q / d Pk_k = p_qk (1 + lam Pq_q (Pk_k - out_q)),

    and lam Pq_q (Pk_k - out_q) is evaluated as logit_qk - E_q[logit], so nothing large
    cancels even at lam = 1e4.

    Cost and memory: the scores have rank one, so there is no matrix product to speed them
    up: each costs an exp, and the two passes of a training step take one exp per score
    each. The forward pass computes the weights tile by tile (``row_moments``; no tile over
    ``tile_bytes``) and reduces each tile with one small matrix product; the backward pass
    recomputes them inside one fused reduction over the queries (``key_grads``), so a step
    stores O(L) numbers per head between its passes and no Q x K array larger than one tile
    (``tests/test_kernels.py`` checks the compiled step's temporary memory). When all the
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
    return pool(int(tile_bytes), lam, Pq, Pk).reshape(batch + (Q,))


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


# --------------------------------------------------------------------------- two-head layer


def two_head_attend(theta, Z, X, lam):
    """The two-head layer's outputs at queries Z (..., Q, d) attending over keys X (..., L, d)
    with batch shapes that broadcast: sum_h theta_h sum_k softmax_k(lam <theta_h, z><theta_h,
    x_k>) <theta_h, x_k>, each head pooled by ``rank_one_softmax_pool``."""
    Pq = jnp.swapaxes(Z @ theta.T, -1, -2)  # (..., H, Q): <theta_h, z_q>
    Pk = jnp.swapaxes(X @ theta.T, -1, -2)  # (..., H, L): <theta_h, x_k>
    pooled = rank_one_softmax_pool(lam, Pq, Pk)  # (..., H, Q)
    return jnp.swapaxes(pooled, -1, -2) @ theta


two_head_attend_jit = jax.jit(two_head_attend)
"""``two_head_attend`` compiled."""


@jax.jit
def two_head(theta, X, lam):
    """The two-head layer T(X) (..., L, d): every token of each prompt attends over its own
    prompt, ``two_head_attend(theta, X, X, lam)``."""
    return two_head_attend(theta, X, X, lam)


# --------------------------------------------------------------------------- identity attention


def pow2_scale(X):
    """(..., 1, 1): the smallest power of two >= max |X| over each prompt (1 for a zero
    prompt). Dividing by it is exact, and bounds every entry by 1."""
    m = jnp.max(jnp.abs(X), axis=(-2, -1), keepdims=True)
    _, e = jnp.frexp(m)  # m = f 2^e with f in [0.5, 1)
    return jax.lax.stop_gradient(jnp.ldexp(jnp.ones_like(m), e))


def slope(lam, scale2):
    """The temperature of the scaled scores, lam times the product of the two power-of-two
    scales, clamped to float32's largest number: it stays finite, so t * 0 = 0 and the
    largest key (shifted score exactly 0) weighs exactly 1, however large lam is."""
    return jnp.minimum(lam * scale2, jnp.finfo(jnp.float32).max)


def per_prompt(lam):
    """A temperature, scalar or one per prompt (batch shape ...), as (..., 1, 1) against the
    (..., Q, K) scores."""
    return jnp.asarray(lam)[..., None, None]


def identity_exps(Xq, X, lam, mask=None):
    """(e, Xk, ck): the unnormalised weights e (..., Q, K) of identity attention of queries Xq
    (..., Q, d) against keys X (..., K, d), the keys scaled by their power of two ck.

    Queries and keys are scaled to |x| <= 1 by powers of two cq, ck (exact), so the scores
    R = <xq/cq, xk/ck> cannot overflow; e = exp(t (R - max R)) with t = lam cq ck (clamped
    to float32's largest number), and R - max R reads the same numbers twice, so the largest
    key's weight is exactly 1 whatever t. ``lam``: a scalar or one inverse temperature per prompt
    (the batch shape). ``mask``: optional boolean, broadcastable to (..., Q, K): where it is
    False the weight is exactly 0 (every query needs one True key)."""
    cq, ck = pow2_scale(Xq), pow2_scale(X)
    Xk = X / ck
    R = jnp.einsum("...qd,...kd->...qk", Xq / cq, Xk)
    if mask is not None:
        R = jnp.where(mask, R, -jnp.inf)
    D = R - jnp.max(R, axis=-1, keepdims=True)
    if mask is None:
        return jnp.exp(slope(per_prompt(lam), cq * ck) * D), Xk, ck
    # masked scores are 0 inside the exp (finite whatever t, and in every derivative) and
    # their weights exactly 0
    e = jnp.exp(slope(per_prompt(lam), cq * ck) * jnp.where(mask, D, 0.0))
    return jnp.where(mask, e, 0.0), Xk, ck


def identity_weights(Xq, X, lam, mask=None):
    """The softmax weights softmax_k(lam <xq, x_k>) (..., Q, K) of ``identity_exps``."""
    e, _, _ = identity_exps(Xq, X, lam, mask)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def identity_rows(Xq, X, lam, mask=None):
    """Identity attention of queries Xq (..., Q, d) over keys X (..., K, d):
    sum_k softmax_k(lam <xq, x_k>) x_k, with ``identity_exps``'s ``lam`` and ``mask``."""
    e, Xk, ck = identity_exps(Xq, X, lam, mask)
    return (e @ Xk) / jnp.sum(e, axis=-1, keepdims=True) * ck


identity_attend = jax.jit(identity_rows)
"""``identity_rows`` compiled."""


@jax.jit
def identity_full(X, lam):
    """Identity attention Q(X) (..., L, d) of every prompt against itself."""
    return identity_rows(X, X, lam)


def self_mask(L: int):
    """(L, L) boolean: False on the diagonal, so that token l does not attend to itself."""
    return ~jnp.eye(L, dtype=bool)


@partial(jax.jit, static_argnums=(2,))
def identity_layer(X, lam, mask_self: bool):
    """Identity attention of every prompt against itself with ``lam`` a scalar or one
    temperature per prompt; with ``mask_self`` each token's own key gets weight 0."""
    return identity_rows(X, X, lam, self_mask(X.shape[-2]) if mask_self else None)


@partial(jax.jit, static_argnums=(2, 3))
def identity_stack(X, lam, depth: int, mask_self: bool):
    """``depth`` identity layers applied in turn (keys and queries move together): the last
    layer's outputs (``identity_layer``'s ``lam`` and ``mask_self``)."""
    mask = self_mask(X.shape[-2]) if mask_self else None
    for _ in range(depth):
        X = identity_rows(X, X, lam, mask)
    return X


@partial(jax.jit, static_argnums=(2,))
def layer_weights(X, lam, mask_self: bool):
    """The weights (..., L, L) of ``identity_layer``: every prompt against itself, ``lam`` a
    scalar or one per prompt, each token's own key at weight 0 with ``mask_self``."""
    return identity_weights(X, X, lam, self_mask(X.shape[-2]) if mask_self else None)


def sure_terms(X, lam, mask_self: bool):
    """Q(X) and, per token, ``||Q_l - x_l||^2`` and the divergence trace dQ_l/dx_l (the
    closed form of ``temperature.identity_sure``) for prompts X (n, L, d) at inverse temperatures
    lam (n,), with or without the self-key mask."""
    w = layer_weights(X, lam, mask_self)
    Q = w @ X
    sq = jnp.sum(X**2, -1)  # ||x_k||^2, (n, L)
    spread = jnp.einsum("nlk,nk->nl", w, sq) - jnp.sum(Q**2, -1)  # weighted variance of the keys
    lam = jnp.asarray(lam)[..., None]
    if mask_self:
        div = lam * spread
    else:
        w_self = jnp.diagonal(w, axis1=-2, axis2=-1)
        d = X.shape[-1]
        div = d * w_self + lam * (spread + w_self * (sq - jnp.sum(Q * X, -1)))
    return Q, jnp.sum((Q - X) ** 2, -1), div


KEY_BLOCK = 2048
"""Keys per tile of the blocked identity attention: a block x KEY_BLOCK tile of scores (4 MB
at block 512) stays in the caches, where a block x L row of scores would not."""


def identity_tiles(X, lam, block: int, key_block: int):
    """Identity attention of one prompt X (L, d), tile by tile: ``lax.map`` over blocks of
    ``block`` queries, and for each a ``lax.scan`` over blocks of ``key_block`` keys that
    keeps the running maximum m of the scores, normaliser l and weighted sum of the keys
    (the online softmax), rescaled by exp(t (m_old - m_new)) whenever the maximum grows.
    The prompt is first scaled to |x| <= 1 by a power of two c and t = lam c^2, as in
    ``identity_exps``. Padded keys get the score -inf, so they weigh exactly 0.
    Memory O(L d + block key_block)."""
    L, d = X.shape
    c = pow2_scale(X)
    t = slope(lam, c[0, 0] ** 2)
    X = X / c
    n_q, n_k = -(-L // block), -(-L // key_block)
    queries = jnp.pad(X, ((0, n_q * block - L), (0, 0))).reshape(n_q, block, d)
    keys = jnp.pad(X, ((0, n_k * key_block - L), (0, 0))).reshape(n_k, key_block, d)
    valid = (jnp.arange(n_k * key_block) < L).reshape(n_k, key_block)

    def rows(q):
        def tile(carry, kv):
            m, l, acc = carry
            k, ok = kv
            s = jnp.where(ok[None, :], q @ k.T, -jnp.inf)  # (block, key_block)
            m_new = jnp.maximum(m, jnp.max(s, axis=-1))
            rescale = jnp.exp(t * (m - m_new))
            p = jnp.exp(t * (s - m_new[:, None]))
            return (m_new, l * rescale + jnp.sum(p, axis=-1), acc * rescale[:, None] + p @ k), None

        start = (jnp.full((block,), -jnp.inf, X.dtype), jnp.zeros((block,), X.dtype), jnp.zeros((block, d), X.dtype))
        (_, l, acc), _ = jax.lax.scan(tile, start, (keys, valid))  # the first tile holds key 0: l >= 1
        return acc / l[:, None]

    return jax.lax.map(rows, queries).reshape(n_q * block, d)[:L] * c


@partial(jax.jit, static_argnums=(2, 3))
def identity_blocked(X, lam, block: int, key_block: int = KEY_BLOCK):
    """``identity_tiles`` of every prompt of X (..., L, d), ``block`` <= L queries a tile."""
    batch = X.shape[:-2]
    flat = X.reshape((-1,) + X.shape[-2:])
    out = jax.vmap(lambda x: identity_tiles(x, lam, block, key_block))(flat)
    return out.reshape(batch + X.shape[-2:])


# --------------------------------------------------------------------------- large-L limits


def head_coefficients(P, theta, mixture, lam):
    """phi_h (..., H) of theta_h in the two-head layer's large-L limit, given the projections
    P (..., H) = <theta_h, z>: lam P_h sigma^2 ||theta_h||^2 + sum_c alpha_hc m_hc with
    m_hc = <theta_h, mu_c> and alpha_h = softmax_c(log pi_c + lam P_h m_hc)."""
    m = theta @ mixture.centroids.T  # (H, K): <theta_h, mu_c>
    s = lam * P  # (..., H)
    alpha = softmax_small(mixture.log_weights, m, s)  # (..., H, K)
    sq_norm = jnp.sum(theta**2, axis=-1)  # (H,)
    return s * mixture.sigma**2 * sq_norm + jnp.sum(alpha * m, axis=-1)


@jax.jit
def head_output_limit(theta, z, mixture, lam):
    """T_inf(z) = sum_h phi_h(z) theta_h (..., d) at queries z (..., d)."""
    return head_coefficients(z @ theta.T, theta, mixture, lam) @ theta


@jax.jit
def identity_limit(z, mixture, lam):
    """Q_inf(z) = lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c (..., d)."""
    alpha = softmax_small(mixture.log_weights, z @ mixture.centroids.T, lam)
    return lam * mixture.sigma**2 * z + alpha @ mixture.centroids


@jax.jit
def general_identity_limit(z, log_weights, centroids, covariances, lam):
    """Q(z) = sum_c alpha_c(z) (mu_c + lam Sigma_c z) with
    alpha(z) = softmax_c(log pi_c + lam <z, mu_c> + lam^2 z^T Sigma_c z / 2): identity
    attention's large-L limit for per-component covariances Sigma_c (K, d, d)."""
    quad = jnp.einsum("...i,cij,...j->...c", z, covariances, z)
    alpha = softmax_small(log_weights + 0.5 * lam**2 * quad, z @ centroids.T, lam)
    return alpha @ centroids + lam * jnp.einsum("...c,cij,...j->...i", alpha, covariances, z)
