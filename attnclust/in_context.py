"""One softmax attention layer trained in context: its query-key matrix, value map and
residual weight learned on prompts whose centroids are drawn afresh at every step (chapter
"In-context quantization experiments", chapters/icq_experiments.md, section "A layer trained
in context").

The layer (``in_context_layer``) is

    out_l = sum_k softmax_k(x_l^T A x_k) B x_k + c x_l,

with A = W_Q^T W_K a learned d x d query-key matrix, B a learned d x d value map and c a
learned scalar residual weight. Why this parameterisation:

- It contains identity attention at every inverse temperature (A = lam I, B = I, c = 0 gives
  ``attnclust.identity_attention(X, lam)``) and the prompt's mean (A = 0, B = I, c = 0), so
  a trained layer can do no worse than the best fixed inverse temperature, and any gain it shows
  over identity attention is something an inverse temperature alone cannot give.
- A full A and B, rather than a scalar temperature, let training find whatever query-key
  geometry and value map the prompts reward; the prompt distribution of the book (centroids
  in a Haar-random orientation per prompt) is rotation invariant, so the best A and B are
  expected near multiples of the identity (``isotropic_part`` measures how near), and a
  full matrix lets that be found rather than imposed.
- The residual c x_l can cancel the large-L layer's shrinkage term lam sigma^2 x_l
  (chapters/quantization.md, prop-identity-limit), which a softmax average alone cannot.
  ``fit_in_context(..., residual=False)`` trains the layer without it (c held at 0).

Training (``fit_in_context``) minimises, with optax (Adam by default), the book's distortion
mean_l ``||out_l - mu_c(l)||^2`` of each output token to its own component's centre
(``attnclust.distortion``) on fresh prompts of ``attnclust.sample_in_context`` at every
step. That loss reads the labels and the centroids: the trained layer is **label-trained**,
an oracle in the book's vocabulary, even though at test time it reads the tokens only.

What is reused from ``attnclust.train``: the run's configuration and its validation
(``TrainConfig``: steps, batch, L, lr or an optax optimizer, record_every; its ``lam`` is not
used, since the layer learns its own inverse temperature) and the key conventions. The two-head
training loop itself (``fit_sampler``) cannot serve: its samplers return tokens without
labels and it optimises the reconstruction risk of the heads theta, while this loss needs
each token's centroid and the parameters are a pytree (A, B, c).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float

from . import _validate as v
from .mixture import sample_in_context
from .setting import DEFAULT
from .train import KeysLike, TrainConfig

__all__ = [
    "InContextParams",
    "InContextFit",
    "init_params",
    "in_context_layer",
    "in_context_loss",
    "isotropic_part",
    "fit_in_context",
]


class InContextParams(NamedTuple):
    """The parameters of ``in_context_layer`` (a pytree, for ``jax.grad`` and optax).

    Attributes:
        A: (``*S``, d, d) query-key matrix W_Q^T W_K: logit of key k for query l is
            x_l^T A x_k.
        B: (``*S``, d, d) value map (output after value): key k contributes B x_k.
        c: (``*S``,) residual weight: c x_l is added to token l's output.

    ``*S`` is empty for one layer and (S,) for the S layers of a ``fit_in_context`` run.
    """

    A: Float[ArrayLike, "*S d d"]
    B: Float[ArrayLike, "*S d d"]
    c: Float[ArrayLike, "*S"]


def init_params(d: int, *, lam: float = DEFAULT.lam, c: float = 0.0) -> InContextParams:
    """The layer that is identity attention at inverse temperature ``lam``, plus ``c`` x: A = lam I,
    B = I (the start of ``fit_in_context``).

    Args:
        d: dimension, an integer >= 1.
        lam: the inverse temperature, a real number >= 0 (0 gives the prompt's mean).
        c: the residual weight, a real number.

    Returns:
        ``InContextParams`` with float32 A (d, d), B (d, d) and c ().

    Raises:
        TypeError: d not an integer, lam or c not real numbers.
        ValueError: d < 1, lam < 0 or not finite, c not finite.
    """
    d = v.positive_int("d", d)
    lam = v.real_number("lam", lam)
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got lam={lam!r}")
    c = v.real_number("c", c)
    eye = jnp.eye(d, dtype=jnp.float32)
    return InContextParams(lam * eye, eye, jnp.asarray(c, jnp.float32))


def _check_params(params) -> InContextParams:
    """``params`` as float32 ``InContextParams`` of one layer: finite, A and B square of the
    same d, c a number."""
    v.instance("params", params, InContextParams)
    A, B, c = (v.real_array(f"params.{n}", x) for n, x in zip(InContextParams._fields, params))
    for name, M in (("params.A", A), ("params.B", B)):
        v.shape(name, M.shape, "(d, d) with d >= 1", M.ndim == 2 and M.shape[-1] == M.shape[-2] >= 1)
    v.same_shape("params.A", A.shape, "params.B", B.shape)
    v.shape("params.c", c.shape, "() (a number)", c.ndim == 0)
    return InContextParams(A, B, c)


def _layer(params: InContextParams, X):
    """The layer without checks (traceable): params of one layer, X (..., L, d)."""
    A, B, c = params
    logits = jnp.einsum("...ld,de,...ke->...lk", X, A, X)
    w = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("...lk,...kd,ed->...le", w, X, B) + c * X


def in_context_layer(params: InContextParams, X: Float[ArrayLike, "*batch L d"]) -> Float[Array, "*batch L d"]:
    """out_l = sum_k softmax_k(x_l^T A x_k) B x_k + c x_l for every token of every prompt
    (see the module docstring; chapters/icq_experiments.md, section "A layer trained in
    context").

    With A = lam I, B = I, c = 0 it is ``attnclust.identity_attention(X, lam)``; with A = 0,
    B = I, c = 0 every output is the prompt's mean. The softmax subtracts each row's largest
    logit, so it cannot overflow for finite logits.

    Args:
        params: ``InContextParams`` of one layer: A (d, d), B (d, d), c (), finite.
        X: (``*batch``, L, d) prompts, L >= 1, finite.

    Returns:
        (``*batch``, L, d) float32 outputs, one per token.

    Raises:
        TypeError: params not ``InContextParams``, or an array that is not real numbers.
        ValueError: A or B not square (d, d), c not a number, X not (..., L, d) with the
            same d, NaN or inf in params or X, or logits or outputs beyond float32 (params
            and X too large).
    """
    params = _check_params(params)
    X = v.tokens("X", X, d=params.A.shape[-1], d_from="params.A")
    return v.finite_result(_layer(params, X), "params and X are")


def in_context_loss(
    params: InContextParams, X: Float[Array, "*batch L d"], targets: Float[Array, "*batch L d"]
) -> Float[Array, ""]:
    """The loss ``fit_in_context`` minimises: the distortion mean ``||out_l - target_l||^2``
    over prompts and tokens (``attnclust.distortion`` of the layer's outputs), with targets
    each token's own centroid. Traceable and unchecked, as ``attnclust.risk_loss``: validate
    at the boundary.

    Args:
        params: ``InContextParams`` of one layer.
        X: (``*batch``, L, d) prompts.
        targets: (``*batch``, L, d) each token's own centroid (``attnclust.own_centroids``).

    Returns:
        () the loss.
    """
    return jnp.mean(jnp.sum((_layer(params, X) - targets) ** 2, axis=-1))


def isotropic_part(M: Float[ArrayLike, "*S d d"]) -> tuple[Float[np.ndarray, "*S"], Float[np.ndarray, "*S"]]:
    """The multiple of the identity nearest to each matrix M, and how far M is from it:
    ``m = trace(M) / d`` and ``||M - m I||_F / ||m I||_F``.

    Args:
        M: (``*S``, d, d) finite square matrices.

    Returns:
        (m, gap): float64 arrays of shape ``*S``; gap is inf where m = 0.

    Raises:
        TypeError: M not real numbers.
        ValueError: M not square, not finite.
    """
    M = np.asarray(v.real_array("M", M, dtype=np.float64))
    v.shape("M", M.shape, "(..., d, d) with d >= 1", M.ndim >= 2 and M.shape[-1] == M.shape[-2] >= 1)
    d = M.shape[-1]
    m = np.asarray(np.trace(M, axis1=-2, axis2=-1) / d)
    off = np.linalg.norm(M - m[..., None, None] * np.eye(d), axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.asarray(np.where(m != 0, off / (np.abs(m) * np.sqrt(d)), np.inf))
    return m, gap


@dataclass(frozen=True)
class InContextFit:
    """The outcome of ``fit_in_context``: S layers trained from S keys.

    Attributes:
        params: ``InContextParams`` with a leading axis S (NumPy arrays): the final layers.
        params0: the same at the start.
        steps: (n_records,) step count at each record (multiples of ``record_every``).
        loss: (S, n_records) mean training loss over the steps ending at each record.
        temperature: (S, n_records) trace(A) / d at each record (``isotropic_part``).
        residual: (S, n_records) c at each record.
    """

    params: InContextParams
    params0: InContextParams
    steps: np.ndarray
    loss: np.ndarray
    temperature: np.ndarray
    residual: np.ndarray

    @property
    def S(self) -> int:
        """The number of trained layers."""
        return int(self.loss.shape[0])

    def layer(self, s: int) -> InContextParams:
        """The final parameters of layer ``s`` (no seed axis), for ``in_context_layer``."""
        s = v.positive_int("s", s, minimum=0, maximum=self.S - 1)
        return InContextParams(*(jnp.asarray(x[s]) for x in self.params))


def _draw(key, sampler, batch: int, L: int):
    """A training batch: prompts (batch, L, d) and each token's own centroid."""
    K, d, r, sigma, weights = sampler
    X, labels, mus = sample_in_context(key, K, d, r, sigma, batch, L, weights=weights)
    return X, jnp.take_along_axis(mus, labels[..., None], axis=1)


@partial(jax.jit, static_argnums=(0, 1, 2))
def _run(sampler, program, residual: bool, params0, keys):
    """Every seed's run (vmapped): params0 with a seed axis S, keys (S, n_records, 2)."""
    optimizer, batch, L, record_every = program

    def loss(p, X, T):
        if not residual:
            p = p._replace(c=jnp.zeros_like(p.c))
        return in_context_loss(p, X, T)

    def step(carry, key):
        p, state = carry
        X, T = _draw(key, sampler, batch, L)
        value, grad = jax.value_and_grad(loss)(p, X, T)
        updates, state = optimizer.update(grad, state, p)
        return (optax.apply_updates(p, updates), state), value

    def record(carry, key):
        carry, losses = jax.lax.scan(step, carry, jax.random.split(key, record_every))
        p = carry[0]
        return carry, (jnp.mean(losses), jnp.trace(p.A) / p.A.shape[-1], p.c)

    def one(p0, run_keys):
        carry, recs = jax.lax.scan(record, (p0, optimizer.init(p0)), run_keys)
        return carry[0], recs

    return jax.vmap(one)(params0, keys)


def fit_in_context(
    keys: KeysLike,
    *,
    K: int = DEFAULT.K,
    d: int = DEFAULT.d,
    r: float = DEFAULT.r,
    sigma: float = DEFAULT.sigma,
    weights=None,
    config: TrainConfig | None = None,
    steps: int | None = None,
    batch: int | None = None,
    L: int | None = None,
    lr: float | None = None,
    record_every: int | None = None,
    optimizer: optax.GradientTransformation | None = None,
    init: InContextParams | None = None,
    residual: bool = True,
) -> InContextFit:
    """Train S layers (one per key, vmapped, one compiled run) on in-context prompts: every
    step draws ``batch`` fresh prompts of ``attnclust.sample_in_context(K, d, r, sigma, L)``
    (new centroids for every prompt) and takes an optimizer step on ``in_context_loss``, the
    distortion against each token's own centroid: a **label-trained** layer (an oracle; see
    the module docstring).

    Args:
        keys: (S,) typed or (S, 2) raw PRNG keys, S >= 1: seed s draws its prompts from
            ``keys[s]``.
        K, d, r, sigma, weights: the prompt distribution, as in
            ``attnclust.sample_in_context`` (orthogonal centroids, K <= d).
        config: a ``train.TrainConfig`` for steps, batch, L, lr, record_every and
            optimizer (its lam is not used); the keywords below replace its fields.
        steps, batch, L, lr, record_every, optimizer: as in ``attnclust.fit``.
        init: the starting ``InContextParams`` of one layer (shared by every seed);
            ``init_params(d)`` (identity attention at the default inverse temperature) when None.
        residual: learn c; when False, c is held at 0 (the layer without a residual).

    Returns:
        An ``InContextFit``.

    Raises:
        TypeError: a key, config, optimizer or init of the wrong type.
        ValueError: a bad setting (K > d, r or sigma <= 0, ...), a bad training field, or
            init of another dimension than d or not finite (the message names it).
    """
    keys = v.raw_keys("keys", keys)
    K, d = v.orthogonal_sizes(K, d)
    r, sigma = v.positive_finite("r", r), v.positive_finite("sigma", sigma)
    if weights is not None:
        weights = tuple(float(w) for w in np.asarray(v.mixture_weights("weights", weights, (K,))))
    config = TrainConfig.of(config, steps=steps, batch=batch, L=L, lr=lr, record_every=record_every,
                            optimizer=optimizer)
    init = init_params(d) if init is None else _check_params(init)
    v.same_dim("init", init.A.shape[-1], "d", d)
    if not isinstance(residual, (bool, np.bool_)):
        raise TypeError(f"residual must be True or False, got residual={residual!r}")
    residual = bool(residual)
    if not residual:
        init = init._replace(c=jnp.zeros_like(init.c))
    S = keys.shape[0]
    v.allocation("the records (loss, temperature and residual per record and seed)", 3 * S * config.n_records,
                 steps=config.steps, record_every=config.record_every)
    # the sampler's prompts are checked once here, outside the compiled run
    sample_in_context(keys[0], K, d, r, sigma, 1, config.L, weights=weights)
    params0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (S,) + x.shape), init)
    run_keys = jax.vmap(lambda k: jax.random.split(k, config.n_records))(keys)
    final, (loss, temp, res) = _run((K, d, r, sigma, weights), config.program, residual, params0, run_keys)
    to_np = partial(jax.tree_util.tree_map, np.asarray)
    return InContextFit(
        params=InContextParams(*to_np(tuple(final))),
        params0=InContextParams(*to_np(tuple(params0))),
        steps=np.arange(1, config.n_records + 1) * config.record_every,
        loss=np.asarray(loss),
        temperature=np.asarray(temp),
        residual=np.asarray(res),
    )
