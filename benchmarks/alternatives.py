#!/usr/bin/env python3
"""Kernels measured against the library's (the alternatives are not used by the library).

    .venv/bin/python benchmarks/alternatives.py        # prints a table, writes alternatives.json

1. ``previous_pool``: the rank-one head pooling as the library computed it before its
   tiled version: a ``custom_vjp`` whose backward pass was meant to recompute the L x L
   weights, but XLA merged the recompute with the forward exp and stored the shifted keys,
   the weights and their product (about 40 bytes a score), re-read in the backward pass.
   ``make bench`` times the training step with it beside the library's (the "before").
   ``autodiff_pool``: the forward formula differentiated by JAX. Values and gradients are
   checked to agree with the library before timing.
2. ``fit``'s step run without ``vmap`` (one seed, plain lax.scan), to isolate what a seed
   axis of size 1 costs on the CPU.
3. ``identity_fused``: identity attention with the softmax denominator folded into the
   value product (E @ [X, 1]) instead of a separate row sum.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import attnclust as ac
from attnclust._kernels import rank_one_softmax_pool
from attnclust.train import make_step

HERE = Path(__file__).resolve().parent


def autodiff_pool(lam, Pq, Pk):
    """The pooling with the same exact shift, differentiated by JAX through its formula."""
    ext = jnp.where(Pq[..., :, None] >= 0, jnp.max(Pk, axis=-1)[..., None, None],
                    jnp.min(Pk, axis=-1)[..., None, None])
    e = jnp.exp(lam * Pq[..., :, None] * (Pk[..., None, :] - ext))
    return jnp.sum(e * Pk[..., None, :], axis=-1) / jnp.sum(e, axis=-1)


@jax.custom_vjp
def previous_pool(lam, Pq, Pk):
    """The library's pooling before it was tiled (same values and gradients)."""
    return _previous_moments(lam, Pq, Pk)[0]


def _previous_weights(lam, Pq, Pk):
    ext = jnp.where(Pq >= 0, jnp.max(Pk, axis=-1, keepdims=True), jnp.min(Pk, axis=-1, keepdims=True))
    D = Pk[..., None, :] - ext[..., :, None]
    big = jnp.finfo(D.dtype).max
    return ext, D, jnp.exp(jnp.clip(lam * Pq, -big, big)[..., :, None] * D)


def _previous_moments(lam, Pq, Pk):
    ext, D, e = _previous_weights(lam, Pq, Pk)
    Z = jnp.sum(e, axis=-1)
    m1 = jnp.sum(e * D, axis=-1) / Z
    m2 = jnp.sum(e * D * D, axis=-1) / Z
    return ext + m1, Z, m1, jnp.maximum(m2 - m1 * m1, 0.0)


def _previous_fwd(lam, Pq, Pk):
    out, Z, m1, var = _previous_moments(lam, Pq, Pk)
    return out, (lam, Pq, Pk, Z, m1, var)


def _previous_bwd(res, g):
    lam, Pq, Pk, Z, m1, var = res
    _, D, e = _previous_weights(lam, Pq, Pk)
    c = g / Z
    a = c * (1.0 - lam * Pq * m1)
    b = c * lam * Pq
    d_keys = jnp.sum(e * (a[..., :, None] + b[..., :, None] * D), axis=-2)
    lam = jnp.asarray(lam)
    return jnp.sum(g * Pq * var).reshape(lam.shape).astype(lam.dtype), g * lam * var, d_keys


previous_pool.defvjp(_previous_fwd, _previous_bwd)


def two_head(theta, X, lam, pool):
    P = jnp.swapaxes(X @ theta.T, -1, -2)  # (..., H, L)
    return jnp.swapaxes(pool(lam, P, P), -1, -2) @ theta


def check_pool(others: dict | None = None) -> float:
    """Largest relative difference of values and gradients (theta, lam) between the library's
    pooling and each alternative (``others``, name -> pooling; by default autodiff_pool and
    previous_pool) at random inputs, from a small to a large lam."""
    others = others or {"autodiff": autodiff_pool, "previous": previous_pool}
    worst = 0.0
    key = jax.random.PRNGKey(0)
    for lam in (0.3, 1.0, 30.0, 1e4):
        k1, k2, key = jax.random.split(key, 3)
        X = jax.random.normal(k1, (3, 40, 5))
        theta = jax.random.normal(k2, (2, 5))
        for f in (
            lambda t, l, p: jnp.sum(jnp.sin(two_head(t, X, l, p))),
        ):
            a = jax.value_and_grad(f, argnums=(0, 1))(theta, lam, rank_one_softmax_pool)
            for other in others.values():
                b = jax.value_and_grad(f, argnums=(0, 1))(theta, lam, other)
                for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
                    err = float(jnp.max(jnp.abs(x - y)) / (jnp.max(jnp.abs(x)) + 1e-12))
                    worst = max(worst, err)
    return worst


def median_time(f, *args, reps=None):
    """Median (wall, CPU) seconds of one call of ``f`` (compiled and warmed first)."""
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    one = time.perf_counter() - t0
    reps = reps or max(3, min(30, int(1.0 / max(one, 1e-4))))
    walls, cpus = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(f(*args))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus))


