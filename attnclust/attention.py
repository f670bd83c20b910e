"""The two attention layers of the book, at finite prompt length L.

- ``two_head_layer``: THEORY.md section 2, chapter "The two-head layer and its population risk".
- ``identity_attention``: THEORY.md section 6, chapter "In-context quantization with
  identity attention".

Softmaxes are computed so that they cannot overflow (``_numerics``), so a temperature of 1e4 or a large
theta gives finite outputs.
"""

from __future__ import annotations

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


def _identity_rows(Xq, X, lam):
    """Identity attention for a block of queries Xq (..., B, d) against all keys X."""
    scores = lam * jnp.einsum("...qd,...kd->...qk", Xq, X)
    return jax.nn.softmax(scores, axis=-1) @ X


@jax.jit
def _identity_full(X, lam):
    return _identity_rows(X, X, lam)


def _identity_blocked(X, lam, block: int):
    L = X.shape[-2]
    n_blocks = -(-L // block)
    pad = n_blocks * block - L
    Xq = jnp.pad(X, [(0, 0)] * (X.ndim - 2) + [(0, pad), (0, 0)])
    Xq = jnp.moveaxis(Xq.reshape(X.shape[:-2] + (n_blocks, block, X.shape[-1])), -3, 0)
    out = jax.lax.map(lambda q: _identity_rows(q, X, lam), Xq)  # (n_blocks, ..., B, d)
    out = jnp.moveaxis(out, 0, -3).reshape(X.shape[:-2] + (n_blocks * block, X.shape[-1]))
    return out[..., :L, :]


_identity_blocked_jit = jax.jit(_identity_blocked, static_argnums=2)


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
        block: when given, queries are processed ``block`` at a time (``lax.map``) so that
            memory grows as O(L * block) instead of O(L^2); the values are the same.

    Returns:
        (..., L, d); each output is a convex combination of its prompt's tokens.
    """
    _check_tokens(X)
    v.positive_finite("lam", lam)
    X = jnp.asarray(X)
    if block is None:
        return _identity_full(X, lam)
    block = v.positive_int("block", block)
    return _identity_blocked_jit(X, lam, min(block, X.shape[-2]))
