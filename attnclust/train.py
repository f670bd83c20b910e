"""Training the two-head layer on the empirical risk (THEORY.md sections 3 and 5; chapters
"The two-head layer and its population risk" and "Training dynamics").

A run draws a fresh batch of prompts at every step and takes an optax step on the
empirical risk R_L. The whole run is one jit-compiled ``lax.scan`` (records every
``record_every`` steps inside it); ``fit_many`` vmaps the run over seeds and, when several
devices are present, shards the seeds over them with ``jax.sharding``. A progress bar
(tqdm) runs outside jit by splitting the scan into chunks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Array, Float, PRNGKeyArray
from tqdm.auto import tqdm

from . import _validate as v
from .attention import _two_head
from .metrics import alignment
from .mixture import GaussianMixture, sample
from .risk import _risk_from_outputs

INITS = ("small", "large", "near", "close")
"""Initialisation regimes: small random, large random, near the centroids, heads near each
other (chapter "Training dynamics")."""


def init_theta(
    key: PRNGKeyArray,
    mixture: GaussianMixture,
    H: int | None = None,
    kind: str = "small",
    scale: float | None = None,
) -> Float[Array, "H d"]:
    """Initial heads (H, d), H = K by default.

    - "small": i.i.d. N(0, scale^2), scale = 1e-2 by default;
    - "large": i.i.d. N(0, scale^2), scale = max_c ||mu_c|| by default;
    - "near": the centroids mu_1..mu_H (cycled if H > K) plus N(0, scale^2) noise, 0.1 default;
    - "close": one common random direction u ~ N(0, I/d) plus N(0, scale^2) per head, 1e-2.
    """
    H = mixture.K if H is None else v.positive_int("H", H)
    d = mixture.d
    if kind not in INITS:
        raise ValueError(f"init must be one of {INITS}, got init={kind!r}")
    if scale is not None:
        v.positive_finite("scale", scale)
    k1, k2 = jax.random.split(key)
    noise = jax.random.normal(k1, (H, d))
    if kind == "small":
        return (1e-2 if scale is None else scale) * noise
    if kind == "large":
        r = jnp.max(jnp.linalg.norm(mixture.centroids, axis=-1))
        return (r if scale is None else scale) * noise
    if kind == "near":
        base = mixture.centroids[jnp.arange(H) % mixture.K]
        return base + (0.1 if scale is None else scale) * noise
    u = jax.random.normal(k2, (d,)) / math.sqrt(d)
    return u + (1e-2 if scale is None else scale) * noise


@dataclass(frozen=True)
class FitResult:
    """The outcome of ``fit`` (or, with a leading seed axis on every array, ``fit_many``).

    Attributes:
        theta: (..., H, d) final heads.
        steps: (n_records,) step count at each record.
        risk: (..., n_records) mean minibatch empirical risk over the stride ending there.
        thetas: (..., n_records, H, d) heads at each record.
        theta0: (..., H, d) the initial heads.
    """

    theta: np.ndarray
    steps: np.ndarray
    risk: np.ndarray
    thetas: np.ndarray
    theta0: np.ndarray

    def alignment(self, centroids) -> np.ndarray:
        """(..., n_records, H) matched |cos| of the heads with ``centroids`` over the run."""
        return alignment(self.thetas, centroids)

    def final_alignment(self, centroids) -> np.ndarray:
        """(..., H) matched |cos| of the final heads."""
        return alignment(self.theta, centroids)


def draw_from_mixture(mixture: GaussianMixture, key: PRNGKeyArray, batch: int, L: int):
    """The sampler of ``fit``: ``batch`` prompts of ``L`` tokens from ``mixture``."""
    return sample(key, mixture, batch, L)[0]


DRAW_FLOATS = 2**20
"""Most floats of prompts drawn ahead at once (4 MB): the steps of a record draw their
batches together, in groups of a divisor of ``record_every`` steps that fits."""


def _draw_group(record_every: int, per_step: int) -> int:
    """The largest divisor of ``record_every`` whose batches hold at most DRAW_FLOATS floats."""
    return max(g for g in range(1, record_every + 1) if record_every % g == 0 and g * per_step <= max(DRAW_FLOATS, per_step))


def _make_run(draw, data, lam, optimizer, batch, L, record_every):
    """A pure function (carry, record_keys (n, 2)) -> (carry, risks (n,), thetas (n, H, d)).

    Each step trains on ``draw(data, key, batch, L)``. Each record's key determines its
    batches, so the result does not depend on how the run is split into chunks (with or
    without a progress bar)."""

    def loss_fn(theta, X):
        return _risk_from_outputs(X, _two_head(theta, X, lam))

    def step(carry, X):
        theta, opt_state = carry
        loss, grad = jax.value_and_grad(loss_fn)(theta, X)
        updates, opt_state = optimizer.update(grad, opt_state, theta)
        return (optax.apply_updates(theta, updates), opt_state), loss

    def steps(carry, keys):
        # the batches of several steps drawn at once: sampling vectorises across steps
        Xs = jax.vmap(lambda k: draw(data, k, batch, L))(keys)
        return jax.lax.scan(step, carry, Xs)

    key_shape = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    per_step = math.prod(jax.eval_shape(lambda k: draw(data, k, batch, L), key_shape).shape)
    group = _draw_group(record_every, per_step)

    def record(carry, key):
        keys = jax.random.split(key, record_every).reshape(record_every // group, group, -1)
        carry, losses = jax.lax.scan(steps, carry, keys)
        return carry, (jnp.mean(losses), carry[0])

    def run(carry, record_keys):
        carry, (risks, thetas) = jax.lax.scan(record, carry, record_keys)
        return carry, risks, thetas

    return run


@partial(jax.jit, static_argnums=(0, 1, 2, 3, 4, 5))
def _run_chunk(draw, data_axis, optimizer, batch, L, record_every, data, lam, carry, keys):
    """One chunk of records for every seed (vmapped over seeds, lam and, when
    ``data_axis`` is 0, the data); keys (S, n, 2)."""

    def one(data, lam, carry, key):
        return _make_run(draw, data, lam, optimizer, batch, L, record_every)(carry, key)

    return jax.vmap(one, in_axes=(data_axis, 0, 0, 0))(data, lam, carry, keys)


@partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _run_chunk_one(draw, optimizer, batch, L, record_every, data, lam, carry, keys):
    """``_run_chunk`` for a single seed, without the seed axis: on the CPU, XLA runs the
    step several times slower with a leading axis of size 1 (measured 3.3 against 0.54
    ms per default step, benchmarks/alternatives.py), so ``fit`` does not vmap."""
    return _make_run(draw, data, lam, optimizer, batch, L, record_every)(carry, keys)


def _chunk_runner(S, draw, data_axis, optimizer, batch, L, record_every, data):
    """A function (lam, carry, keys) -> (carry, risks, thetas) with a leading seed axis
    on every argument and result, run through ``_run_chunk_one`` when S = 1."""
    if S > 1 or data_axis == 0:
        return partial(_run_chunk, draw, data_axis, optimizer, batch, L, record_every, data)

    def one(lam, carry, keys):
        squeeze = partial(jax.tree_util.tree_map, lambda x: x[0])
        expand = partial(jax.tree_util.tree_map, lambda x: x[None])
        out = _run_chunk_one(draw, optimizer, batch, L, record_every, data, lam[0], squeeze(carry), keys[0])
        return expand(out)

    return one


def _check_fit_args(lam, steps, batch, L, record_every):
    lam_arr = np.asarray(lam, dtype=np.float64)
    if lam_arr.ndim > 1:
        raise ValueError(f"lam must be a scalar or have shape (S,), got shape {lam_arr.shape}")
    for value in lam_arr.reshape(-1):
        v.positive_finite("lam", value)
    steps = v.positive_int("steps", steps)
    v.positive_int("batch", batch)
    v.positive_int("L", L)
    record_every = max(1, steps // 100) if record_every is None else record_every
    record_every = v.positive_int("record_every", record_every)
    if steps % record_every:
        raise ValueError(
            f"steps must be a multiple of record_every, got steps={steps}, "
            f"record_every={record_every}"
        )
    return steps // record_every, record_every


def _chunk_size(n_records: int, progress: bool) -> int:
    """Records per chunk: all of them without a progress bar, else an equal split into at
    most 20 chunks (equal, so that one compilation serves every chunk)."""
    if not progress:
        return n_records
    return n_records // max(c for c in range(1, min(n_records, 20) + 1) if n_records % c == 0)


@lru_cache(maxsize=None)
def _default_optimizer(lr: float) -> optax.GradientTransformation:
    """Adam; cached so that repeated runs with the same lr reuse the compiled scan."""
    return optax.adam(lr)


def fit(
    key: PRNGKeyArray,
    mixture: GaussianMixture,
    lam: float = 1.0,
    steps: int = 2000,
    batch: int = 32,
    L: int = 50,
    init: str | Float[Array, "H d"] = "small",
    optimizer: optax.GradientTransformation | None = None,
    lr: float = 1e-2,
    H: int | None = None,
    record_every: int | None = None,
    progress: bool = True,
) -> FitResult:
    """Train the two-head layer (H heads, H = K by default) on prompts of length L.

    Every step draws ``batch`` fresh prompts from ``mixture`` and applies ``optimizer``
    (Adam with learning rate ``lr`` by default) to the empirical risk. ``init`` is one of
    ``INITS`` or an (H, d) array. The run is one jit-compiled ``lax.scan`` per progress
    chunk (a single one when ``progress`` is False).
    """
    many = fit_many(
        jnp.asarray(key)[None], mixture, lam, steps, batch, L, init, optimizer, lr, H,
        record_every, progress,
    )
    return FitResult(many.theta[0], many.steps, many.risk[0], many.thetas[0], many.theta0[0])


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
    keys: PRNGKeyArray,
    mixture: GaussianMixture,
    lam: float = 1.0,
    steps: int = 2000,
    batch: int = 32,
    L: int = 50,
    init: str | Float[Array, "H d"] = "small",
    optimizer: optax.GradientTransformation | None = None,
    lr: float = 1e-2,
    H: int | None = None,
    record_every: int | None = None,
    progress: bool = True,
) -> FitResult:
    """``fit`` vmapped over seeds: ``keys`` of shape (S, 2) (from ``jax.random.split``).

    ``lam`` is a scalar or an (S,) array (one temperature per run: a sweep in one call).

    Every array of the result has a leading axis of size S (``steps`` excepted). When
    several devices are visible and S is a multiple of their number, the seeds are sharded
    over the devices (jax.sharding); the results are the same as on one device. On a
    multi-core CPU, JAX shows one device unless told otherwise: set ``JAX_NUM_CPU_DEVICES``
    to the number of cores (or ``jax.config.update("jax_num_cpu_devices", n)`` before any
    computation) and the seeds run in parallel (chapter "Performance"). With
    ``jax.distributed`` initialised, the seeds are sharded over the devices of every
    process (host) and every process receives all the results.
    """
    keys = _check_keys(keys)
    init_keys, run_keys = jnp.swapaxes(jax.vmap(jax.random.split)(keys), 0, 1)
    if isinstance(init, str):
        theta0 = jax.vmap(lambda k: init_theta(k, mixture, H, init))(init_keys)
    else:
        theta0 = jnp.asarray(init, jnp.float32)
        if theta0.ndim != 2 or theta0.shape[1] != mixture.d:
            raise ValueError(f"init must have shape (H, d={mixture.d}), got {theta0.shape}")
    return _fit(run_keys, draw_from_mixture, mixture, None, theta0, lam, steps, batch, L,
                optimizer, lr, record_every, progress)


def _check_keys(keys):
    keys = jnp.asarray(keys)
    if keys.ndim != 2:
        raise ValueError(f"keys must have shape (S, 2) (jax.random.split(key, S)), got {keys.shape}")
    return keys


def fit_sampler(
    keys: PRNGKeyArray,
    draw,
    data,
    theta0: Float[Array, "*S H d"],
    lam: float = 1.0,
    steps: int = 2000,
    batch: int = 32,
    L: int = 50,
    optimizer: optax.GradientTransformation | None = None,
    lr: float = 1e-2,
    record_every: int | None = None,
    progress: bool = True,
    data_per_seed: bool = False,
) -> FitResult:
    """``fit_many`` for prompts from any sampler: ``draw(data, key, batch, L) -> X``
    (batch, L, d), a JAX-traceable function of a pytree ``data`` (chapter "Beyond the
    paper": anisotropic mixtures, several mixtures at once, real data).

    Same loss, optimiser, records, progress bar and sharding as ``fit_many``, from the
    initial heads ``theta0`` ((H, d), or (S, H, d) one per seed). With ``data_per_seed``,
    every leaf of ``data`` has a leading axis of size S and seed s trains on its slice.
    Keep ``draw`` the same function object between calls to reuse the compilation.
    """
    keys = _check_keys(keys)
    theta0 = jnp.asarray(theta0, jnp.float32)
    if theta0.ndim not in (2, 3):
        raise ValueError(f"theta0 must have shape (H, d) or (S, H, d), got {theta0.shape}")
    return _fit(keys, draw, data, 0 if data_per_seed else None, theta0, lam, steps, batch, L,
                optimizer, lr, record_every, progress)


def _fit(keys, draw, data, data_axis, theta0, lam, steps, batch, L, optimizer, lr,
         record_every, progress) -> FitResult:
    """The training loop shared by every public entry point: seeds ``keys`` (S, 2)."""
    S = keys.shape[0]
    n_records, record_every = _check_fit_args(lam, steps, batch, L, record_every)
    if np.ndim(lam) == 1 and np.shape(lam)[0] != S:
        raise ValueError(f"lam must be a scalar or have shape (S={S},), got shape {np.shape(lam)}")
    theta0 = jnp.broadcast_to(theta0, (S,) + theta0.shape[-2:])
    optimizer = _default_optimizer(lr) if optimizer is None else optimizer
    lam = jnp.broadcast_to(jnp.asarray(lam, jnp.float32), (S,))
    carry = (theta0, jax.vmap(optimizer.init)(theta0))
    size = _chunk_size(n_records, progress)
    record_keys = jax.vmap(lambda k: jax.random.split(k, n_records))(keys)
    sharding = _seed_sharding(S)
    if sharding is not None:
        carry, record_keys, lam = jax.device_put((carry, record_keys, lam), sharding)
        if data_axis == 0:
            data = jax.device_put(data, sharding)
    run = _chunk_runner(S, draw, data_axis, optimizer, batch, L, record_every, data)
    risks, thetas = [], []
    with tqdm(total=steps * S, desc=f"fit x{S}", unit="step",
              disable=not progress or jax.process_index() != 0) as bar:
        for start in range(0, n_records, size):
            carry, r, t = run(lam, carry, record_keys[:, start : start + size])
            risks.append(_host(r))
            thetas.append(_host(t))
            bar.update(size * record_every * S)
    return FitResult(
        theta=_host(carry[0]),
        steps=np.arange(1, n_records + 1) * record_every,
        risk=np.concatenate(risks, axis=1),
        thetas=np.concatenate(thetas, axis=1),
        theta0=np.asarray(theta0),
    )