def bench_steps(Ls=(50, 256, 1024), batch=32, n=None):
    """One training step (forward, backward, Adam; X fixed) with each pooling, as a
    lax.scan of ``n`` steps so that dispatch is not timed."""
    m = ac.orthogonal_mixture(**ac.DEFAULT.mixture_args())
    opt = optax.adam(1e-2)
    rows = []
    for L in Ls:
        X, _ = ac.sample(jax.random.PRNGKey(1), m, batch, L)
        theta = ac.init_theta(jax.random.PRNGKey(2), m, init="near")
        steps = n or max(2, int(2e6 / (batch * L * L)))
        row = {"L": L, "batch": batch, "scan_steps": steps, "load": os.getloadavg()[0]}
        for name, pool in (("library", rank_one_softmax_pool), ("autodiff", autodiff_pool), ("previous", previous_pool)):
            def run(theta, X, pool=pool):
                def step(carry, _):
                    th, st = carry
                    g = jax.grad(lambda t: ac.distortion(two_head(t, X, ac.DEFAULT.lam, pool), X))(th)
                    u, st = opt.update(g, st, th)
                    return (optax.apply_updates(th, u), st), None
                return jax.lax.scan(step, (theta, opt.init(theta)), None, length=steps)[0][0]

            wall, cpu = median_time(jax.jit(run), theta, X, reps=5)
            row[f"{name}_ms"], row[f"{name}_cpu_ms"] = 1e3 * wall / steps, 1e3 * cpu / steps
        row["speedup"] = row["autodiff_ms"] / row["library_ms"]
        row["cpu_speedup"] = row["autodiff_cpu_ms"] / row["library_cpu_ms"]
        row["previous_speedup"] = row["previous_ms"] / row["library_ms"]
        print(f"two-head training step L={L}, batch {batch}: hand-written VJP {row['library_ms']:.2f} ms "
              f"({row['library_cpu_ms']:.2f} ms CPU), autodiff {row['autodiff_ms']:.2f} ms "
              f"({row['autodiff_cpu_ms']:.2f} ms CPU): {row['speedup']:.2f}x wall, {row['cpu_speedup']:.2f}x CPU; "
              f"previous kernel {row['previous_ms']:.2f} ms ({row['previous_speedup']:.2f}x) "
              f"(load {row['load']:.1f})", flush=True)
        rows.append(row)
    return rows


def bench_fit_vmap(steps=400, batch=32, L=50):
    """Seconds per step: fit (vmapped over S = 1) against the same scan without vmap."""
    m = ac.orthogonal_mixture(**ac.DEFAULT.mixture_args())
    opt = optax.adam(1e-2)

    def run(theta, keys, lam):
        step = make_step(opt, lam)

        def body(carry, key):
            return step(carry, ac.draw_from_mixture(key, m, batch, L))

        return jax.lax.scan(body, (theta, opt.init(theta)), keys)[1]

    theta = ac.init_theta(jax.random.PRNGKey(2), m)
    keys = jax.random.split(jax.random.PRNGKey(3), steps)
    plain = median_time(jax.jit(run), theta, keys, jnp.float32(1.0), reps=3)[0] / steps
    vmapped = median_time(jax.jit(jax.vmap(run)), theta[None], keys[None], jnp.ones(1), reps=3)[0] / steps
    key = jax.random.PRNGKey(0)
    ac.fit(key, m, steps=steps, progress=False)
    t0 = time.perf_counter()
    ac.fit(key, m, steps=steps, progress=False)
    fit = (time.perf_counter() - t0) / steps
    row = {"scan_ms": plain * 1e3, "vmap1_scan_ms": vmapped * 1e3, "fit_ms": fit * 1e3, "load": os.getloadavg()[0]}
    print(f"one seed, L={L}, batch {batch}: plain lax.scan {row['scan_ms']:.2f} ms/step, "
          f"vmap(S=1) lax.scan {row['vmap1_scan_ms']:.2f} ms/step, ac.fit {row['fit_ms']:.2f} ms/step "
          f"(load {row['load']:.1f})", flush=True)
    return row


@jax.jit
def identity_fused(X, lam):
    s = lam * (X @ jnp.swapaxes(X, -1, -2))
    E = jnp.exp(s - jnp.max(s, -1, keepdims=True))
    Xe = jnp.concatenate([X, jnp.ones(X.shape[:-1] + (1,), X.dtype)], -1)
    num = E @ Xe
    return num[..., :-1] / num[..., -1:]


def bench_identity(Ls=(2000, 8000)):
    from attnclust._kernels import identity_full

    rows = []
    for L in Ls:
        X = ac.sample_in_context(jax.random.PRNGKey(7), 2, 32, 4.0, 0.5, 1, L)[0][0]
        a = median_time(identity_full, X, 0.25)[0]
        b = median_time(identity_fused, X, 0.25)[0]
        err = float(jnp.max(jnp.abs(identity_full(X, 0.25) - identity_fused(X, 0.25))))
        row = {"L": L, "library_s": a, "fused_s": b, "speedup": a / b, "max_abs_diff": err, "load": os.getloadavg()[0]}
        print(f"identity attention (unblocked) L={L}: library {a:.3f} s, fused {b:.3f} s, speedup {a / b:.2f}x, "
              f"max diff {err:.1e} (load {row['load']:.1f})", flush=True)
        rows.append(row)
    return rows


def main() -> int:
    err = check_pool()
    print(f"autodiff_pool vs library: largest relative difference of values and gradients {err:.1e}")
    if err > 1e-4:
        print("autodiff_pool disagrees with the library; not timing it")
        return 1
    out = {"pool_check_rel_err": err, "steps": bench_steps(), "fit_vmap": bench_fit_vmap(),
           "identity": bench_identity()}
    (HERE / "alternatives.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
