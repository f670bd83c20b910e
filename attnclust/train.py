"""Training the two-head layer on the empirical risk (chapters "The two-head layer and its
population risk", chapters/population_risk.md, {prf:ref} label def-risks, and "Training
dynamics", chapters/training_dynamics.md, def-training-runs).

A run draws a fresh batch of prompts at every step and takes an optax step on the
empirical risk R_L (``risk_loss``, one step: ``make_step``). The whole run is one
jit-compiled ``lax.scan`` (records every ``record_every`` steps inside it); ``fit_many``
vmaps the run over seeds and, when several devices are present, shards the seeds over them
with ``jax.sharding``. A progress bar (tqdm) runs outside jit by splitting the scan into
chunks.

Prompts come from a sampler ``draw(key, data, batch, L) -> X`` of shape (batch, L, d), key
first as in ``attnclust.sample``: ``draw_from_mixture`` for a ``GaussianMixture``
(``fit``, ``fit_many``), any JAX-traceable function for ``fit_sampler``, and
``general_mixture.draw_stacked`` for ``fit_mixtures``.

Every entry point takes the PRNG keys in either form JAX offers: raw ``uint32`` keys
(``jax.random.PRNGKey``) or typed key arrays (``jax.random.key``); the same seed gives the
same run either way.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Array, ArrayLike, Float, Key, UInt32
from tqdm.auto import tqdm

from . import _validate as v
from .attention import two_head_layer
from .general_mixture import GeneralMixture, draw_stacked, stack_mixtures
from .metrics import alignment, distortion
from .mixture import GaussianMixture, sample
from .setting import DEFAULT

KeyLike = Union[Key[Array, ""], UInt32[ArrayLike, "2"]]
"""One PRNG key: typed (``jax.random.key``) or raw uint32 (``jax.random.PRNGKey``)."""
KeysLike = Union[Key[Array, "S"], UInt32[ArrayLike, "S 2"]]
"""S PRNG keys, typed or raw (``jax.random.split(key, S)``)."""
Draw = Callable[[Any, Any, int, int], Float[Array, "batch L d"]]
"""The sampler protocol: ``draw(key, data, batch, L) -> X`` of shape (batch, L, d)."""

INITS = ("small", "large", "near", "close")
"""The initialisation regimes (small random, large random, near the centroids, heads near
each other; chapter "Training dynamics", def-training-runs)."""


# --------------------------------------------------------------------------- configuration


class Program(NamedTuple):
    """What a compiled training run is specialised on (static under ``jit``): the optimiser,
    the prompts per step, their length and the steps between records. Runs that share it
    share one compiled program, whatever their temperatures, keys or data."""

    optimizer: optax.GradientTransformation
    batch: int
    L: int
    record_every: int


@lru_cache(maxsize=None)
def _adam(lr: float) -> optax.GradientTransformation:
    """Adam; cached so that runs with the same learning rate reuse the compiled scan."""
    return optax.adam(lr)


@dataclass(frozen=True)
class TrainConfig:
    """How a run trains (chapter "Training dynamics", def-training-runs): validated once when
    made, immutable and hashable (a cache key, and the static part of a compiled run).

    Attributes:
        lam: the inverse temperature, finite and > 0; or a tuple of one per seed (a sweep of
            ``fit_many`` in one call). Stored as a float or a tuple of floats.
        steps: optimiser steps, an integer >= 1, a multiple of ``record_every``.
        batch: prompts per step, an integer >= 1.
        L: tokens per prompt, an integer >= 1.
        lr: Adam's learning rate, finite and > 0 (unused when ``optimizer`` is given).
        record_every: steps between records, >= 1; ``max(1, steps // 100)`` when None.
        optimizer: an optax ``GradientTransformation``; ``optax.adam(lr)`` when None.

    Raises:
        TypeError: ``optimizer`` is not an optax ``GradientTransformation``, or a field is not
            a number.
        ValueError: a field outside what is allowed above (the message names it).
    """

    lam: float | tuple[float, ...] | list[float] | Float[ArrayLike, " S"] = DEFAULT.lam
    steps: int = 2000
    batch: int = 32
    L: int = DEFAULT.L
    lr: float = 1e-2
    record_every: int | None = None
    optimizer: optax.GradientTransformation | None = None

    def __post_init__(self):
        set_ = partial(object.__setattr__, self)
        v.real_array("lam", self.lam)  # a real, finite array (or number) that float32 holds
        lam = np.asarray(self.lam, dtype=np.float64)
        if lam.ndim > 1:
            raise ValueError(f"lam must be a scalar or one value per seed, got shape {lam.shape}")
        lams = tuple(v.positive_finite("lam", x) for x in lam.reshape(-1))
        if lam.ndim == 1 and not lams:
            raise ValueError("lam must be a scalar or one value per seed, got an empty sequence")
        set_("lam", lams[0] if lam.ndim == 0 else lams)
        steps = v.positive_int("steps", self.steps)
        set_("steps", steps)
        set_("batch", v.positive_int("batch", self.batch))
        set_("L", v.positive_int("L", self.L))
        set_("lr", v.positive_finite("lr", self.lr))
        every = max(1, steps // 100) if self.record_every is None else self.record_every
        every = v.positive_int("record_every", every)
        if steps % every:
            raise ValueError(f"steps must be a multiple of record_every, got steps={steps}, "
                             f"record_every={every}")
        set_("record_every", every)
        if self.optimizer is not None and not isinstance(self.optimizer, optax.GradientTransformation):
            raise TypeError(f"optimizer must be an optax.GradientTransformation (e.g. optax.adam(1e-2)) "
                            f"or None, got optimizer={self.optimizer!r}")

    @classmethod
    def of(cls, config: TrainConfig | None = None, **fields) -> TrainConfig:
        """``config`` (the defaults when None) with the fields given as keywords and not None
        replacing its own: how ``fit`` and its siblings turn their keywords into one
        configuration."""
        given = {k: x for k, x in fields.items() if x is not None}
        if config is None:
            return cls(**given)
        v.instance("config", config, TrainConfig)
        return dataclasses.replace(config, **given) if given else config

    def replace(self, **changes) -> TrainConfig:
        """This configuration with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @property
    def n_records(self) -> int:
        """The number of records a run keeps, ``steps / record_every``."""
        return self.steps // self.record_every

    @property
    def program(self) -> Program:
        """The static part of the run (see :class:`Program`)."""
        opt = _adam(self.lr) if self.optimizer is None else self.optimizer
        return Program(opt, self.batch, self.L, self.record_every)

    def lams(self, S: int) -> np.ndarray:
        """``(S,)`` float32: the inverse temperature of each of S seeds."""
        if isinstance(self.lam, tuple):
            if len(self.lam) != S:
                raise ValueError(f"lam must be a scalar or have one value per seed (S={S}), got {len(self.lam)} values")
            return np.asarray(self.lam, np.float32)
        return np.full((S,), self.lam, np.float32)


def init_theta(
    key: KeyLike,
    mixture: GaussianMixture,
    *,
    H: int | None = None,
    init: str = "small",
    scale: float | None = None,
) -> Float[Array, "H d"]:
    """Initial heads in one of the regimes of ``INITS`` (chapter "Training dynamics",
    def-training-runs).

    - "small": i.i.d. N(0, scale^2), scale = 1e-2 by default;
    - "large": i.i.d. N(0, scale^2), scale = ``max_c ||mu_c||`` by default;
    - "near": the centroids mu_1..mu_H (cycled if H > K) plus N(0, scale^2) noise, 0.1 default;
    - "close": one common random direction u ~ N(0, I/d) plus N(0, scale^2) per head, 1e-2.

    Args:
        key: a PRNG key, typed or raw.
        mixture: the mixture the heads will be trained on (gives d and the centroids).
        H: number of heads, an integer >= 1; the number of components K by default.
        init: the regime, one of ``INITS``.
        scale: the standard deviation of the noise, finite and > 0; the regime's default
            when None.

    Returns:
        ``(H, d)`` float32 heads.

    Raises:
        TypeError: ``mixture`` is not a ``GaussianMixture``.
        ValueError: a bad ``key``, ``H``, ``init`` or ``scale`` (the message names it).
    """
    key = v.raw_keys("key", key, batched=False)
    v.instance("mixture", mixture, GaussianMixture)
    H = mixture.K if H is None else v.positive_int("H", H)
    v.one_of("init", init, INITS)
    if scale is not None:
        v.positive_finite("scale", scale)
    return _init_theta(key, mixture, H, init, scale)


def _init_theta(key, mixture, H, init, scale):
    """``init_theta`` without the checks (vmapped over keys by ``fit_many``)."""
    d = mixture.d
    k1, k2 = jax.random.split(key)
    noise = jax.random.normal(k1, (H, d))
    if init == "small":
        return (1e-2 if scale is None else scale) * noise
    if init == "large":
        r = jnp.max(jnp.linalg.norm(mixture.centroids, axis=-1))
        return (r if scale is None else scale) * noise
    if init == "near":
        base = mixture.centroids[jnp.arange(H) % mixture.K]
        return base + (0.1 if scale is None else scale) * noise
    u = jax.random.normal(k2, (d,)) / math.sqrt(d)
    return u + (1e-2 if scale is None else scale) * noise


@dataclass(frozen=True)
class FitResult:
    """The outcome of ``fit`` (or, with a leading seed axis S on every array but ``steps``,
    of ``fit_many``, ``fit_sampler`` and ``fit_mixtures``).

    Attributes:
        theta: ``(..., H, d)`` final heads.
        steps: ``(n_records,)`` step count at each record (multiples of ``record_every``).
        risk: ``(..., n_records)`` mean minibatch empirical risk over the stride ending there.
        thetas: ``(..., n_records, H, d)`` heads at each record.
        theta0: ``(..., H, d)`` the initial heads.
    """

    theta: np.ndarray
    steps: np.ndarray
    risk: np.ndarray
    thetas: np.ndarray
    theta0: np.ndarray

    @property
    def n_records(self) -> int:
        """The number of records, steps / record_every."""
        return len(self.steps)

    def alignment(self, centroids) -> np.ndarray:
        """``(..., n_records, H)`` matched ``|cos|`` of the heads with ``centroids`` over the run."""
        return alignment(self.thetas, centroids)

    def final_alignment(self, centroids) -> np.ndarray:
        """``(..., H)`` matched ``|cos|`` of the final heads."""
        return alignment(self.theta, centroids)

    def first_seed(self) -> FitResult:
        """The run of seed 0 without the seed axis (what ``fit`` returns from ``fit_many``)."""
        return FitResult(self.theta[0], self.steps, self.risk[0], self.thetas[0], self.theta0[0])


class FitInterrupted(KeyboardInterrupt):
    """The KeyboardInterrupt (Ctrl-C) that stopped a run of ``fit``, ``fit_many``,
    ``fit_sampler`` or ``fit_mixtures``, carrying what the run had done.

    It is a ``KeyboardInterrupt``, so the interrupt stops the program (or the notebook cell)
    as any other would; catch it to keep the records made so far::

        try:
            result = ac.fit(key, mixture, steps=100_000)
        except ac.FitInterrupted as stop:
            result = stop.result

    The run is compiled in chunks (up to 20 of them with a progress bar, a single one
    without), and an interrupt is handled when a chunk returns: the records of the chunks
    finished are kept, those of the chunk running are not.

    Attributes:
        result: the ``FitResult`` of the records finished (shaped as the interrupted
            function returns it, with ``n_records`` possibly 0); its ``theta`` is the heads at
            the last of them (``theta0`` when there is none).
        steps: the steps the run was asked for.
    """

    def __init__(self, result: FitResult, steps: int):
        done = int(result.steps[-1]) if result.n_records else 0
        super().__init__(f"training interrupted after {done} of {steps} steps; the records made so far "
                         f"are in this exception's .result (a FitResult)")
        self.result = result
        self.steps = steps


def draw_from_mixture(
    key: KeyLike, mixture: GaussianMixture, batch: int, L: int
) -> Float[Array, "batch L d"]:
    """The sampler of ``fit``: ``batch`` prompts of ``L`` tokens from ``mixture``, the
    labels dropped (the protocol ``draw(key, data, batch, L)`` with ``data = mixture``).

    Args:
        key: a PRNG key, typed or raw.
        mixture: the mixture to draw from.
        batch: number of prompts, an integer >= 1.
        L: tokens per prompt, an integer >= 1.

    Returns:
        ``(batch, L, d)`` prompts (``attnclust.sample(key, mixture, batch, L)[0]``).
    """
    return sample(key, mixture, batch, L)[0]


def risk_loss(theta: Float[Array, "H d"], X: Float[Array, "*batch L d"], lam) -> Float[Array, ""]:
    """The empirical risk that training minimises: the mean over prompts and tokens of
    ``||x_l - T(X)_l||^2`` (chapter "The two-head layer and its population risk", def-risks),
    as a traceable function for ``jax.grad`` and ``jit``.

    It is ``attnclust.empirical_risk`` without the boundary checks: called on traced
    arguments (inside ``jit``, ``grad``, ``vmap`` or ``lax.scan``) no value is checked,
    so a NaN in ``theta`` or ``X`` or an inverse temperature <= 0 gives a NaN or a wrong number
    rather than an error. Validate at the boundary (``empirical_risk``, ``fit``) instead.

    Args:
        theta: ``(H, d)`` heads.
        X: ``(..., L, d)`` prompts.
        lam: the inverse temperature, > 0 (a float or a traced scalar).

    Returns:
        ``()`` the risk.
    """
    return distortion(two_head_layer(theta, X, lam), X)


def make_step(optimizer: optax.GradientTransformation, lam) -> Callable:
    """One training step on a batch, for ``lax.scan``: the function
    ``step((theta, opt_state), X) -> ((theta, opt_state), loss)`` that takes one
    ``optimizer`` step on ``risk_loss(theta, X, lam)`` and returns the loss before it.

    Traceable, no checks (see ``risk_loss``); ``fit`` scans it over fresh batches.

    Args:
        optimizer: an optax ``GradientTransformation`` (its state: ``optimizer.init(theta)``).
        lam: the inverse temperature, > 0 (a float or a traced scalar).

    Returns:
        The step function; ``theta`` is ``(H, d)``, ``X`` is ``(batch, L, d)``, ``loss`` is
        ``()``.
    """

    def step(carry, X):
        theta, opt_state = carry
        loss, grad = jax.value_and_grad(risk_loss)(theta, X, lam)
        updates, opt_state = optimizer.update(grad, opt_state, theta)
        return (optax.apply_updates(theta, updates), opt_state), loss

    return step


DRAW_FLOATS = 2**20
"""Most floats of prompts drawn ahead at once (4 MB): the steps of a record draw their
batches together, in groups of a divisor of ``record_every`` steps that fits."""


def _draw_group(record_every: int, per_step: int) -> int:
    """The largest divisor of ``record_every`` whose batches hold at most DRAW_FLOATS floats."""
    return max(g for g in range(1, record_every + 1) if record_every % g == 0 and g * per_step <= max(DRAW_FLOATS, per_step))


def _make_run(draw, data, lam, program: Program):
    """A pure function (carry, record_keys (n, 2)) -> (carry, risks (n,), thetas (n, H, d)).

    Each step trains on ``draw(key, data, batch, L)``. Each record's key determines its
    batches, so the result does not depend on how the run is split into chunks (with or
    without a progress bar)."""
    optimizer, batch, L, record_every = program
    step = make_step(optimizer, lam)

    def steps(carry, keys):
        # the batches of several steps drawn at once: sampling vectorises across steps
        Xs = jax.vmap(lambda k: draw(k, data, batch, L))(keys)
        return jax.lax.scan(step, carry, Xs)

    per_step = math.prod(jax.eval_shape(lambda k: draw(k, data, batch, L), v.RAW_KEY).shape)
    group = _draw_group(record_every, per_step)

    def record(carry, key):
        keys = jax.random.split(key, record_every).reshape(record_every // group, group, -1)
        carry, losses = jax.lax.scan(steps, carry, keys)
        return carry, (jnp.mean(losses), carry[0])

    def run(carry, record_keys):
        carry, (risks, thetas) = jax.lax.scan(record, carry, record_keys)
        return carry, risks, thetas

    return run


@partial(jax.jit, static_argnums=(0, 1, 2))
def _run_chunk(draw, data_axis, program, data, lam, carry, keys):
    """One chunk of records for every seed (vmapped over seeds, lam and, when
    ``data_axis`` is 0, the data); keys (S, n, 2)."""

    def one(data, lam, carry, key):
        return _make_run(draw, data, lam, program)(carry, key)

    return jax.vmap(one, in_axes=(data_axis, 0, 0, 0))(data, lam, carry, keys)


@partial(jax.jit, static_argnums=(0, 1))
def _run_chunk_one(draw, program, data, lam, carry, keys):
    """``_run_chunk`` for a single seed, without the seed axis: on the CPU, XLA runs the
    step several times slower with a leading axis of size 1, so ``fit`` does not vmap."""
    return _make_run(draw, data, lam, program)(carry, keys)


def _chunk_runner(S, draw, data_axis, program, data):
    """A function (lam, carry, keys) -> (carry, risks, thetas) with a leading seed axis
    on every argument and result, run through ``_run_chunk_one`` when S = 1."""
    if S > 1 or data_axis == 0:
        return partial(_run_chunk, draw, data_axis, program, data)

    def one(lam, carry, keys):
        squeeze = partial(jax.tree_util.tree_map, lambda x: x[0])
        expand = partial(jax.tree_util.tree_map, lambda x: x[None])
        return expand(_run_chunk_one(draw, program, data, lam[0], squeeze(carry), keys[0]))

    return one


# --------------------------------------------------------------------------- checks


def _check_draw(draw, data, data_axis, batch, L, shape):
    """Raise unless ``draw(key, data, batch, L)`` returns floats of ``shape`` = (batch, L, d)."""
    if not callable(draw):
        raise TypeError(f"draw must be a function draw(key, data, batch, L), got draw={draw!r}")
    one = data if data_axis is None else jax.tree_util.tree_map(lambda x: x[0], data)
    out = jax.eval_shape(lambda k, dt: draw(k, dt, batch, L), v.RAW_KEY, one)
    if getattr(out, "shape", None) != shape or not jnp.issubdtype(out.dtype, jnp.floating):
        raise ValueError(f"draw(key, data, batch={batch}, L={L}) must return floats of shape (batch, L, d)="
                         f"{shape}, d being the last axis of init; got {out}")


def _chunk_size(n_records: int, progress: bool) -> int:
    """Records per chunk: all of them without a progress bar, else an equal split into at
    most 20 chunks (equal, so that one compilation serves every chunk)."""
    if not progress:
        return n_records
    return n_records // max(c for c in range(1, min(n_records, 20) + 1) if n_records % c == 0)


# --------------------------------------------------------------------------- entry points


def fit(
    key: KeyLike,
    mixture: GaussianMixture,
    config: TrainConfig | None = None,
    *,
    lam: float | None = None,
    steps: int | None = None,
    batch: int | None = None,
    L: int | None = None,
    init: str | Float[ArrayLike, "H d"] = "small",
    optimizer: optax.GradientTransformation | None = None,
    lr: float | None = None,
    H: int | None = None,
    record_every: int | None = None,
    progress: bool = True,
) -> FitResult:
    """Train the two-head layer on prompts from ``mixture`` (chapter "Training dynamics").

    Every step draws ``batch`` fresh prompts of ``L`` tokens (``draw_from_mixture``) and
    applies ``optimizer`` (Adam with learning rate ``lr`` by default) to their empirical
    risk (``make_step``). The run is one jit-compiled ``lax.scan`` per progress chunk (a
    single one when ``progress`` is False); the chunking does not change the result.

    Args:
        key: a PRNG key, typed (``jax.random.key``) or raw (``jax.random.PRNGKey``).
        mixture: the ``GaussianMixture`` the prompts come from.
        config: how to train (:class:`TrainConfig`); its defaults when None.
        lam, steps, batch, L, optimizer, lr, record_every: the fields of
            :class:`TrainConfig`, given as keywords: each one given replaces ``config``'s
            (defaults: lam 1, 2000 steps, batch 32, L = 50, Adam with lr 1e-2, a record
            every steps // 100). ``lam`` is a scalar here (``fit_many`` takes one per seed).
        init: one of ``INITS`` (``init_theta``) or ``(H, d)`` finite initial heads.
        H: number of heads (K by default); must agree with an ``init`` array.
        progress: show a tqdm progress bar.

    Returns:
        A ``FitResult`` without a seed axis: ``theta`` ``(H, d)``, ``risk``
        ``(n_records,)``, ``thetas`` ``(n_records, H, d)``.

    Raises:
        TypeError: ``mixture`` is not a ``GaussianMixture``, or ``optimizer`` is not an optax
            ``GradientTransformation``.
        ValueError: any other argument outside what is allowed above (the message names it),
            or records (``steps / record_every`` of them, each with its key, risk and heads)
            that would not fit in the device's memory (the message names ``steps`` and
            ``record_every``), checked before XLA is asked for them.
        FitInterrupted: a KeyboardInterrupt (Ctrl-C) during the run; its ``result`` holds
            the records finished (see :class:`FitInterrupted`).
    """
    keys = v.raw_keys("key", key, batched=False)[None]
    config = TrainConfig.of(config, lam=lam, steps=steps, batch=batch, L=L, optimizer=optimizer,
                            lr=lr, record_every=record_every)
    if isinstance(config.lam, tuple):
        raise ValueError(f"lam must be a scalar (fit_many takes one per seed), got {len(config.lam)} values")
    try:
        many = fit_many(keys, mixture, config, init=init, H=H, progress=progress)
    except FitInterrupted as stop:
        stop.result = stop.result.first_seed()
        raise
    return many.first_seed()


def _host(x) -> np.ndarray:
    """``x`` as a NumPy array on this process; an array sharded over several processes
    (``jax.distributed``) is gathered from all of them first."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        x = multihost_utils.process_allgather(x, tiled=True)
    return np.asarray(x)


def _seed_sharding(n: int):
    """Shard the leading (seed) axis over all devices when there are several: every local
    device, and with ``jax.distributed`` initialised, every device of every process (each
    process then runs its own seeds and the results are gathered on all of them)."""
    devices = jax.devices()
    if len(devices) == 1 or n % len(devices):
        return None
    mesh = Mesh(np.array(devices), ("seeds",))
    return NamedSharding(mesh, PartitionSpec("seeds"))


def fit_many(
    keys: KeysLike,
    mixture: GaussianMixture,
    config: TrainConfig | None = None,
    *,
    lam: float | Float[ArrayLike, "S"] | None = None,
    steps: int | None = None,
    batch: int | None = None,
    L: int | None = None,
    init: str | Float[ArrayLike, "H d"] = "small",
    optimizer: optax.GradientTransformation | None = None,
    lr: float | None = None,
    H: int | None = None,
    record_every: int | None = None,
    progress: bool = True,
) -> FitResult:
    """``fit`` vmapped over S seeds, all in one compiled call.

    Seed s draws its initial heads and its batches from ``keys[s]``; its run is the run
    ``fit(keys[s], ...)`` gives (to float32 rounding: the programs are compiled for other
    shapes). When several devices are visible and S is a multiple of their number, the
    seeds are sharded over the devices (``jax.sharding``); the results are the same as on
    one device. On a multi-core CPU, JAX shows one device unless told otherwise: set
    ``JAX_NUM_CPU_DEVICES`` to the number of cores (or
    ``jax.config.update("jax_num_cpu_devices", n)`` before any computation) and the seeds
    run in parallel (chapter "Performance"). With ``jax.distributed`` initialised, the seeds
    are sharded over the devices of every process (host) and every process receives all
    the results.

    Args:
        keys: ``(S,)`` typed keys or ``(S, 2)`` raw keys (``jax.random.split(key, S)``),
            S >= 1.
        mixture, config: as in ``fit``.
        lam: a scalar, or ``(S,)`` one inverse temperature per seed (a sweep in one call); finite
            and > 0.
        steps, batch, L, optimizer, lr, H, record_every, progress: as in ``fit``.
        init: as in ``fit``; an ``(H, d)`` array is shared by every seed.

    Returns:
        A ``FitResult`` with a leading seed axis S on every array but ``steps``.

    Raises:
        TypeError: as in ``fit``.
        ValueError: as in ``fit`` (the records of all S seeds must fit in memory); also
            ``keys`` with S = 0 or ``lam`` of a length other than S.
        FitInterrupted: as in ``fit``; its ``result`` has the seed axis.
    """
    keys = v.raw_keys("keys", keys)
    v.instance("mixture", mixture, GaussianMixture)
    pairs = jax.vmap(jax.random.split)(keys)
    init_keys, run_keys = pairs[:, 0], pairs[:, 1]
    if isinstance(init, str):
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS} or an (H, d) array, got init={init!r}")
        H = mixture.K if H is None else v.positive_int("H", H)
        theta0 = jax.vmap(lambda k: _init_theta(k, mixture, H, init, None))(init_keys)
    else:
        theta0 = v.heads("init", init, d=mixture.d, d_from="mixture",
                         H=None if H is None else v.positive_int("H", H))
    config = TrainConfig.of(config, lam=lam, steps=steps, batch=batch, L=L, optimizer=optimizer,
                            lr=lr, record_every=record_every)
    return _fit(run_keys, draw_from_mixture, mixture, None, theta0, config, progress)


def fit_sampler(
    keys: KeysLike,
    draw: Draw,
    data: Any,
    config: TrainConfig | None = None,
    *,
    init: Float[ArrayLike, "*S H d"],
    lam: float | Float[ArrayLike, "S"] | None = None,
    steps: int | None = None,
    batch: int | None = None,
    L: int | None = None,
    optimizer: optax.GradientTransformation | None = None,
    lr: float | None = None,
    record_every: int | None = None,
    progress: bool = True,
    data_per_seed: bool = False,
) -> FitResult:
    """``fit_many`` for prompts from any sampler (chapter "Beyond the paper",
    chapters/beyond.md: anisotropic mixtures, several mixtures at once, real data).

    Step t of seed s trains on ``draw(key, data, batch, L)`` with a fresh key derived from
    ``keys[s]``; ``draw`` must be JAX-traceable and return ``(batch, L, d)`` floats (e.g.
    ``draw_from_mixture`` with ``data`` a ``GaussianMixture``, or
    ``attnclust.digits.sample_rows`` with ``data`` an ``(n, d)`` array of rows). Same
    loss, optimiser, records, progress bar and sharding as ``fit_many``. Keep ``draw`` the
    same function object between calls to reuse the compilation.

    Args:
        keys: ``(S,)`` typed keys or ``(S, 2)`` raw keys, S >= 1.
        draw: the sampler ``draw(key, data, batch, L) -> X`` ``(batch, L, d)``.
        data: a pytree of arrays passed to ``draw`` (None if it needs none).
        init: finite initial heads, ``(H, d)`` shared by every seed or ``(S, H, d)`` one
            per seed.
        config, lam, steps, batch, L, optimizer, lr, record_every, progress: as in
            ``fit_many``.
        data_per_seed: every leaf of ``data`` has a leading axis of size S and seed s
            trains on its slice.

    Returns:
        A ``FitResult`` with a leading seed axis S on every array but ``steps``.

    Raises:
        TypeError: ``draw`` is not callable or ``optimizer`` not an optax
            ``GradientTransformation``.
        ValueError: a bad argument (named in the message), including ``draw`` returning
            another shape than ``(batch, L, d)`` and, with ``data_per_seed``, a leaf of
            ``data`` whose leading axis is not S; records too large for memory, as in ``fit``.
        FitInterrupted: as in ``fit``; its ``result`` has the seed axis.
    """
    keys = v.raw_keys("keys", keys)
    S = keys.shape[0]
    theta0 = v.heads("init", init, ndims=(2, 3))
    if theta0.ndim == 3 and theta0.shape[0] != S:
        raise ValueError(f"init must have shape (H, d) or (S={S}, H, d), got shape {theta0.shape}")
    if data_per_seed:
        for leaf in jax.tree_util.tree_leaves(data):
            if jnp.ndim(leaf) < 1 or jnp.shape(leaf)[0] != S:
                raise ValueError(f"with data_per_seed, every leaf of data must have a leading axis "
                                 f"of size S={S}, got a leaf of shape {jnp.shape(leaf)}")
    config = TrainConfig.of(config, lam=lam, steps=steps, batch=batch, L=L, optimizer=optimizer,
                            lr=lr, record_every=record_every)
    return _fit(keys, draw, data, 0 if data_per_seed else None, theta0, config, progress)


def fit_mixtures(
    key: KeyLike,
    mixtures,
    config: TrainConfig | None = None,
    *,
    H: int | None = None,
    lam: float | None = None,
    steps: int | None = None,
    batch: int | None = None,
    L: int | None = None,
    init: str | Float[ArrayLike, "S H d"] = "small",
    scale: float | None = None,
    optimizer: optax.GradientTransformation | None = None,
    lr: float | None = None,
    record_every: int | None = None,
    progress: bool = True,
) -> FitResult:
    """Train the two-head layer on each of S mixtures in one vmapped, jit-compiled run:
    ``fit`` for many different data distributions at once (chapter "Beyond the paper").

    The mixtures are stacked (``general_mixture.stack_mixtures``, padded with components of
    weight 0) and run s trains on prompts from mixture s (``fit_sampler`` with
    ``general_mixture.draw_stacked``, one slice of the stack per seed).

    Args:
        key: a PRNG key, typed or raw: it gives the initial heads and the S runs' keys.
        mixtures: a non-empty sequence of S ``GaussianMixture`` or ``GeneralMixture`` of one
            dimension d.
        config, lam, steps, batch, L, optimizer, lr, record_every, progress: as in ``fit``.
        H: number of heads, >= 1; the largest K of the mixtures by default.
        init: "small" (every head i.i.d. N(0, scale^2), the regime "small" of ``INITS``)
            or ``(S, H, d)`` finite initial heads, one set per mixture.
        scale: the standard deviation of "small", finite and > 0; 1e-2 by default.

    Returns:
        A ``FitResult`` with a leading axis S (one run per mixture): ``theta``
        ``(S, H, d)``, ``risk`` ``(S, n_records)``.

    Raises:
        TypeError: a mixture of another type, or ``optimizer`` not an optax
            ``GradientTransformation``.
        ValueError: a bad argument (named in the message), mixtures of different d or none;
            records too large for memory, as in ``fit``.
        FitInterrupted: as in ``fit``; its ``result`` has the seed axis S.
    """
    key = v.raw_keys("key", key, batched=False)
    try:
        mixtures = list(mixtures)
    except TypeError:
        raise TypeError(f"mixtures must be a sequence of mixtures, got mixtures={mixtures!r}") from None
    bad = [m for m in mixtures if not isinstance(m, (GaussianMixture, GeneralMixture))]
    if bad:
        raise TypeError(f"mixtures must be GaussianMixture or GeneralMixture objects, got {bad[0]!r}")
    W, M, A = stack_mixtures(mixtures)
    S, K, d = M.shape
    H = K if H is None else v.positive_int("H", H)
    k_init, k_run = jax.random.split(key)
    if isinstance(init, str):
        if init != "small":
            raise ValueError(f"init must be 'small' or an (S, H, d) array, got init={init!r}")
        if scale is not None:
            v.positive_finite("scale", scale)
        theta0 = (1e-2 if scale is None else scale) * jax.random.normal(k_init, (S, H, d))
    else:
        theta0 = v.heads("init", init, d=d, d_from="mixtures", H=H, ndims=(3,))
        if theta0.shape[0] != S:
            raise ValueError(f"init must have shape (S={S}, H, d), got shape {theta0.shape}")
    data = tuple(jnp.asarray(x, jnp.float32) for x in (W, M, A))
    config = TrainConfig.of(config, lam=lam, steps=steps, batch=batch, L=L, optimizer=optimizer,
                            lr=lr, record_every=record_every)
    return fit_sampler(jax.random.split(k_run, S), draw_stacked, data, config, init=theta0,
                       progress=progress, data_per_seed=True)


def _fit(keys, draw, data, data_axis, theta0, config: TrainConfig, progress: bool) -> FitResult:
    """The training loop shared by every public entry point: raw seed keys ``keys`` (S, 2)."""
    S = keys.shape[0]
    program, n_records = config.program, config.n_records
    _check_draw(draw, data, data_axis, config.batch, config.L, (config.batch, config.L, theta0.shape[-1]))
    H, d = theta0.shape[-2:]
    v.allocation("the records (a key, a risk and the heads per record and seed, the last two held twice "
                 "while they are gathered)", S * n_records * (2 + 2 * (1 + H * d)),
                 steps=config.steps, record_every=config.record_every, **({"S": S} if S > 1 else {}))
    theta0 = jnp.broadcast_to(theta0, (S,) + theta0.shape[-2:])
    lam = jnp.asarray(config.lams(S))
    carry = (theta0, jax.vmap(program.optimizer.init)(theta0))
    size = _chunk_size(n_records, progress)
    record_keys = jax.vmap(lambda k: jax.random.split(k, n_records))(keys)
    sharding = _seed_sharding(S)
    if sharding is not None:
        carry, record_keys, lam = jax.device_put((carry, record_keys, lam), sharding)
        if data_axis == 0:
            data = jax.device_put(data, sharding)
    run = _chunk_runner(S, draw, data_axis, program, data)
    chunks = []  # (risks, thetas) of each chunk finished, on the host
    record_every = config.record_every
    try:
        with tqdm(total=config.steps * S, desc=f"fit x{S}", unit="step",
                  disable=not progress or jax.process_index() != 0) as bar:
            for start in range(0, n_records, size):
                carry, r, t = run(lam, carry, record_keys[:, start : start + size])
                chunks.append((_host(r), _host(t)))  # one append: a chunk is kept whole or not at all
                bar.update(size * record_every * S)
    except KeyboardInterrupt:
        raise FitInterrupted(_records(chunks, theta0, record_every), config.steps) from None
    result = _records(chunks, theta0, record_every)
    return dataclasses.replace(result, theta=_host(carry[0]))


def _records(chunks, theta0, record_every: int) -> FitResult:
    """The ``FitResult`` of the chunks of records ``chunks`` ((risks, thetas) pairs with a
    seed axis), its ``theta`` the heads of the last record (``theta0`` when there is none)."""
    theta0 = np.asarray(theta0)
    S, H, d = theta0.shape
    risk = np.concatenate([r for r, _ in chunks], axis=1) if chunks else np.zeros((S, 0), np.float32)
    thetas = np.concatenate([t for _, t in chunks], axis=1) if chunks else np.zeros((S, 0, H, d), np.float32)
    return FitResult(
        theta=(thetas[:, -1] if thetas.shape[1] else theta0).copy(),
        steps=np.arange(1, risk.shape[1] + 1) * record_every,
        risk=risk,
        thetas=thetas,
        theta0=theta0,
    )
