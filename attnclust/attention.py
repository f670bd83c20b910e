"""The two attention layers of the book, at finite prompt length L.

- ``two_head_layer``: chapter "The two-head layer and its population risk"
  (chapters/population_risk.md, {prf:ref} label def-two-head-layer) and "Attention as soft
  pooling" (chapters/attention.md, def-rank-one-heads).
- ``identity_attention``: chapter "In-context quantization with identity attention"
  (chapters/quantization.md, def-identity-attention).

Softmaxes are computed so that they cannot overflow (``_numerics`` for the two-head layer;
for identity attention, every prompt is scaled by a power of two to ``|x| <= 1``, which is exact,
and the logits are shifted by the exact largest one), so a temperature up to float32's
largest number, or tokens up to 1e38, give finite outputs.

Checks under a user's own ``jit``: the shapes and dtypes of the arguments are still checked
(they are static); their values (NaN or inf in the arrays, the range of ``lam``, a key mask
that is all False) are not, and the outputs are then NaN where the inputs were bad.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from . import _validate as v
from ._numerics import rank_one_softmax_pool


def _two_head_attend(theta, Z, X, lam):
    Pq = jnp.swapaxes(Z @ theta.T, -1, -2)  # (..., H, Lq): <theta_h, z_l>
    Pk = jnp.swapaxes(X @ theta.T, -1, -2)  # (..., H, Lk): <theta_h, x_k>
    pooled = rank_one_softmax_pool(lam, Pq, Pk)  # (..., H, Lq)
    return jnp.swapaxes(pooled, -1, -2) @ theta


@jax.jit
def _two_head(theta, X, lam):
    return _two_head_attend(theta, X, X, lam)


def two_head_layer(
    theta: Float[ArrayLike, "H d"], X: Float[ArrayLike, "*batch L d"], lam: float | Float[ArrayLike, ""]
) -> Float[Array, "*batch L d"]:
    """T(X)_l = sum_h theta_h sum_k softmax_k(lam <theta_h,x_l><theta_h,x_k>) <theta_h,x_k>.

    Head h has query-key matrix lam theta_h theta_h^T and value-output matrix
    theta_h theta_h^T (chapters/population_risk.md, def-two-head-layer). Any number of heads
    H; the outputs lie in span(theta_1, ..., theta_H). The weights are computed tile by tile
    (``_numerics.rank_one_softmax_pool``): memory O(H L) per prompt plus one tile of at most
    4 MB, also for its gradient.

    Args:
        theta: (H, d) head parameters, H >= 1, finite.
        X: (``*batch``, L, d) prompts, L >= 1, finite; lists and integer or float16 arrays
            are converted to float32.
        lam: temperature, a real number > 0 that float32 holds (up to about 3.4e38).

    Returns:
        (``*batch``, L, d) float32 outputs, one per token.

    Raises:
        TypeError: theta, X or lam not real numbers (complex, strings).
        ValueError: a wrong shape (theta not (H, d), X not (..., L, d), different d), NaN or
            inf in theta or X, lam <= 0 or not finite in float32, or an output that
            overflows float32 (theta and X too large). Under ``jit`` only the shape checks
            run.
    """
    theta = v.heads("theta", theta)
    X = v.tokens("X", X, d=theta.shape[1])
    lam = v.positive_finite("lam", lam)
    return v.finite_result(_two_head(theta, X, lam), "theta and X are")


def two_head_attend(
    theta: Float[ArrayLike, "H d"],
    Z: Float[ArrayLike, "*#batch Q d"],
    X: Float[ArrayLike, "*#batch L d"],
    lam: float | Float[ArrayLike, ""],
) -> Float[Array, "*#batch Q d"]:
    """The two-head layer's output at queries Z attending over the keys X (Z may be a few
    tokens, X a long prompt): used to watch a head approach its large-L limit
    (chapters/attention.md, prop-head-limit). ``two_head_layer(theta, X, lam)`` is
    ``two_head_attend(theta, X, X, lam)``.

    Args:
        theta: (H, d) head parameters, finite.
        Z: (``*batch``, Q, d) queries, finite.
        X: (``*batch``, L, d) keys, finite; the batch shapes of Z and X must broadcast.
        lam: temperature, > 0 and finite in float32.

    Returns:
        (``*batch``, Q, d) outputs, one per query.

    Raises:
        TypeError: an argument that is not real numbers.
        ValueError: wrong shapes (naming Z, X or theta), batch shapes of Z and X that do
            not broadcast, NaN or inf, a bad lam, or an output that overflows float32.
            Under ``jit`` only the shape checks run.
    """
    theta = v.heads("theta", theta)
    Z = v.tokens("Z", Z, d=theta.shape[1])
    X = v.tokens("X", X, d=theta.shape[1])
    v.batch_match("Z", Z.shape[:-2], "X", X.shape[:-2])
    lam = v.positive_finite("lam", lam)
    return v.finite_result(jax.jit(_two_head_attend)(theta, Z, X, lam), "theta, Z and X are")


def _pow2_scale(X):
    """(..., 1, 1): the smallest power of two >= max |X| over each prompt (1 for a zero
    prompt). Dividing by it is exact, and bounds every entry by 1."""
    m = jnp.max(jnp.abs(X), axis=(-2, -1), keepdims=True)
    _, e = jnp.frexp(m)  # m = f 2^e with f in [0.5, 1)
    return jax.lax.stop_gradient(jnp.ldexp(jnp.ones_like(m), e))


def _slope(lam, scale2):
    """The temperature of the scaled scores, lam times the product of the two power-of-two
    scales, clamped to float32's largest number: it stays finite, so t * 0 = 0 and the
    largest key (shifted score exactly 0) weighs exactly 1, however large lam is."""
    return jnp.minimum(lam * scale2, v.F32_MAX)


def _identity_rows(Xq, X, lam, key_mask=None):
    """Identity attention for a block of queries Xq (..., B, d) against all keys X; with
    ``key_mask`` (..., L) the keys where it is False get weight exactly 0 (a prompt padded
    to a fixed length, as the quantization explorer pads its prompts).

    Queries and keys are scaled to |x| <= 1 by powers of two cq, ck (exact), so the scores
    R = <xq/cq, xk/ck> cannot overflow; the softmax is exp(t (R - max R)) with t = lam cq ck
    (clamped to float32's largest number), and R - max R reads the same numbers twice, so
    the largest key's logit is exactly 0 whatever t."""
    cq, ck = _pow2_scale(Xq), _pow2_scale(X)
    Xk = X / ck
    R = jnp.einsum("...qd,...kd->...qk", Xq / cq, Xk)
    if key_mask is not None:
        R = jnp.where(key_mask[..., None, :], R, -jnp.inf)
    e = jnp.exp(_slope(lam, cq * ck) * (R - jnp.max(R, axis=-1, keepdims=True)))
    return (e @ Xk) / jnp.sum(e, axis=-1, keepdims=True) * ck


@jax.jit
def _identity_full(X, lam):
    return _identity_rows(X, X, lam)


KEY_BLOCK = 2048
"""Keys per tile of the blocked identity attention: a block x KEY_BLOCK tile of scores (4 MB
at block 512) stays in the caches, where a block x L row of scores would not."""


def _identity_tiles(X, lam, block: int, key_block: int):
    """Identity attention of one prompt X (L, d), tile by tile: ``lax.map`` over blocks of
    ``block`` queries, and for each a ``lax.scan`` over blocks of ``key_block`` keys that
    keeps the running maximum m of the scores, normaliser l and weighted sum of the keys
    (the online softmax), rescaled by exp(t (m_old - m_new)) whenever the maximum grows.
    The prompt is first scaled to |x| <= 1 by a power of two c and t = lam c^2, as in
    ``_identity_rows``. Padded keys get the score -inf, so they weigh exactly 0.
    Memory O(L d + block key_block)."""
    L, d = X.shape
    c = _pow2_scale(X)
    t = _slope(lam, c[0, 0] ** 2)
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
def _identity_blocked(X, lam, block: int, key_block: int = KEY_BLOCK):
    batch = X.shape[:-2]
    flat = X.reshape((-1,) + X.shape[-2:])
    out = jax.vmap(lambda x: _identity_tiles(x, lam, block, key_block))(flat)
    return out.reshape(batch + X.shape[-2:])


def _key_mask(key_mask, X):
    """Validate a key mask against the keys X (..., L, d)."""
    key_mask = key_mask if v.is_tracer(key_mask) else jnp.asarray(key_mask)
    if key_mask.dtype != jnp.bool_:
        raise TypeError(
            f"key_mask must be a boolean array (True for the keys to attend to), got dtype "
            f"{key_mask.dtype}; convert it with key_mask != 0 if that is what you mean"
        )
    if key_mask.ndim < 1 or key_mask.shape[-1] != X.shape[-2]:
        raise ValueError(
            f"key_mask must have shape (..., L) with L={X.shape[-2]} the number of keys in X, "
            f"got shape {tuple(key_mask.shape)}"
        )
    v.batch_match("key_mask", key_mask.shape[:-1], "X", X.shape[:-2])
    if not v.is_tracer(key_mask) and not v.holds(lambda m: jnp.all(jnp.any(m, axis=-1)), key_mask):
        raise ValueError("key_mask must be True for at least one key of every prompt, got a prompt with every key masked")
    return key_mask


def identity_attend(
    Z: Float[ArrayLike, "*#batch Q d"],
    X: Float[ArrayLike, "*#batch L d"],
    lam: float | Float[ArrayLike, ""],
    key_mask: Bool[ArrayLike, "*#batch L"] | None = None,
) -> Float[Array, "*#batch Q d"]:
    """Identity attention of queries Z over the keys X: sum_k softmax_k(lam <z, x_k>) x_k
    (chapters/quantization.md, def-identity-attention; the finite-L side of
    ``identity_limit``).

    Args:
        Z: (``*batch``, Q, d) queries, finite.
        X: (``*batch``, L, d) keys, finite; the batch shapes of Z and X must broadcast.
        lam: temperature, > 0 and finite in float32.
        key_mask: optional boolean (``*batch``, L): keys where it is False get weight
            exactly 0 (a prompt padded to a fixed length). Every prompt needs one True key.

    Returns:
        (``*batch``, Q, d); each output is a convex combination of the (unmasked) keys.

    Raises:
        TypeError: Z, X or lam not real numbers, or key_mask not boolean.
        ValueError: wrong shapes (naming Z, X or key_mask), NaN or inf in Z or X, a bad
            lam, or a prompt whose keys are all masked. Under ``jit`` only the shape and
            dtype checks run.
    """
    X = v.tokens("X", X)
    Z = v.tokens("Z", Z, d=X.shape[-1], d_from="X")
    v.batch_match("Z", Z.shape[:-2], "X", X.shape[:-2])
    lam = v.positive_finite("lam", lam)
    if key_mask is not None:
        key_mask = _key_mask(key_mask, X)
    return jax.jit(_identity_rows)(Z, X, lam, key_mask)


def identity_attention(
    X: Float[ArrayLike, "*batch L d"], lam: float | Float[ArrayLike, ""], block: int | None = None
) -> Float[Array, "*batch L d"]:
    """Q(X)_l = sum_k softmax_k(lam <x_l, x_k>) x_k: attention with key, query and value
    the identity, no parameters (chapters/quantization.md, def-identity-attention).

    Args:
        X: (``*batch``, L, d) prompts, L >= 1, finite; lists and integer or float16 arrays
            are converted to float32.
        lam: temperature, a real number > 0 that float32 holds.
        block: when given, an integer >= 1: the scores are computed tile by tile, ``block``
            queries against ``KEY_BLOCK`` keys at a time with an online softmax, so that
            memory is O(L d + block KEY_BLOCK) instead of O(L^2) and the tiles stay in the
            caches; the values are the same up to float32 rounding.

    Returns:
        (``*batch``, L, d) float32; each output is a convex combination of its prompt's
        tokens, so it is finite for every finite X and lam.

    Raises:
        TypeError: X or lam not real numbers.
        ValueError: X not (..., L, d) with L >= 1, NaN or inf in X, a bad lam, or block
            not an integer >= 1. Under ``jit`` only the shape checks run.
    """
    X = v.tokens("X", X)
    lam = v.positive_finite("lam", lam)
    if block is None:
        return _identity_full(X, lam)
    block = v.positive_int("block", block)
    return _identity_blocked(X, lam, min(block, X.shape[-2]))


def identity_stack(X: Float[ArrayLike, "*b L d"], lam: float | Float[ArrayLike, ""], depth: int) -> Float[Array, "depth1 *b L d"]:
    """Stacked identity layers: X, Q(X), Q(Q(X)), ..., Q^depth(X) (chapter "In-context
    quantization experiments", chapters/icq_experiments.md).

    Each layer is ``identity_attention`` applied to the previous layer's outputs (keys and
    queries move together), so tokens drift towards the fixed points of the iteration.

    Args:
        X: (``*b``, L, d) prompts, finite.
        lam: temperature of every layer, > 0 and finite in float32.
        depth: number of layers, an integer >= 0.

    Returns:
        (depth + 1, ``*b``, L, d): the prompts after 0, 1, ..., depth layers.

    Raises:
        TypeError: X or lam not real numbers.
        ValueError: X not (..., L, d) or not finite, a bad lam, or depth < 0.
    """
    depth = v.positive_int("depth", depth, minimum=0)
    lam = v.positive_finite("lam", lam)
    out = [v.tokens("X", X)]
    for _ in range(depth):
        out.append(identity_attention(out[-1], lam))
    return jnp.stack(out)
