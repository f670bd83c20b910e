"""The two attention layers of the book, at finite prompt length L.

- ``two_head_layer``: THEORY.md section 2, chapter "The two-head layer and its population risk".
- ``identity_attention``: THEORY.md section 6, chapter "In-context quantization with
  identity attention".

Softmaxes are computed so that they cannot overflow (``_numerics``), so a temperature of 1e4 or a large
theta gives finite outputs.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from . import _validate as v
from ._numerics import rank_one_softmax_pool


def _check_tokens(X, theta=None) -> None:
    shape = jnp.shape(X)
    v.ndim_at_least("X", shape, 2, "(..., L, d)")
    if shape[-2] < 1:
        raise ValueError(f"L must be >= 1, got L={shape[-2]} (X has shape {shape})")
    if theta is not None:
        t_shape = jnp.shape(theta)
        if len(t_shape) != 2:
            raise ValueError(f"theta must have shape (H, d), got shape {t_shape}")
        v.same_dim("theta", t_shape[1], "X", shape[-1])
        v.finite_array("theta", theta)


def _two_head_attend(theta, Z, X, lam):
    Pq = jnp.swapaxes(Z @ theta.T, -1, -2)  # (..., H, Lq): <theta_h, z_l>
    Pk = jnp.swapaxes(X @ theta.T, -1, -2)  # (..., H, Lk): <theta_h, x_k>
    pooled = rank_one_softmax_pool(lam, Pq, Pk)  # (..., H, Lq)
    return jnp.swapaxes(pooled, -1, -2) @ theta


@jax.jit
def _two_head(theta, X, lam):
    return _two_head_attend(theta, X, X, lam)


def two_head_layer(
    theta: Float[Array, "H d"], X: Float[Array, "*batch L d"], lam: float
) -> Float[Array, "*batch L d"]:
    """T(X)_l = sum_h theta_h sum_k softmax_k(lam <theta_h,x_l><theta_h,x_k>) <theta_h,x_k>.

    Head h has query-key matrix lam theta_h theta_h^T and value-output matrix
    theta_h theta_h^T (THEORY.md section 2). Any number of heads H; the outputs lie in
    span(theta_1, ..., theta_H). Memory O(H L^2) per prompt.

    Args:
        theta: (H, d) head parameters.
        X: (..., L, d) prompts.
        lam: temperature, finite and > 0.

    Returns:
        (..., L, d) outputs, one per token.
    """
    _check_tokens(X, theta)
    v.positive_finite("lam", lam)
    return _two_head(jnp.asarray(theta), jnp.asarray(X), lam)


def two_head_attend(
    theta: Float[Array, "H d"],
    Z: Float[Array, "*batch Q d"],
    X: Float[Array, "*batch L d"],
    lam: float,
) -> Float[Array, "*batch Q d"]:
    """The two-head layer's output at queries Z attending over the keys X (Z may be a few
    tokens, X a long prompt): used to watch a head approach its large-L limit
    (chapter "Attention as soft pooling"). ``two_head_layer(theta, X, lam)`` is
    ``two_head_attend(theta, X, X, lam)``."""
    _check_tokens(X, theta)
    _check_tokens(Z, theta)
    v.positive_finite("lam", lam)
    return jax.jit(_two_head_attend)(jnp.asarray(theta), jnp.asarray(Z), jnp.asarray(X), lam)


def _identity_rows(Xq, X, lam, key_mask=None):
    """Identity attention for a block of queries Xq (..., B, d) against all keys X; with
    ``key_mask`` (..., L) the keys where it is False get weight exactly 0 (a prompt padded
    to a fixed length, as the quantization explorer pads its prompts)."""
    scores = lam * jnp.einsum("...qd,...kd->...qk", Xq, X)
    if key_mask is not None:
        scores = jnp.where(key_mask[..., None, :], scores, -jnp.inf)
    return jax.nn.softmax(scores, axis=-1) @ X


@jax.jit
def _identity_full(X, lam):
    return _identity_rows(X, X, lam)


KEY_BLOCK = 2048
"""Keys per tile of the blocked identity attention: a block x KEY_BLOCK tile of scores (4 MB
at block 512) stays in the caches, where a block x L row of scores would not."""


def _identity_tiles(X, lam, block: int, key_block: int):
    """Identity attention of one prompt X (L, d), tile by tile: ``lax.map`` over blocks of
    ``block`` queries, and for each a ``lax.scan`` over blocks of ``key_block`` keys that
    keeps the running maximum m, normaliser l and weighted sum of the keys (the online
    softmax), rescaled by exp(m_old - m_new) whenever the maximum grows. Padded keys get
    the logit -inf, so they weigh exactly 0. Memory O(L d + block key_block)."""
    L, d = X.shape
    n_q, n_k = -(-L // block), -(-L // key_block)
    queries = jnp.pad(X, ((0, n_q * block - L), (0, 0))).reshape(n_q, block, d)
    keys = jnp.pad(X, ((0, n_k * key_block - L), (0, 0))).reshape(n_k, key_block, d)
    valid = (jnp.arange(n_k * key_block) < L).reshape(n_k, key_block)

    def rows(q):
        q = lam * q  # scale the queries, not the scores: the max and the exp then read the same numbers

        def tile(carry, kv):
            m, l, acc = carry
            k, ok = kv
            s = jnp.where(ok[None, :], q @ k.T, -jnp.inf)  # (block, key_block)
            m_new = jnp.maximum(m, jnp.max(s, axis=-1))
            rescale = jnp.exp(m - m_new)
            p = jnp.exp(s - m_new[:, None])
            return (m_new, l * rescale + jnp.sum(p, axis=-1), acc * rescale[:, None] + p @ k), None

        start = (jnp.full((block,), -jnp.inf, X.dtype), jnp.zeros((block,), X.dtype), jnp.zeros((block, d), X.dtype))
        (_, l, acc), _ = jax.lax.scan(tile, start, (keys, valid))  # the first tile holds key 0: l >= 1
        return acc / l[:, None]

    return jax.lax.map(rows, queries).reshape(n_q * block, d)[:L]


@partial(jax.jit, static_argnums=(2, 3))
def _identity_blocked(X, lam, block: int, key_block: int = KEY_BLOCK):
    batch = X.shape[:-2]
    flat = X.reshape((-1,) + X.shape[-2:])
    out = jax.vmap(lambda x: _identity_tiles(x, lam, block, key_block))(flat)
    return out.reshape(batch + X.shape[-2:])


def identity_attend(
    Z: Float[Array, "*batch Q d"], X: Float[Array, "*batch L d"], lam: float
) -> Float[Array, "*batch Q d"]:
    """Identity attention of queries Z over the keys X: sum_k softmax_k(lam <z, x_k>) x_k
    (THEORY.md section 6, the finite-L side of ``identity_limit``)."""
    _check_tokens(X)
    _check_tokens(Z)
    v.same_dim("Z", jnp.shape(Z)[-1], "X", jnp.shape(X)[-1])
    v.positive_finite("lam", lam)
    return jax.jit(_identity_rows)(jnp.asarray(Z), jnp.asarray(X), lam)


def identity_attention(
    X: Float[Array, "*batch L d"], lam: float, block: int | None = None
) -> Float[Array, "*batch L d"]:
    """Q(X)_l = sum_k softmax_k(lam <x_l, x_k>) x_k: attention with key, query and value
    the identity, no parameters (THEORY.md section 6).

    Args:
        X: (..., L, d) prompts.
        lam: temperature, finite and > 0.
        block: when given, the scores are computed tile by tile, ``block`` queries against
            ``KEY_BLOCK`` keys at a time with an online softmax, so that memory is
            O(L d + block KEY_BLOCK) instead of O(L^2) and the tiles stay in the caches;
            the values are the same up to float32 rounding.

    Returns:
        (..., L, d); each output is a convex combination of its prompt's tokens.
    """
    _check_tokens(X)
    v.positive_finite("lam", lam)
    X = jnp.asarray(X)
    if block is None:
        return _identity_full(X, lam)
    block = v.positive_int("block", block)
    return _identity_blocked(X, lam, min(block, X.shape[-2]))
