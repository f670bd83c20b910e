"""The two attention layers of the book, at finite prompt length L.

- ``two_head_layer``: chapter "Attention as soft pooling" (chapters/attention.md,
  {prf:ref} label def-two-head-layer), trained in "The two-head layer and its population
  risk" (chapters/population_risk.md).
- ``identity_attention``: chapter "In-context quantization with identity attention"
  (chapters/quantization.md, def-identity-attention).

Both layers are computed by the package's kernels (``_kernels``), whose softmaxes cannot
overflow (for the two-head layer an exact shift by the extremal key; for identity attention,
every prompt is scaled by a power of two to ``|x| <= 1``, which is exact, and the logits are
shifted by the exact largest one), so an inverse temperature up to float32's largest number, or
tokens up to 1e38, give finite outputs.

Checks under a user's own ``jit``: the shapes and dtypes of the arguments are still checked
(they are static); their values (NaN or inf in the arrays, the range of ``lam``, a key mask
that is all False) are not, and the outputs are then NaN where the inputs were bad.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from . import _kernels as k
from . import _validate as v

FULL_SCORES_BYTES = 2**30
"""Largest score array ``identity_attention`` holds at once without ``block`` (bytes): the
batch's n L^2 float32 scores. Beyond it (a prompt of L = 16,384 tokens, or 16 of 4,096) the
scores are computed tile by tile with ``AUTO_BLOCK`` queries a tile, as with ``block``: an
L x L array of a long prompt would not fit in memory (XLA's CPU backend fails on a single
allocation of that size)."""

AUTO_BLOCK = 512
"""Queries per tile when ``identity_attention`` tiles on its own (``FULL_SCORES_BYTES``)."""


def two_head_layer(
    theta: Float[ArrayLike, "H d"], X: Float[ArrayLike, "*batch L d"], lam: float | Float[ArrayLike, ""]
) -> Float[Array, "*batch L d"]:
    """T(X)_l = sum_h theta_h sum_k softmax_k(lam <theta_h,x_l><theta_h,x_k>) <theta_h,x_k>.

    Head h has query-key matrix lam theta_h theta_h^T and value-output matrix
    theta_h theta_h^T (chapters/attention.md, def-two-head-layer). Any number of heads
    H; the outputs lie in span(theta_1, ..., theta_H). The weights are computed tile by tile
    (``_kernels.rank_one_softmax_pool``): memory O(H L) per prompt plus one tile of at most
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
    return v.finite_result(k.two_head(theta, X, lam), "theta and X are")


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
    return v.finite_result(k.two_head_attend_jit(theta, Z, X, lam), "theta, Z and X are")


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
    if key_mask is None:
        return k.identity_attend(Z, X, lam)
    key_mask = v.key_mask("key_mask", key_mask, X)
    return k.identity_attend(Z, X, lam, key_mask[..., None, :])


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
            queries against 2048 keys (``_kernels.KEY_BLOCK``) at a time with an online
            softmax, so that memory is O(L d + 2048 block) instead of O(L^2) and the tiles stay in the
            caches; the values are the same up to float32 rounding. When None, the scores
            are held at once unless the batch's n L^2 float32 scores exceed
            ``FULL_SCORES_BYTES`` (1 GiB), and tiled with ``AUTO_BLOCK`` queries otherwise.

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
        if 4 * X.size * X.shape[-2] // X.shape[-1] <= FULL_SCORES_BYTES:
            return k.identity_full(X, lam)
        block = AUTO_BLOCK
    block = v.positive_int("block", block)
    return k.identity_blocked(X, lam, min(block, X.shape[-2]))


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
